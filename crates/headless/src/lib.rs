//! pith-headless: `pith run --prompt` — one agent job without the REPL, for scripts and
//! CI, with text, json and stream-json output.
//!
//! The job is one user turn through the provider loop. Every loop event goes through
//! the session store (via `pith_session::TurnRecorder`): an automatic compaction in the
//! middle of the job writes its checkpoint and `compaction_applied` atomically, and the
//! final answer is the pre-compaction text plus the post-compaction text. Only the
//! applied boundary matters here: started, cancelled and failed compactions print
//! nothing in text mode.

pub mod options;
pub mod report;
pub mod run;

pub use options::{OutputFormat, RunOptions};
pub use run::{run, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_ERROR, EXIT_USAGE};
