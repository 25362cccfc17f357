//! pith's step before a request: `AgentLoop::prepare_turn_request` (crates/providers)
//! call for call on the simulated history — the cold rule, the budget with its working
//! set, [`decide`], masking ([`collapse`] + [`prune_old_tool_outputs`] within
//! [`PruneConfig::within`]) and LLM compaction, until there is nothing to do.

use pith_core::context::PruneConfig;
use pith_core::context::{
    collapse, decide, prepare_permitted, prune_old_tool_outputs, Action, Facts, Governor,
};
use pith_core::message::Message;

use super::engine::{is_read_only, Replay};
use super::policy::PithPolicy;

impl Replay<'_> {
    /// Dedup + masking of the current history, not applied: (new history, tokens freed).
    fn micro_candidate(&mut self, prune: &PruneConfig) -> (Vec<Message>, u64) {
        let (deduplicated, _) = collapse(&self.history, is_read_only);
        let (pruned, _) =
            prune_old_tool_outputs(&deduplicated, self.params.counter.as_ref(), prune);
        let before = self.tokens_of(&self.history.clone());
        let after = self.tokens_of(&pruned);
        (pruned, before.saturating_sub(after) as u64)
    }

    /// An LLM compaction at `estimate`: the prepared summary when there is one whose
    /// replacement (with the messages after its mark) gets under the threshold, else one
    /// in place.
    fn compact(&mut self, estimate: u64) {
        let Some(prepared) = self.prepared.take() else {
            return self.llm_compaction();
        };
        let (replacement, ledger_tokens, after) = self.prepared_replacement(prepared);
        if !self.budget.reaches_auto(after) && after < estimate {
            return self.apply_prepared(prepared, replacement, ledger_tokens);
        }
        // Too large: it goes unused and the compaction runs in place.
        self.prepared_unused(prepared);
        self.llm_compaction();
    }

    /// The loop's per-request decision (`AgentLoop::prepare_turn_request`), step for step,
    /// on the simulated history: the cold rule, decide, act, decide again until there is
    /// nothing to do.
    pub(super) fn pith_step(&mut self, policy: &PithPolicy, memory: &mut Governor) {
        let cold = policy.cold_rule && self.cache_cold();
        let prune = policy.prune.within(&self.budget, cold);
        let (mut micro_allowed, mut llm_allowed) = (true, true);
        loop {
            let estimate = self.estimate();
            let budget = if cold {
                self.budget.cooled_to(policy.cold_percent)
            } else {
                self.budget
            };
            let micro = (micro_allowed
                && memory.new_history_since_attempt
                && budget.reaches_micro(estimate))
            .then(|| self.micro_candidate(&prune));
            let facts = Facts {
                estimate,
                content: estimate,
                micro_reclaimable: micro.as_ref().map_or(0, |(_, reclaimed)| *reclaimed),
                micro_minimum: prune.minimum,
                llm_allowed,
            };
            match (decide(&facts, &budget, memory), micro) {
                (Action::Micro, Some((replacement, _))) => {
                    micro_allowed = false;
                    self.micro_compaction(replacement);
                }
                (Action::Llm, _) => {
                    llm_allowed = false;
                    memory.record_attempt_started(estimate, &budget);
                    self.compact(estimate);
                    let after = self.estimate();
                    memory.record_applied(estimate.saturating_sub(after), after, &budget);
                }
                _ => {
                    if self.prepared.is_none()
                        && policy.carry == super::policy::Carry::Pith
                        && policy.ledger_only_tail.is_none()
                        && prepare_permitted(&facts, &self.budget, memory, policy.prepare_percent)
                    {
                        self.prepare_summary();
                    }
                    return;
                }
            }
        }
    }
}
