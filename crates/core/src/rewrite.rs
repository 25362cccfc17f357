//! History rewrites and the rule that they are persisted before they are applied.
//!
//! The tool loop changes a conversation's history in two ways: by appending (a user
//! message, an assistant message, tool results) and by rewriting it (an automatic or
//! manual compaction, a micro-compaction). Appends are recorded as they happen; a rewrite
//! must be on disk *before* the live history changes, so that the transcript can never
//! disagree with what the model is sent next.
//!
//! The loop (pith-providers) therefore never writes anything itself: it hands each
//! [`HistoryRewrite`] to its [`TurnSink`] and installs the rewrite only when
//! [`TurnSink::persist`] returned `Ok`. The conversation (pith-agent) implements the
//! trait over the session store; tests implement it over memory, or with a writer that
//! fails on demand.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::events::{EventSink, MicroCompaction, Usage};
use crate::message::Message;

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompactionTrigger {
    /// The user ran `/compact`.
    #[serde(rename = "manual")]
    Manual,
    /// The tool loop crossed the automatic threshold.
    #[serde(rename = "auto")]
    Auto,
}

impl CompactionTrigger {
    /// `manual` or `auto`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Auto => "auto",
        }
    }
}

/// A summary compaction (automatic or manual) about to replace the history.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// Automatic or manual.
    pub trigger: CompactionTrigger,
    /// The new history, without system messages (the system prompt is rebuilt for every
    /// request and never stored).
    pub replacement: Vec<Message>,
    /// The summary inside the replacement: the model's, or the deterministic one when the
    /// model could not produce it (see `summary::fallback_summary`).
    pub summary: String,
    /// Estimated input tokens before.
    pub tokens_before: u64,
    /// Estimated input tokens of the replacement.
    pub tokens_after: u64,
    /// Usage of the summary request(s), when the provider reported it.
    pub usage: Option<Usage>,
    /// The session ledger and the files the replacement carries besides the summary.
    pub carried: Carried,
}

/// What a compaction's replacement carries besides the summary and the latest user
/// message (see `context::ledger`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Carried {
    /// The rendered `<session_ledger>` block.
    pub ledger: Option<String>,
    /// Its tokens.
    pub ledger_tokens: u64,
    /// Paths of the files re-attached, read fresh from disk.
    pub restored_files: Vec<String>,
}

/// A rewrite of the conversation history.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryRewrite {
    /// A summary compaction.
    Compaction(Compaction),
    /// A micro-compaction (dedup + prune, no LLM).
    Micro(MicroCompaction),
}

impl HistoryRewrite {
    /// The new history.
    pub fn replacement(&self) -> &[Message] {
        match self {
            Self::Compaction(compaction) => &compaction.replacement,
            Self::Micro(step) => &step.replacement,
        }
    }
}

/// A rewrite could not be persisted; the loop leaves the live history unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot write the transcript: {0}")]
pub struct PersistError(pub String);

/// The loop's owner, as the loop sees it while a turn or a compaction runs: where its
/// events go ([`EventSink`]) and where history rewrites are persisted.
///
/// Contract: the loop calls [`TurnSink::persist`] with a rewrite before it changes its
/// history, and changes it only when that returns `Ok`. Events emitted before the call
/// describe the history the rewrite replaces, so an implementation that records the
/// turn's messages (from [`crate::LoopEvent::MessageAppended`]) has seen all of them.
/// After an `Ok` the loop emits the rewrite's own event
/// ([`crate::AutoCompaction::Applied`] or [`crate::LoopEvent::MicroCompaction`]); after an
/// error it emits a failure and carries on with the history unchanged.
pub trait TurnSink: EventSink {
    /// Makes `rewrite` durable.
    fn persist(&mut self, rewrite: &HistoryRewrite) -> Result<(), PersistError>;
}

/// A [`TurnSink`] without a transcript: events go to `events`, rewrites are kept in
/// memory. For tests, benchmarks and simulations. With `fail_with` set, every
/// [`TurnSink::persist`] fails with that message (the loop must then leave its history
/// unchanged).
#[derive(Debug, Default)]
pub struct InMemory<S> {
    /// Where events go.
    pub events: S,
    /// Every rewrite persisted so far, in order.
    pub persisted: Vec<HistoryRewrite>,
    /// When set, persisting fails with this message.
    pub fail_with: Option<String>,
}

impl<S: EventSink> InMemory<S> {
    /// A sink forwarding events to `events`, persisting in memory.
    pub fn new(events: S) -> Self {
        Self {
            events,
            persisted: Vec::new(),
            fail_with: None,
        }
    }

    /// A sink whose every write fails with `message`, as a full disk would.
    pub fn failing(events: S, message: impl Into<String>) -> Self {
        Self {
            fail_with: Some(message.into()),
            ..Self::new(events)
        }
    }
}

impl<S: EventSink> EventSink for InMemory<S> {
    fn emit(&mut self, event: crate::LoopEvent) {
        self.events.emit(event);
    }
}

impl<S: EventSink> TurnSink for InMemory<S> {
    fn persist(&mut self, rewrite: &HistoryRewrite) -> Result<(), PersistError> {
        if let Some(message) = &self.fail_with {
            return Err(PersistError(message.clone()));
        }
        self.persisted.push(rewrite.clone());
        Ok(())
    }
}
