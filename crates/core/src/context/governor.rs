//! The compaction governor's memory: what the decision ([`super::policy::decide`])
//! remembers between requests so that an LLM compaction is only attempted when it can
//! help, and never over and over.
//!
//! - **Suppression** (docs/context-pipeline.md, "Policy"): after an attempt, automatic attempts
//!   wait for new history (a completed tool turn, a user message).
//! - **The breaker** holds automatic attempts back until the context has grown by
//!   [`MIN_USEFUL_FREED_PERCENT`]% of the working budget (the input budget, or a working set) beyond where it armed. It arms when
//!   an applied compaction freed less than that, when the server's first report after a
//!   compaction is still at or above the threshold (the compaction did not help), when a
//!   compaction could not help before it was tried (its floor: what the replacement holds
//!   whatever the summary says), and when an attempt failed. While it holds, requests that
//!   would not fit are fitted without an LLM call.
//! - **The ceiling**: at most `max_per_turn` automatic LLM compactions in one user turn;
//!   past it, the overflow path fits requests until the next user message. A compaction
//!   after which the context grew by [`CEILING_RELEASE_PERCENT`]% of the input budget
//!   before the next one no longer counts: that growth is work, not a loop, and a long
//!   autonomous turn (one prompt, hundreds of tool calls) keeps compacting as it fills.
//!
//! Every change the loop must tell the user about comes back as a [`GovernorNotice`],
//! whose text states what the next decisions will really do.

use serde::Serialize;

use crate::context::budget::ContextBudget;
use crate::protocol::notice::{GovernorNotice, PauseReason};

/// Percent of the input budget a compaction must free to be useful; also the growth the
/// breaker waits for.
pub const MIN_USEFUL_FREED_PERCENT: u64 = 10;

/// Default of `[context] max_auto_compactions_per_turn`.
pub const DEFAULT_MAX_AUTO_COMPACTIONS_PER_TURN: u32 = 2;

/// Growth since the last attempt, percent of the input budget, after which the ceiling
/// counts afresh.
pub const CEILING_RELEASE_PERCENT: u64 = 50;

/// Tokens a compaction must free to be useful: 10% of the working budget
/// ([`ContextBudget::working`]: the input budget, or the working set).
pub fn useful_tokens(budget: &ContextBudget) -> u64 {
    budget.working_budget() * MIN_USEFUL_FREED_PERCENT / 100
}

/// True when `freed` tokens are less than 10% of the working budget.
pub fn freed_too_little(freed: u64, budget: &ContextBudget) -> bool {
    freed.saturating_mul(100)
        < budget
            .working_budget()
            .saturating_mul(MIN_USEFUL_FREED_PERCENT)
}

/// The breaker, armed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Breaker {
    /// Why it armed.
    pub reason: PauseReason,
    /// Automatic attempts resume once the estimate reaches this.
    pub until: u64,
}

/// What the governor remembers between requests; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Governor {
    /// True when new history (a completed tool turn or a user message) arrived since the
    /// last LLM compaction attempt. True at the start of a conversation.
    pub new_history_since_attempt: bool,
    /// The breaker, when armed.
    pub breaker: Option<Breaker>,
    /// Automatic LLM compaction attempts in the current user turn.
    pub attempts_this_turn: u32,
    /// The ceiling on them (`max_auto_compactions_per_turn`).
    pub max_per_turn: u32,
    /// The estimate the last attempt left (applied: its replacement; otherwise where it
    /// was tried): growth is measured from here.
    pub settled_at: Option<u64>,
    /// An applied compaction waits for the server's next report to verify it.
    pub verifying: bool,
    /// The ceiling notice was given in this turn.
    ceiling_told: bool,
    /// The implausible-usage notice was given in this session.
    implausible_told: bool,
}

impl Default for Governor {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_AUTO_COMPACTIONS_PER_TURN)
    }
}

impl Governor {
    /// A fresh governor allowing `max_per_turn` automatic compactions per user turn.
    pub fn new(max_per_turn: u32) -> Self {
        Self {
            new_history_since_attempt: true,
            breaker: None,
            attempts_this_turn: 0,
            max_per_turn,
            settled_at: None,
            verifying: false,
            ceiling_told: false,
            implausible_told: false,
        }
    }

    /// A user message starts a turn: new history, a fresh ceiling.
    pub fn start_turn(&mut self) {
        self.new_history_since_attempt = true;
        self.attempts_this_turn = 0;
        self.ceiling_told = false;
    }

    /// A completed tool turn (or a Stop hook's continuation) is new history.
    pub fn record_new_history(&mut self) {
        self.new_history_since_attempt = true;
    }

    /// True while the breaker holds automatic attempts back at `estimate`.
    pub fn breaker_holds(&self, estimate: u64) -> bool {
        self.breaker.as_ref().is_some_and(|b| estimate < b.until)
    }

    /// The estimate from which the ceiling counts afresh: half the input budget above
    /// where the last attempt left the context.
    fn release_at(&self, budget: &ContextBudget) -> u64 {
        self.settled_at
            .unwrap_or(0)
            .saturating_add(budget.working_budget() * CEILING_RELEASE_PERCENT / 100)
    }

    /// True when this turn has used all its automatic attempts and the context has not
    /// grown enough at `estimate` to count afresh.
    pub fn ceiling_reached(&self, estimate: u64, budget: &ContextBudget) -> bool {
        self.attempts_this_turn >= self.max_per_turn && estimate < self.release_at(budget)
    }

    /// The ceiling notice, the first time in a turn the ceiling stops an attempt.
    pub fn ceiling_notice(&mut self, budget: &ContextBudget) -> Option<GovernorNotice> {
        (!self.ceiling_told).then(|| {
            self.ceiling_told = true;
            GovernorNotice::CeilingReached {
                attempts: self.attempts_this_turn,
                until_tokens: self.release_at(budget),
            }
        })
    }

    /// An LLM compaction attempt is about to send its summary request at `estimate`.
    pub fn record_attempt_started(&mut self, estimate: u64, budget: &ContextBudget) {
        if self.settled_at.is_some() && estimate >= self.release_at(budget) {
            self.attempts_this_turn = 0;
            self.ceiling_told = false;
        }
        self.attempts_this_turn += 1;
        self.new_history_since_attempt = false;
        self.settled_at = Some(estimate);
    }

    /// An attempt the user (or a hook) stopped: wait for new history, nothing more.
    pub fn record_skipped(&mut self) {
        self.new_history_since_attempt = false;
    }

    /// Arms the breaker at `estimate`; returns the notice to give.
    pub fn pause(
        &mut self,
        reason: PauseReason,
        estimate: u64,
        budget: &ContextBudget,
    ) -> GovernorNotice {
        self.new_history_since_attempt = false;
        let until = estimate.saturating_add(useful_tokens(budget));
        self.breaker = Some(Breaker {
            reason: reason.clone(),
            until,
        });
        GovernorNotice::Paused {
            reason,
            tokens: estimate,
            until_tokens: until,
        }
    }

    /// An applied compaction that freed `freed` tokens and left `estimate_after`: pauses
    /// when it freed too little, else clears the breaker; either way the server's next
    /// report verifies it.
    pub fn record_applied(
        &mut self,
        freed: u64,
        estimate_after: u64,
        budget: &ContextBudget,
    ) -> Option<GovernorNotice> {
        self.verifying = true;
        self.settled_at = Some(estimate_after);
        if freed_too_little(freed, budget) {
            return Some(self.pause(
                PauseReason::FreedTooLittle { freed },
                estimate_after,
                budget,
            ));
        }
        self.breaker = None;
        self.new_history_since_attempt = false;
        None
    }

    /// The server reported `reported` input tokens for the first request after an
    /// applied compaction whose estimate is now `estimate`: at or above the threshold,
    /// the compaction did not help and the breaker arms.
    pub fn verify(
        &mut self,
        reported: u64,
        estimate: u64,
        budget: &ContextBudget,
    ) -> Option<GovernorNotice> {
        if !std::mem::take(&mut self.verifying) || !budget.reaches_auto(reported) {
            return None;
        }
        Some(self.pause(
            PauseReason::StillOverThreshold { reported },
            estimate,
            budget,
        ))
    }

    /// The notice for an implausible usage report, the first time in the session.
    pub fn implausible_notice(&mut self, reported: u64, counted: u64) -> Option<GovernorNotice> {
        (!self.implausible_told).then(|| {
            self.implausible_told = true;
            GovernorNotice::UsageImplausible { reported, counted }
        })
    }

    /// After a manual compaction or a replaced history: attempts may start again.
    pub fn reset(&mut self) {
        self.new_history_since_attempt = true;
        self.breaker = None;
        self.verifying = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> ContextBudget {
        // input 190_000, auto 171_000, useful 19_000
        ContextBudget::for_window(200_000)
    }

    #[test]
    fn a_compaction_that_freed_too_little_pauses_until_the_useful_growth() {
        let b = budget();
        let mut governor = Governor::default();
        let notice = governor.record_applied(5_000, 172_000, &b).unwrap();
        assert_eq!(
            notice,
            GovernorNotice::Paused {
                reason: PauseReason::FreedTooLittle { freed: 5_000 },
                tokens: 172_000,
                until_tokens: 191_000
            }
        );
        assert!(governor.breaker_holds(190_999));
        assert!(!governor.breaker_holds(191_000));
        assert!(notice.text().contains("191,000"), "{}", notice.text());
        assert!(governor.record_applied(19_000, 150_000, &b).is_none());
        assert_eq!(governor.breaker, None, "a useful compaction clears it");
    }

    #[test]
    fn the_first_report_after_a_compaction_verifies_it() {
        let b = budget();
        let mut governor = Governor::default();
        assert!(
            governor.verify(180_000, 20_000, &b).is_none(),
            "nothing to verify"
        );
        governor.record_applied(100_000, 20_000, &b);
        assert!(
            governor.verify(170_999, 20_000, &b).is_none(),
            "below the threshold"
        );
        assert!(
            governor.verify(180_000, 20_000, &b).is_none(),
            "verified once only"
        );
        governor.record_applied(100_000, 20_000, &b);
        let notice = governor.verify(180_000, 20_000, &b).unwrap();
        assert!(matches!(
            notice,
            GovernorNotice::Paused {
                reason: PauseReason::StillOverThreshold { reported: 180_000 },
                until_tokens: 39_000,
                ..
            }
        ));
    }

    #[test]
    fn the_ceiling_counts_attempts_per_turn_and_is_told_once_a_turn() {
        let b = budget(); // half the input budget: 95_000
        let mut governor = Governor::new(2);
        governor.record_attempt_started(175_000, &b);
        governor.record_applied(150_000, 25_000, &b);
        assert!(!governor.ceiling_reached(100_000, &b));
        // 75,000 of growth is less than half the budget: this one counts.
        governor.record_attempt_started(100_000, &b);
        governor.record_applied(25_000, 75_000, &b);
        assert!(governor.ceiling_reached(169_999, &b));
        let notice = governor.ceiling_notice(&b).unwrap();
        assert_eq!(
            notice,
            GovernorNotice::CeilingReached {
                attempts: 2,
                until_tokens: 170_000
            }
        );
        assert!(notice.text().contains("170,000"), "{}", notice.text());
        assert!(governor.ceiling_notice(&b).is_none());
        governor.start_turn();
        assert!(!governor.ceiling_reached(169_999, &b));
        assert!(governor.new_history_since_attempt);
    }

    #[test]
    fn growth_of_half_the_budget_since_the_last_attempt_counts_the_ceiling_afresh() {
        let b = budget();
        let mut governor = Governor::new(2);
        // A long autonomous turn: each compaction frees most of the context, then real
        // work fills it again.
        for _ in 0..5 {
            assert!(!governor.ceiling_reached(175_000, &b));
            governor.record_attempt_started(175_000, &b);
            governor.record_applied(150_000, 25_000, &b);
        }
        // A loop: attempts right after one another.
        governor.record_attempt_started(60_000, &b);
        governor.record_attempt_started(60_000, &b);
        assert!(governor.ceiling_reached(100_000, &b));
        assert!(!governor.ceiling_reached(155_000, &b));
    }

    #[test]
    fn the_implausible_usage_notice_is_given_once_a_session() {
        let mut governor = Governor::default();
        let notice = governor.implausible_notice(100, 3_000).unwrap();
        assert!(notice.text().contains("100 input tokens") && notice.text().contains("3,000"));
        assert!(governor.implausible_notice(100, 9_000).is_none());
        governor.start_turn();
        assert!(governor.implausible_notice(100, 9_000).is_none());
    }
}
