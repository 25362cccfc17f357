//! Subagents (docs/agents.md): the `task` tool delegates a job to a child conversation
//! with its own history, budget, compaction and transcript, and only the child's answer
//! joins the parent's context.
//!
//! - [`definition`]: one agent (Claude Code's file format) and the built-in `explore`;
//! - [`catalog`]: which agents a conversation offers (built-in, user, trusted project);
//! - [`child`]: opening and running one child conversation, its limits;
//! - [`task`]: the `task` tool the parent's model calls;
//! - [`depth`]: what a child at the depth limit answers when it calls `task`.

pub mod catalog;
pub mod child;
pub mod definition;
pub mod depth;
pub mod task;

pub use catalog::Agents;
pub use child::{
    ChildLauncher, ChildOutcome, ChildRunner, ChildSpec, ChildStart, ChildTask, SubagentLimits,
};
pub use task::TaskTool;
