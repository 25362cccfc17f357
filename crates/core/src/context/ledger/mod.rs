//! The session ledger: the facts of a session that every compaction carries, built by
//! pith from the conversation's own events. The model never writes it.
//!
//! Six sections (rendered by [`render`] as one `<session_ledger>` block within a hard
//! token budget):
//!
//! - **Plan** — the model's latest accepted `update_plan` ([`crate::protocol::plan`]),
//!   verbatim and first, outside the budget's sharing;
//! - **User messages** — every user message, verbatim (identical repeats once, with
//!   their count);
//! - **Files** — every path a tool read, wrote, edited, created or deleted: the last
//!   action, the line ranges read, and whether the file on disk changed since the model
//!   last saw it (a content fingerprint compared through a [`FileProbe`]);
//! - **Commands** — the latest shell commands with their exit codes, the last error
//!   line of failing ones (kept longer than passing ones) and their spill files;
//! - **Tests** — per test command, the failing test ids of its latest run with the first
//!   error line of each (from the squash test-runner detectors); cleared when a later
//!   run of the same command passes;
//! - **Spills** — the files holding full outputs the model only saw squashed.
//!
//! File facts come from the tools' [`crate::FileEffect`]s when a result carries them,
//! else from the call: `read` / `write` / `edit` arguments, and for shell commands the
//! rule in [`shell`].
//!
//! The ledger is a pure fold over the conversation: resuming a session rebuilds it by
//! observing the recorded messages again, in order.

mod entries;
mod fold;
mod reading;
pub mod render;
pub mod restore;
mod sections;
pub mod shell;

pub use entries::{CommandEntry, FileEntry, FileProbe, Observed, SpillEntry, TestRun, UserEntry};
pub use fold::Ledger;
pub use reading::{error_line, exit_code, shell_command, spill_path};
pub use render::{render, LedgerBudget, RenderedLedger};
pub use restore::{restore_files, show_within, RestoreBudget};

#[cfg(test)]
mod tests;
