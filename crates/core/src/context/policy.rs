//! The compaction policy: before each model request, what (if anything) to do about the
//! context.
//!
//! [`decide`] is the one decision. It is a pure function of three things:
//! - [`Facts`], which the tool loop measures for each request: the estimate (calibrated,
//!   see [`super::calibration`]), what micro-compaction would free, and whether an LLM
//!   compaction may run for it;
//! - the [`ContextBudget`] (its thresholds are never recomputed here);
//! - the [`Governor`], what the policy remembers between requests: suppression until new
//!   history, the breaker and the per-turn ceiling (see [`super::governor`]).
//!
//! The loop calls it before every request (turn requests and compaction requests alike)
//! and carries out every [`Action`]:
//!
//! | action | the loop does |
//! |---|---|
//! | [`Action::None`] | send the request as it is (history untouched, prompt cache kept) |
//! | [`Action::Micro`] | `dedup::collapse` then `prune::prune_old_tool_outputs` on the history, persist the result as a micro-compaction record, install it, then decide again for the same request (micro no longer allowed for it) |
//! | [`Action::Llm`] | first the floor: what the replacement would hold whatever the summary says. When the replacement cannot fall to [`super::governor::MIN_USEFUL_FREED_PERCENT`]% below the threshold even with fewer re-attached files and a smaller ledger, no request is made: the breaker arms and the loop decides again. Otherwise the automatic LLM summary compaction: private request, replacement persisted then installed only after a usable summary; then decide again (LLM no longer allowed for this request) |
//! | [`Action::OverflowFallback`] | the request cannot fit and nothing else may make it fit now: fit the request itself (cap the largest tool results to head + tail, then drop the oldest messages behind one note, then cap the largest texts). The history is not rewritten; only what is sent is |
//!
//! Dedup and prune rewrite history that was already sent, which invalidates the
//! provider's prompt cache; that is why they run only when this policy says so, never
//! silently on every turn, and only when they free at least `micro_minimum` tokens.
//!
//! An overflow is never ignored: while automatic attempts wait (suppression, the breaker,
//! the ceiling) it yields [`Action::OverflowFallback`], so no request is sent larger than
//! the input budget and none costs an LLM call it cannot repay.

use serde::Serialize;

use crate::context::budget::ContextBudget;

use super::governor::Governor;

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

/// What the loop measured for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Facts {
    /// Estimated input tokens of the request as it stands, in the server's terms (pith's
    /// count times the conversation's calibration, or anchored on a plausible report).
    pub estimate: u64,
    /// pith's own count of the request times the calibration, never anchored on a report:
    /// how much the conversation holds as pith sees it.
    pub content: u64,
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

impl Facts {
    /// How far the conversation has grown, for the governor's gates (the breaker, the
    /// ceiling): the smaller of the estimate and pith's own count, so that a report that
    /// jumps (a server whose figure comes into the band as the request grows) never looks
    /// like growth.
    pub fn progress(&self) -> u64 {
        self.estimate.min(self.content)
    }
}

/// True when the governor would let an LLM compaction start: new history since the last
/// attempt, the breaker not holding, the turn's ceiling not reached.
fn llm_permitted(facts: &Facts, budget: &ContextBudget, governor: &Governor) -> bool {
    facts.llm_allowed
        && governor.new_history_since_attempt
        && !governor.breaker_holds(facts.progress())
        && !governor.ceiling_reached(facts.progress(), budget)
}

/// True when a summary may be prepared in the background before this request: the
/// estimate has passed `percent` of the automatic threshold but not the threshold itself
/// (there the compaction runs in place), and the governor would let an LLM compaction
/// start (its breaker and ceiling hold for a prepared summary as for any). `percent` 0
/// never prepares.
pub fn prepare_permitted(
    facts: &Facts,
    budget: &ContextBudget,
    governor: &Governor,
    percent: u8,
) -> bool {
    if percent == 0 || budget.reaches_auto(facts.estimate) {
        return false;
    }
    let mark = budget.auto_threshold * u64::from(percent.min(100)) / 100;
    facts.estimate >= mark && llm_permitted(facts, budget, governor)
}

/// True when only the turn's ceiling kept an LLM compaction from starting: the loop tells
/// the user once a turn.
pub fn held_by_ceiling(facts: &Facts, budget: &ContextBudget, governor: &Governor) -> bool {
    budget.reaches_auto(facts.estimate)
        && facts.llm_allowed
        && governor.new_history_since_attempt
        && !governor.breaker_holds(facts.progress())
        && governor.ceiling_reached(facts.progress(), budget)
}

/// Decides what to do before one request. See the module docs for what the loop does
/// with each [`Action`].
pub fn decide(facts: &Facts, budget: &ContextBudget, governor: &Governor) -> Action {
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
    let llm = llm_permitted(facts, budget, governor);
    if budget.overflows(estimate) {
        if micro_worth_it && !budget.overflows(after_micro) {
            return Action::Micro;
        }
        if llm {
            return Action::Llm;
        }
        return Action::OverflowFallback;
    }
    if !governor.new_history_since_attempt {
        return Action::None;
    }
    if !budget.reaches_auto(estimate) || governor.breaker_holds(facts.progress()) {
        return micro_or_none;
    }
    if micro_worth_it && !budget.reaches_auto(after_micro) {
        return Action::Micro;
    }
    if llm {
        return Action::Llm;
    }
    micro_or_none
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::notice::PauseReason;

    fn budget() -> ContextBudget {
        // input 190_000, auto 171_000, micro 142_500
        ContextBudget::for_window(200_000)
    }

    fn facts(estimate: u64, reclaimable: u64) -> Facts {
        Facts {
            estimate,
            content: estimate,
            micro_reclaimable: reclaimable,
            micro_minimum: 20_000,
            llm_allowed: true,
        }
    }

    fn fresh() -> Governor {
        Governor::default()
    }

    #[test]
    fn a_summary_is_prepared_between_the_mark_and_the_threshold_only() {
        let budget = budget();
        let mark = budget.auto_threshold * 75 / 100;
        let at = |estimate| prepare_permitted(&facts(estimate, 0), &budget, &fresh(), 75);
        assert!(!at(mark - 1));
        assert!(at(mark));
        assert!(at(budget.auto_threshold - 1));
        assert!(
            !at(budget.auto_threshold),
            "at the threshold it compacts in place"
        );
        assert!(
            !prepare_permitted(&facts(mark, 0), &budget, &fresh(), 0),
            "0 is off"
        );
    }

    #[test]
    fn the_breaker_holds_a_prepared_summary_back_as_any_compaction() {
        let budget = budget();
        let mark = budget.auto_threshold * 75 / 100;
        let mut governor = fresh();
        governor.pause(
            PauseReason::Failed {
                detail: "test".to_owned(),
            },
            mark,
            &budget,
        );
        assert!(!prepare_permitted(
            &facts(mark + 1, 0),
            &budget,
            &governor,
            75
        ));
        let mut no_llm = facts(mark + 1, 0);
        no_llm.llm_allowed = false;
        assert!(!prepare_permitted(&no_llm, &budget, &fresh(), 75));
    }

    #[test]
    fn the_decision_table() {
        let b = budget();
        let mut waiting = fresh();
        waiting.record_skipped();
        let no_llm = |estimate, reclaimable| Facts {
            llm_allowed: false,
            ..facts(estimate, reclaimable)
        };
        // (facts, governor, expected, why)
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
                waiting.clone(),
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
        for (facts, governor, expected, why) in table {
            assert_eq!(decide(&facts, &b, &governor), expected, "{why}: {facts:?}");
        }
    }

    #[test]
    fn freeing_enough_of_a_large_window_needs_an_llm_compaction() {
        // 1M window: auto at 855_000; freeing 25k from 900k is not enough.
        let big = ContextBudget::for_window(1_000_000);
        assert_eq!(decide(&facts(900_000, 25_000), &big, &fresh()), Action::Llm);
    }

    #[test]
    fn while_the_breaker_holds_only_micro_and_fitting_act_even_over_the_budget() {
        let b = budget();
        let mut governor = fresh();
        governor.pause(PauseReason::FreedTooLittle { freed: 5_000 }, 172_000, &b);
        governor.record_new_history();
        assert_eq!(
            decide(&facts(175_000, 0), &b, &governor),
            Action::None,
            "new history alone does not restart a useless compaction"
        );
        assert_eq!(
            decide(&facts(180_000, 25_000), &b, &governor),
            Action::Micro,
            "micro still acts while the breaker holds"
        );
        assert_eq!(
            decide(&facts(190_500, 0), &b, &governor),
            Action::OverflowFallback,
            "an overflow is fitted, not compacted, while the breaker holds"
        );
        // 172_000 + 19_000 = 191_000 is the growth that re-opens automatic attempts.
        assert_eq!(decide(&facts(191_000, 0), &b, &governor), Action::Llm);
    }

    #[test]
    fn past_the_ceiling_an_overflow_is_fitted_and_the_loop_is_told() {
        let b = budget();
        let mut governor = Governor::new(2);
        governor.record_attempt_started(175_000, &b);
        governor.record_new_history();
        assert_eq!(decide(&facts(175_000, 0), &b, &governor), Action::Llm);
        governor.record_attempt_started(175_000, &b);
        governor.record_new_history();
        assert_eq!(decide(&facts(175_000, 0), &b, &governor), Action::None);
        assert!(held_by_ceiling(&facts(175_000, 0), &b, &governor));
        assert_eq!(
            decide(&facts(195_000, 0), &b, &governor),
            Action::OverflowFallback
        );
        assert!(!held_by_ceiling(&facts(100_000, 0), &b, &governor));
        governor.start_turn();
        assert_eq!(decide(&facts(175_000, 0), &b, &governor), Action::Llm);
    }

    #[test]
    fn a_report_that_jumps_is_not_growth_for_the_breaker() {
        let b = budget();
        let mut governor = fresh();
        governor.pause(PauseReason::FreedTooLittle { freed: 5_000 }, 20_000, &b);
        governor.record_new_history();
        // The server now reports 180,000 for a conversation pith counts at 21,000.
        let jumped = Facts {
            content: 21_000,
            ..facts(180_000, 0)
        };
        assert_eq!(jumped.progress(), 21_000);
        assert_eq!(decide(&jumped, &b, &governor), Action::None);
        let grown = Facts {
            content: 39_000,
            ..facts(180_000, 0)
        };
        assert_eq!(decide(&grown, &b, &governor), Action::Llm);
    }

    #[test]
    fn an_attempt_that_did_not_apply_waits_for_new_history_without_arming_the_breaker() {
        let b = budget();
        let mut governor = fresh();
        governor.record_skipped();
        assert_eq!(decide(&facts(175_000, 0), &b, &governor), Action::None);
        assert_eq!(governor.breaker, None);
        governor.record_new_history();
        assert_eq!(decide(&facts(175_000, 0), &b, &governor), Action::Llm);
    }
}
