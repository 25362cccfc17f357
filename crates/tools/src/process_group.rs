//! Programs run in a process group of their own and ended as a group: the one place pith
//! starts such a group and signals it. The bash tool (`crate::bash`), hook programs
//! (`pith-hooks`) and stdio MCP servers (`pith-mcp`) all start their program through
//! [`isolate`], so that the program and everything it starts (a pipeline, a background
//! job, `npx` starting `node`) can be ended together by [`ProcessGroup`], and a future
//! dropped mid-run still ends them ([`KillOnDrop`]).
//!
//! Each caller decides *when* to end its group and how patiently: bash sends SIGTERM and
//! waits a grace period before SIGKILL ([`ProcessGroup::end`]), a hook is killed at once
//! ([`ProcessGroup::kill`]), an MCP server gets SIGTERM when its connection is dropped
//! ([`ProcessGroup::terminate`]). A process that leaves the group on purpose (`setsid`)
//! is out of reach by design.
//!
//! The same helper decides what the program inherits: only descriptors 0, 1 and 2
//! ([`standard_descriptors_only`]). Whatever else pith holds open — the JSON-RPC stream of
//! `pith acp`, the session's lock, the change tracker's inotify, a pipe of another child —
//! is closed when the program starts, so nothing a command, hook or MCP server runs can
//! write into pith's own channels (docs/sandbox.md, "Descriptors").

use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::time::Instant;

/// How often [`ProcessGroup::end`] looks whether the group emptied after SIGTERM.
const END_POLL: Duration = Duration::from_millis(20);

/// Makes `command` start its program as the leader of a new process group (its group id
/// is its process id), and kill that program if its `Child` handle is dropped before it
/// was waited for. Returns `command` for chaining.
pub fn isolate(command: &mut Command) -> &mut Command {
    command.process_group(0).kill_on_drop(true);
    // SAFETY: the hook runs between fork and exec and makes system calls only (no
    // allocation, no lock), as pre_exec requires.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(standard_descriptors_only);
    }
    command
}

/// Marks every descriptor from 3 up close-on-exec, so that the program about to be
/// executed starts with only its standard input, output and error. Meant to run in a
/// child between fork and exec (a `pre_exec` hook): it only makes system calls.
///
/// Close-on-exec rather than closing: descriptors the child still needs until `exec`
/// (a sandbox's Landlock ruleset, the pipe through which the standard library reports a
/// failed `exec`) stay usable until then, whatever the order of the hooks.
pub fn standard_descriptors_only() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: close_range(2) with integer arguments; CLOSE_RANGE_CLOEXEC (Linux 5.11)
        // only sets the flag on descriptors that exist.
        #[allow(unsafe_code)]
        let marked = unsafe {
            libc::syscall(
                libc::SYS_close_range,
                3u32,
                u32::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            )
        };
        if marked == 0 {
            return Ok(());
        }
    }
    // Older kernels and other systems: every descriptor up to the process's limit.
    // SAFETY: sysconf and fcntl with integer arguments; a descriptor that is not open
    // answers EBADF, which is ignored.
    #[allow(unsafe_code)]
    unsafe {
        let limit = libc::sysconf(libc::_SC_OPEN_MAX);
        let last = if limit > 0 { limit.min(1 << 20) } else { 1024 };
        for fd in 3..last as libc::c_int {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}

/// The process group of a child started through [`isolate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessGroup {
    pgid: libc::pid_t,
}

impl ProcessGroup {
    /// The group led by `child`; `None` once the child was reaped (it has no id any more)
    /// or when its id could not name a group safely (0 and 1 are never a child's group).
    pub fn of(child: &Child) -> Option<Self> {
        child
            .id()
            .and_then(|id| libc::pid_t::try_from(id).ok())
            .filter(|pgid| *pgid > 1)
            .map(|pgid| Self { pgid })
    }

    /// The group whose id another process reported (the `pith sandbox-exec` wrapper of a
    /// command in an editor's terminal); `None` for ids that never name a child's group.
    pub fn from_id(pgid: i32) -> Option<Self> {
        (pgid > 1).then_some(Self { pgid })
    }

    /// Ends the group without a handle on its leader: SIGTERM, up to `grace` for it to
    /// empty, then SIGKILL to whatever is left.
    pub async fn end_detached(self, grace: Duration) {
        self.terminate();
        let give_up = Instant::now() + grace;
        while self.is_alive() && Instant::now() < give_up {
            tokio::time::sleep(END_POLL).await;
        }
        self.kill();
    }

    /// The group id (the leader's process id).
    pub fn id(self) -> i32 {
        self.pgid
    }

    /// Sends `signal` to every process of the group; true when at least one received it.
    #[allow(unsafe_code)] // killpg(2): the one system call the helper needs.
    fn signal(self, signal: libc::c_int) -> bool {
        // SAFETY: killpg(2) only sends a signal; it reads and writes no memory of this
        // process. `pgid` is greater than 1 (checked in `of`, the only constructor), so it
        // never means this process's own group (0) nor init's (1), and never every
        // process the user may signal (what kill(-1) would do).
        unsafe { libc::killpg(self.pgid, signal) == 0 }
    }

    /// SIGTERM to every process of the group: the polite request to exit.
    pub fn terminate(self) -> bool {
        self.signal(libc::SIGTERM)
    }

    /// SIGKILL to every process of the group, which none can ignore.
    pub fn kill(self) -> bool {
        self.signal(libc::SIGKILL)
    }

    /// True while some process of the group exists (a zombie leader not yet reaped counts).
    pub fn is_alive(self) -> bool {
        self.signal(0)
    }

    /// Ends the group patiently: SIGTERM, up to `grace` for every process of it to exit
    /// (reaping `child`, the leader, meanwhile so that it does not keep the group alive as
    /// a zombie), then SIGKILL to whatever is left; returns once `child` was reaped.
    pub async fn end(self, child: &mut Child, grace: Duration) {
        self.terminate();
        let give_up = Instant::now() + grace;
        loop {
            let _ = child.try_wait();
            if !self.is_alive() || Instant::now() >= give_up {
                break;
            }
            tokio::time::sleep(END_POLL).await;
        }
        self.kill();
        let _ = child.wait().await;
    }
}

/// Kills a process group (SIGKILL) when dropped while armed: what keeps a run whose future
/// is dropped (a cancelled turn, a timeout around the caller) from leaving its processes
/// behind. Disarm it once the run ended the group itself or the group exited.
#[derive(Debug)]
pub struct KillOnDrop {
    group: Option<ProcessGroup>,
}

impl KillOnDrop {
    /// A guard over `group` (`None`: there is nothing to kill).
    pub fn new(group: Option<ProcessGroup>) -> Self {
        Self { group }
    }

    /// The group is no longer this guard's business.
    pub fn disarm(&mut self) {
        self.group = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(group) = self.group {
            group.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use tokio::io::{AsyncBufReadExt, BufReader};

    /// Starts `sh -c script` in its own group; the script prints the pid of a background
    /// grandchild on its first line.
    async fn group_with_grandchild(script: &str) -> (Child, ProcessGroup, i32) {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script).stdout(Stdio::piped());
        let mut child = isolate(&mut command).spawn().unwrap();
        let group = ProcessGroup::of(&child).unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let grandchild = lines.next_line().await.unwrap().unwrap().parse().unwrap();
        (child, group, grandchild)
    }

    /// True while `pid` exists and is not a zombie.
    fn running(pid: i32) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        !stat.is_empty() && !stat.contains(") Z ")
    }

    async fn gone(pid: i32) -> bool {
        for _ in 0..100 {
            if !running(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn the_child_leads_its_own_group() {
        let (mut child, group, grandchild) =
            group_with_grandchild("sleep 1000 & echo $!; wait").await;
        assert_eq!(Some(group.id() as u32), child.id());
        let own = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap();
        // Field 5 of /proc/PID/stat (after the command's closing paren) is the group.
        let fields: Vec<&str> = own.rsplit_once(") ").unwrap().1.split(' ').collect();
        assert_eq!(fields[2], group.id().to_string(), "{own}");
        assert!(group.is_alive());
        group.kill();
        child.wait().await.unwrap();
    }

    #[tokio::test]
    async fn killing_the_group_ends_the_grandchild_too() {
        let (mut child, group, grandchild) =
            group_with_grandchild("sleep 1000 & echo $!; wait").await;
        assert!(running(grandchild));
        assert!(group.kill());
        child.wait().await.unwrap();
        assert!(gone(grandchild).await, "the grandchild survived");
    }

    /// Ends a group whose grandchild ignores SIGTERM (or not) with `grace`; checks that the
    /// grandchild is gone and the leader reaped, and returns how long ending took.
    async fn end_group(ignore_sigterm: bool, grace: Duration) -> Duration {
        let trap = if ignore_sigterm { "trap '' TERM; " } else { "" };
        let (mut child, group, grandchild) =
            group_with_grandchild(&format!("{trap}sleep 1000 & echo $!; wait")).await;
        let started = Instant::now();
        group.end(&mut child, grace).await;
        let took = started.elapsed();
        assert!(gone(grandchild).await, "the grandchild survived");
        assert!(child.try_wait().unwrap().is_some(), "the leader was reaped");
        took
    }

    #[tokio::test]
    async fn ending_waits_the_grace_then_kills_what_ignores_sigterm() {
        let grace = Duration::from_millis(300);
        assert!(end_group(true, grace).await >= grace);
    }

    #[tokio::test]
    async fn ending_a_group_that_obeys_sigterm_does_not_wait_the_grace() {
        assert!(end_group(false, Duration::from_secs(30)).await < Duration::from_secs(10));
    }

    #[tokio::test]
    async fn a_dropped_guard_kills_the_group_and_a_disarmed_one_does_not() {
        let (mut child, group, grandchild) =
            group_with_grandchild("sleep 1000 & echo $!; wait").await;
        let mut disarmed = KillOnDrop::new(Some(group));
        disarmed.disarm();
        drop(disarmed);
        assert!(
            running(grandchild),
            "a disarmed guard leaves the group alone"
        );
        drop(KillOnDrop::new(Some(group)));
        child.wait().await.unwrap();
        assert!(
            gone(grandchild).await,
            "the guard's SIGKILL reached the grandchild"
        );
        drop(KillOnDrop::new(None));
    }
}
