//! What a tool is about to do, as the policy sees it, and what an "allow for this
//! session" answer to it covers.

use serde::{Deserialize, Serialize};

/// What a tool is about to do, as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Read a path outside the workspace and the spill directory.
    ReadOutside {
        /// Tool name.
        tool: String,
        /// The resolved path.
        path: String,
    },
    /// Create or change a file inside the workspace.
    Edit {
        /// Tool name.
        tool: String,
        /// Short description of the change (path and size).
        summary: String,
        /// The change as a short diff, for the user to review.
        preview: Option<String>,
    },
    /// Run a shell command.
    Execute {
        /// The exact command line.
        command: String,
    },
    /// Run a command the sandbox denied once more, without the sandbox (the escalation
    /// path, see [`crate::sandbox`]). Never granted for the session.
    RunUnsandboxed {
        /// The exact command line.
        command: String,
        /// What the sandbox denied, for the user to judge.
        reason: String,
    },
    /// Call a tool pith does not implement (an MCP server's tool).
    External {
        /// The tool's name as the model calls it (`mcp__server__tool`).
        tool: String,
        /// Short description of the call (its arguments, shortened).
        summary: String,
        /// The tool's server marks it read-only (`readOnlyHint`). A hint from the server,
        /// not a guarantee.
        read_only_hint: bool,
        /// What runs without asking in `auto-edit` and `full` mode; `None` follows the
        /// mode's default.
        auto_approve: Option<AutoApprove>,
    },
}

/// Which external tools of a server run without asking in `auto-edit` and `full` mode
/// (`ask` mode always asks; `read-only` mode runs only tools marked read-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AutoApprove {
    /// Every call asks.
    #[serde(rename = "none")]
    None,
    /// Tools the server marks read-only run; the others ask. The default in `auto-edit`.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// Every tool runs. The default in `full`.
    #[serde(rename = "all")]
    All,
}

impl Action {
    pub(super) fn tool(&self) -> &str {
        match self {
            Self::ReadOutside { tool, .. }
            | Self::Edit { tool, .. }
            | Self::External { tool, .. } => tool,
            Self::Execute { .. } | Self::RunUnsandboxed { .. } => "bash",
        }
    }

    pub(super) fn summary(&self) -> String {
        match self {
            Self::ReadOutside { path, .. } => format!("read outside the workspace: {path}"),
            Self::Edit { summary, .. } => summary.clone(),
            Self::Execute { command } => format!("run: {command}"),
            Self::RunUnsandboxed { command, .. } => {
                format!("run once without the sandbox: {command}")
            }
            Self::External { tool, summary, .. } => format!("call {tool}: {summary}"),
        }
    }

    /// What "allow for this session" covers; `None` when the action is never granted
    /// beyond this call.
    pub(super) fn grant(&self) -> Option<Grant> {
        match self {
            Self::ReadOutside { .. } => Some(Grant::OutsideReads),
            Self::Edit { .. } => Some(Grant::AllEdits),
            Self::Execute { command } => Some(Grant::Command(command.clone())),
            Self::External { tool, .. } => Some(Grant::Tool(tool.clone())),
            Self::RunUnsandboxed { .. } => None,
        }
    }

    pub(super) fn details(&self) -> Option<String> {
        match self {
            Self::Edit { preview, .. } => preview.clone(),
            Self::RunUnsandboxed { reason, .. } => Some(format!(
                "{reason}\nWithout the sandbox the command can write anywhere you can, read \
                 your keys and use the network."
            )),
            Self::ReadOutside { .. } | Self::Execute { .. } | Self::External { .. } => None,
        }
    }
}

/// How [`super::PermissionRequest::session_scope`] reads for an action never granted beyond one
/// call.
pub(super) const ONE_CALL_ONLY: &str =
    "this run only (running without the sandbox is asked every time)";

/// What an "allow for this session" answer covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Grant {
    OutsideReads,
    AllEdits,
    Command(String),
    Tool(String),
}

impl Grant {
    pub(super) fn describe(&self) -> String {
        match self {
            Self::OutsideReads => "all reads outside the workspace".to_owned(),
            Self::AllEdits => "all file writes and edits inside the workspace".to_owned(),
            Self::Command(command) => format!("this exact command: {command}"),
            Self::Tool(tool) => format!("every call of {tool}"),
        }
    }
}
