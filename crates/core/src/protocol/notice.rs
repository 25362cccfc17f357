//! What the compaction governor tells the user when it changes course, and why
//! automatic compaction is paused: the data of [`crate::LoopEvent::Governor`]. The rules
//! that decide them live in [`crate::context::governor`].

use serde::Serialize;

use crate::format::thousands;

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Why automatic compaction is paused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum PauseReason {
    /// An applied compaction freed less than the useful amount.
    FreedTooLittle {
        /// Tokens it freed.
        freed: u64,
    },
    /// The server's first report after a compaction was still at or above the threshold.
    StillOverThreshold {
        /// The input tokens it reported.
        reported: u64,
    },
    /// A compaction could not free the useful amount: the replacement would hold at
    /// least `floor` tokens whatever the summary says.
    CannotHelp {
        /// What the replacement holds without a summary, plus the summary's allowance.
        floor: u64,
        /// The user's pins in it (the replacement carries them whole; 0: none).
        #[serde(skip_serializing_if = "is_zero")]
        pins: u64,
    },
    /// The attempt failed (the request failed, the summary was unusable, the replacement
    /// was not smaller, or it could not be written).
    Failed {
        /// Why.
        detail: String,
    },
}

impl PauseReason {
    /// The reason in words.
    pub fn describe(&self) -> String {
        match self {
            Self::FreedTooLittle { freed } => {
                format!(
                    "the last compaction freed only {} tokens",
                    thousands(*freed)
                )
            }
            Self::StillOverThreshold { reported } => format!(
                "the server still reported {} input tokens right after a compaction",
                thousands(*reported)
            ),
            Self::CannotHelp { floor, pins: 0 } => format!(
                "a compaction would keep {} tokens whatever the summary says",
                thousands(*floor)
            ),
            Self::CannotHelp { floor, pins } => format!(
                "a compaction would keep {} tokens whatever the summary says, {} of them your pins (/pin lists them; /unpin one, or lower [context] pins_percent)",
                thousands(*floor),
                thousands(*pins)
            ),
            Self::Failed { detail } => format!("the last compaction failed: {detail}"),
        }
    }

    /// A short label for a status line.
    pub fn label(&self) -> &'static str {
        match self {
            Self::FreedTooLittle { .. } => "freed too little",
            Self::StillOverThreshold { .. } => "did not help",
            Self::CannotHelp { .. } => "cannot help",
            Self::Failed { .. } => "failed",
        }
    }
}

/// What the loop tells the user when the governor changes course. Every text says what
/// the next decisions will do, and they do it (the stress suite checks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum GovernorNotice {
    /// The breaker armed: no automatic compaction until the estimate reaches `until`.
    Paused {
        /// Why.
        #[serde(flatten)]
        reason: PauseReason,
        /// The estimate when it armed.
        tokens: u64,
        /// Automatic compaction resumes at this estimate.
        until_tokens: u64,
    },
    /// This user turn used its automatic compactions: none until the next user message,
    /// or until the context has grown to `until_tokens`.
    CeilingReached {
        /// Attempts made in the turn.
        attempts: u32,
        /// The estimate at which the ceiling counts afresh.
        until_tokens: u64,
    },
    /// The server reported the same input tokens after a rewrite cut the request: its
    /// usage is not believed again in this conversation.
    UsageUnresponsive {
        /// What it reported, before and after.
        reported: u64,
        /// pith's count of the request before the rewrite.
        counted_before: u64,
        /// pith's count after it.
        counted_after: u64,
    },
    /// A usage report outside the plausible band was not anchored on (told once per
    /// session).
    UsageImplausible {
        /// What the server reported.
        reported: u64,
        /// pith's count of the same request.
        counted: u64,
    },
}

impl GovernorNotice {
    /// The notice in words, for the REPL and stderr.
    pub fn text(&self) -> String {
        match self {
            Self::Paused {
                reason,
                tokens,
                until_tokens,
            } => format!(
                "automatic compaction paused: {}; it waits until the context reaches {} tokens (now {}); a request that would not fit meanwhile is trimmed to fit",
                reason.describe(),
                thousands(*until_tokens),
                thousands(*tokens)
            ),
            Self::CeilingReached {
                attempts,
                until_tokens,
            } => format!(
                "automatic compaction ran {attempts} times in this turn without the context growing by half its budget in between, its limit (max_auto_compactions_per_turn): until your next message or until the context reaches {} tokens, a request that would not fit is trimmed to fit instead",
                thousands(*until_tokens)
            ),
            Self::UsageUnresponsive {
                reported,
                counted_before,
                counted_after,
            } => format!(
                "the server reported {} input tokens again after pith cut the request from {} to {} tokens: its usage does not follow what it is sent, so pith decides on its own count for the rest of this conversation",
                thousands(*reported),
                thousands(*counted_before),
                thousands(*counted_after)
            ),
            Self::UsageImplausible { reported, counted } => format!(
                "the server reported {} input tokens for a request pith counts at {} ({:.2}×, outside the band pith believes, [context] usage_ratio_min and usage_ratio_max): such reports are not anchored on, and the decisions use pith's own count",
                thousands(*reported),
                thousands(*counted),
                *reported as f64 / (*counted).max(1) as f64
            ),
        }
    }
}
