//! pith-headless: `pith run` — one agent job without the REPL, for scripts and CI, with
//! text, json and stream-json output.
//!
//! The job is one user turn of a [`pith_agent::Conversation`] (new, or continued with
//! `--session`); this crate only renders it. In text mode only the answer (text before
//! an automatic compaction + text after it) goes to stdout; notices go to stderr.
#![forbid(unsafe_code)]

mod report;
mod run;

pub use run::{run, Job, OutputFormat};
