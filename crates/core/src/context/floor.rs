//! The floor of a compaction: what its replacement will hold whatever the summary says.
//!
//! An automatic compaction replaces the history with one message: the summary, the
//! session ledger, the re-attached files and the latest user message, sent with the
//! system prompt and the tool definitions. All of that but the summary is known before
//! the summary request is made, and the summary is held to an allowance
//! ([`summary_allowance`]; a longer one is cut). So the loop can tell before spending a
//! request whether a compaction can help: it can when the floor stays at or below
//! [`target`], [`super::governor::MIN_USEFUL_FREED_PERCENT`]% of the input budget under
//! the automatic threshold. When it does not, the re-attached files and then the ledger
//! shrink ([`ReplacementPlan::fallbacks`]); when even the smallest plan does not fit, no
//! request is made.

use serde::Serialize;

use crate::context::budget::ContextBudget;
use crate::format::thousands;

use super::governor::useful_tokens;

/// Most tokens of a summary written next to the ledger (asked for in about 750 words,
/// ≈ 1,000 tokens; twice that is allowed).
pub const LEDGER_SUMMARY_ALLOWANCE_TOKENS: u64 = 2_000;

/// Most tokens of a summary written without a ledger (the five-section schema).
pub const SUMMARY_ALLOWANCE_TOKENS: u64 = 8_000;

/// The smallest ledger share a shrinking plan goes down to, percent of the input budget.
pub const MIN_LEDGER_PERCENT: u8 = 3;

/// The most tokens of summary a replacement keeps for an input budget of `input_budget`:
/// with a ledger, the smaller of 2,000 and a tenth of the input budget; without, the
/// smaller of 8,000 and 15%.
pub fn summary_allowance(input_budget: u64, with_ledger: bool) -> u64 {
    if with_ledger {
        LEDGER_SUMMARY_ALLOWANCE_TOKENS.min(input_budget / 10)
    } else {
        SUMMARY_ALLOWANCE_TOKENS.min(input_budget * 15 / 100)
    }
}

/// The largest floor at which a compaction can help: the automatic threshold less the
/// useful amount, so that the replacement leaves room for real work before the next one.
pub fn target(budget: &ContextBudget) -> u64 {
    budget.auto_threshold.saturating_sub(useful_tokens(budget))
}

/// The size of a replacement's parts, in the server's terms (calibrated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Floor {
    /// The system prompt.
    pub system: u64,
    /// The tool definitions.
    pub tools: u64,
    /// The latest user message, kept verbatim.
    pub message: u64,
    /// The session ledger.
    pub ledger: u64,
    /// The re-attached files.
    pub restored: u64,
    /// The user's pins (never shrunk by a smaller plan: the user asked for them whole).
    pub pins: u64,
    /// The summary's allowance.
    pub summary: u64,
    /// Request and message framing, and the replacement's own wrapping text.
    pub framing: u64,
}

impl Floor {
    /// The whole floor.
    pub fn total(&self) -> u64 {
        self.system
            + self.tools
            + self.message
            + self.ledger
            + self.restored
            + self.pins
            + self.summary
            + self.framing
    }

    /// True when a compaction with this floor can help (see [`target`]).
    pub fn can_help(&self, budget: &ContextBudget) -> bool {
        self.total() <= target(budget)
    }

    /// What takes the room, in words: `system prompt 3,120, tools 2,010, …`.
    pub fn describe(&self) -> String {
        format!(
            "system prompt {}, tools {}, your message {}, ledger {}, re-attached files {}, {}summary allowance {}",
            thousands(self.system),
            thousands(self.tools),
            thousands(self.message),
            thousands(self.ledger),
            thousands(self.restored),
            if self.pins > 0 {
                format!("pins {}, ", thousands(self.pins))
            } else {
                String::new()
            },
            thousands(self.summary)
        )
    }
}

/// How much of the ledger and the re-attached files a replacement carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplacementPlan {
    /// The ledger's share of the input budget, percent (0: no ledger).
    pub ledger_percent: u8,
    /// Files re-attached (0: none).
    pub restore_files: usize,
    /// Their share of the input budget, percent.
    pub restore_files_percent: u8,
}

impl ReplacementPlan {
    /// This plan, then the smaller ones tried when it does not fit, in order: without
    /// re-attached files, then with half the ledger, then with the smallest ledger.
    pub fn fallbacks(self) -> Vec<ReplacementPlan> {
        let no_files = ReplacementPlan {
            restore_files: 0,
            restore_files_percent: 0,
            ..self
        };
        let mut plans = vec![self];
        for ledger_percent in [
            self.ledger_percent,
            self.ledger_percent / 2,
            MIN_LEDGER_PERCENT.min(self.ledger_percent),
        ] {
            let plan = ReplacementPlan {
                ledger_percent,
                ..no_files
            };
            // Without files, a plan that differs only in their share is the same plan.
            let same = |p: &ReplacementPlan| {
                p.ledger_percent == plan.ledger_percent && p.restore_files == 0
            };
            if !plans.iter().any(same) {
                plans.push(plan);
            }
        }
        plans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowance_and_the_target_for_a_small_window() {
        let budget = ContextBudget::for_window(32_000); // input 27_904, auto 25_113
        assert_eq!(summary_allowance(budget.input_budget, true), 2_000);
        assert_eq!(summary_allowance(budget.input_budget, false), 4_185);
        assert_eq!(summary_allowance(4_096, true), 409);
        assert_eq!(target(&budget), 25_113 - 2_790);
    }

    #[test]
    fn a_floor_helps_only_when_it_leaves_the_useful_room_under_the_threshold() {
        let budget = ContextBudget::for_window(32_000);
        let mut floor = Floor {
            system: 3_000,
            tools: 2_000,
            message: 100,
            ledger: 2_790,
            restored: 4_185,
            pins: 0,
            summary: 2_000,
            framing: 20,
        };
        assert_eq!(floor.total(), 14_095);
        assert!(floor.can_help(&budget));
        assert!(!floor.describe().contains("pins"));
        floor.pins = 9_000;
        assert!(!floor.can_help(&budget), "the pins count in the floor");
        assert!(floor.describe().contains("pins 9,000"));
        floor.pins = 0;
        floor.message = 62_000;
        assert!(!floor.can_help(&budget));
        let said = floor.describe();
        assert!(said.contains("your message 62,000") && said.contains("system prompt 3,000"));
    }

    #[test]
    fn plans_shrink_the_files_first_then_the_ledger() {
        let plans = ReplacementPlan {
            ledger_percent: 10,
            restore_files: 3,
            restore_files_percent: 15,
        }
        .fallbacks();
        let shape: Vec<(u8, usize)> = plans
            .iter()
            .map(|p| (p.ledger_percent, p.restore_files))
            .collect();
        assert_eq!(shape, [(10, 3), (10, 0), (5, 0), (3, 0)]);
        // The default (no files, their share still set) is not tried twice.
        let default = ReplacementPlan {
            ledger_percent: 10,
            restore_files: 0,
            restore_files_percent: 15,
        };
        assert_eq!(
            default
                .fallbacks()
                .iter()
                .map(|p| p.ledger_percent)
                .collect::<Vec<_>>(),
            [10, 5, 3]
        );
        let off = ReplacementPlan {
            ledger_percent: 0,
            restore_files: 0,
            restore_files_percent: 0,
        };
        assert_eq!(off.fallbacks(), vec![off]);
    }
}
