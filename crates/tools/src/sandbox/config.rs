//! The sandbox settings of a session.

use std::path::PathBuf;

use super::mode::SandboxMode;
use super::user_dirs::UserDirs;

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
    /// Sets the mode explicitly (`None`: follow the permission mode).
    pub fn with_mode(mut self, mode: Option<SandboxMode>) -> Self {
        self.mode = mode;
        self
    }

    /// Allows or forbids the network.
    pub fn with_network(mut self, allow: bool) -> Self {
        self.allow_network = allow;
        self
    }

    /// Adds paths to the deny list.
    pub fn with_extra_deny(mut self, paths: Vec<PathBuf>) -> Self {
        self.extra_deny = paths;
        self
    }

    /// Adds writable directories (`workspace-write` only).
    pub fn with_extra_writable(mut self, paths: Vec<PathBuf>) -> Self {
        self.extra_writable = paths;
        self
    }

    /// Computes the deny list from these directories instead of the environment's.
    pub fn with_user_dirs(mut self, dirs: UserDirs) -> Self {
        self.user_dirs = dirs;
        self
    }
}
