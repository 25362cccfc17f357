//! An experiment, `pith:tail=P`: compaction without an LLM call. No summary request is
//! sent; the replacement is the session ledger, the last user message, and the newest
//! messages within P% of the working budget kept verbatim (starting at a message that is
//! not a tool result, so every result keeps its call). It measures what the summary
//! request costs and what the summary alone carried into the probes.

use super::engine::{Replay, ViewKind};

/// The summary's place in an LLM-free replacement.
const NO_SUMMARY_NOTE: &str = "No summary was written for this compaction: the session \
ledger below holds the session's facts, and the newest messages follow verbatim.";

impl Replay<'_> {
    /// The compaction `pith:tail=P` makes: ledger, last user message, newest messages.
    pub(super) fn ledger_only_compaction(&mut self) {
        let percent = u64::from(self.ledger_only_tail.unwrap_or(0));
        let tail_tokens =
            usize::try_from(self.budget.working_budget() * percent / 100).unwrap_or(usize::MAX);
        let mark = self.tail_start(tail_tokens);
        let tail = self.history[mark..].to_vec();
        self.restored_paths.clear();
        let ledger = self.pith_ledger();
        let (mut replacement, ledger_tokens) = self.pith_replacement(ledger, NO_SUMMARY_NOTE);
        replacement.extend(tail);
        self.outcome.llm_compactions += 1;
        self.set_history(replacement);
        self.record_view(ViewKind::Llm, ledger_tokens);
    }
}
