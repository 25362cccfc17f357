//! The compaction policy: before each model request, what (if anything) to do about the
//! context.
//!
//! [`decide`] is the one decision. It is a pure function of three things:
//! - [`Facts`], which the tool loop measures for each request: the estimate, what
//!   micro-compaction would free, and whether an LLM compaction may run for it;
//! - the [`ContextBudget`] (its thresholds are never recomputed here);
//! - [`PolicyMemory`], what the policy remembers between requests: suppression until new
//!   history, and the loop breaker.
//!
//! The loop calls it before every request (turn requests and compaction requests alike)
//! and carries out every [`Action`]:
//!
//! | action | the loop does |
//! |---|---|
//! | [`Action::None`] | send the request as it is (history untouched, prompt cache kept) |
//! | [`Action::Micro`] | `dedup::collapse` then `prune::prune_old_tool_outputs` on the history, persist the result as a micro-compaction record, install it, then decide again for the same request (micro no longer allowed for it) |
//! | [`Action::Llm`] | the automatic LLM summary compaction (seed 002): private request, `auto_prompt`, replacement persisted then installed only after a valid summary; then decide again (LLM no longer allowed for this request) |
//! | [`Action::OverflowFallback`] | the request cannot fit and nothing else may make it fit now: fit the request itself (cap the largest tool results to head + tail, then drop the oldest messages behind one note, then cap the largest texts). The history is not rewritten; only what is sent is |
//!
//! Dedup and prune rewrite history that was already sent, which invalidates the
//! provider's prompt cache; that is why they run only when this policy says so, never
//! silently on every turn, and only when they free at least `micro_minimum` tokens.
//!
//! Suppression (seed 002 "Trigger points"): after an LLM compaction attempt — applied,
//! failed, cancelled or not persisted — automatic attempts wait until new history arrives
//! (a completed tool turn, or a new user message). An overflow is never ignored: it yields
//! [`Action::OverflowFallback`] while attempts wait.
//!
//! Loop breaker: an applied compaction that freed less than [`MIN_USEFUL_FREED_PERCENT`]% of the
//! input budget arms the breaker with the estimate it left. Until the estimate has grown
//! by that same 10% beyond it, new history alone does not start another LLM attempt
//! (micro-compaction and the overflow path still act). Without it, a conversation whose
//! summary alone sits above the threshold would be compacted after every tool turn.

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

/// What the loop measured for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Estimated input tokens of the request as it stands.
    pub estimate: u64,
    /// Tokens dedup + prune would free now, measured with a dry run on the history. The
    /// loop reports 0 without a dry run when micro-compaction is off, was already applied
    /// for this request, there is no new history, or the estimate is below the micro
    /// threshold (the decision cannot be `Micro` then anyway).
    pub micro_reclaimable: u64,
    /// The smallest saving that makes micro-compaction worth breaking the prompt cache
    /// (prune's `minimum_tokens`, 20 000 by default).
    pub micro_minimum: u64,
    /// True when an LLM compaction may run for this request: automatic compaction is on,
    /// the request belongs to a user turn (a compaction request never compacts itself),
    /// and no LLM attempt was made for this request yet.
    pub llm_allowed: bool,
}

/// What the policy remembers between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PolicyMemory {
    /// True when new history (a completed tool turn or a user message) arrived since the
    /// last LLM compaction attempt. True at the start of a conversation.
    pub new_history_since_attempt: bool,
    /// The loop breaker: `Some(estimate)` right after an attempt that freed too little;
    /// automatic attempts wait until the estimate grows by
    /// [`MIN_USEFUL_FREED_PERCENT`]% of the input budget beyond it.
    pub breaker: Option<u64>,
}

impl Default for PolicyMemory {
    fn default() -> Self {
        Self {
            new_history_since_attempt: true,
            breaker: None,
        }
    }
}

impl PolicyMemory {
    /// Records that new history arrived (a completed tool turn, a user message).
    pub fn record_new_history(&mut self) {
        self.new_history_since_attempt = true;
    }

    /// Records an LLM compaction attempt that did not apply (cancelled, failed, not
    /// persisted): automatic attempts wait for new history (seed 002), the breaker stays
    /// as it was.
    pub fn record_unapplied_attempt(&mut self) {
        self.new_history_since_attempt = false;
    }

    /// Records an applied LLM compaction that freed `freed` tokens and left an estimate
    /// of `estimate_after`. Returns true when it freed too little (the breaker is armed
    /// and the caller reports it).
    pub fn record_attempt(
        &mut self,
        freed: u64,
        estimate_after: u64,
        budget: &ContextBudget,
    ) -> bool {
        self.new_history_since_attempt = false;
        let too_little = freed_too_little(freed, budget);
        self.breaker = too_little.then_some(estimate_after);
        too_little
    }

    /// True while the breaker holds automatic attempts back at `estimate`.
    fn breaker_holds(&self, estimate: u64, budget: &ContextBudget) -> bool {
        self.breaker
            .is_some_and(|armed| estimate < armed.saturating_add(useful_tokens(budget)))
    }
}

/// Tokens a compaction must free to be useful: 10% of the input budget.
fn useful_tokens(budget: &ContextBudget) -> u64 {
    budget.input_budget * MIN_USEFUL_FREED_PERCENT / 100
}

/// True when `freed` tokens are less than 10% of the input budget.
pub fn freed_too_little(freed: u64, budget: &ContextBudget) -> bool {
    freed.saturating_mul(100) < budget.input_budget.saturating_mul(MIN_USEFUL_FREED_PERCENT)
}

/// Decides what to do before one request. See the module docs for what the loop does
/// with each [`Action`].
pub fn decide(facts: &Facts, budget: &ContextBudget, memory: &PolicyMemory) -> Action {
    let estimate = facts.estimate;
    if !budget.reaches_micro(estimate) {
        return Action::None;
    }
    let micro_worth_it =
        facts.micro_reclaimable > 0 && facts.micro_reclaimable >= facts.micro_minimum;
    let after_micro = estimate.saturating_sub(facts.micro_reclaimable);
    let micro_or_none = if micro_worth_it {
        Action::Micro
    } else {
        Action::None
    };
    if budget.overflows(estimate) {
        if micro_worth_it && !budget.overflows(after_micro) {
            return Action::Micro;
        }
        if facts.llm_allowed && memory.new_history_since_attempt {
            return Action::Llm;
        }
        return Action::OverflowFallback;
    }
    if !memory.new_history_since_attempt {
        return Action::None;
    }
    if !budget.reaches_auto(estimate) || memory.breaker_holds(estimate, budget) {
        return micro_or_none;
    }
    if micro_worth_it && !budget.reaches_auto(after_micro) {
        return Action::Micro;
    }
    if facts.llm_allowed {
        return Action::Llm;
    }
    micro_or_none
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> ContextBudget {
        // input 190_000, auto 171_000, micro 142_500
        ContextBudget::for_window(200_000)
    }

    fn facts(estimate: u64, reclaimable: u64) -> Facts {
        Facts {
            estimate,
            micro_reclaimable: reclaimable,
            micro_minimum: 20_000,
            llm_allowed: true,
        }
    }

    fn fresh() -> PolicyMemory {
        PolicyMemory::default()
    }

    #[test]
    fn the_decision_table() {
        let b = budget();
        let waiting = PolicyMemory {
            new_history_since_attempt: false,
            breaker: None,
        };
        let no_llm = |estimate, reclaimable| Facts {
            llm_allowed: false,
            ..facts(estimate, reclaimable)
        };
        // (facts, memory, expected, why)
        let table = [
            (facts(142_499, 50_000), fresh(), Action::None, "below micro"),
            (
                facts(150_000, 25_000),
                fresh(),
                Action::Micro,
                "micro frees the minimum",
            ),
            (
                facts(150_000, 19_999),
                fresh(),
                Action::None,
                "micro under the minimum",
            ),
            (
                facts(175_000, 30_000),
                fresh(),
                Action::Micro,
                "micro gets below auto",
            ),
            (facts(175_000, 0), fresh(), Action::Llm, "at auto"),
            (
                no_llm(175_000, 0),
                fresh(),
                Action::None,
                "at auto, llm not allowed",
            ),
            (
                no_llm(175_000, 25_000),
                fresh(),
                Action::Micro,
                "at auto, only micro allowed",
            ),
            (
                facts(175_000, 0),
                waiting,
                Action::None,
                "suppressed until new history",
            ),
            (
                facts(195_000, 0),
                waiting,
                Action::OverflowFallback,
                "overflow is never ignored",
            ),
            (
                no_llm(195_000, 0),
                fresh(),
                Action::OverflowFallback,
                "overflow, llm not allowed",
            ),
            (
                no_llm(195_000, 30_000),
                fresh(),
                Action::Micro,
                "overflow fixed by micro",
            ),
            (
                facts(195_000, 0),
                fresh(),
                Action::Llm,
                "overflow with new history",
            ),
        ];
        for (facts, memory, expected, why) in table {
            assert_eq!(decide(&facts, &b, &memory), expected, "{why}: {facts:?}");
        }
    }

    #[test]
    fn freeing_enough_of_a_large_window_needs_an_llm_compaction() {
        // 1M window: auto at 855_000; freeing 25k from 900k is not enough.
        let big = ContextBudget::for_window(1_000_000);
        assert_eq!(decide(&facts(900_000, 25_000), &big, &fresh()), Action::Llm);
    }

    #[test]
    fn the_loop_breaker_waits_for_ten_percent_of_growth_after_a_useless_compaction() {
        let b = budget();
        let mut memory = fresh();
        assert!(
            memory.record_attempt(5_000, 172_000, &b),
            "5k of 190k is under 10%"
        );
        assert_eq!(memory.breaker, Some(172_000));
        memory.record_new_history();
        assert_eq!(
            decide(&facts(175_000, 0), &b, &memory),
            Action::None,
            "new history alone does not restart a useless compaction"
        );
        assert_eq!(
            decide(&facts(180_000, 25_000), &b, &memory),
            Action::Micro,
            "micro still acts while the breaker holds"
        );
        assert_eq!(
            decide(&facts(191_000, 0), &b, &memory),
            Action::Llm,
            "an overflow with new history is compacted"
        );
        // 172_000 + 19_000 = 191_000 is the growth that re-opens automatic attempts.
        let grown = budget();
        assert!(memory.breaker_holds(190_999, &grown));
        assert!(!memory.breaker_holds(191_000, &grown));
        assert!(
            !memory.record_attempt(19_000, 150_000, &b),
            "19k of 190k is 10%"
        );
        assert_eq!(memory.breaker, None, "a useful attempt disarms the breaker");
    }

    #[test]
    fn an_attempt_that_did_not_apply_waits_for_new_history_without_arming_the_breaker() {
        let b = budget();
        let mut memory = fresh();
        memory.record_unapplied_attempt();
        assert_eq!(decide(&facts(175_000, 0), &b, &memory), Action::None);
        assert_eq!(memory.breaker, None);
        memory.record_new_history();
        assert_eq!(decide(&facts(175_000, 0), &b, &memory), Action::Llm);
    }
}
