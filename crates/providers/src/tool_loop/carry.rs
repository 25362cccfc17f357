//! What a compaction carries besides the summary: the session ledger the loop keeps up to
//! date as messages are appended, and the files re-attached after a compaction.
//!
//! The ledger is observed at exactly the points where the history grows (the user's
//! message at the start of a turn, every appended assistant and tool message), so it is
//! the same fold a resumed session rebuilds from its transcript.

use std::sync::Arc;

use pith_core::context::ledger::{
    render, restore_files, FileProbe, Ledger, LedgerBudget, RenderedLedger, RestoreBudget,
};
use pith_core::summary::RestoredFile;
use pith_core::Message;

use crate::tool_loop::agent::AgentLoop;

impl AgentLoop {
    /// The session ledger as it stands.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Replaces the ledger (a resumed session's, rebuilt from its transcript; an empty
    /// one after `/clear`).
    pub fn set_ledger(&mut self, ledger: Ledger) {
        self.ledger = ledger;
    }

    /// Gives the loop a view of the disk: fingerprints for "changed since last seen",
    /// and the content of the files re-attached after a compaction.
    pub fn set_file_probe(&mut self, probe: Arc<dyn FileProbe>) {
        self.files = Some(probe);
    }

    /// The ledger's token budget (0 when the ledger is off).
    pub fn ledger_budget_tokens(&self) -> usize {
        self.ledger_budget().total_tokens
    }

    fn ledger_budget(&self) -> LedgerBudget {
        let options = self.options.ledger;
        LedgerBudget::for_input_budget(
            self.budget.input_budget,
            options.ledger_percent,
            options.user_messages_max_tokens,
        )
    }

    /// The ledger rendered within its budget; `None` when it is off or empty.
    /// `exclude_latest_user` leaves the latest user message out (the replacement quotes
    /// it after the ledger).
    pub fn render_ledger(&self, exclude_latest_user: bool) -> Option<RenderedLedger> {
        if self.options.ledger.ledger_percent == 0 {
            return None;
        }
        render(
            &self.ledger,
            self.ledger_budget(),
            exclude_latest_user,
            self.estimator.counter().as_ref(),
            self.files.as_deref(),
        )
    }

    /// Records a message the user sent in the ledger.
    pub(super) fn observe_user(&mut self, text: &str) {
        self.ledger.observe_user(text);
    }

    /// Records an appended assistant or tool message in the ledger.
    pub(super) fn observe_appended(&mut self, message: &Message) {
        self.ledger.observe_message(message, self.files.as_deref());
    }

    /// The files to re-attach after a compaction: the most recently edited or read ones
    /// that can be read as text now, as `read` shows them, within the restore budget.
    pub(super) fn restore_files(&self) -> Vec<RestoredFile> {
        let options = self.options.ledger;
        let Some(probe) = self.files.as_deref() else {
            return Vec::new();
        };
        if options.restore_files == 0 || options.ledger_percent == 0 {
            return Vec::new();
        }
        restore_files(
            &self.ledger,
            probe,
            self.estimator.counter().as_ref(),
            RestoreBudget::for_input_budget(
                self.budget.input_budget,
                options.restore_files,
                options.restore_files_percent,
            ),
        )
    }

    /// After a replacement that re-attached `restored` was installed: the model has now
    /// seen those files as they are on disk.
    pub(super) fn mark_restored_seen(&mut self, restored: &[String]) {
        let Some(probe) = self.files.clone() else {
            return;
        };
        for path in restored {
            self.ledger.mark_seen(path, probe.fingerprint(path));
        }
    }
}
