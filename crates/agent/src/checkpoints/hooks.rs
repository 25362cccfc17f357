//! The loop's hooks with a checkpoint after every tool call: the user's hooks run as
//! before, and the workspace is observed right after the call, before `PostToolUse`
//! hooks run (so what a hook program changes is not the call's).
//!
//! No tool that may write runs before the first snapshot is done: otherwise an `edit` in
//! a large workspace could change a file the background snapshot had not read yet, and
//! the edited content would become the file's "before" (a rewind would then restore
//! nothing). Only the tools that never write ([`NEVER_WRITE`]) go ahead at once.

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::hooks::{CompactGate, CompactionAsk, CompactionFacts, Hooked, ToolGate};
use pith_core::{LoopHooks, ToolCall, ToolResult};
use tokio_util::sync::CancellationToken;

use super::Checkpoints;

/// pith's tools that never write to the workspace: they need not wait for the first
/// snapshot. Every other tool (`edit`, `write`, `bash`, MCP tools, subagents) waits.
pub const NEVER_WRITE: [&str; 5] = ["read", "grep", "glob", "ls", "update_plan"];

/// `inner`, with a checkpoint after each tool call.
pub struct CheckpointHooks {
    /// The hooks that run (the user's).
    pub inner: Arc<dyn LoopHooks>,
    /// The conversation's checkpoints.
    pub checkpoints: Arc<Checkpoints>,
}

#[async_trait]
impl LoopHooks for CheckpointHooks {
    async fn pre_tool_use(&self, call: &ToolCall, cancel: &CancellationToken) -> Hooked<ToolGate> {
        if !NEVER_WRITE.contains(&call.name.as_str()) {
            self.checkpoints.wait_for_snapshot().await;
        }
        self.inner.pre_tool_use(call, cancel).await
    }

    async fn post_tool_use(
        &self,
        call: &ToolCall,
        result: &ToolResult,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        self.checkpoints.after_call(&call.id, &call.name).await;
        self.inner.post_tool_use(call, result, cancel).await
    }

    async fn pre_compact(
        &self,
        ask: CompactionAsk<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<CompactGate> {
        self.inner.pre_compact(ask, cancel).await
    }

    async fn post_compact(
        &self,
        facts: CompactionFacts<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        self.inner.post_compact(facts, cancel).await
    }

    async fn stop(
        &self,
        last_text: &str,
        continued: bool,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        self.inner.stop(last_text, continued, cancel).await
    }
}
