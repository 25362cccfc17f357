//! Running the tool calls of one assistant message, with the `PreToolUse` and
//! `PostToolUse` hooks around each.

use std::time::Instant;

use pith_core::hooks::{context_block, ToolGate};
use pith_core::{
    EventSink, HookEvent, Image, LoopEvent, LoopHooks, Progress, ToolCall, ToolRegistry, ToolResult,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::report::emit_hooks;

/// [`execute_calls_with_images`] without the images (the compactor's denied calls have
/// none).
pub(crate) async fn execute_calls(
    tools: &ToolRegistry,
    hooks: &dyn LoopHooks,
    calls: &[ToolCall],
    events: &mut dyn EventSink,
    cancel: &CancellationToken,
) -> Vec<ToolResult> {
    execute_calls_with_images(tools, hooks, calls, events, cancel)
        .await
        .into_iter()
        .map(|(result, _)| result)
        .collect()
}

/// Runs the calls of one assistant message. Consecutive calls of concurrent tools
/// (read-only ones and `task`, see [`pith_core::Tool::concurrent`]) run concurrently;
/// results come back in call order, each with the images its tool returned. Every call
/// gets a result, also on cancellation, so the history never holds an unanswered tool
/// call.
///
/// Events a running tool sends through its [`Progress`] handle (a child conversation's)
/// are emitted to `events` as they arrive, from this task.
///
/// Hooks: before a group runs, `hooks.pre_tool_use` decides each of its calls in order (a
/// denied call is answered with the hook's reason and never runs); after the group ran,
/// `hooks.post_tool_use` may add context to each result that ran, before the model (and
/// [`LoopEvent::ToolCallFinished`]) sees it.
pub(crate) async fn execute_calls_with_images(
    tools: &ToolRegistry,
    hooks: &dyn LoopHooks,
    calls: &[ToolCall],
    events: &mut dyn EventSink,
    cancel: &CancellationToken,
) -> Vec<(ToolResult, Vec<Image>)> {
    let mut results = Vec::with_capacity(calls.len());
    let mut index = 0;
    while index < calls.len() {
        let mut end = index + 1;
        if tools.is_concurrent(&calls[index].name) && !tools.is_denying() {
            while end < calls.len() && tools.is_concurrent(&calls[end].name) {
                end += 1;
            }
        }
        let group = &calls[index..end];
        let mut gates = Vec::with_capacity(group.len());
        for call in group {
            let gate = if cancel.is_cancelled() {
                ToolGate::Run {
                    pre_approved: false,
                }
            } else {
                let hooked = hooks.pre_tool_use(call, cancel).await;
                emit_hooks(hooked.runs, events);
                hooked.value
            };
            events.emit(LoopEvent::ToolCallStarted(call.clone()));
            gates.push(gate);
        }
        let (progress, mut forwarded) = Progress::channel();
        let progress = &progress;
        let running =
            futures::future::join_all(group.iter().zip(&gates).map(|(call, gate)| async move {
                let pre_approved = match gate {
                    ToolGate::Deny { reason } => {
                        return (
                            ToolResult::new(call.id.clone(), reason.clone(), true),
                            Vec::new(),
                            false,
                        )
                    }
                    ToolGate::Run { pre_approved } => *pre_approved,
                };
                if cancel.is_cancelled() {
                    return (
                        ToolResult::new(
                            call.id.clone(),
                            "cancelled before it ran".to_owned(),
                            true,
                        ),
                        Vec::new(),
                        false,
                    );
                }
                let (result, images) =
                    run_one(tools, call, cancel, pre_approved, progress.clone()).await;
                (result, images, true)
            }));
        let outcomes = forward_while(running, &mut forwarded, events).await;
        for (call, (mut result, images, ran)) in group.iter().zip(outcomes) {
            if ran && !cancel.is_cancelled() {
                let hooked = hooks.post_tool_use(call, &result, cancel).await;
                emit_hooks(hooked.runs, events);
                if let Some(context) = hooked.value {
                    result
                        .content
                        .push_str(&context_block(HookEvent::PostToolUse, &context));
                }
            }
            events.emit(LoopEvent::ToolCallFinished {
                call: call.clone(),
                result: result.clone(),
            });
            results.push((result, images));
        }
        index = end;
    }
    results
}

/// Drives `running` to its end while emitting, in arrival order, the events its tools
/// send through their [`Progress`] handle (a child conversation's events), then those
/// still queued when it ended.
async fn forward_while<T>(
    running: impl std::future::Future<Output = T>,
    forwarded: &mut tokio::sync::mpsc::UnboundedReceiver<LoopEvent>,
    events: &mut dyn EventSink,
) -> T {
    tokio::pin!(running);
    let output = loop {
        tokio::select! {
            biased;
            Some(event) = forwarded.recv() => events.emit(event),
            output = &mut running => break output,
        }
    };
    while let Ok(event) = forwarded.try_recv() {
        events.emit(event);
    }
    output
}

/// Runs one call that may run, and logs how it went.
async fn run_one(
    tools: &ToolRegistry,
    call: &ToolCall,
    cancel: &CancellationToken,
    pre_approved: bool,
    progress: Progress,
) -> (ToolResult, Vec<Image>) {
    let started = Instant::now();
    let (result, images) = tools
        .execute_with_progress(call, cancel, pre_approved, Some(progress))
        .await;
    tracing::debug!(
        tool = %call.name,
        call_id = %call.id,
        elapsed_ms = started.elapsed().as_millis() as u64,
        bytes = result.content.len(),
        is_error = result.is_error,
        images = images.len(),
        "tool call finished"
    );
    (result, images)
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use pith_core::{NoHooks, Tool, ToolContext, ToolError, ToolOutput};
    use serde_json::{json, Value};
    use std::sync::Arc;
    use std::time::Duration;

    /// A concurrent tool that waits for its sibling (a barrier: run one at a time, it
    /// would never return) and reports progress while it runs.
    struct Delegating {
        barrier: Arc<tokio::sync::Barrier>,
    }

    #[async_trait]
    impl Tool for Delegating {
        fn name(&self) -> &str {
            "task"
        }
        fn description(&self) -> &str {
            "delegates"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object"})
        }
        fn read_only(&self) -> bool {
            false
        }
        fn concurrent(&self) -> bool {
            true
        }
        async fn run(&self, _arguments: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            let progress = ctx.progress.clone().expect("the loop listens");
            progress.send(LoopEvent::Notice(format!("{} started", ctx.call_id)));
            self.barrier.wait().await;
            progress.send(LoopEvent::Notice(format!("{} done", ctx.call_id)));
            Ok(ToolOutput::ok(format!("report of {}", ctx.call_id)))
        }
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "task".into(),
            arguments: json!({}),
        }
    }

    #[tokio::test]
    async fn concurrent_calls_run_together_and_their_progress_is_emitted_in_between() {
        let tools = ToolRegistry::new(vec![Arc::new(Delegating {
            barrier: Arc::new(tokio::sync::Barrier::new(2)),
        })]);
        let mut events: Vec<LoopEvent> = Vec::new();
        let results = tokio::time::timeout(
            Duration::from_secs(10),
            execute_calls(
                &tools,
                &NoHooks,
                &[call("a"), call("b")],
                &mut events,
                &CancellationToken::new(),
            ),
        )
        .await
        .expect("the two calls ran one after the other");
        assert_eq!(results[0].content, "report of a");
        assert_eq!(results[1].content, "report of b");
        let shown: Vec<String> = events
            .iter()
            .map(|event| match event {
                LoopEvent::ToolCallStarted(call) => format!("start {}", call.id),
                LoopEvent::ToolCallFinished { call, .. } => format!("finish {}", call.id),
                LoopEvent::Notice(text) => text.clone(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(shown.len(), 8, "{shown:?}");
        assert_eq!(&shown[..2], ["start a", "start b"]);
        assert_eq!(&shown[6..], ["finish a", "finish b"]);
        let mut progress = shown[2..6].to_vec();
        progress.sort();
        assert_eq!(progress, ["a done", "a started", "b done", "b started"]);
        // Each call's own progress is in order, and both started before either ended.
        let at = |text: &str| shown.iter().position(|s| s == text).unwrap();
        assert!(at("a started") < at("b done") && at("b started") < at("a done"));
    }
}
