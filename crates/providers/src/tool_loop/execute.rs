//! Running the tool calls of one assistant message.

use std::time::Instant;

use pith_core::{EventSink, LoopEvent, ToolCall, ToolRegistry, ToolResult};
use tokio_util::sync::CancellationToken;

/// Runs the calls of one assistant message. Consecutive read-only calls run concurrently;
/// results come back in call order. Every call gets a result, also on cancellation, so
/// the history never holds an unanswered tool call.
pub(crate) async fn execute_calls(
    tools: &ToolRegistry,
    calls: &[ToolCall],
    events: &mut dyn EventSink,
    cancel: &CancellationToken,
) -> Vec<ToolResult> {
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
                return ToolResult::new(
                    call.id.clone(),
                    "cancelled before it ran".to_owned(),
                    true,
                );
            }
            let started = Instant::now();
            let result = tools.execute(call, cancel).await;
            tracing::debug!(
                tool = %call.name,
                call_id = %call.id,
                elapsed_ms = started.elapsed().as_millis() as u64,
                bytes = result.content.len(),
                is_error = result.is_error,
                "tool call finished"
            );
            result
        }))
        .await;
        for (call, result) in group.iter().zip(outcomes) {
            events.emit(LoopEvent::ToolCallFinished {
                call: call.clone(),
                result: result.clone(),
            });
            results.push(result);
        }
        index = end;
    }
    results
}
