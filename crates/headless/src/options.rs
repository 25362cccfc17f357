//! What a headless job is asked to do.

use std::path::PathBuf;

use pith_tools::PermissionMode;

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The final answer as plain text (pre-compaction text + post-compaction text).
    #[default]
    Text,
    /// One JSON object at the end (see docs/headless.md).
    Json,
    /// One JSON event per line while the job runs, then the result object.
    StreamJson,
}

/// The options of `pith run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The user's prompt.
    pub prompt: String,
    /// `provider/model`; default: the resumed session's model, then config, then keys.
    pub model: Option<String>,
    /// Continue this session (id, id prefix or transcript path).
    pub session: Option<String>,
    /// Output format.
    pub format: OutputFormat,
    /// Tool permissions (headless default: read-only; `ask` is not available).
    pub approval: PermissionMode,
    /// Most model requests in the job.
    pub max_turns: Option<u32>,
    /// Context window override.
    pub context_window: Option<u64>,
    /// Disables automatic compaction.
    pub no_auto_compact: bool,
    /// Workspace root.
    pub cwd: PathBuf,
}
