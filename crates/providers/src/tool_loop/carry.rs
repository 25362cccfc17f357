//! What a compaction carries besides the summary: the session ledger the loop keeps up to
//! date as messages are appended, and the files re-attached after a compaction.
//!
//! The ledger is observed at exactly the points where the history grows (the user's
//! message at the start of a turn, every appended assistant and tool message), so it is
//! the same fold a resumed session rebuilds from its transcript.

use std::sync::Arc;

use pith_core::context::floor::ReplacementPlan;
use pith_core::context::ledger::{
    render, restore_files, FileProbe, Ledger, LedgerBudget, RenderedLedger, RestoreBudget,
};
use pith_core::summary::RestoredFile;

use crate::tool_loop::agent::AgentLoop;

impl AgentLoop {
    /// The session ledger as it stands.
    pub fn ledger(&self) -> &Ledger {
        &self.context.ledger
    }

    /// Replaces the ledger (a resumed session's, rebuilt from its transcript; an empty
    /// one after `/clear`).
    pub fn set_ledger(&mut self, ledger: Ledger) {
        self.context.ledger = ledger;
    }

    /// Gives the loop a view of the disk: fingerprints for "changed since last seen",
    /// and the content of the files re-attached after a compaction.
    pub fn set_file_probe(&mut self, probe: Arc<dyn FileProbe>) {
        self.context.files = Some(probe);
    }

    /// The ledger's token budget (0 when the ledger is off).
    pub fn ledger_budget_tokens(&self) -> usize {
        self.ledger_budget(self.options.ledger.ledger_percent)
            .total_tokens
    }

    fn ledger_budget(&self, percent: u8) -> LedgerBudget {
        LedgerBudget::for_input_budget(
            self.context.budget.working_budget(),
            percent,
            self.options.ledger.user_messages_max_tokens,
        )
    }

    /// How much ledger and how many re-attached files a compaction carries by default
    /// (the `[context]` settings); a compaction that would not fit shrinks it.
    pub(super) fn default_plan(&self) -> ReplacementPlan {
        let options = self.options.ledger;
        ReplacementPlan {
            ledger_percent: options.ledger_percent,
            restore_files: if options.ledger_percent == 0 {
                0
            } else {
                options.restore_files
            },
            restore_files_percent: options.restore_files_percent,
        }
    }

    /// The ledger rendered within its budget; `None` when it is off or empty.
    /// `exclude_latest_user` leaves the latest user message out (the replacement quotes
    /// it after the ledger).
    pub fn render_ledger(&self, exclude_latest_user: bool) -> Option<RenderedLedger> {
        self.render_ledger_for(&self.default_plan(), exclude_latest_user)
    }

    /// The ledger as `plan` carries it.
    pub(super) fn render_ledger_for(
        &self,
        plan: &ReplacementPlan,
        exclude_latest_user: bool,
    ) -> Option<RenderedLedger> {
        if plan.ledger_percent == 0 {
            return None;
        }
        render(
            &self.context.ledger,
            self.ledger_budget(plan.ledger_percent),
            exclude_latest_user,
            self.counter().as_ref(),
            self.context.files.as_deref(),
        )
    }

    /// The files `plan` re-attaches after a compaction: the most recently edited or read
    /// ones that can be read as text now, as `read` shows them, within its budget.
    pub(super) fn restore_files_for(&self, plan: &ReplacementPlan) -> Vec<RestoredFile> {
        let Some(probe) = self.context.files.as_deref() else {
            return Vec::new();
        };
        if plan.restore_files == 0 {
            return Vec::new();
        }
        restore_files(
            &self.context.ledger,
            probe,
            self.counter().as_ref(),
            RestoreBudget::for_input_budget(
                self.context.budget.working_budget(),
                plan.restore_files,
                plan.restore_files_percent,
            ),
        )
    }

    /// After a replacement that re-attached `restored` was installed: the model has now
    /// seen those files as they are on disk.
    pub(super) fn mark_restored_seen(&mut self, restored: &[String]) {
        let Some(probe) = self.context.files.clone() else {
            return;
        };
        for path in restored {
            self.context.ledger.mark_seen(path, probe.fingerprint(path));
        }
    }
}
