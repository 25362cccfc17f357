//! What the command line asks for, before anything is resolved.

use std::path::PathBuf;

use pith_tools::{PermissionMode, SandboxMode};

/// Which session a conversation opens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SessionChoice {
    /// A new session.
    #[default]
    New,
    /// The latest session of this project (`pith --continue`); a new one when there is
    /// none.
    Latest,
    /// A given session: id, unique id prefix, directory or transcript path
    /// (`pith --resume`, `pith run --session`).
    Resume(String),
    /// A new session that starts with a copy of a given session's history (`session/fork`
    /// of `pith acp`, see [`pith_session::SessionStore::fork`]); the source goes on
    /// unchanged.
    Fork(String),
    /// A new session that starts with a given session's history up to just before its
    /// turn `turn` (1-based), and goes its own way from there (`pith run --fork
    /// SESSION@TURN`); the source goes on unchanged.
    ForkAt {
        /// The source: id, unique id prefix, directory or transcript path.
        query: String,
        /// The turn the fork replaces (its history stops just before it).
        turn: u64,
    },
}

/// The command line's choices, as plain values. [`crate::Settings::resolve`] turns them,
/// with the configuration files and the defaults, into the settings a conversation runs
/// with; nothing else reads them.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--model provider/model`.
    pub model: Option<String>,
    /// `--compaction-model provider/model`: the model summaries are requested from;
    /// `None` takes `[context] compaction_model`.
    pub compaction_model: Option<String>,
    /// `--context-window`.
    pub context_window: Option<u64>,
    /// `--approval`; `None` takes the configuration's `approval`, else `ask`.
    pub approval: Option<PermissionMode>,
    /// `--no-auto-compact`.
    pub no_auto_compact: bool,
    /// `--max-turns`: most model requests per user turn.
    pub max_turns: Option<u32>,
    /// `--max-cost USD`: most dollars the conversation may spend; `None` takes
    /// `[limits] max_cost`.
    pub max_cost: Option<f64>,
    /// `--max-duration SECONDS`: longest a turn (a `pith run` job) may take; `None` takes
    /// `[limits] max_duration_s`.
    pub max_duration: Option<std::time::Duration>,
    /// `--sandbox MODE`; `None` takes the configuration's `sandbox`, else the approval
    /// mode's default.
    pub sandbox: Option<SandboxMode>,
    /// `--allow-network`: sandboxed commands may reach the network.
    pub allow_network: bool,
    /// `--reasoning low|medium|high|off|TOKENS`; `None` takes the model's
    /// `reasoning =` in config, else none.
    pub reasoning: Option<pith_providers::wire::ReasoningEffort>,
    /// Which session to open.
    pub session: SessionChoice,
    /// The workspace (`--cwd`, else the current directory).
    pub cwd: PathBuf,
    /// `pith run --trust-project`: use the project's `.mcp.json` for this conversation
    /// even if the user has not trusted it (nothing is recorded).
    pub trust_project: bool,
    /// MCP servers the front-end adds to the configured ones (an editor's, passed over
    /// ACP in `session/new`). They are trusted like the user's configuration (the user
    /// set them up in the front-end) and replace a configured server of the same name.
    pub extra_mcp_servers: Vec<pith_mcp::ServerConfig>,
}
