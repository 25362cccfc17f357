//! pith-providers: the generic tool loop and the wire protocols it talks through.
//!
//! Three parts, one folder each:
//! - `tool_loop` (private; its API is re-exported below): the loop every provider runs — turns, tool calls, the compaction
//!   decision and its actions (micro, automatic and manual compaction, overflow
//!   fitting), sending requests with retries and timeouts. It emits
//!   `auto_compaction_started/applied/cancelled/failed` with the child cancellation token
//!   and hands every history rewrite to its owner to persist before applying it.
//! - [`wire`]: the [`ProviderAdapter`] contract, the one HTTP layer every adapter sends
//!   through, the error classification, and the protocol adapters (OpenAI Chat
//!   Completions, OpenAI Responses, Anthropic Messages, Google Gemini, Amazon Bedrock's
//!   Converse stream), each an `encode`
//!   and a `decode` module behind the same outer shape.
//! - [`models`]: what a model is — configuration files, the catalog of windows, caps and
//!   prices, the server window probe, and the project's instruction files for the system
//!   prompt.
//!
//! Providers never print and never write files: everything a front-end shows arrives as
//! a [`pith_core::LoopEvent`], and persistence is the [`pith_core::TurnSink`]'s job.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod models;
mod tool_loop;
pub mod wire;

pub use tool_loop::request::Timeouts;
pub use tool_loop::retry::RetryPolicy;
pub use tool_loop::spend::SpendGuard;
pub use tool_loop::{
    enforced_output_cap, AgentLoop, LedgerOptions, LoopError, LoopOptions, LoopSetup,
    ManualCompaction, PromptCacheOptions, RepeatedCallLimits, SummaryModel, TurnFailure,
    TurnSummary, DEFAULT_OUTPUT_CAP_TOKENS,
};
pub use wire::{ChunkStream, ModelRequest, ProviderAdapter, ProviderError, StreamChunk};
