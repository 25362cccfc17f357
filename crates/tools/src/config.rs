//! Configuration of the tool set: what a front-end or the headless runner fills in once
//! per session ([`ToolsConfig`]), validated once into the shared environment
//! ([`ToolEnv`]) every tool runs against. The tools themselves are assembled in
//! `toolset`, so this module imports none of them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::capture::{Capture, SpillDir};
use crate::permission::{Approver, PermissionMode, PermissionPolicy};
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::setters::setters;
use crate::squash;
use crate::workspace::Workspace;

/// Limits of the tools. The defaults are what a session gets unless configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// `bash` timeout when the call gives none. Default 120 s.
    pub bash_timeout_default: Duration,
    /// Largest `bash` timeout a call may ask for (larger requests are clamped, with a
    /// note). Default 600 s.
    pub bash_timeout_max: Duration,
    /// Between SIGTERM and SIGKILL when ending a command. Default 2 s.
    pub bash_kill_grace: Duration,
    /// How long background processes may keep the output open after the shell exited
    /// before they are ended. Default 2 s.
    pub bash_drain_after_exit: Duration,
    /// Command output held in memory at most; the rest streams to the spill file.
    /// Default 512 KiB.
    pub bash_memory_cap_bytes: usize,
    /// Largest spill file a command may produce; output beyond it is counted and
    /// discarded. Default 256 MiB.
    pub spill_cap_bytes: u64,
    /// An output that overflowed memory is read back from its spill file and squashed
    /// whole when it is at most this size (larger ones: head and tail). Default 16 MiB.
    pub squash_whole_max_bytes: u64,
    /// Lines `read` returns when the call gives no `limit`. Default 2000.
    pub read_default_lines: usize,
    /// Longer lines are cut by `read` (with a note). Default 2000 characters.
    pub read_max_line_chars: usize,
    /// `read` stops a page early (with the `offset=` hint) past this size. Default 256 KiB.
    pub read_max_page_bytes: usize,
    /// `grep` stops after this many matching lines (with a note). Default 2000.
    pub grep_max_matches: usize,
    /// `glob` stops after this many paths (with a note). Default 2000.
    pub glob_max_paths: usize,
    /// `ls` shows at most this many entries (with a note). Default 2000.
    pub ls_max_entries: usize,
    /// Lines of diff shown after a write or an edit. Default 80.
    pub diff_max_lines: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            bash_timeout_default: Duration::from_secs(120),
            bash_timeout_max: Duration::from_secs(600),
            bash_kill_grace: Duration::from_secs(2),
            bash_drain_after_exit: Duration::from_secs(2),
            bash_memory_cap_bytes: 512 * 1024,
            spill_cap_bytes: 256 * 1024 * 1024,
            squash_whole_max_bytes: crate::capture::DEFAULT_WHOLE_MAX_BYTES,
            read_default_lines: 2000,
            read_max_line_chars: 2000,
            read_max_page_bytes: 256 * 1024,
            grep_max_matches: 2000,
            glob_max_paths: 2000,
            ls_max_entries: 2000,
            diff_max_lines: 80,
        }
    }
}

/// Everything needed to build a session's tools.
#[derive(Clone)]
pub struct ToolsConfig {
    /// The project directory: relative paths start here, writes are confined to it,
    /// `bash` runs here. Must exist.
    pub workspace_root: PathBuf,
    /// The session's spill directory (created on first spill). Always readable.
    pub spill_dir: PathBuf,
    /// The permission mode. Default `ask`.
    pub mode: PermissionMode,
    /// Answers `ask` requests; `None` (headless) refuses what needs approval.
    pub approver: Option<Arc<dyn Approver>>,
    /// Tool limits.
    pub limits: Limits,
    /// Core's squash settings.
    pub squash: squash::Config,
    /// Environment variables whose name contains one of these (case-insensitive) are
    /// not passed to `bash`. Default `KEY`, `SECRET`, `TOKEN`; empty passes everything.
    pub bash_env_exclude: Vec<String>,
    /// The `bash` sandbox. Default: the mode follows the permission mode
    /// (`workspace-write`, or `read-only` in read-only approval), no network.
    pub sandbox: SandboxConfig,
    /// Where `read`, `write` and `edit` take and put text instead of the disk (an
    /// editor's buffers, see [`crate::files`]); `None` (the default): the disk.
    pub files: Option<Arc<dyn crate::files::TextFiles>>,
    /// Where `bash` runs its commands instead of a child of pith (an editor's terminals,
    /// see [`crate::bash::terminal`]); `None` (the default): pith's own child process.
    pub terminal: Option<Arc<dyn crate::bash::terminal::CommandTerminal>>,
    /// The session's change tracker: which files a `bash` command changed (for the
    /// ledger); `None` (the default): only the command's own write forms are recognised.
    pub changes: Option<Arc<dyn pith_core::ChangeFeed>>,
    /// What images the model accepts: `read` returns PNG, JPEG, GIF and WebP files as
    /// images within these limits; `None` (the default) when the model takes no images,
    /// and `read` then refuses them in words.
    pub images: Option<pith_core::ImageLimits>,
}

/// The default [`ToolsConfig::bash_env_exclude`] patterns.
pub const DEFAULT_BASH_ENV_EXCLUDE: [&str; 3] = ["KEY", "SECRET", "TOKEN"];

pith_core::debug_fields!(ToolsConfig |this| {
    workspace_root: this.workspace_root,
    spill_dir: this.spill_dir,
    mode: this.mode,
    has_approver: this.approver.is_some(),
    files: this.files,
    terminal: this.terminal,
    limits: this.limits,
    sandbox: this.sandbox,
});

impl ToolsConfig {
    /// Defaults (mode `ask`, no approver, default limits and squash settings) for a
    /// workspace and a spill directory.
    pub fn new(workspace_root: impl Into<PathBuf>, spill_dir: impl Into<PathBuf>) -> Self {
        Self {
            workspace_root: workspace_root.into(),
            spill_dir: spill_dir.into(),
            mode: PermissionMode::default(),
            approver: None,
            limits: Limits::default(),
            squash: squash::Config::default(),
            bash_env_exclude: DEFAULT_BASH_ENV_EXCLUDE.map(String::from).to_vec(),
            sandbox: SandboxConfig::default(),
            files: None,
            terminal: None,
            changes: None,
            images: None,
        }
    }

    setters! {
        /// Sets what images the model accepts (`None`: none).
        with_images => images: Option<pith_core::ImageLimits>;
        /// Sets where text files are read and written instead of the disk.
        with_files => files: Some(Arc<dyn crate::files::TextFiles>);
        /// Sets where `bash` runs its commands instead of a child of pith.
        with_terminal => terminal: Some(Arc<dyn crate::bash::terminal::CommandTerminal>);
        /// Sets the session's change tracker.
        with_changes => changes: Some(Arc<dyn pith_core::ChangeFeed>);
        /// Sets the permission mode.
        with_mode => mode: PermissionMode;
        /// Sets the approver for `ask`.
        with_approver => approver: Some(Arc<dyn Approver>);
        /// Sets the limits.
        with_limits => limits: Limits;
        /// Sets core's squash settings (the `[context]` section).
        with_squash => squash: squash::Config;
        /// Sets the name patterns of environment variables kept from `bash`.
        with_bash_env_exclude => bash_env_exclude: Vec<String>;
        /// Sets the `bash` sandbox (mode override, network, extra paths).
        with_sandbox => sandbox: SandboxConfig;
    }
}

/// A configuration that cannot work.
#[derive(Debug, thiserror::Error)]
pub enum ToolsConfigError {
    /// The workspace root is missing or not a directory.
    #[error("workspace root {path}: {source}")]
    WorkspaceRoot {
        /// The configured root.
        path: PathBuf,
        /// Why it cannot be used.
        source: std::io::Error,
    },
    /// A limit is zero or inconsistent.
    #[error("invalid tool limits: {0}")]
    Limits(String),
}

/// What every tool of a session shares.
#[derive(Debug)]
pub struct ToolEnv {
    /// Path resolution and confinement.
    pub workspace: Workspace,
    /// The permission policy (shared with the front-end through [`crate::Toolset::permissions`]).
    pub permissions: Arc<PermissionPolicy>,
    /// Squash and spill.
    pub capture: Capture,
    /// Limits.
    pub limits: Limits,
    /// Patterns of environment variable names not passed to `bash`.
    pub bash_env_exclude: Vec<String>,
    /// The `bash` sandbox.
    pub sandbox: Sandbox,
    /// What images the model accepts (`None`: none).
    pub images: Option<pith_core::ImageLimits>,
    /// Where text files are read and written instead of the disk (`None`: the disk).
    pub files: Option<Arc<dyn crate::files::TextFiles>>,
    /// Where `bash` runs commands instead of a child of pith (`None`: a child).
    pub terminal: Option<Arc<dyn crate::bash::terminal::CommandTerminal>>,
    /// The session's change tracker (`None`: none).
    pub changes: Option<Arc<dyn pith_core::ChangeFeed>>,
}

impl ToolEnv {
    /// Validates `config` and builds the shared environment.
    pub fn new(config: ToolsConfig) -> Result<Self, ToolsConfigError> {
        let workspace =
            Workspace::new(&config.workspace_root, &config.spill_dir).map_err(|source| {
                ToolsConfigError::WorkspaceRoot {
                    path: config.workspace_root.clone(),
                    source,
                }
            })?;
        let limits = config.limits;
        if limits.bash_timeout_default.is_zero()
            || limits.bash_timeout_default > limits.bash_timeout_max
        {
            return Err(ToolsConfigError::Limits(format!(
                "bash timeout default {:?} must be non-zero and at most the maximum {:?}",
                limits.bash_timeout_default, limits.bash_timeout_max
            )));
        }
        let counts = [
            ("read_default_lines", limits.read_default_lines),
            ("read_max_line_chars", limits.read_max_line_chars),
            ("read_max_page_bytes", limits.read_max_page_bytes),
            ("bash_memory_cap_bytes", limits.bash_memory_cap_bytes),
            ("grep_max_matches", limits.grep_max_matches),
            ("glob_max_paths", limits.glob_max_paths),
            ("ls_max_entries", limits.ls_max_entries),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, value)| *value == 0) {
            return Err(ToolsConfigError::Limits(format!("{name} must be non-zero")));
        }
        let capture = Capture::new(
            SpillDir::new(workspace.spill_dir().to_path_buf()),
            config.squash,
        )
        .with_whole_max_bytes(limits.squash_whole_max_bytes);
        Ok(Self {
            workspace,
            permissions: Arc::new(PermissionPolicy::new(config.mode, config.approver)),
            capture,
            limits,
            bash_env_exclude: config.bash_env_exclude,
            sandbox: Sandbox::new(config.sandbox),
            images: config.images,
            files: config.files,
            terminal: config.terminal,
            changes: config.changes,
        })
    }
}
