//! The governor's verbs on the loop's context: every compaction tells [`ContextState`]
//! what happened to it (started, skipped, applied, paused) and the context tells its
//! governor with its own budget. No caller pairs the budget with the governor by hand.

use pith_core::context::{GovernorNotice, PauseReason};

use super::ContextState;

impl ContextState {
    /// New history since the last attempt (a message, tool results): a compaction may be
    /// worth trying again.
    pub fn new_history(&mut self) {
        self.governor.record_new_history();
    }

    /// An automatic compaction starts at `progress` tokens.
    pub fn compaction_started(&mut self, progress: u64) {
        let budget = self.budget;
        self.governor.record_attempt_started(progress, &budget);
    }

    /// An automatic compaction was cancelled: no new attempt until new history.
    pub fn compaction_skipped(&mut self) {
        self.governor.record_skipped();
    }

    /// A compaction applied, freeing `freed` tokens and leaving `tokens_after`: the
    /// notice when it freed too little (the governor pauses).
    pub fn compaction_applied(&mut self, freed: u64, tokens_after: u64) -> Option<GovernorNotice> {
        let budget = self.budget;
        self.governor.record_applied(freed, tokens_after, &budget)
    }

    /// No compaction at `progress` tokens, for `reason`: the breaker arms; the notice.
    pub fn compaction_paused(&mut self, reason: PauseReason, progress: u64) -> GovernorNotice {
        let budget = self.budget;
        self.governor.pause(reason, progress, &budget)
    }

    /// The notice of the per-turn ceiling on automatic compactions, once per turn.
    pub fn ceiling_notice(&mut self) -> Option<GovernorNotice> {
        let budget = self.budget;
        self.governor.ceiling_notice(&budget)
    }

    /// A manual compaction: the governor starts afresh.
    pub fn governor_reset(&mut self) {
        self.governor.reset();
    }
}
