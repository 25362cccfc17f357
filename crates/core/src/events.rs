//! Events that cross from the tool loop to front-ends.
//!
//! This module is pith's protocol between the agent core and whatever shows it (REPL,
//! headless runner, tests). Front-ends match on these types and never on provider wire
//! formats. Compaction lifecycle events are *control* events: they are never assistant
//! content and never appear in the final answer.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::context::GovernorNotice;
use crate::hooks::HookRun;
use crate::message::{Message, ToolCall, ToolResult};
use crate::subagent::SubagentEvent;

/// Token usage of one or more model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens, cached ones included.
    #[serde(rename = "input_tokens")]
    pub input_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(rename = "cached_input_tokens", default)]
    pub cached_input_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(rename = "output_tokens")]
    pub output_tokens: u64,
    /// The part of `output_tokens` the model spent reasoning (OpenAI
    /// `output_tokens_details.reasoning_tokens`, Chat `completion_tokens_details`; 0 when
    /// the provider does not say, as Anthropic does not). Missing in older transcripts.
    #[serde(rename = "reasoning_tokens", default)]
    pub reasoning_tokens: u64,
    /// What the provider itself said these requests cost, in billionths of a US dollar
    /// (OpenRouter's `usage.cost`); 0 when it said nothing. When set it is the cost pith
    /// reports, rather than one computed from catalog prices.
    #[serde(
        rename = "provider_cost_nanousd",
        default,
        skip_serializing_if = "is_zero"
    )]
    pub provider_cost_nanousd: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.provider_cost_nanousd += other.provider_cost_nanousd;
    }
}

/// The lifecycle of one automatic compaction inside a turn.
#[derive(Debug, Clone)]
pub enum AutoCompaction {
    /// The private summary request started. `cancel` is a *child* of the turn's token:
    /// cancelling it stops only the compactor and the parent request continues with its
    /// history unchanged; cancelling the turn cancels it too.
    Started {
        /// Cancels only this compaction.
        cancel: CancellationToken,
        /// Estimated input tokens of the history being compacted.
        tokens_before: u64,
    },
    /// A valid replacement was installed in the loop's history. `replacement` holds the
    /// system message(s) followed by the compacted user message; front-ends strip the
    /// system messages before storing it.
    Applied {
        /// The new provider-facing history.
        replacement: Vec<Message>,
        /// The validated summary inside the replacement (persisted, never rendered live).
        summary: String,
        /// Usage of the summary request, when the provider reported it.
        usage: Option<Usage>,
        /// Estimated input tokens before the compaction.
        tokens_before: u64,
        /// Estimated input tokens of the replacement.
        tokens_after: u64,
        /// Tokens of the session ledger in the replacement (0 without one).
        ledger_tokens: u64,
        /// Wall time from [`AutoCompaction::Started`] until the replacement was persisted
        /// and installed, milliseconds.
        duration_ms: u64,
    },
    /// The child token was cancelled; history is unchanged.
    Cancelled,
    /// The summary request failed or produced an invalid summary; history is unchanged.
    Failed {
        /// Human-readable reason.
        reason: String,
    },
}

/// Why a rule-based rewrite (no LLM) replaced the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MicroReason {
    /// Micro-compaction: dedup + prune of old tool outputs.
    #[default]
    Prune,
    /// Overflow fitting: the request could not fit and no compaction could run, so the
    /// largest tool results were capped and the oldest messages dropped behind the
    /// session ledger (see `tool_loop/overflow`). Persisted like any rewrite, so the
    /// transcript holds what the model was sent.
    Overflow,
}

/// A rule-based rewrite of the history (no LLM) applied by the loop: a micro-compaction
/// (dedup + prune) or an overflow fit.
#[derive(Debug, Clone, PartialEq)]
pub struct MicroCompaction {
    /// Why.
    pub reason: MicroReason,
    /// The history after the step, system messages excluded.
    pub replacement: Vec<Message>,
    /// Estimated tokens reclaimed.
    pub tokens_reclaimed: u64,
    /// Estimated input tokens before the step.
    pub tokens_before: u64,
    /// Estimated input tokens after the step.
    pub tokens_after: u64,
    /// Wall time of the step (measuring, dedup, prune, persisting), milliseconds.
    pub duration_ms: u64,
}

/// What a model request was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestPurpose {
    /// A request of the user's turn.
    #[serde(rename = "turn")]
    Turn,
    /// A summary request of an automatic or manual compaction.
    #[serde(rename = "compaction")]
    Compaction,
}

/// One model request as it ended, retries included: what it cost and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestReport {
    /// Counts the loop's requests from 1 (turn and compaction requests alike).
    pub id: u64,
    /// What the request was for.
    pub purpose: RequestPurpose,
    /// The wire protocol (`anthropic`, `openai-chat`, `openai-responses`, …).
    pub protocol: String,
    /// The model id sent.
    pub model: String,
    /// Usage the provider reported for the successful attempt (zero when it reported
    /// none, or the request failed).
    pub usage: Usage,
    /// True when the provider reported usage.
    pub usage_reported: bool,
    /// Wall time from the first attempt to the end of the last, milliseconds.
    pub duration_ms: u64,
    /// Attempts after the first.
    pub retries: u32,
    /// Why the request failed for good, when it did (`cancelled` when it was cancelled).
    pub error: Option<String>,
}

/// Everything the tool loop reports while a turn runs, in order.
#[derive(Debug, Clone)]
pub enum LoopEvent {
    /// A model request is about to be sent (`attempt` counts retries from 1).
    RequestStarted {
        /// 1 for the first try, 2+ for retries.
        attempt: u32,
    },
    /// A chunk of visible assistant text.
    TextDelta(String),
    /// A chunk of model reasoning (never part of the final answer).
    ReasoningDelta(String),
    /// The model requested a tool call; execution starts.
    ToolCallStarted(ToolCall),
    /// A tool call finished; `result` is what the model will see.
    ToolCallFinished {
        /// The call.
        call: ToolCall,
        /// Its (squashed) result.
        result: ToolResult,
    },
    /// A complete message was appended to the loop's history (assistant reply or tool
    /// results). Front-ends accumulate these as the turn's memory.
    MessageAppended(Message),
    /// Usage reported for one model request.
    Usage(Usage),
    /// The request failed transiently and will be retried after `delay_ms`.
    Retrying {
        /// The attempt that failed.
        attempt: u32,
        /// Delay before the next attempt.
        delay_ms: u64,
        /// Why it failed.
        reason: String,
    },
    /// Automatic compaction lifecycle.
    AutoCompaction(AutoCompaction),
    /// A micro-compaction was applied.
    MicroCompaction(MicroCompaction),
    /// A model request ended (successfully or not).
    RequestFinished(RequestReport),
    /// A hook ran (see [`crate::hooks`]).
    Hook(HookRun),
    /// An event of a child conversation a tool call runs (the `task` tool; see
    /// [`crate::subagent`]). It belongs to the child's transcript, not the parent's.
    Subagent(SubagentEvent),
    /// Something the user should know that is not assistant content (e.g. a request
    /// was trimmed to fit the context window).
    Notice(String),
    /// The compaction governor changed course: automatic compaction paused (and until
    /// when), the turn's ceiling reached, a usage report not believed. Front-ends show
    /// [`GovernorNotice::text`]; its fields are what the next decisions keep to.
    Governor(GovernorNotice),
    /// The answer just appended was cut off before the model finished it: by pith's
    /// output cap, a degenerate repetition, or the provider's own output limit. Tool calls
    /// that were not complete were not run; the model is told in the next request.
    OutputTruncated {
        /// Why, in words (`output cap (32,000 tokens)`, …).
        reason: String,
    },
    /// The turn ended normally (the model answered without tool calls).
    TurnFinished {
        /// Usage summed over every request of the turn, compaction included.
        usage: Usage,
    },
}

/// Where the events of a turn go: a front-end's renderer, a channel, a test's list.
///
/// The loop calls [`EventSink::emit`] synchronously, in the order things happen, from the
/// task that runs the turn; an implementation must not block for long (the REPL forwards
/// into a channel, `pith run` writes a line). Events are never assistant content.
pub trait EventSink: Send {
    /// Receives one event.
    fn emit(&mut self, event: LoopEvent);
}

/// Forwards into a channel; a dropped receiver means nobody is watching, and the turn
/// still completes.
impl EventSink for tokio::sync::mpsc::UnboundedSender<LoopEvent> {
    fn emit(&mut self, event: LoopEvent) {
        let _ = self.send(event);
    }
}

/// Collects events in order (tests, batch consumers).
impl EventSink for Vec<LoopEvent> {
    fn emit(&mut self, event: LoopEvent) {
        self.push(event);
    }
}

/// Discards every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl EventSink for Discard {
    fn emit(&mut self, _event: LoopEvent) {}
}

/// The cancellation token of an automatic compaction inside the turn guarded by `turn`.
///
/// Always a child token: see [`AutoCompaction::Started`].
pub fn compaction_token(turn: &CancellationToken) -> CancellationToken {
    turn.child_token()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_the_compactor_leaves_the_turn_running() {
        let turn = CancellationToken::new();
        let compactor = compaction_token(&turn);
        compactor.cancel();
        assert!(compactor.is_cancelled());
        assert!(
            !turn.is_cancelled(),
            "cancelling the child must not stop the parent"
        );
    }

    #[test]
    fn cancelling_the_turn_stops_the_compactor() {
        let turn = CancellationToken::new();
        let compactor = compaction_token(&turn);
        turn.cancel();
        assert!(compactor.is_cancelled());
    }

    #[test]
    fn a_compactor_of_a_cancelled_turn_starts_cancelled() {
        let turn = CancellationToken::new();
        turn.cancel();
        assert!(compaction_token(&turn).is_cancelled());
    }

    #[tokio::test]
    async fn cancelling_the_turn_wakes_a_compactor_waiting_on_its_token() {
        let turn = CancellationToken::new();
        let compactor = compaction_token(&turn);
        let waiter = tokio::spawn(async move { compactor.cancelled().await });
        turn.cancel();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("compactor was not woken")
            .expect("task panicked");
    }

    #[test]
    fn usage_adds_up_and_round_trips() {
        let mut total = Usage::default();
        total += Usage {
            input_tokens: 10,
            cached_input_tokens: 4,
            output_tokens: 2,
            ..Default::default()
        };
        total += Usage {
            input_tokens: 5,
            cached_input_tokens: 0,
            output_tokens: 1,
            ..Default::default()
        };
        assert_eq!(
            total,
            Usage {
                input_tokens: 15,
                cached_input_tokens: 4,
                output_tokens: 3,
                ..Default::default()
            }
        );
        let back: Usage = serde_json::from_str(&serde_json::to_string(&total).unwrap()).unwrap();
        assert_eq!(back, total);
    }
}
