//! Linux: no network for sandboxed commands, through a network namespace of the session.
//!
//! Once per session, a short-lived helper process (`bash -c 'read -r _'`, spawned with
//! the steps below between its fork and exec) creates a user namespace and a network
//! namespace: `unshare(CLONE_NEWUSER | CLONE_NEWNET)`, the user's own uid and gid mapped
//! to themselves (so files keep their owner and `id` shows the same user), and the new
//! namespace's loopback interface brought up. pith opens the helper's
//! `/proc/PID/ns/{user,net}` and keeps the two file descriptors for the session, which
//! keeps the namespaces alive after the helper exits. Each sandboxed command then joins
//! them with two `setns` calls in its child, between fork and exec (async-signal-safe).
//!
//! The command sees one interface, `lo`, private to the session: servers the session's
//! commands start on 127.0.0.1 are reachable by its later commands (a test suite that
//! binds local ports, a dev server started in the background), while every other
//! address — the internet, the LAN and the *host's* 127.0.0.1 — is unreachable, and so
//! are abstract Unix sockets of processes outside (that namespace is per network
//! namespace). Every socket family is covered, io_uring included, without
//! per-architecture system call filters.
//!
//! The user namespace is what makes this unprivileged, and it is used for root too: root
//! in a new user namespace has no capability over the host's network namespace, so it
//! cannot `setns` back or move interfaces. The cost for root is that it keeps its
//! capabilities only over files whose owner is mapped (its own): reading another user's
//! private files or `chown` to another user fails inside the sandbox.
//!
//! The alternative, a seccomp filter refusing `socket(2)` for every family but
//! `AF_UNIX`, also works unprivileged, but it blocks loopback servers too, needs a filter
//! per architecture (and the 32-bit compat entry points, and io_uring), and leaves
//! abstract Unix sockets to Landlock ABI 6. See `docs/sandbox.md`.

// FFI by necessity: namespaces (unshare, setns), /proc writes and an ioctl in the child
// between fork and exec, where only raw system calls are allowed. Each block has its
// SAFETY comment.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;

/// A session's user and network namespaces, kept alive by these descriptors.
#[derive(Debug)]
pub struct SessionNetwork {
    user: OwnedFd,
    net: OwnedFd,
}

impl SessionNetwork {
    /// Creates the namespaces through a helper process (see the module documentation).
    pub fn create() -> io::Result<Self> {
        let cut = NetworkCut::new();
        let mut helper = std::process::Command::new("bash");
        helper
            .args(["-c", "read -r _"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: `enter` and `standard_descriptors_only` only make system calls on data
        // prepared before the fork.
        unsafe {
            helper.pre_exec(move || {
                crate::process_group::standard_descriptors_only()?;
                cut.enter()
            });
        }
        let mut child = helper.spawn()?;
        // The helper blocks reading its stdin until it is dropped below: it is alive
        // while its namespaces are opened.
        let opened = open_namespace(child.id(), c"user")
            .and_then(|user| Ok((user, open_namespace(child.id(), c"net")?)));
        drop(child.stdin.take());
        let _ = child.wait();
        let (user, net) = opened?;
        Ok(Self { user, net })
    }

    /// Moves the calling (child) process into the session's namespaces. Two system
    /// calls: async-signal-safe.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: setns on descriptors owned by `self`; the child is single-threaded
        // after fork, as joining a user namespace requires.
        unsafe {
            if libc::setns(self.user.as_raw_fd(), libc::CLONE_NEWUSER) != 0
                || libc::setns(self.net.as_raw_fd(), libc::CLONE_NEWNET) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Opens `/proc/<pid>/ns/<kind>`.
fn open_namespace(pid: u32, kind: &CStr) -> io::Result<OwnedFd> {
    let path = format!("/proc/{pid}/ns/{}", kind.to_string_lossy());
    let c_path = std::ffi::CString::new(path).map_err(io::Error::other)?;
    // SAFETY: `c_path` is NUL-terminated; no mode argument is needed without O_CREAT.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The steps that create the namespaces, run by the helper between fork and exec: the id
/// maps are formatted before the fork.
#[derive(Debug)]
struct NetworkCut {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NetworkCut {
    /// Prepares the cut for the current user.
    fn new() -> Self {
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        Self {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        }
    }

    /// Moves the calling (child) process into a new user and network namespace with only
    /// a loopback interface. System calls on prepared data only.
    fn enter(&self) -> io::Result<()> {
        // SAFETY: unshare takes flags only; the child is single-threaded after fork, as
        // CLONE_NEWUSER requires.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // Unprivileged gid maps need setgroups denied first (missing before Linux 3.19).
        match write_proc(c"/proc/self/setgroups", b"deny") {
            Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
            _ => {}
        }
        write_proc(c"/proc/self/uid_map", &self.uid_map)?;
        write_proc(c"/proc/self/gid_map", &self.gid_map)?;
        loopback_up()
    }
}

/// Writes `bytes` to a /proc file in one `write`. Async-signal-safe.
fn write_proc(path: &CStr, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated; no mode argument is needed without O_CREAT.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `bytes` is valid for its length; `fd` is open.
    let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    let result = if written < 0 {
        Err(io::Error::last_os_error())
    } else if written as usize != bytes.len() {
        Err(io::Error::from_raw_os_error(libc::EIO))
    } else {
        Ok(())
    };
    // SAFETY: `fd` is ours to close.
    unsafe { libc::close(fd) };
    result
}

/// Brings `lo` up in the (new) network namespace. Async-signal-safe.
fn loopback_up() -> io::Result<()> {
    // SAFETY: socket with constant arguments.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero ifreq is valid (empty name, zero flags).
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: `request` is a valid ifreq naming `lo`; the ioctls read and write only it.
    let result = unsafe {
        if libc::ioctl(sock, libc::SIOCGIFFLAGS as _, &mut request) != 0 {
            Err(io::Error::last_os_error())
        } else {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(sock, libc::SIOCSIFFLAGS as _, &request) != 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: `sock` is ours to close.
    unsafe { libc::close(sock) };
    result
}
