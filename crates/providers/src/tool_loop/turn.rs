//! One user turn: prepare a request (the compaction decision), send it, run the tools it
//! asks for, and repeat until the model answers without tool calls.

use std::sync::Arc;
use std::time::Instant;

use pith_core::hooks::context_block;
use pith_core::prompts::truncation_notice;
use pith_core::{
    HookEvent, LoopEvent, Message, Part, RequestPurpose, Role, ToolCall, ToolResult, TurnSink,
    Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::context_state::Sent;
use crate::tool_loop::execute::execute_calls_with_images;
use crate::tool_loop::guard::Truncation;
use crate::tool_loop::options::{LoopError, TurnFailure, TurnSummary};
use crate::tool_loop::report::{emit_hooks, request_report};
use crate::tool_loop::request::{
    send_with_retries, Exchange, RequestFailure, Response, Visibility,
};
use crate::wire::error::ProviderError;
use crate::wire::ModelRequest;

impl AgentLoop {
    /// Runs one user turn to completion.
    ///
    /// Events go to `sink` in the order they happen; history rewrites go to
    /// [`TurnSink::persist`] before they are applied. The user message is not reported
    /// as an event: the caller records it before the turn starts.
    pub async fn run_turn(
        &mut self,
        user_message: Message,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnFailure> {
        let mut summary = TurnSummary::default();
        let last_user_text = pith_core::context::pins::user_words(&user_message);
        // Beyond the seed: a new user message is new history (and a fresh ceiling), so a
        // conversation that already crosses the threshold when the user speaks is
        // compacted before the first request, with the new message retained.
        self.context.push_user(user_message);
        let fail = |error, summary| Err(TurnFailure { error, summary });
        // A Stop hook continued this turn at least once (hooks are told, to avoid loops).
        let mut stop_continued = false;
        // The last request was refused as too long and is being sent again, fitted.
        let mut refused = false;
        loop {
            if cancel.is_cancelled() {
                return fail(LoopError::Cancelled, summary);
            }
            if let Some(limit) = self.options.max_requests_per_turn {
                if summary.requests >= limit {
                    return fail(LoopError::MaxRequests(limit), summary);
                }
            }
            let prepared = match self
                .prepare_turn_request(&last_user_text, sink, cancel, &mut summary)
                .await
            {
                Ok(prepared) => prepared,
                Err(error) => return fail(error, summary),
            };
            summary.requests += 1;
            let sent = self.send_turn_request(prepared.request, sink, cancel).await;
            let response = match sent {
                Ok(response) => response,
                // A refusal as too long is evidence that pith undercounts: recalibrate, and
                // send the request once more (the decision fits or compacts it first).
                Err(failure)
                    if !refused
                        && failure.partial.text.is_empty()
                        && matches!(failure.error, ProviderError::ContextLengthExceeded { .. }) =>
                {
                    refused = true;
                    let notice = self
                        .context
                        .learn_refusal(prepared.sent.counted, &failure.error.to_string());
                    sink.emit(LoopEvent::Notice(notice));
                    continue;
                }
                Err(failure) => return fail(self.request_failed(failure, sink), summary),
            };
            refused = false;
            summary.usage += response.usage;
            if response.usage_reported {
                sink.emit(LoopEvent::Usage(response.usage));
            }

            let truncation = response
                .truncated
                .clone()
                .or_else(|| Truncation::from_stop_reason(response.stop_reason.as_deref()));
            let calls = response.tool_calls.clone();
            if response.is_empty() && truncation.is_none() {
                if self
                    .stop_continues("", &mut stop_continued, sink, cancel)
                    .await
                {
                    continue;
                }
                // An empty answer still closes the turn; keep the history well-formed.
                return Ok(finished(summary, sink));
            }
            let Appended {
                answer,
                budget_cut,
                notice,
            } = self.append_answer(&response, truncation, sink);
            self.weigh_usage(
                prepared.sent,
                response.usage_reported.then_some(response.usage),
                sink,
            );
            if calls.is_empty() {
                if let Some(notice) = notice {
                    self.push(notice, sink);
                }
                if budget_cut {
                    // Not the end of the turn: the next request goes to the cost ceiling,
                    // which refuses it (the job ends at the ceiling) unless the answer cost
                    // less than the budget held for it.
                    self.context.new_history();
                    continue;
                }
                if self
                    .stop_continues(&answer, &mut stop_continued, sink, cancel)
                    .await
                {
                    continue;
                }
                return Ok(finished(summary, sink));
            }

            summary.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            let repeated = self.run_tool_calls(&calls, sink, cancel).await;
            if let Err(error) = self.after_tool_calls(notice, repeated, sink, cancel).await {
                return fail(error, summary);
            }
        }
    }

    /// The answer appended to the history (an answer cut before any content leaves no
    /// empty assistant message; reasoning goes with its answer, in its place: providers
    /// take it back only so), and a cut announced.
    fn append_answer(
        &mut self,
        response: &Response,
        truncation: Option<Truncation>,
        sink: &mut dyn TurnSink,
    ) -> Appended {
        let answer = if response.tool_calls.is_empty() {
            response.text.clone()
        } else {
            String::new()
        };
        // An answer cut before any content leaves no (empty) assistant message.
        // Reasoning goes with its answer, in its place (providers take it back only so).
        if !response.is_empty() {
            self.push(response.message(), sink);
        }
        if let Some(truncation) = &truncation {
            sink.emit(LoopEvent::OutputTruncated {
                reason: truncation.to_string(),
            });
        }
        // Cut at the cap the cost ceiling set: the budget is spent, not the answer done.
        let budget_cut = response.budget_capped
            && matches!(
                truncation,
                Some(Truncation::OutputCap { .. } | Truncation::ProviderLimit { .. })
            );
        // Told after the tool results of the cut answer, or at once when it has none.
        let notice = truncation.map(|t| Message::user(truncation_notice(&t.to_string())));
        Appended {
            answer,
            budget_cut,
            notice,
        }
    }

    /// After the tool results: the note of a cut answer, new history for the governor,
    /// and the doom-loop guard's question when a call repeated too often (the turn
    /// ends when the user says no, or was cancelled).
    async fn after_tool_calls(
        &mut self,
        notice: Option<Message>,
        repeated: Option<(String, u32)>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<(), LoopError> {
        if let Some(notice) = notice {
            self.push(notice, sink);
        }
        self.context.new_history();
        if cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        if let Some((tool, times)) = repeated {
            if !self.repeat_gate.go_on(&tool, times, cancel).await {
                if cancel.is_cancelled() {
                    return Err(LoopError::Cancelled);
                }
                return Err(LoopError::RepeatedCall { tool, times });
            }
            self.repeats.reset();
        }
        Ok(())
    }

    /// Sends a turn's request with retries, visibly, and reports it. The provider's
    /// cache was used (and its TTL restarted) by it.
    async fn send_turn_request(
        &mut self,
        request: ModelRequest,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<Response, RequestFailure> {
        let started = Instant::now();
        let exchange = Exchange {
            adapter: self.adapter.as_ref(),
            request: &request,
            timeouts: &self.options.timeouts,
            cancel,
        };
        let sent = send_with_retries(
            exchange,
            &self.options.retry,
            self.guard(),
            Visibility::Visible(&mut *sink),
        )
        .await;
        self.context.last_request_at = Some(Instant::now());
        // The request shares the history: release it so appending does not copy it.
        drop(request);
        let report = request_report(self, RequestPurpose::Turn, started, &sent);
        self.emit_requests([report], sink);
        sent
    }

    /// A request that failed for good: what the user already saw is kept (never an
    /// orphan tool call), and the turn ends with the error.
    fn request_failed(&mut self, failure: RequestFailure, sink: &mut dyn TurnSink) -> LoopError {
        if !failure.partial.text.is_empty() {
            self.push(Message::assistant(failure.partial.text), sink);
        }
        match failure.error {
            ProviderError::Cancelled => LoopError::Cancelled,
            other => LoopError::Provider(other),
        }
    }

    /// Usage is evidence: weighed against pith's count of what was `sent` (a fitted
    /// request is not the history, so it calibrates but never anchors), and the first
    /// report after a compaction verifies it.
    fn weigh_usage(&mut self, sent: Sent, reported: Option<Usage>, sink: &mut dyn TurnSink) {
        let tools = self.tools.definitions();
        let covered = self.context.history.len();
        let notices =
            self.context
                .observe_usage(sent, reported, covered, &self.system_prompt, &tools);
        self.tell(notices, sink);
    }

    /// Runs the answer's tool calls and appends their results (an image a tool returned
    /// follows its result in the same message); the call the doom-loop guard stops at,
    /// with its count, if any.
    async fn run_tool_calls(
        &mut self,
        calls: &[ToolCall],
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Option<(String, u32)> {
        let hooks = Arc::clone(&self.hooks);
        let results =
            execute_calls_with_images(&self.tools, hooks.as_ref(), calls, sink, cancel).await;
        let mut repeated = None;
        for (call, (mut result, images)) in calls.iter().zip(results) {
            if let Some(times) = self.note_repeats(call, &mut result) {
                repeated = Some((call.name.clone(), times));
            }
            // An image a tool returned follows its result in the same message.
            let mut parts = vec![Part::ToolResult(result)];
            parts.extend(images.into_iter().map(Part::Image));
            self.push(
                Message {
                    role: Role::Tool,
                    parts,
                },
                sink,
            );
        }
        repeated
    }

    /// The model answered without tool calls (`answer`): asks the Stop hooks whether the
    /// turn ends. When one continues it, its message is appended as a user message and
    /// the turn goes on (bounded by `max_requests_per_turn`, like any request).
    async fn stop_continues(
        &mut self,
        answer: &str,
        continued: &mut bool,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> bool {
        let hooked = self.hooks.stop(answer, *continued, cancel).await;
        emit_hooks(hooked.runs, sink);
        match hooked.value {
            Some(message) if !cancel.is_cancelled() => {
                let text = context_block(HookEvent::Stop, &message);
                self.push(Message::user(text.trim_start()), sink);
                self.context.new_history();
                *continued = true;
                true
            }
            _ => false,
        }
    }

    /// The doom-loop guard for one finished call: counts it, appends the note from
    /// `note_after` on, and returns the count when it reached `stop_after`.
    fn note_repeats(&mut self, call: &ToolCall, result: &mut ToolResult) -> Option<u32> {
        let limits = self.options.repeated_calls;
        let times = self.repeats.observe(call, result);
        if limits.note_after > 0 && times >= limits.note_after {
            result
                .content
                .push_str(&pith_core::repeated_call_note(&call.name, times));
        }
        (limits.stop_after > 0 && times >= limits.stop_after).then_some(times)
    }
}

/// The turn ends: the front-end is told with its usage.
fn finished(summary: TurnSummary, sink: &mut dyn TurnSink) -> TurnSummary {
    sink.emit(LoopEvent::TurnFinished {
        usage: summary.usage,
    });
    summary
}

/// What [`AgentLoop::append_answer`] leaves for the rest of the turn.
struct Appended {
    /// The answer's text when it called no tools (what the Stop hooks are told).
    answer: String,
    /// Cut at the cap the cost ceiling set: the budget is spent, not the answer done.
    budget_cut: bool,
    /// The note for the model about a cut answer: told after the tool results of the
    /// cut answer, or at once when it has none.
    notice: Option<Message>,
}
