//! pith-core: the vocabulary every other pith crate shares.
//!
//! This crate is pure logic — no file system, no network, no terminal. Its folders show
//! its two parts:
//!
//! - [`protocol`] — the data that crosses between the tool loop, tools, hooks, front-ends
//!   and the transcript (messages, events, history rewrites, hook types, the tool trait)
//!   and the seams it crosses through (the sink traits);
//! - [`context`] — the rules of what the model sees: the budget, token counting and the
//!   request estimate, the compaction decision and its governor, squash, dedup and prune,
//!   the session ledger, the summary schema and every prompt.
//!
//! Beside them, one file each: the tool [`registry`] the loop runs calls through, the
//! [`cost`] of requests and the job's ceilings, the doom-loop guard ([`repeat`]) and
//! number [`format`]ting. Anything that must be computed the same way in two places
//! (the budget, the estimate, the prompts) lives here exactly once.

#![forbid(unsafe_code)]

pub mod context;
mod cost;
#[macro_use]
mod debug_fields;
mod format;
#[macro_use]
mod named;
mod protocol;
mod registry;
mod repeat;

// The module paths the other crates have always named these modules by
// (`pith_core::events::…`, `pith_core::hooks::…`).
pub use context::{budget, prompts, summary, system_prompt, tokens};
pub use protocol::{checkpoint, effect, events, hooks, message, plan, rewrite, subagent, tool};

pub use context::budget::ContextBudget;
pub use context::tokens::{
    BpeCounter, Encoding, ImageFormula, RequestEstimate, RequestEstimator, TokenCounter,
};
pub use cost::{
    plan_request, usage_cost, CeilingReached, Ceilings, InputEstimate, Pricing, RequestPlan,
    Reservation, SpendMeter, MIN_USEFUL_OUTPUT_TOKENS,
};
pub use format::{human_bytes, thousands};
pub use protocol::checkpoint::{
    shown_path, ChangeFeed, ChangeMark, CheckpointSummary, FileChange, FileState,
};
pub use protocol::effect::{FileAction, FileEffect};
pub use protocol::events::SubagentEvent;
pub use protocol::events::{
    AutoCompaction, CompactionFigures, LoopEvent, RequestPurpose, RequestReport,
};
pub use protocol::hooks::{HookEvent, HookOutcome, HookRun, LoopHooks, NoHooks};
pub use protocol::image_limits::ImageLimits;
pub use protocol::message::{Image, Message, Part, Reasoning, Role, ToolCall, ToolResult};
pub use protocol::plan::{Plan, PlanStatus, PlanStep, PLAN_TOOL};
pub use protocol::rewrite::{Carried, Compaction, CompactionTrigger, HistoryRewrite};
pub use protocol::sink::{Discard, EventSink, InMemory, PersistError, Progress, TurnSink};
pub use protocol::subagent::ChildRun;
pub use protocol::tool::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
pub use protocol::usage::{ModelUsage, Usage};
pub use registry::{LoadOutcome, ToolLoader, ToolRegistry};
pub use repeat::{repeated_call_note, RepeatGate, RepeatTracker, StopRepeating};
