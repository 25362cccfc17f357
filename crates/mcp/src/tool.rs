//! An MCP server's tool as a `pith_core::Tool`: arguments checked, the permission policy
//! asked, the call made within the server's timeout, and the result rendered
//! ([`crate::result`]) and captured like a built-in tool's (squash, spill, marker).

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{Tool, ToolContext, ToolError, ToolOutput};
use pith_tools::RawOutput;
use pith_tools::{Action, ToolEnv};
use serde_json::Value;

use crate::server::{CallError, McpServer};

/// Longest description advertised for one tool (longer ones are cut with `…`).
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Characters of the arguments shown in a permission question.
const SUMMARY_CHARS: usize = 200;

/// What the model sees of one MCP tool: name, description, schema and hint.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// The model's name (`mcp__SERVER__TOOL`, see [`crate::names`]).
    pub name: String,
    /// The server's own name for it.
    pub remote: String,
    /// The description (cut at [`MAX_DESCRIPTION_CHARS`]).
    pub description: String,
    /// The checked input schema ([`crate::schema::normalize`]).
    pub parameters: Value,
    /// The server marks it read-only (`readOnlyHint`).
    pub read_only_hint: bool,
}

/// One MCP tool bound to its server and the session's tool environment.
pub struct McpTool {
    spec: ToolSpec,
    server: Arc<McpServer>,
    env: Arc<ToolEnv>,
}

pith_core::debug_fields!(McpTool |this| {
    name: this.spec.name,
});

impl McpTool {
    /// `spec` of `server`, captured and authorized through `env`.
    pub fn new(spec: ToolSpec, server: Arc<McpServer>, env: Arc<ToolEnv>) -> Self {
        Self { spec, server, env }
    }
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn parameters(&self) -> Value {
        self.spec.parameters.clone()
    }

    /// The server's `readOnlyHint`: a hint, trusted for concurrency, dedup and read-only
    /// mode (see docs/mcp.md).
    fn read_only(&self) -> bool {
        self.spec.read_only_hint
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match arguments {
            Value::Object(map) => map,
            // Models often send nothing for a tool without parameters.
            Value::Null => serde_json::Map::new(),
            Value::String(text) if text.trim().is_empty() => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "arguments must be a JSON object, got {}",
                    match other {
                        Value::String(_) => "a string (was the JSON malformed?)",
                        Value::Array(_) => "an array",
                        _ => "a scalar",
                    }
                )))
            }
        };
        let summary = shorten(&Value::Object(arguments.clone()).to_string(), SUMMARY_CHARS);
        self.env
            .permissions
            .authorize_call(
                Action::External {
                    tool: self.spec.name.clone(),
                    summary,
                    read_only_hint: self.spec.read_only_hint,
                    auto_approve: self.server.config().auto_approve,
                },
                ctx,
            )
            .await?;
        let result = self
            .server
            .call(&self.spec.remote, arguments, &ctx.cancel)
            .await
            .map_err(|error| match error {
                CallError::Cancelled => ToolError::Cancelled,
                other => ToolError::Failed(other.to_string()),
            })?;
        let (text, is_error) = crate::result::render(&result);
        let content = self
            .env
            .capture
            .finish(&ctx.call_id, RawOutput::plain(&self.spec.name, &text));
        Ok(ToolOutput {
            content,
            is_error,
            effects: Vec::new(),
            images: Vec::new(),
            child: None,
        })
    }
}

/// `text` cut to `max` characters, with `…` when cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
