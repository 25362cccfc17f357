//! What a front-end brings besides the command line: the environment lookup and who
//! answers permission questions, and where text files are read and written (an editor's
//! buffers) instead of the disk.

use std::sync::Arc;

use pith_tools::CommandTerminal;
use pith_tools::{Approver, TextFiles};

/// Looks up environment variables (keys, base URLs, config locations). Tests pass their
/// own; the binary passes the process environment.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a front-end brings besides the command line.
#[derive(Clone)]
pub struct Frontend {
    /// Environment lookup.
    pub env: Env,
    /// Answers `ask` permission questions; `None` (headless) refuses what needs approval.
    pub approver: Option<Arc<dyn Approver>>,
    /// Where `read`, `write` and `edit` take and put text instead of the disk (`pith
    /// acp`: the editor's buffers); `None`: the disk.
    pub files: Option<Arc<dyn TextFiles>>,
    /// Where `bash` runs its commands instead of a child of pith (`pith acp`: the
    /// editor's terminals); `None`: a child.
    pub terminal: Option<Arc<dyn CommandTerminal>>,
    /// The session's change tracker, for `bash`'s file effects: set by the conversation
    /// when its checkpoints start (a subagent gets its parent's); front-ends leave it
    /// `None`.
    pub changes: Option<Arc<dyn pith_core::ChangeFeed>>,
}

impl Frontend {
    /// The process environment, no approver.
    pub fn process_env() -> Self {
        Self {
            env: Arc::new(|name: &str| std::env::var(name).ok()),
            approver: None,
            files: None,
            terminal: None,
            changes: None,
        }
    }
}
