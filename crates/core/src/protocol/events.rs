//! Events that cross from the tool loop to front-ends.
//!
//! This module is pith's protocol between the agent core and whatever shows it (REPL,
//! headless runner, tests). Front-ends match on these types and never on provider wire
//! formats. Compaction lifecycle events are *control* events: they are never assistant
//! content and never appear in the final answer.

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::protocol::hooks::HookRun;
use crate::protocol::message::{Message, ToolCall, ToolResult};
use crate::protocol::notice::GovernorNotice;
use crate::protocol::plan::Plan;
use crate::protocol::usage::Usage;

// A micro-compaction is a history rewrite and is defined with the others; the other
// crates have always named it from here.
pub use crate::protocol::rewrite::{MicroCompaction, MicroReason};

/// The sizes and times of an applied automatic compaction, reported together by the
/// front-ends (stream-json, ACP, traces, the REPL's notice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CompactionFigures {
    /// Estimated input tokens before the compaction.
    pub tokens_before: u64,
    /// Estimated input tokens of the replacement.
    pub tokens_after: u64,
    /// Tokens of the session ledger in the replacement (0 without one).
    pub ledger_tokens: u64,
    /// Wall time from [`AutoCompaction::Started`] until the replacement was persisted and
    /// installed, milliseconds.
    pub duration_ms: u64,
    /// How long the turn waited for it, milliseconds: `duration_ms` for a compaction in
    /// place, less for a summary prepared in the background (only what was left of it
    /// when the threshold was reached).
    pub waited_ms: u64,
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
        /// True for a summary prepared in the background before the threshold: the turn
        /// goes on, and the compaction applies it when the threshold is reached (or ends
        /// it [`AutoCompaction::Unused`]).
        background: bool,
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
        /// Its sizes and times, as every front-end reports them.
        figures: CompactionFigures,
    },
    /// The child token was cancelled; history is unchanged.
    Cancelled,
    /// The summary request failed or produced an invalid summary; history is unchanged.
    Failed {
        /// Human-readable reason.
        reason: String,
    },
    /// A summary prepared in the background was never applied (the history was rewritten
    /// under it, the conversation after its mark grew too large, the session stopped
    /// first); history is unchanged. Its requests were reported.
    Unused {
        /// Human-readable reason.
        reason: String,
        /// What its requests used (what the provider reported before it was stopped).
        usage: Usage,
        /// The compaction model (`provider/model`) its requests went to, whose prices
        /// `usage` is charged at; `None`: the conversation's own model.
        model: Option<String>,
    },
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
    /// Set when the request went to the compaction model (`[context] compaction_model`)
    /// rather than the conversation's: its `provider/model`, whose prices `usage` is
    /// charged at.
    pub compaction_model: Option<String>,
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
    /// A hook ran (see [`crate::protocol::hooks`]).
    Hook(HookRun),
    /// An event of a child conversation a tool call runs (the `task` tool; see
    /// [`crate::protocol::subagent`]). It belongs to the child's transcript, not the parent's.
    Subagent(SubagentEvent),
    /// The model replaced its plan (an `update_plan` call that succeeded): the whole
    /// current plan, every step, emitted before the call's
    /// [`LoopEvent::ToolCallFinished`]. Front-ends show it as a checklist; the transcript
    /// holds the call, and the session ledger carries the plan across compactions.
    PlanUpdated(Plan),
    /// pith kept a copy of workspace files a tool call (or, at a turn's start, something
    /// outside pith) changed, so that a rewind can put them back (docs/rewind.md).
    Checkpoint(crate::protocol::checkpoint::CheckpointSummary),
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

/// An event of a child conversation, as the parent's front-end receives it.
///
/// Defined next to [`LoopEvent`] because each holds the other: a child's events are
/// loop events, wrapped.
#[derive(Debug, Clone)]
pub struct SubagentEvent {
    /// The parent's tool call that runs the child.
    pub call_id: String,
    /// The agent that runs.
    pub agent: String,
    /// The child's session id.
    pub session_id: String,
    /// The child's own event.
    pub event: Box<LoopEvent>,
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
}
