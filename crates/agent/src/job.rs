//! A job: one prompt run to its end without anyone to ask (`pith run`). [`open`] opens
//! its conversation (with its output schema); [`RunReport::of`] is what it did, as a
//! front-end reports it (`--format json`, and the last line of stream-json; see
//! docs/headless.md) — the answer, usage and cost (subagents included), compactions,
//! every request, the subagents, the structured output and the error.

use std::path::Path;

use pith_core::context::pins::Pin;
use pith_core::{ChildRun, RequestPurpose, RequestReport, Usage};
use serde::Serialize;
use serde_json::Value;

use crate::conversation::{Conversation, Opened, TurnOutcome};
use crate::env::Frontend;
use crate::error::ConversationError;
use crate::output_schema::OutputSchema;
use crate::overrides::Overrides;
use crate::recording::{CompactionNote, CompactionTotals};

/// Opens the conversation of a job of `prompt` whose final answer must match the JSON
/// Schema in the file `schema`, if given, with `pins` pinned (`--pin`, `--pin-note`; one
/// a resumed session holds already stays). An empty prompt, a schema that cannot be
/// used, a conversation that cannot be opened and a pin that cannot be made are errors
/// (checked in that order).
pub fn open(
    prompt: &str,
    schema: Option<&Path>,
    pins: &[Pin],
    overrides: Overrides,
    frontend: Frontend,
) -> Result<Opened<Conversation>, ConversationError> {
    if prompt.trim().is_empty() {
        return Err(ConversationError::usage("the prompt is empty"));
    }
    let schema = schema
        .map(OutputSchema::load)
        .transpose()
        .map_err(ConversationError::usage)?;
    let mut opened = Conversation::open(overrides, frontend)?;
    opened.value.set_output_schema(schema);
    for pin in pins {
        // A resumed session may hold the pin already: it stays as it is.
        if opened
            .value
            .pins_view()
            .rows
            .iter()
            .any(|row| row.pin == *pin)
        {
            continue;
        }
        if let Err(error) = opened.value.pin(pin.clone()) {
            opened.value.close();
            return Err(error);
        }
    }
    Ok(opened)
}

/// The stream-json line of kind `kind` (docs/headless.md): `value`'s fields with
/// `"type": kind`; `None` when `value` is not an object.
pub fn typed_line(kind: &str, value: impl Serialize) -> Option<Value> {
    let mut line = serde_json::to_value(value).ok()?;
    line.as_object_mut()?
        .insert("type".to_owned(), Value::from(kind));
    Some(line)
}

/// The stream-json line of an automatic compaction's lifecycle event (docs/headless.md):
/// `compaction_started`, `compaction` (trigger `auto`), `compaction_cancelled`,
/// `compaction_failed` or `compaction_unused`.
pub fn auto_compaction_line(lifecycle: &pith_core::AutoCompaction) -> Value {
    use pith_core::AutoCompaction;
    use serde_json::json;
    match lifecycle {
        AutoCompaction::Started {
            tokens_before,
            background,
            ..
        } => json!({"type": "compaction_started", "trigger": "auto",
                    "tokens_before": tokens_before, "background": background}),
        AutoCompaction::Applied { figures, .. } => json!({
            "type": "compaction", "trigger": "auto",
            "tokens_before": figures.tokens_before, "tokens_after": figures.tokens_after,
            "ledger_tokens": figures.ledger_tokens, "duration_ms": figures.duration_ms,
            "waited_ms": figures.waited_ms,
        }),
        AutoCompaction::Cancelled => json!({"type": "compaction_cancelled"}),
        AutoCompaction::Failed { reason } => json!({"type": "compaction_failed", "reason": reason}),
        AutoCompaction::Unused {
            reason,
            usage,
            model,
        } => {
            let mut line = json!({"type": "compaction_unused", "reason": reason, "usage": usage});
            if let (Some(model), Some(fields)) = (model, line.as_object_mut()) {
                fields.insert("model".to_owned(), Value::from(model.as_str()));
            }
            line
        }
    }
}

/// The stream-json `plan` line of a plan update (docs/headless.md):
/// `{"type": "plan", "steps": [{step, status, note?}, …]}`, every step of the plan.
pub fn plan_line(plan: &pith_core::Plan) -> Option<Value> {
    typed_line("plan", plan)
}

/// One compaction in the result object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CompactionReport {
    /// `auto`, `micro` or `manual`.
    pub trigger: &'static str,
    /// Estimated tokens before.
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
    /// Tokens of the session ledger the replacement carried (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub ledger_tokens: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl From<&CompactionNote> for CompactionReport {
    fn from(note: &CompactionNote) -> Self {
        Self {
            trigger: note.kind(),
            tokens_before: note.tokens_before,
            tokens_after: note.tokens_after,
            ledger_tokens: note.ledger_tokens,
        }
    }
}

/// The `compaction` object of the result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionCost {
    /// Counts and usage.
    #[serde(flatten)]
    pub totals: CompactionTotals,
    /// The summary requests' cost in US dollars, when prices are known.
    pub cost: Option<f64>,
    /// The part of `cost` spent on summaries prepared in the background and never
    /// applied.
    pub unused_cost: Option<f64>,
    /// What the summaries sent to the compaction model (`[context] compaction_model`)
    /// used and cost, apart (absent when summaries go to the conversation's model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_model: Option<CompactionModelSpend>,
}

/// The part of the summaries sent to the compaction model, in the result's `compaction`
/// object.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionModelSpend {
    /// `provider/model`.
    pub model: String,
    /// The usage of its summary requests (part of `compaction.usage`).
    pub usage: Usage,
    /// Their cost at its prices, when known (part of `compaction.cost`).
    pub cost: Option<f64>,
}

impl CompactionCost {
    /// The `compaction` object of a job whose compactions did `totals` in `conversation`:
    /// each summary priced at the model it went to.
    pub fn of(conversation: &Conversation, totals: &CompactionTotals) -> Self {
        let compaction_model = conversation.compaction_model_spec().map(|model| {
            let usage = totals.compaction_model_usage;
            CompactionModelSpend {
                cost: crate::cost::summary_cost(
                    &usage,
                    &usage,
                    &model,
                    Some(&model),
                    &conversation.prices(),
                ),
                model,
                usage,
            }
        });
        Self {
            totals: *totals,
            cost: conversation.summary_cost(&totals.usage, &totals.compaction_model_usage),
            unused_cost: conversation
                .summary_cost(&totals.unused_usage, &totals.compaction_model_unused_usage),
            compaction_model,
        }
    }
}

/// One model request in the result's `requests` list and in a stream-json `request`
/// event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestEntry {
    /// Counts the job's requests from 1 (turn and compaction requests alike).
    pub id: u64,
    /// `turn` or `compaction`.
    pub purpose: RequestPurpose,
    /// The wire protocol.
    pub protocol: String,
    /// The model id sent.
    pub model: String,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// The part of `output_tokens` spent reasoning (0 when the provider does not say).
    pub reasoning_tokens: u64,
    /// False when the provider reported no usage (the counts are then 0).
    pub usage_reported: bool,
    /// Wall time, retries included, milliseconds.
    pub duration_ms: u64,
    /// Attempts after the first.
    pub retries: u32,
    /// Why it failed for good, if it did.
    pub error: Option<String>,
}

impl From<&RequestReport> for RequestEntry {
    fn from(report: &RequestReport) -> Self {
        Self {
            id: report.id,
            purpose: report.purpose,
            protocol: report.protocol.clone(),
            model: report.model.clone(),
            input_tokens: report.usage.input_tokens,
            cached_input_tokens: report.usage.cached_input_tokens,
            output_tokens: report.usage.output_tokens,
            reasoning_tokens: report.usage.reasoning_tokens,
            usage_reported: report.usage_reported,
            duration_ms: report.duration_ms,
            retries: report.retries,
            error: report.error.clone(),
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
    /// Usage over all requests, compaction included, the subagents' (`children`) too.
    pub usage: Usage,
    /// Cost in US dollars: what the provider reported (OpenRouter), else computed from
    /// the model's prices when they are known.
    pub cost: Option<f64>,
    /// What the whole session spent so far (this job and the ones before it in the same
    /// session): usage, cost and cache-hit rate, from its records.
    pub session: crate::cost::SpendReport,
    /// The part of `cost` spent on reasoning tokens (at the output price), when the cost
    /// is known and the provider counted reasoning tokens.
    pub reasoning_cost: Option<f64>,
    /// Compactions applied during the job.
    pub compactions: Vec<CompactionReport>,
    /// What compaction did and cost: attempts and how they ended, the summary requests'
    /// usage (failed ones included) and its cost.
    pub compaction: CompactionCost,
    /// Every model request of the job, in order (the subagents' are in their own
    /// transcripts).
    pub requests: Vec<RequestEntry>,
    /// The subagents the job's `task` calls ran, each with its session and usage.
    pub children: Vec<ChildRun>,
    /// The final answer as JSON, when `--output-schema` was given and the answer matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Value>,
    /// The error that ended the job, if any.
    pub error: Option<String>,
}

impl RunReport {
    /// The report of `outcome`, the job's turn in `conversation`. Costs follow
    /// [`crate::cost`].
    pub fn of(conversation: &Conversation, outcome: &TurnOutcome) -> Self {
        let model = conversation.model_spec();
        let pricing = conversation.settings().model.pricing;
        let session = conversation.spend_report().unwrap_or_else(|error| {
            tracing::warn!(%error, "the session's spending could not be read");
            crate::cost::SpendReport {
                usage: Usage::default(),
                cost: None,
                cache_hit_rate: None,
            }
        });
        Self {
            session_id: conversation.session_id().to_owned(),
            cost: crate::cost::turn_cost(outcome, &model, &conversation.prices()),
            session,
            model,
            text: outcome.text.clone(),
            turns: outcome.summary.requests,
            usage: outcome.total_usage(),
            reasoning_cost: crate::cost::reasoning_cost(&outcome.summary.usage, pricing.as_ref()),
            compactions: outcome
                .compactions
                .iter()
                .map(CompactionReport::from)
                .collect(),
            compaction: CompactionCost::of(conversation, &outcome.compaction),
            requests: outcome.requests.iter().map(RequestEntry::from).collect(),
            children: outcome.children.clone(),
            structured_output: outcome.structured_output.clone(),
            error: outcome
                .error
                .as_ref()
                .map(ToString::to_string)
                .or_else(|| outcome.record_error.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_lines_tag_objects_and_the_plan_line_carries_every_step() {
        let plan = pith_core::Plan::from_arguments(&json!({"steps": [
            {"step": "a", "status": "done", "note": "n"},
            {"step": "b", "status": "pending"}
        ]}))
        .unwrap();
        assert_eq!(
            plan_line(&plan),
            Some(json!({"type": "plan", "steps": [
                {"step": "a", "status": "done", "note": "n"},
                {"step": "b", "status": "pending"}
            ]}))
        );
        assert_eq!(
            plan_line(&pith_core::Plan::default()),
            Some(json!({"type": "plan", "steps": []}))
        );
        assert_eq!(typed_line("x", 3), None, "only objects are lines");
    }
}
