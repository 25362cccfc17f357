//! The `task` tool of a child at the depth limit: never advertised (the child's model is
//! not told about subagents), and a call to it is refused with the reason.

use async_trait::async_trait;
use pith_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde_json::{json, Value};

use crate::subagents::task::TASK_TOOL;

/// Refuses every call: subagents at the depth limit cannot start subagents.
#[derive(Debug, Clone, Copy)]
pub struct DepthLimit {
    /// The configured limit (`[agents] max_depth`).
    pub max_depth: u32,
}

#[async_trait]
impl Tool for DepthLimit {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn description(&self) -> &str {
        "Not available to a subagent at the depth limit."
    }

    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, _arguments: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::Denied(format!(
            "a subagent cannot start subagents (depth limit {}); do the work with your own tools",
            self.max_depth
        )))
    }
}
