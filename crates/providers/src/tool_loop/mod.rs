//! The generic tool loop: one implementation for every provider.
//!
//! An [`AgentLoop`] owns one conversation (`agent`). [`AgentLoop::run_turn`] drives one
//! user turn (`turn`): before every model request it asks the compaction policy what to
//! do and does it (`decision`: micro-compaction, automatic compaction, overflow fitting),
//! then sends the request with retries and timeouts (`request`, `retry`) under the output
//! guard (`guard`: pith's own output cap, repetition, keep-alive-only streams), runs the tools
//! the model asks for (`execute`), and repeats until the model answers without tool calls.
//! [`AgentLoop::compact`] is the manual `/compact` (`compaction`, which also holds the
//! private automatic compaction; `prepared` prepares one in the background before the
//! threshold; all three go through the one pipeline of `compaction_pipeline`, their
//! differences as data; `summarizer` sends a summary request; `summary_model`, another
//! model summaries may go to). `overflow` fits a request that cannot fit.
//! `spend` holds every request to the job's ceilings (`--max-cost`, `--max-duration`)
//! before it is sent.
//!
//! Hooks plug in through one [`pith_core::LoopHooks`] value (`AgentLoop::set_hooks`): the
//! loop calls it before and after each tool call (`execute`), around each summary
//! compaction (`compaction`) and when the model stops (`turn`), and reports every hook
//! run and every model request as events (`report`).
//!
//! Events go to the caller's [`pith_core::TurnSink`] in the order they happen; the loop
//! never prints and never writes files. A history rewrite is handed to
//! [`pith_core::TurnSink::persist`] first and applied only when that succeeded, so the
//! transcript never disagrees with what the model is sent.

mod agent;
mod carry;
mod compaction;
mod compaction_pipeline;
mod context_state;
mod decision;
mod execute;
pub mod guard;
mod options;
mod output_cap;
pub mod overflow;
mod pins;
mod prepared;
mod prepared_task;
mod report;
pub mod request;
pub mod retry;
pub mod spend;
mod summarizer;
mod summary_model;
mod summary_outcome;
mod turn;

pub use agent::{AgentLoop, LoopSetup};
pub use options::{
    LedgerOptions, LoopError, LoopOptions, ManualCompaction, PromptCacheOptions,
    RepeatedCallLimits, TurnFailure, TurnSummary, DEFAULT_OUTPUT_CAP_TOKENS,
};
pub use output_cap::enforced_output_cap;
pub use summary_model::SummaryModel;
