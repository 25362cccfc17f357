//! The `update_plan` tool: the model replaces its plan, a checklist of steps. It changes
//! nothing on disk and asks for no approval (it runs in every permission mode); its
//! result is one short line. The whole plan reaches the front-end as a
//! [`LoopEvent::PlanUpdated`] sent through the call's progress handle, and the session
//! ledger carries it across compactions (both read the same checked arguments:
//! [`Plan::from_arguments`]).

use async_trait::async_trait;
use pith_core::plan::{MAX_NOTE_CHARS, MAX_STEPS, MAX_STEP_CHARS};
use pith_core::{LoopEvent, Plan, Tool, ToolContext, ToolError, ToolOutput, PLAN_TOOL};
use serde_json::{json, Value};

const DESCRIPTION: &str = "Keep a short plan for multi-step work, shown to the user as a \
checklist and kept by pith across compactions. Each call replaces the whole plan: send \
every step, in order, with its status (pending, in_progress, done) and an optional short \
note. Keep at most one step in_progress; mark a step done as soon as it is. Skip the plan \
for simple tasks of one or two steps. Send an empty list to clear it.";

/// `update_plan {steps: [{step, status, note?}]}`.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanTool;

#[async_trait]
impl Tool for PlanTool {
    fn name(&self) -> &str {
        PLAN_TOOL
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "description": "The whole plan, in order.",
                    "maxItems": MAX_STEPS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "step": {"type": "string", "description": "What the step is, in one line.", "maxLength": MAX_STEP_CHARS},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "done"]},
                            "note": {"type": "string", "description": "Optional: what was found, or why it is blocked, in one line.", "maxLength": MAX_NOTE_CHARS}
                        },
                        "required": ["step", "status"]
                    }
                }
            },
            "required": ["steps"]
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn run(&self, arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let plan = Plan::from_arguments(&arguments).map_err(ToolError::InvalidArguments)?;
        let summary = format!("Plan updated ({}).", plan.progress());
        if let Some(progress) = &ctx.progress {
            progress.send(LoopEvent::PlanUpdated(plan));
        }
        Ok(ToolOutput::ok(summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::Progress;
    use tokio_util::sync::CancellationToken;

    fn context(progress: Option<Progress>) -> ToolContext {
        ToolContext {
            cancel: CancellationToken::new(),
            call_id: "p1".into(),
            pre_approved: false,
            progress,
        }
    }

    #[tokio::test]
    async fn a_valid_plan_is_sent_whole_and_answered_in_one_line() {
        let (progress, mut events) = Progress::channel();
        let arguments = json!({"steps": [
            {"step": "read the parser", "status": "done"},
            {"step": "fix it", "status": "in_progress", "note": "depth is off by one"},
        ]});
        let output = PlanTool
            .run(arguments.clone(), &context(Some(progress)))
            .await
            .unwrap();
        assert!(!output.is_error);
        assert_eq!(
            output.content,
            "Plan updated (2 steps: 1 done, 1 in progress, 0 pending)."
        );
        match events.try_recv() {
            Ok(LoopEvent::PlanUpdated(plan)) => {
                assert_eq!(plan, Plan::from_arguments(&arguments).unwrap())
            }
            other => panic!("expected the plan, got {other:?}"),
        }
        assert!(
            output.effects.is_empty(),
            "the plan changes nothing on disk"
        );
    }

    #[tokio::test]
    async fn invalid_arguments_are_a_tool_error_and_send_nothing() {
        let (progress, mut events) = Progress::channel();
        let error = PlanTool
            .run(
                json!({"steps": [{"step": "a", "status": "later"}]}),
                &context(Some(progress)),
            )
            .await
            .unwrap_err();
        assert!(error.to_string().starts_with("invalid arguments: step 1:"));
        assert!(events.try_recv().is_err());
    }

    #[tokio::test]
    async fn it_runs_without_anyone_listening() {
        let output = PlanTool
            .run(json!({"steps": []}), &context(None))
            .await
            .unwrap();
        assert_eq!(output.content, "Plan updated (plan cleared).");
        assert!(PlanTool.read_only());
    }
}
