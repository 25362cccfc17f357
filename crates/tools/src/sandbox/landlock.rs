//! Linux: the policy enforced with Landlock, applied in the child between fork and exec.
//!
//! Before the fork (in pith, where allocation and file system walks are fine) the
//! policy's allow rules ([`Policy::landlock_rules`]) become a Landlock ruleset: each path
//! is opened `O_PATH | O_NOFOLLOW` and added with the rights of its rule, through the
//! `landlock` crate (which knows the access rights of each ABI version). Only the ruleset
//! file descriptor crosses the fork. In the child, [`ChildSetup::apply`] makes nothing
//! but system calls — async-signal-safe, no allocation, no lock: join the session's
//! network namespace ([`super::network`]), drop `CAP_SYS_RAWIO` from the bounding set
//! when running as root, set `no_new_privs` and call `landlock_restrict_self`. The
//! domain is inherited by every process the command starts and cannot be lifted.
//!
//! Kernel support is detected once per process: Landlock ABI 3 (Linux 6.2) or later is
//! required, because ABI 1 and 2 cannot stop `truncate(2)` on files outside the
//! workspace. Without it, sandboxed modes refuse to run commands; they never fall back.

// FFI by necessity: the system calls made in the child between fork and exec (prctl,
// landlock_restrict_self) and the fstat of the rule paths. Each block has its SAFETY
// comment.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use ::landlock::{
    make_bitflags, Access as _, AccessFs, BitFlags, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, ABI,
};

use super::network::SessionNetwork;
use super::policy::{Access, Policy, Rule};

/// The oldest Landlock ABI the sandbox accepts.
pub const MIN_ABI: u32 = 3;

/// The ABI whose access rights the ruleset handles (file system rights up to device
/// ioctls). Rights a running kernel does not know are dropped by the crate's best-effort
/// compatibility; [`MIN_ABI`] guarantees the ones that matter.
const TARGET_ABI: ABI = ABI::V5;

/// `LANDLOCK_CREATE_RULESET_VERSION`: ask `landlock_create_ruleset` for the ABI version.
const CREATE_RULESET_VERSION: libc::c_uint = 1;

/// `CAP_SYS_RAWIO` (`linux/capability.h`).
const CAP_SYS_RAWIO: libc::c_ulong = 17;

/// The Linux sandbox state of a session: its network namespace, created on first need.
#[derive(Debug, Default)]
pub struct LinuxSession {
    network: Mutex<Option<Arc<SessionNetwork>>>,
}

impl LinuxSession {
    /// The confinement of one command under `policy`, without network unless
    /// `allow_network`.
    pub fn confinement(
        &self,
        policy: &Policy,
        allow_network: bool,
    ) -> io::Result<LinuxConfinement> {
        let network = if allow_network {
            None
        } else {
            let mut slot = self.network.lock().unwrap_or_else(PoisonError::into_inner);
            let network = match slot.as_ref() {
                Some(network) => Arc::clone(network),
                None => {
                    let created = Arc::new(SessionNetwork::create().map_err(|err| {
                        io::Error::new(
                            err.kind(),
                            format!(
                                "creating the sandbox's network namespace (user namespaces \
                                 must be available): {err}"
                            ),
                        )
                    })?);
                    *slot = Some(Arc::clone(&created));
                    created
                }
            };
            Some(network)
        };
        LinuxConfinement::new(policy, network)
    }
}

/// What the running kernel offers.
#[derive(Debug, Clone, Copy)]
struct KernelLandlock {
    abi: u32,
    /// Why there is no Landlock at all (when `abi` is 0).
    missing: &'static str,
}

fn detect() -> KernelLandlock {
    static DETECTED: OnceLock<KernelLandlock> = OnceLock::new();
    *DETECTED.get_or_init(|| {
        // SAFETY: with a null attribute, size 0 and the VERSION flag the call only returns
        // the ABI version (or an error); it touches no memory of ours.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        if version > 0 {
            return KernelLandlock {
                abi: u32::try_from(version).unwrap_or(u32::MAX),
                missing: "",
            };
        }
        let missing = match io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => {
                "Landlock is built into this kernel but not enabled at boot (the `lsm=` kernel \
                 parameter must include `landlock`)"
            }
            _ => "this kernel has no Landlock support (Linux 6.2 or later with Landlock is needed)",
        };
        KernelLandlock { abi: 0, missing }
    })
}

/// `Ok` when the kernel (or the `assumed` ABI, in tests) can enforce the sandbox; else
/// why not.
pub fn support(assumed: Option<u32>) -> Result<(), String> {
    let kernel = match assumed {
        Some(abi) => KernelLandlock {
            abi,
            missing: "this kernel has no Landlock support (Linux 6.2 or later with Landlock is \
                      needed)",
        },
        None => detect(),
    };
    match kernel.abi {
        0 => Err(kernel.missing.to_owned()),
        abi if abi < MIN_ABI => Err(format!(
            "this kernel's Landlock is ABI {abi}, and the sandbox needs ABI {MIN_ABI} or later \
             (Linux 6.2+): older versions cannot stop a command from truncating files outside \
             the workspace"
        )),
        _ => Ok(()),
    }
}

/// The Landlock rights of a policy rule, for a directory or (`is_dir` false) a file.
fn rights(access: Access, is_dir: bool) -> BitFlags<AccessFs> {
    let all = AccessFs::from_all(TARGET_ABI);
    let wanted = match access {
        Access::List => make_bitflags!(AccessFs::{ReadDir}),
        Access::Read => AccessFs::from_read(TARGET_ABI),
        Access::Write => all & !make_bitflags!(AccessFs::{MakeChar | MakeBlock}),
        Access::Device => make_bitflags!(AccessFs::{ReadFile | WriteFile | Truncate | IoctlDev}),
    };
    if is_dir {
        wanted
    } else {
        wanted & AccessFs::from_file(TARGET_ABI)
    }
}

/// Opens `path` for a rule without following a final symlink: `None` when it does not
/// exist or is a symlink (whose target is judged by its own rules).
fn open_for_rule(path: &Path) -> io::Result<Option<(OwnedFd, bool)>> {
    let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return Ok(None);
    };
    // SAFETY: `c_path` is NUL-terminated; O_PATH needs no mode argument.
    let raw = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if raw < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::NotFound => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: `raw` was just opened and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open and `stat` is a valid, writable struct.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
        return Err(io::Error::last_os_error());
    }
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFLNK => Ok(None),
        libc::S_IFDIR => Ok(Some((fd, true))),
        _ => Ok(Some((fd, false))),
    }
}

/// The ruleset for `rules`, as a file descriptor ready for `landlock_restrict_self`.
fn build_ruleset(rules: &[Rule]) -> io::Result<OwnedFd> {
    let landlock_error = |err: ::landlock::RulesetError| io::Error::other(err.to_string());
    let mut ruleset = Ruleset::default()
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .map_err(landlock_error)?
        .create()
        .map_err(landlock_error)?;
    for rule in rules {
        let (fd, is_dir) = match open_for_rule(&rule.path) {
            Ok(Some(opened)) => opened,
            Ok(None) => continue,
            Err(err) => {
                // Unreachable for this user too (e.g. a directory without search
                // permission): no rule, so the command cannot reach it either.
                tracing::debug!(path = %rule.path.display(), %err, "sandbox: rule skipped");
                continue;
            }
        };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights(rule.access, is_dir)))
            .map_err(landlock_error)?;
    }
    Option::<OwnedFd>::from(ruleset)
        .ok_or_else(|| io::Error::other("the kernel did not create a Landlock ruleset"))
}

/// What the child does between fork and exec. Everything is prepared before the fork.
#[derive(Debug)]
struct ChildSetup {
    ruleset: OwnedFd,
    network: Option<Arc<SessionNetwork>>,
    drop_rawio: bool,
}

impl ChildSetup {
    /// Confines the calling (child) process. Only system calls on prepared data: safe to
    /// run after `fork` in a multi-threaded parent.
    fn apply(&self) -> io::Result<()> {
        if let Some(network) = &self.network {
            network.enter()?;
        }
        if self.drop_rawio {
            // Root keeps its capabilities in the sandbox; without CAP_SYS_RAWIO it cannot
            // read kernel memory (/proc/kcore) or raw devices around the file rules.
            // SAFETY: prctl with integer arguments only.
            if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_RAWIO, 0, 0, 0) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the ruleset fd is open for the lifetime of `self`; flags 0.
        let restricted = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.ruleset.as_raw_fd(),
                0u32,
            )
        };
        if restricted != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A command's Landlock ruleset and network cut, ready to apply in the child.
#[derive(Debug, Clone)]
pub struct LinuxConfinement {
    setup: Arc<ChildSetup>,
}

impl LinuxConfinement {
    /// Builds the ruleset for `policy`; the command joins `network` when given.
    fn new(policy: &Policy, network: Option<Arc<SessionNetwork>>) -> io::Result<Self> {
        let ruleset = build_ruleset(&policy.landlock_rules())?;
        // SAFETY: geteuid cannot fail.
        let drop_rawio = unsafe { libc::geteuid() } == 0;
        Ok(Self {
            setup: Arc::new(ChildSetup {
                ruleset,
                network,
                drop_rawio,
            }),
        })
    }

    /// `program args…`, confined when it starts.
    pub fn command(&self, program: &str, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        let setup = Arc::clone(&self.setup);
        // SAFETY: `apply` runs in the child between fork and exec and only makes system
        // calls on data prepared before the fork (no allocation, no lock), as pre_exec
        // requires.
        unsafe {
            command.pre_exec(move || setup.apply());
        }
        command
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_is_detected_once_and_consistently() {
        let first = detect();
        let second = detect();
        assert_eq!(first.abi, second.abi);
        assert_eq!(support(None).is_ok(), first.abi >= MIN_ABI);
    }

    #[test]
    fn a_kernel_without_landlock_or_with_an_old_abi_is_refused_with_the_reason() {
        let none = support(Some(0)).unwrap_err();
        assert!(none.contains("no Landlock support"), "{none}");
        let old = support(Some(2)).unwrap_err();
        assert!(old.contains("ABI 2") && old.contains("truncating"), "{old}");
        assert!(support(Some(3)).is_ok());
    }

    #[test]
    fn rules_never_grant_device_creation_and_files_get_file_rights_only() {
        let write = rights(Access::Write, true);
        assert!(!write.contains(AccessFs::MakeBlock) && !write.contains(AccessFs::MakeChar));
        assert!(write.contains(AccessFs::MakeReg) && write.contains(AccessFs::Truncate));
        let file = rights(Access::Write, false);
        assert!(!file.contains(AccessFs::MakeReg) && !file.contains(AccessFs::ReadDir));
        assert_eq!(rights(Access::List, false), BitFlags::EMPTY);
        assert!(!rights(Access::Read, true).contains(AccessFs::WriteFile));
    }

    #[test]
    fn symlinks_and_missing_paths_get_no_rule() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/", dir.path().join("link")).unwrap();
        assert!(open_for_rule(&dir.path().join("link")).unwrap().is_none());
        assert!(open_for_rule(&dir.path().join("missing"))
            .unwrap()
            .is_none());
        let (_, is_dir) = open_for_rule(dir.path()).unwrap().unwrap();
        assert!(is_dir);
    }
}
