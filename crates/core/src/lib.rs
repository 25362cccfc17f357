//! pith-core: the vocabulary every other pith crate shares.
//!
//! This crate is pure logic — no file system, no network, no terminal. It owns the
//! message model, the context budget, token counting and the request estimate, the
//! compaction summary schema and prompts, the lifecycle events that cross from the tool
//! loop to front-ends, and the tool trait. Anything that must be computed the same way in
//! two places (the budget, the estimate, the prompts) lives here exactly once.

mod bpe;
pub mod budget;
pub mod context;
pub mod cost;
pub mod effect;
pub mod events;
pub mod format;
pub mod hooks;
pub mod message;
pub mod prompts;
pub mod repeat;
pub mod rewrite;
pub mod subagent;
pub mod summary;
pub mod system_prompt;
pub mod tokens;
pub mod tool;

pub use budget::ContextBudget;
pub use cost::{usage_cost, CeilingReached, Ceilings, Pricing, SpendMeter};
pub use effect::{FileAction, FileEffect};
pub use events::{
    AutoCompaction, Discard, EventSink, LoopEvent, RequestPurpose, RequestReport, Usage,
};
pub use hooks::{HookEvent, HookOutcome, HookRun, LoopHooks, NoHooks};
pub use message::{Image, Message, Part, Reasoning, Role, ToolCall, ToolResult};
pub use rewrite::{
    Carried, Compaction, CompactionTrigger, HistoryRewrite, InMemory, PersistError, TurnSink,
};
pub use subagent::{ChildRun, Progress, SubagentEvent};
pub use tokens::{
    BpeCounter, Encoding, ImageFormula, RequestEstimate, RequestEstimator, TokenCounter,
};
pub use tool::{
    LoadOutcome, Tool, ToolContext, ToolDefinition, ToolError, ToolLoader, ToolOutput, ToolRegistry,
};
