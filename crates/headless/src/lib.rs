//! pith-headless: `pith run` — one agent job without the REPL, for scripts and CI, with
//! text, json and stream-json output.
//!
//! The job is one user turn of a [`pith_agent::Conversation`] (new, or continued with
//! `--session`). This crate only renders: the conversation records every event and
//! persists compactions before they apply; the final answer is the text before an
//! automatic compaction plus the text after it. In text mode only the answer goes to
//! stdout; notices, warnings and a compaction that failed go to stderr.

pub mod report;
pub mod run;

pub use run::{run, Job, OutputFormat};
