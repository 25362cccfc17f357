//! The `task` tool: runs a child conversation ([`crate::subagents::child`]) with one of
//! the conversation's agents and returns its final answer, squashed and spilled like any
//! tool output, with a footer naming what the child used and its session.

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{ChildRun, Tool, ToolContext, ToolError, ToolOutput};
use pith_tools::RawOutput;
use serde_json::{json, Value};

use crate::subagents::child::{ChildLauncher, ChildOutcome};
use crate::subagents::definition::EXPLORE;

/// The tool's name.
pub const TASK_TOOL: &str = "task";

/// The `task` tool of one conversation; see the module docs.
pub struct TaskTool {
    launcher: Arc<ChildLauncher>,
    description: String,
}

impl TaskTool {
    /// The tool over `launcher`, describing its agents to the model.
    pub fn new(launcher: Arc<ChildLauncher>) -> Self {
        let description = describe(&launcher);
        Self {
            launcher,
            description,
        }
    }
}

/// The tool's description: what it is for, its limits, and the agents with theirs.
fn describe(launcher: &ChildLauncher) -> String {
    let mut text = String::from(
        "Delegate a self-contained investigation or job to a subagent: a child conversation \
with its own context window and tools. Only its final answer comes back to you, so use it \
for searches and explorations that would otherwise fill your context with file contents \
and search results. Give the subagent everything it needs in `prompt` (it does not see \
this conversation) and say what the answer should contain. Several `task` calls in one \
message run in parallel",
    );
    text.push_str(&format!(
        " (at most {} at a time). A subagent cannot start subagents.\n\nAgents (`agent`, \
default `{EXPLORE}`):",
        launcher.limits().max_parallel
    ));
    for agent in launcher.agents().all() {
        let tools = if agent.read_only() {
            "read-only".to_owned()
        } else {
            agent.tools.join(", ")
        };
        text.push_str(&format!(
            "\n- {}: {} (tools: {tools})",
            agent.name, agent.description
        ));
    }
    text
}

#[async_trait]
impl Tool for TaskTool {
    fn name(&self) -> &str {
        TASK_TOOL
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        let names: Vec<&str> = self.launcher.agents().names();
        json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A short (3-5 words) description of the task, shown to the user."
                },
                "prompt": {
                    "type": "string",
                    "description": "The task for the subagent: everything it needs to know, and what its answer should contain."
                },
                "agent": {
                    "type": "string",
                    "enum": names,
                    "description": format!("Which agent runs it (default `{EXPLORE}`).")
                }
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        // A child may run an agent that writes; its results are never deduplicated.
        false
    }

    fn concurrent(&self) -> bool {
        true
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let request = TaskRequest::parse(&arguments)?;
        let agent = self
            .launcher
            .agents()
            .get(&request.agent)
            .cloned()
            .ok_or_else(|| {
                ToolError::InvalidArguments(format!(
                    "no agent `{}`; the agents are: {}",
                    request.agent,
                    self.launcher.agents().names().join(", ")
                ))
            })?;
        let outcome = self
            .launcher
            .run(&agent, &request.prompt, &request.description, ctx)
            .await?;
        Ok(self.output(&ctx.call_id, outcome))
    }
}

impl TaskTool {
    /// The result for the parent: the answer (squashed, spilled when large) or the
    /// failure, then the footer; linked to the child's session.
    fn output(&self, call_id: &str, outcome: ChildOutcome) -> ToolOutput {
        let footer = footer(&outcome.run);
        let (body, is_error) = match &outcome.error {
            None if outcome.text.trim().is_empty() => {
                ("(the subagent gave no answer)".to_owned(), false)
            }
            None => (outcome.text.clone(), false),
            Some(error) if outcome.text.trim().is_empty() => {
                (format!("The subagent failed: {error}"), true)
            }
            Some(error) => (
                format!(
                    "The subagent failed: {error}\nWhat it said before:\n{}",
                    outcome.text
                ),
                true,
            ),
        };
        let content = self
            .launcher
            .capture()
            .finish(call_id, RawOutput::plain(TASK_TOOL, &body));
        let output = if is_error {
            ToolOutput::error(format!("{content}\n\n{footer}"))
        } else {
            ToolOutput::ok(format!("{content}\n\n{footer}"))
        };
        output.with_child(outcome.run)
    }
}

/// `[subagent explore · 3 requests · 12 tool calls · 8,410 tokens · session 0193…]`.
pub fn footer(run: &ChildRun) -> String {
    let tokens = run.usage.input_tokens + run.usage.output_tokens;
    format!(
        "[subagent {} · {} · {} · {} tokens · session {}]",
        run.agent,
        plural(run.requests, "request"),
        plural(run.tool_calls, "tool call"),
        pith_core::thousands(tokens),
        run.session_id
    )
}

fn plural(count: u32, what: &str) -> String {
    if count == 1 {
        format!("1 {what}")
    } else {
        format!("{count} {what}s")
    }
}

/// The arguments of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TaskRequest {
    description: String,
    prompt: String,
    agent: String,
}

impl TaskRequest {
    fn parse(arguments: &Value) -> Result<Self, ToolError> {
        let text = |key: &str| -> Result<Option<String>, ToolError> {
            match arguments.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(_) => Err(ToolError::InvalidArguments(format!(
                    "`{key}` must be a string"
                ))),
            }
        };
        if !arguments.is_object() {
            return Err(ToolError::InvalidArguments(
                "the arguments must be an object with `description` and `prompt`".into(),
            ));
        }
        let prompt = text("prompt")?
            .filter(|p| !p.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`prompt` is required".into()))?;
        let description = text("description")?.unwrap_or_default();
        let agent = text("agent")?
            .filter(|a| !a.trim().is_empty())
            .unwrap_or_else(|| EXPLORE.to_owned());
        Ok(Self {
            description,
            prompt,
            agent,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_need_a_prompt_and_default_to_explore() {
        let request =
            TaskRequest::parse(&json!({"description": "find x", "prompt": "Where is x?"})).unwrap();
        assert_eq!(request.agent, "explore");
        assert_eq!(request.prompt, "Where is x?");
        for bad in [
            json!({"description": "d"}),
            json!({"prompt": "  "}),
            json!({"prompt": 3}),
            json!("prompt"),
        ] {
            assert!(
                matches!(
                    TaskRequest::parse(&bad),
                    Err(ToolError::InvalidArguments(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_footer_names_usage_calls_and_the_session() {
        let run = ChildRun {
            session_id: "0193-abc".into(),
            agent: "explore".into(),
            model: "p/m".into(),
            usage: pith_core::Usage {
                input_tokens: 8000,
                output_tokens: 410,
                ..Default::default()
            },
            requests: 3,
            tool_calls: 1,
        };
        assert_eq!(
            footer(&run),
            "[subagent explore · 3 requests · 1 tool call · 8,410 tokens · session 0193-abc]"
        );
    }
}
