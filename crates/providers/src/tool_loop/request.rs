//! Sending one model request: timeouts, retries with backoff, cancellation, and
//! collecting the streamed response.
//!
//! Retries happen only while nothing of the response has been forwarded yet: once text
//! reached the caller, replaying the request would show it twice, so a stream that breaks
//! after that point fails the request with its error (front-ends keep the partial text).
//! Tool calls collected before the break were not shown (they show when they run), so
//! they do not block a retry; a private request (the automatic compaction summary)
//! forwards nothing and is always retryable.

use std::time::Duration;

use futures::StreamExt;
use pith_core::{EventSink, LoopEvent, ToolCall, Usage};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::guard::{GuardLimits, OutputGuard, Truncation};
use crate::tool_loop::retry::RetryPolicy;
use crate::wire::adapter::{ModelRequest, ProviderAdapter, StreamChunk};
use crate::wire::error::ProviderError;

/// Timeouts of one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// Longest wait for response headers.
    pub request: Duration,
    /// Longest silence between two stream chunks.
    pub idle: Duration,
    /// Longest stretch of a live stream without content (only pings or empty deltas;
    /// reasoning counts as content).
    pub no_content: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            request: Duration::from_secs(120),
            idle: Duration::from_secs(120),
            no_content: Duration::from_secs(600),
        }
    }
}

/// What one request produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// All visible text, in order.
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Reported usage (zero when the provider reported none).
    pub usage: Usage,
    /// True when the provider reported usage.
    pub usage_reported: bool,
    /// The provider's stop reason.
    pub stop_reason: Option<String>,
    /// True once text or reasoning of this response reached the front-end (never for a
    /// private request). Tool calls are shown only when they run, after the stream.
    pub shown: bool,
    /// Set when pith cut the answer short (output cap, repetition): what arrived up to
    /// the cut is kept; tool calls that were not complete are not in `tool_calls`.
    pub truncated: Option<Truncation>,
    /// Attempts made, the successful or last one included (retries + 1).
    pub attempts: u32,
}

/// A failed request, with whatever arrived before the failure.
#[derive(Debug, Clone)]
pub struct RequestFailure {
    /// Why it failed.
    pub error: ProviderError,
    /// What had arrived (text already forwarded, usage of failed attempts excluded).
    pub partial: Response,
}

/// Where streamed pieces go: to the front-end (`Visible`) or nowhere (`Private`, for the
/// automatic compactor, whose summary is never shown).
pub enum Visibility<'a> {
    /// Forward text, reasoning and retry notices as [`LoopEvent`]s.
    Visible(&'a mut dyn EventSink),
    /// Collect privately.
    Private,
}

impl Visibility<'_> {
    fn is_visible(&self) -> bool {
        matches!(self, Visibility::Visible(_))
    }

    fn emit(&mut self, event: LoopEvent) {
        if let Visibility::Visible(sink) = self {
            sink.emit(event);
        }
    }
}

/// Sends `request` through `adapter` with retries, forwarding pieces according to
/// `visibility`, until the response completes, fails for good, or `cancel` fires.
pub async fn send_with_retries(
    adapter: &dyn ProviderAdapter,
    request: &ModelRequest,
    retry: &RetryPolicy,
    timeouts: &Timeouts,
    guard: GuardLimits<'_>,
    mut visibility: Visibility<'_>,
    cancel: &CancellationToken,
) -> Result<Response, RequestFailure> {
    let mut attempt = 1;
    loop {
        visibility.emit(LoopEvent::RequestStarted { attempt });
        let mut response = Response::default();
        let outcome = attempt_once(
            adapter,
            request,
            timeouts,
            OutputGuard::new(guard),
            &mut visibility,
            cancel,
            &mut response,
        )
        .await;
        response.attempts = attempt;
        match outcome {
            Ok(()) => return Ok(response),
            Err(error) => {
                // Replaying would show the text twice; tool calls collected so far were not
                // shown (they show when they run) and a private request shows nothing.
                let can_retry =
                    error.is_retryable() && !response.shown && attempt <= retry.max_retries;
                if !can_retry {
                    return Err(RequestFailure {
                        error,
                        partial: response,
                    });
                }
                let delay = retry.delay(attempt, error.retry_after());
                visibility.emit(LoopEvent::Retrying {
                    attempt,
                    delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    reason: error.to_string(),
                });
                tracing::warn!(attempt, ?delay, %error, "retrying model request");
                tokio::select! {
                    _ = cancel.cancelled() => {
                        return Err(RequestFailure { error: ProviderError::Cancelled, partial: response });
                    }
                    _ = tokio::time::sleep(delay) => {}
                }
                attempt += 1;
            }
        }
    }
}

async fn attempt_once(
    adapter: &dyn ProviderAdapter,
    request: &ModelRequest,
    timeouts: &Timeouts,
    mut guard: OutputGuard<'_>,
    visibility: &mut Visibility<'_>,
    cancel: &CancellationToken,
    response: &mut Response,
) -> Result<(), ProviderError> {
    let started = tokio::select! {
        _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
        started = tokio::time::timeout(timeouts.request, adapter.start(request)) => started,
    };
    let mut stream = match started {
        Ok(result) => result?,
        Err(_) => return Err(ProviderError::Timeout(timeouts.request)),
    };
    loop {
        let next = tokio::select! {
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            next = tokio::time::timeout(timeouts.idle, stream.next()) => next,
        };
        let chunk = match next {
            Err(_) => return Err(ProviderError::IdleTimeout(timeouts.idle)),
            Ok(None) => {
                return Err(ProviderError::Stream(
                    "the stream ended before the response was complete".to_owned(),
                ))
            }
            Ok(Some(chunk)) => chunk?,
        };
        let truncation = guard.observe(&chunk)?;
        match chunk {
            StreamChunk::Text(delta) => {
                if !delta.is_empty() {
                    response.text.push_str(&delta);
                    response.shown |= visibility.is_visible();
                    visibility.emit(LoopEvent::TextDelta(delta));
                }
            }
            StreamChunk::Reasoning(delta) => {
                response.shown |= visibility.is_visible();
                visibility.emit(LoopEvent::ReasoningDelta(delta));
            }
            StreamChunk::ToolCall(call) => response.tool_calls.push(call),
            StreamChunk::ArgumentBytes { .. } | StreamChunk::Progress => {}
            StreamChunk::Usage(usage) => {
                response.usage = usage;
                response.usage_reported = true;
            }
            StreamChunk::Done { stop_reason } => {
                response.stop_reason = stop_reason;
                return Ok(());
            }
        }
        if let Some(truncation) = truncation {
            // Dropping the stream aborts the request: nothing more is read.
            tracing::warn!(%truncation, "answer cut off");
            response.truncated = Some(truncation);
            return Ok(());
        }
    }
}
