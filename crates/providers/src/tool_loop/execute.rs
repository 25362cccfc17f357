//! Running the tool calls of one assistant message.

use std::time::Instant;

use pith_core::{EventSink, Image, LoopEvent, ToolCall, ToolRegistry, ToolResult};
use tokio_util::sync::CancellationToken;

/// [`execute_calls_with_images`] without the images (the compactor's denied calls have
/// none).
pub(crate) async fn execute_calls(
    tools: &ToolRegistry,
    calls: &[ToolCall],
    events: &mut dyn EventSink,
    cancel: &CancellationToken,
) -> Vec<ToolResult> {
    execute_calls_with_images(tools, calls, events, cancel)
        .await
        .into_iter()
        .map(|(result, _)| result)
        .collect()
}

/// Runs the calls of one assistant message. Consecutive read-only calls run concurrently;
/// results come back in call order, each with the images its tool returned. Every call
/// gets a result, also on cancellation, so the history never holds an unanswered tool
/// call.
pub(crate) async fn execute_calls_with_images(
    tools: &ToolRegistry,
    calls: &[ToolCall],
    events: &mut dyn EventSink,
    cancel: &CancellationToken,
) -> Vec<(ToolResult, Vec<Image>)> {
    let mut results = Vec::with_capacity(calls.len());
    let mut index = 0;
    while index < calls.len() {
        let mut end = index + 1;
        if tools.is_read_only(&calls[index].name) && !tools.is_denying() {
            while end < calls.len() && tools.is_read_only(&calls[end].name) {
                end += 1;
            }
        }
        let group = &calls[index..end];
        for call in group {
            events.emit(LoopEvent::ToolCallStarted(call.clone()));
        }
        let outcomes = futures::future::join_all(group.iter().map(|call| async move {
            if cancel.is_cancelled() {
                let result = ToolResult {
                    call_id: call.id.clone(),
                    content: "cancelled before it ran".to_owned(),
                    is_error: true,
                };
                return (result, Vec::new());
            }
            let started = Instant::now();
            let (result, images) = tools.execute_with_images(call, cancel).await;
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
        }))
        .await;
        for (call, (result, images)) in group.iter().zip(outcomes) {
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
