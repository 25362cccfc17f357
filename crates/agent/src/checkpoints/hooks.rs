//! The loop's hooks with a checkpoint after every tool call: the user's hooks run as
//! before, and the workspace is observed right after the call, before `PostToolUse`
//! hooks run (so what a hook program changes is not the call's).

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::hooks::{CompactGate, CompactionFacts, Hooked, ToolGate};
use pith_core::{CompactionTrigger, LoopHooks, ToolCall, ToolResult};
use tokio_util::sync::CancellationToken;

use super::Checkpoints;

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
        trigger: CompactionTrigger,
        tokens_before: u64,
        focus: Option<&str>,
        cancel: &CancellationToken,
    ) -> Hooked<CompactGate> {
        self.inner
            .pre_compact(trigger, tokens_before, focus, cancel)
            .await
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
