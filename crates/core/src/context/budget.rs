//! The context budget: how much of a model's window pith lets a request use, and where
//! micro-compaction and LLM compaction start.
//!
//! This is the only implementation of the budget math. The tool loop, `/context`, the
//! REPL status line and the headless report all call [`ContextBudget::for_window`] (or
//! [`ContextBudget::with_micro_percent`]); none of them may compute a threshold itself.
//!
//! Rounding: the margin rounds **up** (a larger safety margin), the thresholds round
//! **down** (compaction starts a token early rather than a token late). All arithmetic is
//! integer arithmetic on `u64`, so the results are exact and platform-independent.

use serde::{Deserialize, Serialize};

/// The minimum safety margin between the input budget and the window, in tokens.
pub const MIN_MARGIN_TOKENS: u64 = 4096;
/// The safety margin as a percentage of the window, when larger than the minimum.
pub const MARGIN_PERCENT: u64 = 5;
/// LLM (automatic) compaction starts at this percentage of the input budget.
pub const AUTO_THRESHOLD_PERCENT: u64 = 90;
/// Default start of micro-compaction (dedup + prune), as a percentage of the input budget.
pub const DEFAULT_MICRO_PERCENT: u8 = 75;
/// When the prompt cache has expired, thresholds fall to this percentage of theirs
/// ([`ContextBudget::cooled`]).
pub const COLD_THRESHOLD_PERCENT: u64 = 50;

/// Budget figures for one context window, all in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextBudget {
    /// The model's context window.
    pub window: u64,
    /// Tokens kept free for estimation error, provider framing and the reply's start:
    /// `max(4096, ceil(5% of window))`, capped at half the window so that tiny windows
    /// still leave room for input.
    pub margin: u64,
    /// The most input a request may carry: `window - margin`.
    pub input_budget: u64,
    /// Estimated input at which automatic LLM compaction is attempted:
    /// `floor(90% of input_budget)`.
    pub auto_threshold: u64,
    /// Estimated input at which micro-compaction (dedup + prune, no LLM) is considered:
    /// `floor(micro_percent% of working)`.
    pub micro_threshold: u64,
    /// What pith keeps the carried context within (the working set,
    /// docs/context-pipeline.md): the input budget, or less on a large window when
    /// `[context] working_set_tokens` is set. The thresholds and everything a compaction
    /// carries (ledger, re-attached files, summary) are sized from it; a single request
    /// may still use the whole input budget.
    #[serde(default)]
    pub working: u64,
}

impl ContextBudget {
    /// The budget for `window` with the default micro-compaction threshold (75%).
    pub fn for_window(window: u64) -> Self {
        Self::with_micro_percent(window, DEFAULT_MICRO_PERCENT)
    }

    /// The budget for `window` with micro-compaction at `micro_percent`% of the input
    /// budget. Values above the automatic threshold's 90% are clamped to 90 so that the
    /// cheap tier always comes first.
    pub fn with_micro_percent(window: u64, micro_percent: u8) -> Self {
        let percent_margin = (window * MARGIN_PERCENT).div_ceil(100);
        let margin = percent_margin.max(MIN_MARGIN_TOKENS).min(window / 2);
        let input_budget = window - margin;
        let auto_threshold = input_budget * AUTO_THRESHOLD_PERCENT / 100;
        let micro_percent = u64::from(micro_percent).min(AUTO_THRESHOLD_PERCENT);
        let micro_threshold = input_budget * micro_percent / 100;
        Self {
            window,
            margin,
            input_budget,
            auto_threshold,
            micro_threshold,
            working: input_budget,
        }
    }

    /// This budget keeping the carried context within `tokens` (a working set) when that
    /// is less than the input budget: the thresholds become `90%` and the micro
    /// percentage of it, and [`ContextBudget::working`] is it. `0` (off) or a figure at or
    /// above the input budget changes nothing. The micro percentage is the one this
    /// budget was made with.
    pub fn with_working_set(self, tokens: u64) -> Self {
        if tokens == 0 || tokens >= self.input_budget {
            return self;
        }
        let micro_percent = self.micro_threshold * 100 / self.working_budget().max(1);
        Self {
            working: tokens,
            auto_threshold: tokens * AUTO_THRESHOLD_PERCENT / 100,
            micro_threshold: tokens * micro_percent.min(AUTO_THRESHOLD_PERCENT) / 100,
            ..self
        }
    }

    /// True when a working set smaller than the input budget applies.
    pub fn has_working_set(&self) -> bool {
        self.working_budget() < self.input_budget
    }

    /// This budget for a request sent after the provider's prompt cache expired (the
    /// user paused longer than its TTL): rewriting the history costs nothing extra then,
    /// so compaction that would soon be due is done now — the thresholds fall to
    /// [`COLD_THRESHOLD_PERCENT`]% of theirs. The input budget is unchanged.
    pub fn cooled(self) -> Self {
        self.cooled_to(COLD_THRESHOLD_PERCENT)
    }

    /// [`ContextBudget::cooled`] with the thresholds at `percent`% of theirs (the
    /// simulator's `pith:coldpct=P`, how the default was chosen).
    pub fn cooled_to(self, percent: u64) -> Self {
        let percent = percent.min(100);
        Self {
            auto_threshold: self.auto_threshold * percent / 100,
            micro_threshold: self.micro_threshold * percent / 100,
            ..self
        }
    }

    /// [`ContextBudget::working`], the input budget for a budget read without one.
    pub fn working_budget(&self) -> u64 {
        if self.working == 0 {
            self.input_budget
        } else {
            self.working
        }
    }

    /// True when an estimated request of `estimate` tokens reaches the automatic threshold.
    pub fn reaches_auto(&self, estimate: u64) -> bool {
        estimate >= self.auto_threshold
    }

    /// True when an estimated request of `estimate` tokens reaches the micro threshold.
    pub fn reaches_micro(&self, estimate: u64) -> bool {
        estimate >= self.micro_threshold
    }

    /// True when a request of `estimate` tokens does not fit the input budget at all.
    pub fn overflows(&self, estimate: u64) -> bool {
        estimate > self.input_budget
    }

    /// Tokens left before the automatic threshold (0 once it is reached).
    pub fn room_to_auto(&self, estimate: u64) -> u64 {
        self.auto_threshold.saturating_sub(estimate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_table_matches_the_spec() {
        // (window, margin, input_budget, auto_threshold, micro_threshold at 75%)
        let table = [
            (8_192, 4_096, 4_096, 3_686, 3_072),
            (32_768, 4_096, 28_672, 25_804, 21_504),
            (128_000, 6_400, 121_600, 109_440, 91_200),
            (200_000, 10_000, 190_000, 171_000, 142_500),
            (1_000_000, 50_000, 950_000, 855_000, 712_500),
        ];
        for (window, margin, input, auto, micro) in table {
            let b = ContextBudget::for_window(window);
            assert_eq!(
                (
                    b.margin,
                    b.input_budget,
                    b.auto_threshold,
                    b.micro_threshold
                ),
                (margin, input, auto, micro),
                "budget for window {window}"
            );
        }
    }

    #[test]
    fn a_working_set_moves_the_thresholds_not_the_input_budget() {
        let large = ContextBudget::for_window(1_000_000).with_working_set(40_000);
        assert_eq!(large.input_budget, 950_000);
        assert_eq!(large.working, 40_000);
        assert_eq!(large.auto_threshold, 36_000);
        assert_eq!(large.micro_threshold, 30_000);
        assert!(large.has_working_set());
        assert!(
            !large.overflows(500_000),
            "one request may still use the window"
        );
        // Off, or larger than the input budget: nothing changes.
        let small = ContextBudget::for_window(32_768);
        assert_eq!(small.with_working_set(0), small);
        assert_eq!(small.with_working_set(40_000), small);
        assert!(!small.has_working_set());
        let micro = ContextBudget::with_micro_percent(200_000, 60).with_working_set(50_000);
        assert_eq!(micro.micro_threshold, 30_000);
    }

    #[test]
    fn a_cold_cache_lowers_both_thresholds_and_nothing_else() {
        let b = ContextBudget::for_window(200_000);
        let cold = b.cooled();
        assert_eq!(cold, b.cooled_to(COLD_THRESHOLD_PERCENT));
        assert_eq!(cold.auto_threshold, b.auto_threshold / 2);
        assert_eq!(cold.micro_threshold, b.micro_threshold / 2);
        assert_eq!(
            (cold.input_budget, cold.working, cold.margin),
            (b.input_budget, b.working, b.margin)
        );
        assert_eq!(b.cooled_to(100), b);
        assert_eq!(b.cooled_to(250), b, "never above the warm thresholds");
        assert_eq!(b.cooled_to(40).auto_threshold, b.auto_threshold * 40 / 100);
    }

    #[test]
    fn margin_rounds_up_and_thresholds_round_down() {
        // 5% of 100_001 is 5_000.05 -> margin 5_001; input 95_000; 90% -> 85_500.
        let b = ContextBudget::for_window(100_001);
        assert_eq!(b.margin, 5_001);
        assert_eq!(b.input_budget, 95_000);
        assert_eq!(b.auto_threshold, 85_500);
        // 90% of 28_672 is 25_804.8 -> 25_804 (the spec's own example).
        assert_eq!(ContextBudget::for_window(32_768).auto_threshold, 25_804);
    }

    #[test]
    fn tiny_windows_keep_half_for_input() {
        let b = ContextBudget::for_window(4_096);
        assert_eq!(b.margin, 2_048);
        assert_eq!(b.input_budget, 2_048);
        assert!(b.auto_threshold > 0);
        assert_eq!(ContextBudget::for_window(0).input_budget, 0);
    }

    #[test]
    fn micro_threshold_is_configurable_and_never_above_auto() {
        let b = ContextBudget::with_micro_percent(200_000, 60);
        assert_eq!(b.micro_threshold, 114_000);
        let clamped = ContextBudget::with_micro_percent(200_000, 99);
        assert_eq!(clamped.micro_threshold, clamped.auto_threshold);
    }

    #[test]
    fn threshold_predicates_agree_with_the_figures() {
        let b = ContextBudget::for_window(200_000);
        assert!(!b.reaches_auto(170_999));
        assert!(b.reaches_auto(171_000));
        assert!(b.reaches_micro(142_500));
        assert!(!b.overflows(190_000));
        assert!(b.overflows(190_001));
        assert_eq!(b.room_to_auto(170_000), 1_000);
        assert_eq!(b.room_to_auto(180_000), 0);
    }
}
