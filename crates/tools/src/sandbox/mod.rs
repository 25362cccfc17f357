//! The `bash` sandbox: commands confined by the kernel, so that a command run in
//! `auto-edit` or `full` mode cannot write outside the workspace, read the user's keys or
//! reach the network. User documentation: `docs/sandbox.md`.
//!
//! - [`SandboxMode`] (`mode`) — `read-only`, `workspace-write` or `off`; the default
//!   follows the permission mode ([`SandboxMode::for_permission`]),
//!   [`SandboxConfig::mode`] (`config`) overrides; the deny list starts from the user's
//!   directories (`user_dirs`).
//! - [`policy`] — what a sandboxed command may read and write (the deny list, the writable
//!   roots), and the allow rules that express "read everywhere except …" for Landlock.
//! - `landlock` (Linux) — the ruleset built before the fork, the kernel support check,
//!   and the async-signal-safe steps run in the child between fork and exec.
//! - `network` (Linux) — the session's user and network namespace (only a private
//!   loopback), which sandboxed commands without network join.
//! - `macos` — the Seatbelt profile for `sandbox-exec` (compiled on macOS only; untested).
//! - [`denial`] — recognising a command the sandbox stopped, for the escalation path.
//!
//! The sandbox applies to `bash` only (not to hooks or MCP servers) and to every process
//! the command starts: the restrictions are inherited across fork and exec and cannot be
//! lifted by the command.

mod config;
pub mod denial;
#[cfg(target_os = "linux")]
mod landlock;
#[cfg(any(target_os = "macos", test))]
mod macos;
mod mode;
#[cfg(target_os = "linux")]
mod network;
pub mod policy;
mod user_dirs;

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

pub use self::config::SandboxConfig;
pub use self::mode::{SandboxMode, UnknownSandboxMode};
use self::policy::Policy;
use crate::permission::PermissionMode;

/// Why a sandboxed command could not be run. The message is meant for the model and the
/// user: it says why and what to choose instead.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The kernel or the platform cannot enforce the sandbox.
    #[error(
        "bash runs in the `{mode}` sandbox, but {reason}; the command was not run. To run \
         commands without the sandbox, start pith with `--sandbox off` (or set \
         `sandbox = \"off\"` in the config)"
    )]
    Unsupported {
        /// The mode that was asked for.
        mode: SandboxMode,
        /// What is missing.
        reason: String,
    },
    /// Setting the sandbox up failed (a file system or kernel error).
    #[error(
        "could not set up the `{mode}` sandbox: {detail}; the command was not run. To run \
         commands without the sandbox, start pith with `--sandbox off`"
    )]
    Setup {
        /// The mode that was asked for.
        mode: SandboxMode,
        /// What failed.
        detail: String,
    },
}

/// The sandbox of one session: its settings and its private temporary directory.
/// Shared by the session's `bash` calls through [`crate::ToolEnv`].
#[derive(Debug)]
pub struct Sandbox {
    config: SandboxConfig,
    temp: Mutex<Option<tempfile::TempDir>>,
    platform: PlatformSession,
}

impl Sandbox {
    /// The sandbox for `config`. Nothing is checked or created until the first command.
    pub fn new(config: SandboxConfig) -> Self {
        Self {
            config,
            temp: Mutex::new(None),
            platform: PlatformSession::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    /// The mode a command runs in under `permission`.
    pub fn mode_for(&self, permission: PermissionMode) -> SandboxMode {
        self.config
            .mode
            .unwrap_or_else(|| SandboxMode::for_permission(permission))
    }

    /// The private temporary directory (`TMPDIR` of sandboxed commands), created `0700`
    /// on first use and removed with the session.
    pub fn temp_dir(&self) -> io::Result<PathBuf> {
        let mut temp = self.temp.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(dir) = temp.as_ref() {
            if dir.path().is_dir() {
                return Ok(dir.path().to_path_buf());
            }
        }
        let dir = tempfile::Builder::new()
            .prefix("pith-tmp-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        let path = dir.path().to_path_buf();
        *temp = Some(dir);
        Ok(path)
    }

    /// The kernel support the sandbox relies on, or why it is missing.
    pub fn support(&self) -> Result<(), String> {
        platform_support(self.config.assume_landlock_abi)
    }

    /// Everything a command needs to run in `mode` in `workspace` (canonical), with the
    /// session's spill directory `spill`: `None` when `mode` is `off`.
    pub fn prepare(
        &self,
        mode: SandboxMode,
        workspace: &Path,
        spill: &Path,
    ) -> Result<Option<Confinement>, SandboxError> {
        if !mode.is_sandboxed() {
            return Ok(None);
        }
        self.support()
            .map_err(|reason| SandboxError::Unsupported { mode, reason })?;
        let setup = |what: &str, err: io::Error| SandboxError::Setup {
            mode,
            detail: format!("{what}: {err}"),
        };
        let temp = self
            .temp_dir()
            .map_err(|err| setup("creating the private temporary directory", err))?;
        // The spill directory gets its rule only if it exists; a spill directory that
        // cannot be created costs the command nothing but the spill file.
        if let Err(err) = create_private_dir(spill) {
            tracing::debug!(dir = %spill.display(), %err, "sandbox: no spill directory");
        }
        let policy = Policy::new(
            mode,
            &self.config,
            &policy::Roots {
                workspace,
                spill,
                temp: &temp,
            },
        );
        let mut env = vec![("TMPDIR".to_owned(), OsString::from(&temp))];
        if let Some(home) = &self.config.user_dirs.home {
            env.push(("HOME".to_owned(), home.clone().into_os_string()));
        }
        let platform = self
            .platform
            .confinement(&policy, self.config.allow_network)
            .map_err(|err| setup("preparing the sandbox", err))?;
        Ok(Some(Confinement {
            mode,
            network: self.config.allow_network,
            env,
            platform,
        }))
    }
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// A prepared sandbox for one command: how to start it confined.
pub struct Confinement {
    mode: SandboxMode,
    network: bool,
    env: Vec<(String, OsString)>,
    platform: PlatformConfinement,
}

pith_core::debug_fields!(Confinement { mode, network, env });

impl Confinement {
    /// The mode it enforces.
    pub fn mode(&self) -> SandboxMode {
        self.mode
    }

    /// True when the command may use the network.
    pub fn network(&self) -> bool {
        self.network
    }

    /// Variables set for the command (`TMPDIR`, and `HOME` when configured).
    pub fn env(&self) -> &[(String, OsString)] {
        &self.env
    }

    /// A command running `program args…` inside the sandbox.
    pub fn command(&self, program: &str, args: &[&str]) -> tokio::process::Command {
        self.platform.command(program, args)
    }
}

// The platform's sandbox, under the names the code above uses.
#[cfg(target_os = "linux")]
use self::landlock::{
    support as platform_support, LinuxConfinement as PlatformConfinement,
    LinuxSession as PlatformSession,
};
#[cfg(target_os = "macos")]
use self::macos::{SeatbeltConfinement as PlatformConfinement, SeatbeltSession as PlatformSession};

/// macOS's Seatbelt has no ABI versions to assume.
#[cfg(target_os = "macos")]
fn platform_support(_assumed_abi: Option<u32>) -> Result<(), String> {
    self::macos::support()
}

/// Platforms without a sandbox: sandboxed modes refuse to run commands.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
struct PlatformConfinement;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
impl PlatformConfinement {
    fn command(&self, program: &str, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(program);
        command.args(args);
        command
    }
}

/// Platforms without a sandbox: no session state.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
#[derive(Debug, Default)]
struct PlatformSession;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
impl PlatformSession {
    fn confinement(
        &self,
        _policy: &Policy,
        _allow_network: bool,
    ) -> io::Result<PlatformConfinement> {
        Err(io::Error::other("no sandbox on this platform"))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn platform_support(_assumed_abi: Option<u32>) -> Result<(), String> {
    Err("pith can sandbox commands on Linux (Landlock) and macOS (Seatbelt) only".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_mode_follows_the_permission_mode_and_an_override_wins() {
        let sandbox = Sandbox::new(SandboxConfig::default());
        assert_eq!(
            sandbox.mode_for(PermissionMode::ReadOnly),
            SandboxMode::ReadOnly
        );
        for mode in [
            PermissionMode::Ask,
            PermissionMode::AutoEdit,
            PermissionMode::Full,
        ] {
            assert_eq!(sandbox.mode_for(mode), SandboxMode::WorkspaceWrite);
        }
        let off = Sandbox::new(SandboxConfig::default().with_mode(Some(SandboxMode::Off)));
        assert_eq!(off.mode_for(PermissionMode::Full), SandboxMode::Off);
    }

    #[test]
    fn off_needs_no_preparation() {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(SandboxConfig {
            assume_landlock_abi: Some(0),
            ..SandboxConfig::default()
        });
        let prepared = sandbox
            .prepare(SandboxMode::Off, dir.path(), &dir.path().join("spill"))
            .unwrap();
        assert!(prepared.is_none());
    }

    #[test]
    fn the_private_temp_dir_is_created_once_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let sandbox = Sandbox::new(SandboxConfig::default());
        let first = sandbox.temp_dir().unwrap();
        assert_eq!(sandbox.temp_dir().unwrap(), first);
        let mode = std::fs::metadata(&first).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        drop(sandbox);
        assert!(!first.exists(), "removed with the session");
    }
}
