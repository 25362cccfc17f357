//! pith's summaries prepared in the background, replayed (`tool_loop::prepared` in
//! crates/providers): sent at the mark and billed then, the clock not moved; installed at
//! the threshold with the messages after the mark kept verbatim, or never used.

use pith_core::message::Message;

use super::engine::{Replay, SimPrepared, ViewKind};
use super::ledger::Block;

impl Replay<'_> {
    /// Sends pith's summary request in the background (`tool_loop::prepared`): billed
    /// now, the clock not moved; its answer is ready after its latency.
    pub(super) fn prepare_summary(&mut self) {
        let before = self.ledger.totals().cost_dollars;
        let ledger = self.pith_ledger();
        let (id, tokens) = self.pith_prompt_block(ledger.as_ref());
        let upto = self.history.len();
        let summary_tokens = self.params.ledger_summary_tokens;
        let prompt = Block {
            id,
            tokens,
            breakpoint: false,
            hour: false,
        };
        self.send_summary(upto, prompt, summary_tokens);
        self.prepared = Some(SimPrepared {
            mark: upto,
            ready_at: self.now + self.params.prices.latency_s(summary_tokens),
            dollars: self.ledger.totals().cost_dollars - before,
        });
        self.outcome.prepared += 1;
    }

    /// The replacement a prepared summary makes now (the messages after its mark kept
    /// verbatim after it), its ledger's tokens, and pith's count of the request it makes.
    pub(super) fn prepared_replacement(
        &mut self,
        prepared: SimPrepared,
    ) -> (Vec<Message>, u64, u64) {
        self.restored_paths.clear();
        let tail = self.history[prepared.mark.min(self.history.len())..].to_vec();
        let ledger = self.pith_ledger();
        let params = self.params;
        let (mut replacement, ledger_tokens) =
            self.pith_replacement(ledger, &params.ledger_summary);
        replacement.extend(tail);
        let counted = self
            .estimator
            .count_request(&self.system, &replacement, &[]) as u64;
        (replacement, ledger_tokens, counted)
    }

    /// Installs a prepared summary's `replacement` at the threshold, after waiting for
    /// what is left of it.
    pub(super) fn apply_prepared(
        &mut self,
        prepared: SimPrepared,
        replacement: Vec<Message>,
        ledger_tokens: u64,
    ) {
        let wait = (prepared.ready_at - self.now).max(0.0);
        self.now += wait;
        self.outcome.compaction_wait_s += wait;
        self.outcome.llm_compactions += 1;
        self.set_history(replacement);
        self.record_view(ViewKind::Llm, ledger_tokens);
    }

    /// A prepared summary that will never be applied.
    pub(super) fn prepared_unused(&mut self, prepared: SimPrepared) {
        self.outcome.unused += 1;
        self.outcome.unused_dollars += prepared.dollars;
    }
}
