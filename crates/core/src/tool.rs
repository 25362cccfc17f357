//! The tool trait and the registry the tool loop executes calls through.
//!
//! Execution model: the loop receives tool calls from the model, and for each one calls
//! [`ToolRegistry::execute`], which looks the tool up, runs it with the call's arguments
//! and a [`ToolContext`], and always returns a [`ToolResult`] for the model — unknown
//! tools, invalid arguments, refusals and failures become error results, never panics or
//! loop errors. During compaction the loop swaps in [`ToolRegistry::denying`], which keeps
//! the same definitions (prompt-cache parity) but answers every call with
//! [`TOOLS_DISABLED_DURING_COMPACTION`] without running anything.

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::message::{Image, ToolCall, ToolResult};
pub use crate::prompts::TOOLS_DISABLED_DURING_COMPACTION;

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
}

/// What a tool produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// Text for the model.
    pub content: String,
    /// True when the outcome should be presented as an error (e.g. non-zero exit code).
    pub is_error: bool,
    /// Images for the model (`read` of a screenshot), after the text. They join the tool
    /// message as [`crate::Part::Image`]s right after its result.
    pub images: Vec<Image>,
}

impl ToolOutput {
    /// A successful output.
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// An output the model should read as an error.
    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
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

/// The set of tools available to a loop, in advertisement order.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    deny_all: bool,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("deny_all", &self.deny_all)
            .finish()
    }
}

impl ToolRegistry {
    /// A registry of `tools`. A later tool with the same name replaces an earlier one.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let mut registry = Self::default();
        for tool in tools {
            registry.register(tool);
        }
        registry
    }

    /// Adds (or replaces, by name) a tool.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        if let Some(slot) = self.tools.iter_mut().find(|t| t.name() == tool.name()) {
            *slot = tool;
        } else {
            self.tools.push(tool);
        }
    }

    /// The same tools, but every call is refused with
    /// [`TOOLS_DISABLED_DURING_COMPACTION`]; nothing runs and no permission is asked.
    pub fn denying(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            deny_all: true,
        }
    }

    /// True for a registry made by [`ToolRegistry::denying`].
    pub fn is_denying(&self) -> bool {
        self.deny_all
    }

    /// Definitions to advertise, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.definition()).collect()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// True when `name` is a registered read-only tool. This is the single source of the
    /// read-only tool set (used by dedup and by concurrent execution).
    pub fn is_read_only(&self, name: &str) -> bool {
        self.get(name).is_some_and(|t| t.read_only())
    }

    /// Names of the registered read-only tools.
    pub fn read_only_names(&self) -> BTreeSet<String> {
        self.tools
            .iter()
            .filter(|t| t.read_only())
            .map(|t| t.name().to_owned())
            .collect()
    }

    /// Executes `call` and returns the result the model will see. Never fails: every
    /// problem becomes an error result. Images the tool returned are dropped (see
    /// [`ToolRegistry::execute_with_images`]).
    pub async fn execute(&self, call: &ToolCall, cancel: &CancellationToken) -> ToolResult {
        self.execute_with_images(call, cancel).await.0
    }

    /// [`ToolRegistry::execute`], with the images the tool returned.
    pub async fn execute_with_images(
        &self,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> (ToolResult, Vec<Image>) {
        let result = |content: String, is_error: bool| {
            (
                ToolResult {
                    call_id: call.id.clone(),
                    content,
                    is_error,
                },
                Vec::new(),
            )
        };
        if self.deny_all {
            return result(TOOLS_DISABLED_DURING_COMPACTION.to_owned(), true);
        }
        let Some(tool) = self.get(&call.name) else {
            let known: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            return result(
                format!(
                    "unknown tool `{}`; available tools: {}",
                    call.name,
                    known.join(", ")
                ),
                true,
            );
        };
        if cancel.is_cancelled() {
            return result(ToolError::Cancelled.to_string(), true);
        }
        let ctx = ToolContext {
            cancel: cancel.clone(),
            call_id: call.id.clone(),
        };
        match tool.run(call.arguments.clone(), &ctx).await {
            Ok(output) => {
                let (result, _) = result(output.content, output.is_error);
                (result, output.images)
            }
            Err(err) => result(err.to_string(), true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Echo {
        runs: AtomicUsize,
    }

    #[async_trait]
    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn description(&self) -> &str {
            "Echo the text argument"
        }
        fn parameters(&self) -> serde_json::Value {
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
        }
        fn read_only(&self) -> bool {
            true
        }
        async fn run(
            &self,
            arguments: serde_json::Value,
            _ctx: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            self.runs.fetch_add(1, Ordering::SeqCst);
            match arguments.get("text").and_then(|t| t.as_str()) {
                Some(text) => Ok(ToolOutput::ok(text)),
                None => Err(ToolError::InvalidArguments(
                    "`text` must be a string".into(),
                )),
            }
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[tokio::test]
    async fn executes_a_registered_tool() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let result = registry
            .execute(
                &call("echo", json!({"text": "hi"})),
                &CancellationToken::new(),
            )
            .await;
        assert_eq!(
            result,
            ToolResult {
                call_id: "call_1".into(),
                content: "hi".into(),
                is_error: false
            }
        );
        assert_eq!(echo.runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn bad_arguments_and_unknown_tools_become_error_results() {
        let registry = ToolRegistry::new(vec![Arc::new(Echo {
            runs: AtomicUsize::new(0),
        })]);
        let cancel = CancellationToken::new();
        let bad = registry
            .execute(&call("echo", json!({"text": 3})), &cancel)
            .await;
        assert!(bad.is_error);
        assert!(bad.content.contains("invalid arguments"));
        let unknown = registry.execute(&call("rm_rf", json!({})), &cancel).await;
        assert!(unknown.is_error);
        assert!(unknown.content.contains("unknown tool `rm_rf`"));
        assert!(unknown.content.contains("echo"));
    }

    #[tokio::test]
    async fn denying_registry_keeps_definitions_and_runs_nothing() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let denying = registry.denying();
        assert_eq!(denying.definitions(), registry.definitions());
        let result = denying
            .execute(
                &call("echo", json!({"text": "hi"})),
                &CancellationToken::new(),
            )
            .await;
        assert!(result.is_error);
        assert_eq!(
            result.content,
            "Tool calls are disabled during compaction; use the history."
        );
        let unknown = denying
            .execute(&call("anything", json!(null)), &CancellationToken::new())
            .await;
        assert_eq!(unknown.content, TOOLS_DISABLED_DURING_COMPACTION);
        assert_eq!(
            echo.runs.load(Ordering::SeqCst),
            0,
            "a denied call must not run"
        );
    }

    #[tokio::test]
    async fn a_cancelled_turn_does_not_start_tools() {
        let echo = Arc::new(Echo {
            runs: AtomicUsize::new(0),
        });
        let registry = ToolRegistry::new(vec![echo.clone()]);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = registry
            .execute(&call("echo", json!({"text": "hi"})), &cancel)
            .await;
        assert!(result.is_error);
        assert_eq!(echo.runs.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn read_only_set_comes_from_the_tools() {
        let registry = ToolRegistry::new(vec![Arc::new(Echo {
            runs: AtomicUsize::new(0),
        })]);
        assert!(registry.is_read_only("echo"));
        assert!(!registry.is_read_only("bash"));
        assert_eq!(
            registry.read_only_names().into_iter().collect::<Vec<_>>(),
            vec!["echo".to_owned()]
        );
    }
}
