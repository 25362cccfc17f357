//! The compaction policy: before each model request, what (if anything) to do about the
//! context.
//!
//! [`decide`] is a pure function of the request estimate, the [`ContextBudget`] (its
//! thresholds are never recomputed here) and a small [`PolicyState`] the provider loop
//! keeps. The loop calls it before every model request and acts on the [`Action`]:
//!
//! | action | the loop does |
//! |---|---|
//! | [`Action::None`] | send the request as is (history untouched, prompt cache kept) |
//! | [`Action::Micro`] | run `dedup::collapse` then `prune::prune_old_tool_outputs` on the compaction history, persist it as a micro-compaction record, re-estimate, then call `decide` again |
//! | [`Action::Llm`] | run the automatic LLM summary compaction (seed 002): private request, `auto_prompt`, replacement history only after a valid summary |
//! | [`Action::OverflowFallback`] | the request cannot fit and no compaction can make it fit: apply the deterministic fallback (prune every old tool result, then drop the oldest non-system turns until the estimate fits) and report it |
//!
//! Dedup and prune rewrite history that was already sent, which invalidates the
//! provider's prompt cache; that is why they run only when this policy says so, never
//! silently on every turn.
//!
//! Loop breaker: after any compaction attempt the loop calls
//! [`PolicyState::record_attempt`]; a compaction that freed less than 10% of the input
//! budget is reported by it, and automatic attempts then wait until new history (a new
//! tool turn) arrives ([`PolicyState::record_new_tool_turn`]). An overflow is never
//! ignored: it yields an action even while attempts wait.

use serde::Serialize;

use crate::budget::ContextBudget;

/// What the loop should do before the next model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Action {
    /// Nothing: send the request unchanged.
    None,
    /// Micro-compaction: dedup + prune, no LLM.
    Micro,
    /// Automatic LLM summary compaction.
    Llm,
    /// Deterministic overflow fallback: the request cannot fit otherwise.
    OverflowFallback,
}

/// Percent of the input budget a compaction must free not to trip the loop breaker.
pub const MIN_USEFUL_FREED_PERCENT: u64 = 10;

/// What the policy remembers between requests, plus the facts the loop measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PolicyState {
    /// True when a new tool turn was added since the last compaction attempt (true at
    /// the start of a session).
    pub new_history_since_attempt: bool,
    /// True when the last attempt freed less than [`MIN_USEFUL_FREED_PERCENT`]% of the
    /// input budget (the loop breaker is armed until new history arrives).
    pub last_attempt_freed_too_little: bool,
    /// Tokens dedup + prune would free now (the loop measures it with a dry run on its
    /// compaction history; 0 when prune's own guards refuse).
    pub micro_reclaimable: u64,
    /// Smallest saving that makes micro-compaction worth breaking the prompt cache
    /// (prune's `minimum`, 20 000 by default).
    pub micro_minimum: u64,
    /// False when LLM compaction is not allowed for this request (one-shot or compaction
    /// requests, auto-compaction disabled, or an LLM attempt already failed this turn).
    pub llm_allowed: bool,
}

impl Default for PolicyState {
    fn default() -> Self {
        Self {
            new_history_since_attempt: true,
            last_attempt_freed_too_little: false,
            micro_reclaimable: 0,
            micro_minimum: super::prune::PruneConfig::default().minimum,
            llm_allowed: true,
        }
    }
}

impl PolicyState {
    /// Records that a new tool turn entered the history: automatic attempts may run.
    pub fn record_new_tool_turn(&mut self) {
        self.new_history_since_attempt = true;
        self.last_attempt_freed_too_little = false;
    }

    /// Records a compaction attempt that freed `freed` tokens. Returns true when it freed
    /// too little (the caller reports it); automatic attempts then wait for new history.
    pub fn record_attempt(&mut self, freed: u64, budget: &ContextBudget) -> bool {
        self.new_history_since_attempt = false;
        self.last_attempt_freed_too_little = freed_too_little(freed, budget);
        self.last_attempt_freed_too_little
    }
}

/// True when `freed` tokens are less than 10% of the input budget.
pub fn freed_too_little(freed: u64, budget: &ContextBudget) -> bool {
    freed.saturating_mul(100) < budget.input_budget.saturating_mul(MIN_USEFUL_FREED_PERCENT)
}

/// Decides what to do before a request estimated at `estimate` tokens.
pub fn decide(estimate: u64, budget: &ContextBudget, state: &PolicyState) -> Action {
    if !budget.reaches_micro(estimate) {
        return Action::None;
    }
    let micro_worth_it =
        state.micro_reclaimable > 0 && state.micro_reclaimable >= state.micro_minimum;
    let after_micro = estimate.saturating_sub(state.micro_reclaimable);
    if budget.overflows(estimate) {
        if micro_worth_it && !budget.overflows(after_micro) {
            return Action::Micro;
        }
        if state.llm_allowed && state.new_history_since_attempt {
            return Action::Llm;
        }
        return Action::OverflowFallback;
    }
    if !state.new_history_since_attempt {
        return Action::None;
    }
    if budget.reaches_auto(estimate) {
        if micro_worth_it && !budget.reaches_auto(after_micro) {
            return Action::Micro;
        }
        if state.llm_allowed {
            return Action::Llm;
        }
        return if micro_worth_it {
            Action::Micro
        } else {
            Action::None
        };
    }
    if micro_worth_it {
        Action::Micro
    } else {
        Action::None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> ContextBudget {
        // input 190_000, auto 171_000, micro 142_500
        ContextBudget::for_window(200_000)
    }

    fn state(reclaimable: u64) -> PolicyState {
        PolicyState {
            micro_reclaimable: reclaimable,
            ..PolicyState::default()
        }
    }

    #[test]
    fn below_the_micro_threshold_nothing_happens() {
        assert_eq!(decide(142_499, &budget(), &state(50_000)), Action::None);
    }

    #[test]
    fn micro_runs_between_thresholds_only_when_it_frees_the_minimum() {
        assert_eq!(decide(150_000, &budget(), &state(25_000)), Action::Micro);
        assert_eq!(decide(150_000, &budget(), &state(19_999)), Action::None);
    }

    #[test]
    fn at_the_auto_threshold_micro_first_if_it_gets_below_else_llm() {
        assert_eq!(decide(175_000, &budget(), &state(30_000)), Action::Micro);
        assert_eq!(decide(175_000, &budget(), &state(0)), Action::Llm);
        // 1M window: auto at 855_000; freeing 25k from 900k is not enough.
        let big = ContextBudget::for_window(1_000_000);
        assert_eq!(decide(900_000, &big, &state(25_000)), Action::Llm);
    }

    #[test]
    fn overflow_falls_back_when_nothing_else_can_fit_it() {
        let mut s = state(0);
        s.llm_allowed = false;
        assert_eq!(decide(195_000, &budget(), &s), Action::OverflowFallback);
        s.micro_reclaimable = 30_000;
        assert_eq!(decide(195_000, &budget(), &s), Action::Micro);
        assert_eq!(decide(195_000, &budget(), &state(0)), Action::Llm);
    }

    #[test]
    fn loop_breaker_waits_for_new_history_after_a_useless_compaction() {
        let b = budget();
        let mut s = state(0);
        assert!(s.record_attempt(5_000, &b), "5k of 190k is under 10%");
        assert_eq!(
            decide(175_000, &b, &s),
            Action::None,
            "must wait for new history"
        );
        assert_eq!(
            decide(195_000, &b, &s),
            Action::OverflowFallback,
            "an overflow is never ignored"
        );
        s.record_new_tool_turn();
        assert_eq!(decide(175_000, &b, &s), Action::Llm);
        assert!(!s.record_attempt(19_000, &b), "19k of 190k is 10%");
    }
}
