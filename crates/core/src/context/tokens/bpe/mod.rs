//! pith's exact token counter: tiktoken's ordinary encoding (`o200k_base`,
//! `cl100k_base`), counted without building a token vector.
//!
//! - The vocabularies are tables the build script derived from tiktoken-rs and that the
//!   binary carries in the form they are used in (`table.rs`): nothing is deserialised,
//!   nothing copied; a process touches only the pages its lookups reach.
//! - The pre-tokenizer (`pretokenize.rs`) is OpenAI's regular expression, compiled once
//!   per process and encoding on first need (a few milliseconds), or ahead of time on a
//!   background thread ([`BpeCounter::load_in_background`]).
//! - Each piece counts 1 when it is a token itself (one hash lookup: ~90% of the pieces
//!   of text and code), else by tiktoken's merge rule (`merge.rs`).
//!
//! Every [`BpeCounter`] of an encoding shares that one process-wide state: the
//! conversation, its subagents and the tools count with the same tables and automaton.

mod merge;
mod pretokenize;
mod table;

/// The tables' layout, shared with the build script that writes them.
mod layout;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use crate::context::tokens::counter::{Encoding, TokenCounter};
use crate::context::tokens::image::ImageFormula;

use self::pretokenize::Pretokenizer;
use self::table::Table;

/// A [`TokenCounter`] that counts exactly as tiktoken's `encode_ordinary(text).len()`.
///
/// Text that looks like a special token (`<|endoftext|>`) is counted as the text it is.
/// The tests compare counts and token ids with tiktoken-rs on varied, random and
/// whole-vocabulary text. Cheap to copy; every copy shares the process's tables.
#[derive(Clone, Copy)]
pub struct BpeCounter {
    encoding: Encoding,
    images: ImageFormula,
}

/// What an encoding needs beyond its static tables: its compiled pre-tokenizer.
struct Loaded {
    table: &'static Table,
    pretokenizer: Pretokenizer,
}

static O200K: OnceLock<Loaded> = OnceLock::new();
static CL100K: OnceLock<Loaded> = OnceLock::new();
static O200K_STARTED: AtomicBool = AtomicBool::new(false);
static CL100K_STARTED: AtomicBool = AtomicBool::new(false);

fn cell(encoding: Encoding) -> &'static OnceLock<Loaded> {
    match encoding {
        Encoding::O200kBase => &O200K,
        Encoding::Cl100kBase => &CL100K,
    }
}

/// `encoding`'s state, built on the calling thread unless it is built already; when
/// another thread is building it, waits for that thread.
fn loaded(encoding: Encoding) -> &'static Loaded {
    cell(encoding).get_or_init(|| Loaded {
        table: match encoding {
            Encoding::O200kBase => &table::O200K_BASE,
            Encoding::Cl100kBase => &table::CL100K_BASE,
        },
        pretokenizer: Pretokenizer::new(encoding).unwrap_or_else(|e| {
            panic!("{}'s pre-tokenizer does not compile: {e}", encoding.name())
        }),
    })
}

impl Loaded {
    /// Tokens of one piece of the pre-tokenizer.
    #[inline]
    fn count_piece(&self, piece: &[u8]) -> usize {
        if piece.len() <= 1 || self.table.rank(piece).is_some() {
            piece.len().min(1)
        } else {
            merge::merge(self.table, piece, |_| {})
        }
    }
}

impl BpeCounter {
    /// A counter for `encoding`. It builds nothing yet: the first count builds what this
    /// process has not (see [`BpeCounter::load_in_background`]).
    pub fn new(encoding: Encoding) -> Self {
        Self {
            encoding,
            images: ImageFormula::default(),
        }
    }

    /// The same counter, with its encoding's pre-tokenizer being built on a background
    /// thread unless this process has built it or is building it. Counting before it is
    /// ready waits for it; [`TokenCounter::is_ready`] says whether it would.
    pub fn load_in_background(self) -> Self {
        let encoding = self.encoding;
        let started = match encoding {
            Encoding::O200kBase => &O200K_STARTED,
            Encoding::Cl100kBase => &CL100K_STARTED,
        };
        if cell(encoding).get().is_none() && !started.swap(true, Ordering::AcqRel) {
            let spawned = std::thread::Builder::new()
                .name(format!("pith-{}", encoding.name()))
                .spawn(move || {
                    loaded(encoding);
                });
            if spawned.is_err() {
                // No thread to spare: the first count builds it instead.
                started.store(false, Ordering::Release);
            }
        }
        self
    }

    /// The same counter, counting images with `formula` (the provider's).
    pub fn with_image_formula(mut self, formula: ImageFormula) -> Self {
        self.images = formula;
        self
    }

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The token ids of `text`: tiktoken's `encode_ordinary(text)`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let loaded = loaded(self.encoding);
        let mut ids = Vec::with_capacity(text.len() / 3);
        for piece in loaded.pretokenizer.split(text) {
            let piece = piece.as_bytes();
            match loaded.table.rank(piece) {
                Some(rank) => ids.push(rank),
                None => {
                    merge::merge(loaded.table, piece, |token| {
                        ids.extend(loaded.table.rank(token));
                    });
                }
            }
        }
        ids
    }

    /// Counts `text` on the calling thread: pre-tokenize, then count each piece.
    ///
    /// o200k and cl100k do not NFC-normalise, so the text is split as it is.
    fn count_serial(&self, text: &str) -> usize {
        let loaded = loaded(self.encoding);
        loaded
            .pretokenizer
            .split(text)
            .map(|piece| loaded.count_piece(piece.as_bytes()))
            .sum()
    }

    /// Counts `text`, splitting it in two at a safe boundary and counting the halves on
    /// two threads when it has at least `min_bytes`.
    fn count_split(&self, text: &str, min_bytes: usize) -> usize {
        if text.len() < min_bytes {
            return self.count_serial(text);
        }
        let Some(split) = safe_split(text) else {
            return self.count_serial(text);
        };
        let (head, tail) = text.split_at(split);
        std::thread::scope(|scope| {
            let tail_count = scope.spawn(|| self.count_serial(tail));
            let head_count = self.count_serial(head);
            match tail_count.join() {
                Ok(count) => head_count + count,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }
}

crate::debug_fields!(BpeCounter |this| {
    encoding: this.encoding,
    ready: this.is_ready(),
});

/// Inputs at least this large are counted on two threads (split at a safe boundary).
pub const PARALLEL_COUNT_MIN_BYTES: usize = 1 << 20;

/// A split point near the middle of `text` that no token can straddle: just after a
/// newline that is followed by an ASCII letter. Both o200k and cl100k pre-tokenize so
/// that a piece never contains a newline followed by a letter (letter pieces may start
/// with one non-letter character, but never `\r` or `\n`; whitespace pieces end before a
/// letter), and BPE merges only within a piece, so the counts of the halves add up
/// exactly to the count of the whole.
fn safe_split(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let middle = bytes.len() / 2;
    (middle.max(1)..bytes.len()).find(|&i| bytes[i - 1] == b'\n' && bytes[i].is_ascii_alphabetic())
}

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.count_split(text, PARALLEL_COUNT_MIN_BYTES)
    }

    fn image_tokens(&self, width: u32, height: u32) -> usize {
        self.images.tokens(width, height)
    }

    fn is_ready(&self) -> bool {
        cell(self.encoding).get().is_some()
    }
}
