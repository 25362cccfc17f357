//! Claude Code's compaction replacement: the summary, the files it re-attaches, and the
//! last user message. After a compaction Claude Code reads again the files the session
//! read or wrote most recently (`createPostCompactFileAttachments` in
//! `src/services/compact/compact.ts`): at most `POST_COMPACT_MAX_FILES_TO_RESTORE` (5,
//! [`super::policy::CLAUDE_RESTORE_FILES`]), each cut to
//! [`CLAUDE_RESTORE_TOKENS_PER_FILE`] (`POST_COMPACT_MAX_TOKENS_PER_FILE`), all within
//! [`CLAUDE_RESTORE_BUDGET`] (`POST_COMPACT_TOKEN_BUDGET`), most recent first; a file that
//! does not fit what is left is skipped for the next one.
//!
//! The budget is made for the 200,000-token window Claude Code ships with, where it is a
//! quarter of the window. On smaller windows the simulator keeps that quarter
//! ([`claude_restore_budget`]), so that the files re-attached do not by themselves bring
//! the next compaction. As for pith's `restore`, only files the session printed whole
//! (`cat FILE`) can be shown again ([`super::disk::SessionDisk`]); a file read only in
//! part is not re-attached, which makes the peer a little cheaper than it is.

use pith_core::context::ledger::show_within;
use pith_core::message::Message;
use pith_core::summary::{replacement_text, ReplacementParts, RestoredFile};

use super::engine::Replay;

/// `POST_COMPACT_MAX_TOKENS_PER_FILE`.
pub(super) const CLAUDE_RESTORE_TOKENS_PER_FILE: usize = 5_000;
/// `POST_COMPACT_TOKEN_BUDGET`.
pub(super) const CLAUDE_RESTORE_BUDGET: usize = 50_000;
/// The share of the window that budget is on the window it is made for (200,000).
const CLAUDE_RESTORE_WINDOW_PERCENT: u64 = 25;

/// The tokens Claude Code's re-attached files may take on a window of `window` tokens:
/// [`CLAUDE_RESTORE_BUDGET`], at most a quarter of the window.
pub(super) fn claude_restore_budget(window: u64) -> usize {
    let share = window.saturating_mul(CLAUDE_RESTORE_WINDOW_PERCENT) / 100;
    CLAUDE_RESTORE_BUDGET.min(usize::try_from(share).unwrap_or(usize::MAX))
}

impl Replay<'_> {
    /// The files Claude Code re-attaches after a compaction now, most recent first (among
    /// three times as many candidates: some cannot be shown).
    pub(super) fn claude_code_attachments(&self) -> Vec<RestoredFile> {
        let counter = self.params.counter.as_ref();
        let files = self.claude_restore.files;
        let mut left = self
            .claude_restore
            .budget
            .unwrap_or_else(|| claude_restore_budget(self.params.window));
        let mut restored = Vec::new();
        for file in self.session_ledger.recent_files(files.saturating_mul(3)) {
            if restored.len() >= files {
                break;
            }
            let Some((content, tokens)) = show_within(
                &self.disk,
                counter,
                &file.path,
                1,
                CLAUDE_RESTORE_TOKENS_PER_FILE,
            ) else {
                continue;
            };
            if tokens <= left {
                left -= tokens;
                restored.push(RestoredFile {
                    path: file.path.clone(),
                    content,
                });
            }
        }
        restored
    }

    /// Claude Code's replacement: the summary, the files it re-attaches, the last user
    /// message. The files are counted and remembered as re-attached, so that a later
    /// command relying on one costs no re-read.
    pub(super) fn claude_code_replacement(&mut self) -> Vec<Message> {
        let restored = self.claude_code_attachments();
        self.note_restored(&restored);
        vec![Message::user(replacement_text(ReplacementParts {
            summary: &self.params.summary,
            ledger: None,
            pins: "",
            restored_files: &restored,
            last_user_message: Some(&self.last_user_text),
        }))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simulate::disk::SessionDisk;
    use pith_core::{BpeCounter, Encoding, TokenCounter};

    #[test]
    fn a_file_is_cut_to_its_share_and_a_file_never_printed_whole_is_not_shown() {
        let disk = SessionDisk::default();
        let big: String = (0..3_000)
            .map(|i| format!("def function_{i}(value): return value * {i}\n"))
            .collect();
        disk.observe("cat src/big.py", Some(0), &big);
        disk.observe("sed -n 1,5p src/part.py", Some(0), "partial");
        let counter = BpeCounter::new(Encoding::O200kBase);
        let (content, tokens) = show_within(
            &disk,
            &counter,
            "src/big.py",
            1,
            CLAUDE_RESTORE_TOKENS_PER_FILE,
        )
        .expect("a file printed whole can be shown");
        assert!(counter.count(&big) > CLAUDE_RESTORE_TOKENS_PER_FILE);
        assert!(
            tokens <= CLAUDE_RESTORE_TOKENS_PER_FILE && tokens > CLAUDE_RESTORE_TOKENS_PER_FILE / 2,
            "{tokens}"
        );
        assert!(
            content.starts_with("     1\tdef function_0(value)"),
            "{content:.80}"
        );
        assert!(show_within(&disk, &counter, "src/part.py", 1, 5_000).is_none());
    }

    #[test]
    fn the_budget_is_claude_codes_own_on_large_windows_and_a_quarter_of_small_ones() {
        assert_eq!(claude_restore_budget(200_000), 50_000);
        assert_eq!(claude_restore_budget(1_000_000), 50_000);
        assert_eq!(claude_restore_budget(32_768), 8_192);
    }
}
