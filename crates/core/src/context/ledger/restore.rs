//! Which files a compaction re-attaches, and how: the most recently changed or read files
//! that can be shown as text now, each as `read` shows it, within a token budget.

use super::entries::FileProbe;
use super::fold::Ledger;
use crate::context::summary::RestoredFile;
use crate::context::tokens::TokenCounter;

/// Most bytes asked of one re-attached file (before it is fitted to its token share).
const RESTORE_MAX_BYTES: usize = 256 * 1024;
/// A file is re-attached only when at least this many tokens are left for it.
const RESTORE_MIN_TOKENS: usize = 200;

/// How many files, and how many tokens in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestoreBudget {
    /// Files re-attached at most.
    pub files: usize,
    /// Tokens of all re-attached files at most.
    pub tokens: usize,
}

impl RestoreBudget {
    /// At most `files` files within `percent`% of an input budget of `input_budget`
    /// tokens.
    pub fn for_input_budget(input_budget: u64, files: usize, percent: u8) -> Self {
        let tokens = input_budget.saturating_mul(u64::from(percent.min(100))) / 100;
        Self {
            files,
            tokens: usize::try_from(tokens).unwrap_or(usize::MAX),
        }
    }
}

/// `path` as `probe` shows it from line `offset`, cut to at most `max_tokens` (asking for
/// fewer bytes in proportion, with a margin, until it fits); with its tokens. `None` when
/// it cannot be shown, or not in a useful size.
pub fn show_within(
    probe: &dyn FileProbe,
    counter: &dyn TokenCounter,
    path: &str,
    offset: u64,
    max_tokens: usize,
) -> Option<(String, usize)> {
    let mut max_bytes = max_tokens.saturating_mul(4).min(RESTORE_MAX_BYTES);
    for _ in 0..4 {
        let content = probe.show(path, offset, max_bytes)?;
        let tokens = counter.count(&content);
        if tokens <= max_tokens {
            return Some((content, tokens));
        }
        max_bytes = max_bytes * max_tokens / tokens.max(1) * 9 / 10;
        if max_bytes < 256 {
            return None;
        }
    }
    None
}

/// The files to re-attach: the ledger's most recent ones (changed or read) that `probe`
/// can show now, newest first, each shown from its first line (a file read only in part:
/// from the first range read) and cut to what is left of the budget.
pub fn restore_files(
    ledger: &Ledger,
    probe: &dyn FileProbe,
    counter: &dyn TokenCounter,
    budget: RestoreBudget,
) -> Vec<RestoredFile> {
    let mut left = budget.tokens;
    let mut restored = Vec::new();
    // A few candidates more than wanted: some may be gone or binary by now.
    for file in ledger.recent_files(budget.files.saturating_mul(3)) {
        if restored.len() >= budget.files || left < RESTORE_MIN_TOKENS {
            break;
        }
        let offset = if file.read_whole || file.changed {
            1
        } else {
            file.ranges.first().map_or(1, |range| range.0)
        };
        let shown = show_within(probe, counter, &file.path, offset, left);
        if let Some((content, tokens)) = shown {
            left -= tokens;
            restored.push(RestoredFile {
                path: file.path.clone(),
                content,
            });
        }
    }
    restored
}
