//! The stream-json lines of a headless job (docs/headless.md); the result object they
//! end with is pith-agent's [`pith_agent::RunReport`].

use pith_agent::{auto_compaction_line, plan_line, typed_line, RequestEntry};
use pith_core::events::MicroReason;
use pith_core::{LoopEvent, Role};
use serde_json::{json, Value};

/// Characters of a tool result shown in a stream-json `tool_result` event.
pub const RESULT_PREVIEW_CHARS: usize = 500;

/// Stream-json event for the start of the job.
pub fn session_started(session_id: &str, model: &str, cwd: &str, resumed: bool) -> Value {
    json!({"type": "session_started", "session_id": session_id, "model": model, "cwd": cwd, "resumed": resumed})
}

/// The stream-json line for one loop event, or `None` for events stream-json does not
/// carry (usage, request starts; deltas unless `include_partial`).
pub fn stream_event(event: &LoopEvent, include_partial: bool) -> Option<Value> {
    Some(match event {
        LoopEvent::TextDelta(text) if include_partial => {
            json!({"type": "text_delta", "text": text})
        }
        LoopEvent::ReasoningDelta(text) if include_partial => {
            json!({"type": "reasoning_delta", "text": text})
        }
        LoopEvent::ToolCallStarted(call) => {
            json!({"type": "tool_started", "call_id": call.id, "name": call.name, "arguments": call.arguments})
        }
        LoopEvent::RequestFinished(report) => typed_line("request", RequestEntry::from(report))?,
        LoopEvent::Hook(run) => typed_line("hook", run)?,
        LoopEvent::MessageAppended(message) if message.role == Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
            json!({"type": "assistant", "text": message.text_content(), "tool_calls": calls})
        }
        LoopEvent::ToolCallFinished { call, result } => {
            let preview: String = result.content.chars().take(RESULT_PREVIEW_CHARS).collect();
            let mut value = json!({"type": "tool_result", "call_id": result.call_id, "name": call.name,
                   "is_error": result.is_error, "bytes": result.content.len(), "preview": preview});
            if let Some(child) = &result.child_session {
                value["child_session"] = Value::from(child.session_id.clone());
            }
            value
        }
        LoopEvent::Subagent(child) => {
            let mut value = stream_event(&child.event, include_partial)?;
            // A grandchild's event keeps its own (innermost) parent.
            if value.get("parent").is_none() {
                value["parent"] = json!({"call_id": child.call_id, "agent": child.agent,
                                         "session_id": child.session_id});
            }
            value
        }
        LoopEvent::AutoCompaction(lifecycle) => auto_compaction_line(lifecycle),
        LoopEvent::MicroCompaction(step) => {
            let trigger = match step.reason {
                MicroReason::Prune => "micro",
                MicroReason::Overflow => "overflow",
            };
            json!({"type": "compaction", "trigger": trigger, "tokens_before": step.tokens_before,
                   "tokens_after": step.tokens_after, "duration_ms": step.duration_ms})
        }
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => json!({"type": "retry", "attempt": attempt, "delay_ms": delay_ms, "reason": reason}),
        LoopEvent::Notice(text) => json!({"type": "notice", "text": text}),
        LoopEvent::Governor(notice) => {
            with_fields(json!({"type": "governor", "text": notice.text()}), notice)
        }
        LoopEvent::OutputTruncated { reason } => json!({"type": "truncated", "reason": reason}),
        LoopEvent::PlanUpdated(plan) => plan_line(plan)?,
        LoopEvent::Checkpoint(summary) => with_fields(json!({"type": "checkpoint"}), summary),
        _ => return None,
    })
}

/// `line` with the fields `value` serialises to added.
fn with_fields(mut line: Value, value: &impl serde::Serialize) -> Value {
    if let (Value::Object(line), Ok(Value::Object(fields))) =
        (&mut line, serde_json::to_value(value))
    {
        line.extend(fields);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_agent::{CompactionCost, CompactionReport, RunReport};
    use pith_core::context::{GovernorNotice, PauseReason};
    use pith_core::events::{MicroCompaction, MicroReason};
    use pith_core::{AutoCompaction, CompactionFigures};
    use pith_core::{ChildRun, RequestPurpose, RequestReport, Usage};
    use pith_core::{
        HookEvent, HookOutcome, HookRun, Message, SubagentEvent, ToolCall, ToolResult,
    };
    use tokio_util::sync::CancellationToken;

    const SCHEMA: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/stream-json.schema.json"
    ));

    fn compile() -> (boon::Schemas, boon::SchemaIndex) {
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        let url = schema["$id"].as_str().unwrap().to_owned();
        let mut schemas = boon::Schemas::new();
        let mut compiler = boon::Compiler::new();
        compiler.add_resource(&url, schema).unwrap();
        let index = compiler.compile(&url, &mut schemas).unwrap();
        (schemas, index)
    }

    /// Every line stream-json can print, one of each kind, checked against the schema,
    /// and every kind the schema names is among them.
    #[test]
    #[allow(clippy::too_many_lines)] // one event of each kind, listed
    fn every_event_kind_matches_the_documented_schema() {
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
        };
        let report = RequestReport {
            id: 1,
            purpose: RequestPurpose::Turn,
            protocol: "anthropic".into(),
            model: "claude".into(),
            usage: Usage {
                input_tokens: 10,
                cached_input_tokens: 2,
                cache_write_tokens: 0,
                output_tokens: 3,
                reasoning_tokens: 1,
                provider_cost_nanousd: 5_000,
            },
            usage_reported: true,
            duration_ms: 12,
            retries: 1,
            error: None,
            compaction_model: None,
        };
        let run = HookRun {
            event: HookEvent::PreToolUse,
            matcher: Some("bash".into()),
            command: "guard.sh".into(),
            outcome: HookOutcome::Block,
            exit_code: Some(2),
            duration_ms: 4,
            decision: None,
            message: Some("no".into()),
            stdout: String::new(),
            stderr: "no\n".into(),
        };
        let child = ChildRun {
            session_id: "child".into(),
            agent: "explore".into(),
            model: "anthropic/claude".into(),
            usage: report.usage,
            requests: 2,
            tool_calls: 3,
        };
        let events = vec![
            LoopEvent::TextDelta("He".into()),
            LoopEvent::ReasoningDelta("think".into()),
            LoopEvent::MessageAppended(Message::assistant("Hello")),
            LoopEvent::ToolCallStarted(call.clone()),
            LoopEvent::ToolCallFinished {
                call: call.clone(),
                result: ToolResult::new("c1", "out", false),
            },
            LoopEvent::RequestFinished(report.clone()),
            LoopEvent::RequestFinished(RequestReport {
                purpose: RequestPurpose::Compaction,
                usage_reported: false,
                error: Some("cancelled".into()),
                ..report.clone()
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Started {
                cancel: CancellationToken::new(),
                tokens_before: 171_000,
                background: true,
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Applied {
                replacement: Vec::new(),
                summary: "S".into(),
                usage: None,
                figures: CompactionFigures {
                    tokens_before: 171_000,
                    tokens_after: 900,
                    ledger_tokens: 400,
                    duration_ms: 1500,
                    waited_ms: 40,
                },
            }),
            LoopEvent::MicroCompaction(MicroCompaction {
                reason: MicroReason::Prune,
                replacement: Vec::new(),
                tokens_reclaimed: 5,
                tokens_before: 10,
                tokens_after: 5,
                duration_ms: 0,
            }),
            LoopEvent::MicroCompaction(MicroCompaction {
                reason: MicroReason::Overflow,
                replacement: Vec::new(),
                tokens_reclaimed: 9_000,
                tokens_before: 30_000,
                tokens_after: 21_000,
                duration_ms: 0,
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Cancelled),
            LoopEvent::AutoCompaction(AutoCompaction::Unused {
                reason: "the session stopped before it was needed".into(),
                usage: report.usage,
                model: None,
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Failed {
                reason: "disk full".into(),
            }),
            LoopEvent::Governor(GovernorNotice::Paused {
                reason: PauseReason::FreedTooLittle { freed: 1_000 },
                tokens: 26_000,
                until_tokens: 28_790,
            }),
            LoopEvent::Governor(GovernorNotice::Paused {
                reason: PauseReason::Failed {
                    detail: "HTTP 500".into(),
                },
                tokens: 26_000,
                until_tokens: 28_790,
            }),
            LoopEvent::Governor(GovernorNotice::CeilingReached {
                attempts: 2,
                until_tokens: 40_000,
            }),
            LoopEvent::Governor(GovernorNotice::UsageUnresponsive {
                reported: 30_000,
                counted_before: 16_000,
                counted_after: 6_000,
            }),
            LoopEvent::Governor(GovernorNotice::UsageImplausible {
                reported: 100,
                counted: 3_000,
            }),
            LoopEvent::Retrying {
                attempt: 1,
                delay_ms: 500,
                reason: "HTTP 529".into(),
            },
            LoopEvent::Notice("trimmed".into()),
            LoopEvent::PlanUpdated(
                pith_core::Plan::from_arguments(&json!({"steps": [
                    {"step": "read", "status": "done", "note": "found it"},
                    {"step": "fix", "status": "in_progress"},
                ]}))
                .unwrap(),
            ),
            LoopEvent::PlanUpdated(pith_core::Plan::default()),
            LoopEvent::Checkpoint(pith_core::CheckpointSummary {
                id: "7".into(),
                call_id: Some("c1".into()),
                files: vec!["src/lib.rs".into()],
                bytes: 120,
                store_bytes: 4096,
                omitted: vec!["big.bin".into()],
            }),
            LoopEvent::Checkpoint(pith_core::CheckpointSummary::default()),
            LoopEvent::OutputTruncated {
                reason: "output cap".into(),
            },
            LoopEvent::Hook(run.clone()),
            LoopEvent::Hook(HookRun {
                matcher: None,
                exit_code: None,
                outcome: HookOutcome::Timeout,
                ..run
            }),
            LoopEvent::ToolCallFinished {
                call: ToolCall {
                    name: "task".into(),
                    ..call.clone()
                },
                result: ToolResult {
                    child_session: Some(child.clone()),
                    ..ToolResult::new("c1", "report", false)
                },
            },
            LoopEvent::Subagent(SubagentEvent {
                call_id: "c1".into(),
                agent: "explore".into(),
                session_id: "child".into(),
                event: Box::new(LoopEvent::ToolCallStarted(call.clone())),
            }),
            LoopEvent::Subagent(SubagentEvent {
                call_id: "c1".into(),
                agent: "explore".into(),
                session_id: "child".into(),
                event: Box::new(LoopEvent::TextDelta("Found".into())),
            }),
        ];
        let mut lines: Vec<Value> = events
            .iter()
            .filter_map(|event| stream_event(event, true))
            .collect();
        lines.push(session_started("s", "anthropic/claude", "/w", false));
        let result = RunReport {
            session_id: "s".into(),
            model: "anthropic/claude".into(),
            text: "Hello".into(),
            turns: 1,
            usage: report.usage,
            cost: Some(0.01),
            session: pith_agent::SpendReport {
                usage: report.usage,
                cost: Some(0.03),
                cache_hit_rate: Some(0.5),
            },
            reasoning_cost: Some(0.002),
            compactions: vec![CompactionReport {
                trigger: "auto",
                tokens_before: 171_000,
                tokens_after: 900,
                ledger_tokens: 400,
            }],
            compaction: CompactionCost {
                totals: pith_agent::CompactionTotals {
                    llm_attempts: 2,
                    applied: 1,
                    failed: 1,
                    summary_requests: 2,
                    usage: report.usage,
                    prepared: 1,
                    unused: 1,
                    unused_usage: report.usage,
                    ..Default::default()
                },
                cost: Some(0.004),
                unused_cost: Some(0.001),
                compaction_model: None,
            },
            requests: vec![RequestEntry::from(&report)],
            children: vec![child],
            structured_output: Some(json!({"verdict": "pass"})),
            error: None,
        };
        let mut result = serde_json::to_value(&result).unwrap();
        result["type"] = Value::from("result");
        lines.push(result);

        let (schemas, index) = compile();
        for line in &lines {
            if let Err(error) = schemas.validate(line, index) {
                panic!("{line} does not match the schema: {error:#}");
            }
        }
        let schema: Value = serde_json::from_str(SCHEMA).unwrap();
        for kind in schema["oneOf"].as_array().unwrap() {
            let name = kind["$ref"]
                .as_str()
                .unwrap()
                .trim_start_matches("#/$defs/");
            assert!(
                lines.iter().any(|l| l["type"] == name),
                "no line of kind {name} was checked"
            );
        }
        let nested: Vec<&Value> = lines.iter().filter(|l| l.get("parent").is_some()).collect();
        assert_eq!(nested.len(), 2, "a subagent's events carry their parent");
        assert_eq!(nested[0]["parent"]["session_id"], "child");
        assert!(lines.iter().any(|l| l["child_session"] == "child"));
        // Deltas are only carried with --include-partial.
        assert!(stream_event(&LoopEvent::TextDelta("x".into()), false).is_none());
        // A line with a field the schema does not know is rejected: the schema is strict.
        let mut extra = lines[0].clone();
        extra["surprise"] = Value::from(1);
        assert!(schemas.validate(&extra, index).is_err());
    }
}
