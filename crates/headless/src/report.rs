//! The machine-readable result and stream events of a headless job (docs/headless.md).

use pith_agent::CompactionNote;
use pith_core::{AutoCompaction, LoopEvent, Role, Usage};
use serde::Serialize;
use serde_json::{json, Value};

/// Characters of a tool result shown in a stream-json `tool_result` event.
pub const RESULT_PREVIEW_CHARS: usize = 500;

/// One compaction in the result object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionReport {
    /// `auto`, `micro` or `manual`.
    pub trigger: &'static str,
    /// Estimated tokens before.
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
}

impl From<&CompactionNote> for CompactionReport {
    fn from(note: &CompactionNote) -> Self {
        Self {
            trigger: note.kind(),
            tokens_before: note.tokens_before,
            tokens_after: note.tokens_after,
        }
    }
}

/// The result of a job: `--format json` prints it, stream-json ends with it. `usage`
/// carries `reasoning_tokens` (part of `output_tokens`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunReport {
    /// The session the job recorded into.
    pub session_id: String,
    /// `provider/model`.
    pub model: String,
    /// The final answer (pre-compaction + post-compaction text).
    pub text: String,
    /// Model requests sent for the job (compaction requests excluded).
    pub turns: u32,
    /// Usage over all requests, compaction included.
    pub usage: Usage,
    /// Cost in US dollars: what the provider reported (OpenRouter), else computed from
    /// the model's prices when they are known.
    pub cost: Option<f64>,
    /// The part of `cost` spent on reasoning tokens (at the output price), when the cost
    /// is known and the provider counted reasoning tokens.
    pub reasoning_cost: Option<f64>,
    /// Compactions applied during the job.
    pub compactions: Vec<CompactionReport>,
    /// The error that ended the job, if any.
    pub error: Option<String>,
}

/// Stream-json event for the start of the job.
pub fn session_started(session_id: &str, model: &str, cwd: &str, resumed: bool) -> Value {
    json!({"type": "session_started", "session_id": session_id, "model": model, "cwd": cwd, "resumed": resumed})
}

/// The stream-json line for one loop event, or `None` for events stream-json does not
/// carry (deltas, usage, request starts).
pub fn stream_event(event: &LoopEvent) -> Option<Value> {
    Some(match event {
        LoopEvent::MessageAppended(message) if message.role == Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect();
            json!({"type": "assistant", "text": message.text_content(), "tool_calls": calls})
        }
        LoopEvent::ToolCallFinished { call, result } => {
            let preview: String = result.content.chars().take(RESULT_PREVIEW_CHARS).collect();
            json!({"type": "tool_result", "call_id": result.call_id, "name": call.name,
                   "is_error": result.is_error, "bytes": result.content.len(), "preview": preview})
        }
        LoopEvent::AutoCompaction(AutoCompaction::Started { .. }) => {
            json!({"type": "compaction_started"})
        }
        LoopEvent::AutoCompaction(AutoCompaction::Applied {
            tokens_before,
            tokens_after,
            ..
        }) => {
            json!({"type": "compaction", "trigger": "auto", "tokens_before": tokens_before, "tokens_after": tokens_after})
        }
        LoopEvent::MicroCompaction(step) => {
            json!({"type": "compaction", "trigger": "micro", "tokens_before": step.tokens_before, "tokens_after": step.tokens_after})
        }
        LoopEvent::AutoCompaction(AutoCompaction::Cancelled) => {
            json!({"type": "compaction_cancelled"})
        }
        LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }) => {
            json!({"type": "compaction_failed", "reason": reason})
        }
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => json!({"type": "retry", "attempt": attempt, "delay_ms": delay_ms, "reason": reason}),
        LoopEvent::Notice(text) => json!({"type": "notice", "text": text}),
        LoopEvent::OutputTruncated { reason } => json!({"type": "truncated", "reason": reason}),
        _ => return None,
    })
}
