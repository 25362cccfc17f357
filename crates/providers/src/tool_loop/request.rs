//! Sending one model request: timeouts, retries with backoff, cancellation, and
//! collecting the streamed response.
//!
//! Retries happen only while nothing of the response has been forwarded yet: once text
//! reached the caller, replaying the request would show it twice, so a stream that breaks
//! after that point fails the request with its error (front-ends keep the partial text).
//! Tool calls collected before the break were not shown (they show when they run), so
//! they do not block a retry; a private request (the automatic compaction summary)
//! forwards nothing and is always retryable.
//!
//! Before each attempt the job's ceilings are asked (`spend`): a request whose input and
//! smallest useful answer would cross the cost ceiling, or that would start after the
//! turn's deadline, fails with [`ProviderError::Ceiling`] without being sent; otherwise
//! it is sent with its output cap (and thinking budget) lowered to what the rest of the
//! budget pays for (pith's own cut of the answer follows it). After it, what it cost is
//! charged.

use std::time::Duration;

use futures::StreamExt;
use pith_core::{EventSink, LoopEvent, Message, Part, Reasoning, Role, ToolCall, Usage};
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
    /// True when the last attempt was sent with its output cap lowered to what the rest
    /// of the cost ceiling pays for: an answer cut at its cap was cut by the budget.
    pub budget_capped: bool,
    /// Complete reasoning blocks, each with the number of text and tool-call pieces that
    /// came before it: [`Response::message`] puts it back in that place.
    pub reasoning: Vec<(usize, Reasoning)>,
    /// Where each piece of visible text started, counted as for `reasoning`, with the
    /// byte offset in `text`.
    text_starts: Vec<(usize, usize)>,
    /// Pieces (text runs and tool calls) seen so far.
    pieces: usize,
    /// True while the last piece was text (a new delta extends it).
    in_text: bool,
}

impl Response {
    /// True when the answer holds nothing for the history: no text and no tool calls
    /// (reasoning alone is not an answer).
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.tool_calls.is_empty()
    }

    /// The assistant message of this answer: reasoning, text and tool calls in the order
    /// they arrived (a provider takes reasoning back only in its place).
    pub fn message(&self) -> Message {
        let mut parts = Vec::with_capacity(self.reasoning.len() + self.tool_calls.len() + 1);
        let mut reasoning = self.reasoning.iter().peekable();
        let mut calls = self.tool_calls.iter();
        let mut starts = self.text_starts.iter().peekable();
        for piece in 0..=self.pieces {
            while let Some((_, block)) = reasoning.next_if(|(at, _)| *at <= piece) {
                parts.push(Part::Reasoning(block.clone()));
            }
            if piece == self.pieces {
                break;
            }
            match starts.next_if(|(at, _)| *at == piece) {
                Some(&(_, start)) => {
                    let end = starts.peek().map_or(self.text.len(), |(_, next)| *next);
                    let text = self.text.get(start..end).unwrap_or_default();
                    if !text.is_empty() {
                        parts.push(Part::Text {
                            text: text.to_owned(),
                        });
                    }
                }
                None => {
                    if let Some(call) = calls.next() {
                        parts.push(Part::ToolCall(call.clone()));
                    }
                }
            }
        }
        parts.extend(reasoning.map(|(_, block)| Part::Reasoning(block.clone())));
        parts.extend(calls.map(|call| Part::ToolCall(call.clone())));
        Message {
            role: Role::Assistant,
            parts,
        }
    }

    fn push_text(&mut self, delta: &str) {
        if !self.in_text {
            self.text_starts.push((self.pieces, self.text.len()));
            self.pieces += 1;
            self.in_text = true;
        }
        self.text.push_str(delta);
    }

    fn push_call(&mut self, call: ToolCall) {
        self.tool_calls.push(call);
        self.pieces += 1;
        self.in_text = false;
    }

    fn push_reasoning(&mut self, reasoning: Reasoning) {
        self.reasoning.push((self.pieces, reasoning));
        self.in_text = false;
    }
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

/// One request to send: where it goes, what it says, how long each wait may last, and
/// the token that abandons it.
#[derive(Clone, Copy)]
pub struct Exchange<'a> {
    /// The protocol adapter that sends it.
    pub adapter: &'a dyn ProviderAdapter,
    /// The request.
    pub request: &'a ModelRequest,
    /// The timeouts of each attempt.
    pub timeouts: &'a Timeouts,
    /// Cancels the request (and any wait before a retry).
    pub cancel: &'a CancellationToken,
}

/// Sends the exchange's request with retries, forwarding pieces according to
/// `visibility`, until the response completes, fails for good, or its token fires.
pub async fn send_with_retries(
    exchange: Exchange<'_>,
    retry: &RetryPolicy,
    guard: GuardLimits<'_>,
    mut visibility: Visibility<'_>,
) -> Result<Response, RequestFailure> {
    let Exchange {
        request, cancel, ..
    } = exchange;
    let mut attempt = 1;
    loop {
        // The job's ceilings: a request that would cross one is never sent, and one that
        // is sent asks for no more answer than the budget pays for.
        let admitted = match guard
            .spend
            .map(|spend| spend.admit(request, guard.output_cap))
        {
            Some(Err(reached)) => {
                return Err(RequestFailure {
                    error: ProviderError::Ceiling(reached),
                    partial: Response {
                        attempts: attempt - 1,
                        ..Response::default()
                    },
                })
            }
            Some(Ok(admitted)) => Some(admitted),
            None => None,
        };
        let budgeted = admitted.as_ref().and_then(|a| a.request(request));
        let sent = budgeted.as_ref().unwrap_or(request);
        let mut limits = guard;
        if let Some(admitted) = &admitted {
            limits.output_cap = limits.output_cap.min(admitted.answer_cap);
        }
        visibility.emit(LoopEvent::RequestStarted { attempt });
        let mut response = Response::default();
        let mut output = OutputGuard::new(limits);
        let outcome = attempt_once(
            &Exchange {
                request: sent,
                ..exchange
            },
            &mut output,
            &mut visibility,
            &mut response,
        )
        .await;
        response.attempts = attempt;
        response.budget_capped = admitted.as_ref().is_some_and(|a| a.clamped);
        if let (Some(spend), Some(admitted)) = (guard.spend, admitted) {
            let answered = !response.is_empty() || response.shown || response.usage_reported;
            let usage = response.usage_reported.then_some(&response.usage);
            spend.charge(sent, admitted, usage, answered, output.counted());
        }
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
    exchange: &Exchange<'_>,
    guard: &mut OutputGuard<'_>,
    visibility: &mut Visibility<'_>,
    response: &mut Response,
) -> Result<(), ProviderError> {
    let Exchange {
        adapter,
        request,
        timeouts,
        cancel,
    } = *exchange;
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
                    response.push_text(&delta);
                    response.shown |= visibility.is_visible();
                    visibility.emit(LoopEvent::TextDelta(delta));
                }
            }
            StreamChunk::Reasoning(delta) => {
                response.shown |= visibility.is_visible();
                visibility.emit(LoopEvent::ReasoningDelta(delta));
            }
            StreamChunk::ToolCall(call) => response.push_call(call),
            StreamChunk::ReasoningPart(reasoning) => response.push_reasoning(reasoning),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reasoning(text: &str) -> Reasoning {
        Reasoning {
            origin: "anthropic".into(),
            text: text.into(),
            signature: Some(format!("sig-{text}")),
            ..Reasoning::default()
        }
    }

    #[test]
    fn the_message_keeps_reasoning_text_and_calls_in_arrival_order() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "read".into(),
            arguments: json!({}),
        };
        let mut response = Response::default();
        response.push_reasoning(reasoning("first"));
        response.push_text("Let me ");
        response.push_text("look.");
        response.push_call(call("a"));
        response.push_reasoning(reasoning("second"));
        response.push_call(call("b"));
        response.push_text("More.");
        let parts = response.message().parts;
        let kinds: Vec<String> = parts
            .iter()
            .map(|p| match p {
                Part::Reasoning(r) => format!("reasoning:{}", r.text),
                Part::Text { text } => format!("text:{text}"),
                Part::ToolCall(c) => format!("call:{}", c.id),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "reasoning:first",
                "text:Let me look.",
                "call:a",
                "reasoning:second",
                "call:b",
                "text:More."
            ]
        );
        assert_eq!(response.text, "Let me look.More.");
        assert!(!response.is_empty());
        let mut only_thinking = Response::default();
        only_thinking.push_reasoning(reasoning("hm"));
        assert!(only_thinking.is_empty(), "reasoning alone is no answer");
        assert_eq!(only_thinking.message().parts.len(), 1);
    }
}
