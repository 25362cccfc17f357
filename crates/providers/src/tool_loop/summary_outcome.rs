//! How a summary request ended ([`SummaryOutcome`]), apart from the request itself so
//! that the loop's state can hold a summary prepared in the background without naming the
//! modules that send it.

use pith_core::Usage;

/// How a summary request ended.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum SummaryOutcome {
    /// A valid (non-empty, trimmed) summary; `cut_off` when the answer was cut before
    /// the model finished it (pith keeps what arrived).
    Summary {
        summary: String,
        usage: Usage,
        cut_off: bool,
    },
    /// The model kept calling tools past the allowed rounds.
    ToolRoundsExhausted { usage: Usage },
    /// The compaction's token was cancelled.
    Cancelled { usage: Usage },
    /// The request failed or the summary was empty.
    Failed { reason: String, usage: Usage },
}

impl SummaryOutcome {
    /// What the requests of this summary used.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Summary { usage, .. }
            | Self::ToolRoundsExhausted { usage }
            | Self::Cancelled { usage }
            | Self::Failed { usage, .. } => *usage,
        }
    }
}
