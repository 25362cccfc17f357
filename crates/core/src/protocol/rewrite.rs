//! History rewrites and the rule that they are persisted before they are applied.
//!
//! The tool loop changes a conversation's history in two ways: by appending (a user
//! message, an assistant message, tool results) and by rewriting it (an automatic or
//! manual compaction, a micro-compaction). Appends are recorded as they happen; a rewrite
//! must be on disk *before* the live history changes, so that the transcript can never
//! disagree with what the model is sent next.
//!
//! The loop therefore hands each [`HistoryRewrite`] to its [`crate::TurnSink`] and
//! installs it only when it was persisted (see [`crate::protocol::sink`]).

use serde::{Deserialize, Serialize};

use crate::protocol::message::Message;
use crate::protocol::usage::Usage;

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
    /// The compaction model (`[context] compaction_model`, `provider/model`) the summary
    /// requests went to, and whose prices `usage` is charged at; `None`: the
    /// conversation's own model.
    pub model: Option<String>,
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
    /// Tokens of the user's pins it carries (0: none).
    pub pins_tokens: u64,
    /// The pins it could not carry, each named in one line for the user.
    pub pins_left_out: Vec<String>,
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
