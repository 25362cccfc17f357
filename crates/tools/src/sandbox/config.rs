//! The sandbox settings of a session.

use std::path::PathBuf;

use super::mode::SandboxMode;
use super::user_dirs::UserDirs;
use crate::setters::setters;

/// The sandbox settings of a session (the `--sandbox` / `--allow-network` flags and the
/// `sandbox` config key, once the front-ends parse them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// The mode; `None` follows the permission mode ([`SandboxMode::for_permission`]),
    /// re-read at every command so a mode switch during the session takes effect.
    pub mode: Option<SandboxMode>,
    /// Let sandboxed commands use the network. Default `false`: they run in the
    /// session's network namespace, whose only interface is a private loopback.
    pub allow_network: bool,
    /// Paths sandboxed commands may not read, in addition to the default deny list
    /// ([`super::policy::default_deny_list`]). A leading `~/` is the home directory of
    /// [`SandboxConfig::user_dirs`]; relative paths are relative to the workspace.
    pub extra_deny: Vec<PathBuf>,
    /// Directories `workspace-write` commands may also write (e.g. a shared build cache);
    /// not writable in `read-only`. Same path rules as `extra_deny`.
    pub extra_writable: Vec<PathBuf>,
    /// The home and XDG directories the default deny list is computed from. Default: the
    /// process environment. When `home` is set, sandboxed commands also get it as `HOME`,
    /// so `~` means the same directory to the command and to the deny list.
    pub user_dirs: UserDirs,
    /// Pretend the kernel has this Landlock ABI version (0: none) instead of detecting
    /// it. For tests of the refusal path; `None` (the default) detects.
    pub assume_landlock_abi: Option<u32>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: None,
            allow_network: false,
            extra_deny: Vec::new(),
            extra_writable: Vec::new(),
            user_dirs: UserDirs::from_env(),
            assume_landlock_abi: None,
        }
    }
}

impl SandboxConfig {
    setters! {
        /// Sets the mode explicitly (`None`: follow the permission mode).
        with_mode => mode: Option<SandboxMode>;
        /// Allows or forbids the network.
        with_network => allow_network: bool;
        /// Adds paths to the deny list.
        with_extra_deny => extra_deny: Vec<PathBuf>;
        /// Adds writable directories (`workspace-write` only).
        with_extra_writable => extra_writable: Vec<PathBuf>;
        /// Computes the deny list from these directories instead of the environment's.
        with_user_dirs => user_dirs: UserDirs;
    }
}
