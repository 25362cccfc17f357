//! The tool trait: what a tool is to the loop, what it gets for one call and what it
//! gives back. The registry that runs calls through tools is [`crate::registry`].

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::protocol::effect::FileEffect;
use crate::protocol::message::Image;
use crate::protocol::sink::Progress;
use crate::protocol::subagent::ChildRun;

/// A tool as advertised to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Name the model calls it by.
    #[serde(rename = "name")]
    pub name: String,
    /// What the tool does and when to use it.
    #[serde(rename = "description")]
    pub description: String,
    /// JSON Schema of the arguments object.
    #[serde(rename = "parameters")]
    pub parameters: serde_json::Value,
}

/// Per-call context handed to [`Tool::run`].
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Cancelled when the turn is cancelled; tools stop promptly and clean up (kill
    /// child processes, remove temp files).
    pub cancel: CancellationToken,
    /// The provider's id of this call (used e.g. to name spill files).
    pub call_id: String,
    /// A `PreToolUse` hook approved this call (or the user did, on a hook's request):
    /// the permission policy does not ask again. What the mode refuses stays refused.
    pub pre_approved: bool,
    /// Where the tool sends events of work it runs for the call (a child conversation's
    /// events); `None` when nobody listens.
    pub progress: Option<Progress>,
}

/// What a tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub content: String,
    /// True when the outcome should be presented as an error (e.g. non-zero exit code).
    pub is_error: bool,
    /// What the call did to files, for the session ledger (not shown to the model).
    pub effects: Vec<FileEffect>,
    /// Images for the model (`read` of a screenshot), after the text. They join the tool
    /// message as [`crate::Part::Image`]s right after its result.
    pub images: Vec<Image>,
    /// The child conversation the call ran (the `task` tool), for the result's link.
    pub child: Option<ChildRun>,
}

impl ToolOutput {
    /// A successful output.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            effects: Vec::new(),
            images: Vec::new(),
            child: None,
        }
    }

    /// An output the model should read as an error.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            effects: Vec::new(),
            images: Vec::new(),
            child: None,
        }
    }

    /// The same output with one more effect.
    pub fn with_effect(mut self, effect: FileEffect) -> Self {
        self.effects.push(effect);
        self
    }

    /// The same output, linked to the child conversation that produced it.
    pub fn with_child(mut self, child: ChildRun) -> Self {
        self.child = Some(child);
        self
    }

    /// The same output with `image` attached.
    pub fn with_image(mut self, image: Image) -> Self {
        self.images.push(image);
        self
    }
}

/// Why a tool call did not produce a normal output. Each becomes an error result.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ToolError {
    /// The arguments did not match the schema.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The permission policy or the user refused the call.
    #[error("permission denied: {0}")]
    Denied(String),
    /// The tool ran and failed.
    #[error("{0}")]
    Failed(String),
    /// The turn was cancelled while the tool ran.
    #[error("cancelled")]
    Cancelled,
}

/// A tool the model can call.
///
/// Contract: `run` must honour `ctx.cancel` at every await, must not panic on any
/// argument value, and reports problems as [`ToolError`] (turned into an error result for
/// the model). `read_only` tools must not change anything outside pith's own spill files;
/// read-only calls may run concurrently and their identical repeats may be deduplicated.
#[async_trait]
pub trait Tool: Send + Sync {
    /// Name the model calls it by.
    fn name(&self) -> &str;
    /// Description shown to the model.
    fn description(&self) -> &str;
    /// JSON Schema of the arguments.
    fn parameters(&self) -> serde_json::Value;
    /// True when the tool never modifies the workspace.
    fn read_only(&self) -> bool;
    /// True when calls of this tool may run concurrently with the consecutive calls of
    /// other such tools in one assistant message. Read-only tools by default; the `task`
    /// tool too, whose children bound their own concurrency.
    fn concurrent(&self) -> bool {
        self.read_only()
    }
    /// Runs one call.
    async fn run(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError>;

    /// The definition advertised to the model.
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.name().to_owned(),
            description: self.description().to_owned(),
            parameters: self.parameters(),
        }
    }
}
