//! One summary request, as the automatic and the manual compaction send it: denied tool
//! calls are answered and the request repeated (at most `compaction_tool_rounds` times),
//! the answer is held to the summary's read cap, and a summary cut off is kept for what
//! it says.
//!
//! A [`Summarizer`] owns what it needs (the adapter, the limits, the denying registry), so
//! a summary can be prepared in the background (`prepared`) while the turn goes on, as
//! well as awaited in place. It sends to the loop's compaction model when it has one and
//! the request fits that model's window (`summary_model`), else to the loop's own model.

use std::sync::Arc;
use std::time::Instant;

use pith_core::summary::validate_summary;
use pith_core::{
    Discard, EventSink, LoopEvent, Message, NoHooks, Part, RequestPurpose, RequestReport, Role,
    TokenCounter, ToolRegistry, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::execute::execute_calls;
use crate::tool_loop::guard::{GuardLimits, Truncation};
use crate::tool_loop::report::report_of;
use crate::tool_loop::request::{send_with_retries, Exchange, Timeouts, Visibility};
use crate::tool_loop::retry::RetryPolicy;
use crate::tool_loop::spend::SpendGuard;
use crate::tool_loop::summary_model::{fallback_notice, SummaryModel};
use crate::tool_loop::summary_outcome::SummaryOutcome;
use crate::wire::adapter::{ModelRequest, ProviderAdapter};
use crate::wire::error::ProviderError;

/// pith stops reading a summary at this many times its allowance (at least
/// [`MIN_SUMMARY_READ_TOKENS`]), unless the model reasons first.
const SUMMARY_READ_FACTOR: u64 = 4;

/// The least output pith reads of a summary before it stops.
const MIN_SUMMARY_READ_TOKENS: u64 = 2_000;

/// Everything a summary request needs, owned (see the module docs).
pub(super) struct Summarizer {
    adapter: Arc<dyn ProviderAdapter>,
    model: String,
    counter: Arc<dyn TokenCounter>,
    output_cap: u64,
    repeated_line_limit: usize,
    timeouts: Timeouts,
    retry: RetryPolicy,
    spend: Option<Arc<SpendGuard>>,
    tool_rounds: u32,
    denying: ToolRegistry,
    reasons: bool,
    /// The compaction model, when the requests go to it.
    target: Option<SummaryModel>,
}

impl AgentLoop {
    /// A summarizer for a summary request estimated at `counted` tokens (pith's count,
    /// calibrated by this conversation's server): to the
    /// compaction model when the loop has one whose input budget it fits, else (told on
    /// `sink` when a compaction model was passed over) to the loop's own model, with its
    /// adapter and limits.
    pub(super) fn summarizer_for(&self, counted: u64, sink: &mut dyn EventSink) -> Summarizer {
        let own = Summarizer {
            adapter: Arc::clone(&self.adapter),
            model: self.model.clone(),
            counter: Arc::clone(self.counter()),
            output_cap: self.options.output_cap,
            repeated_line_limit: self.options.repeated_line_limit,
            timeouts: self.options.timeouts,
            retry: self.options.retry,
            spend: self.spend.clone(),
            tool_rounds: self.options.compaction_tool_rounds,
            denying: self.tools.denying(),
            reasons: thinks(self.options.reasoning),
            target: None,
        };
        let Some(summary) = &self.summary_model else {
            return own;
        };
        if !summary.fits(counted) {
            let notice = fallback_notice(summary, counted);
            tracing::info!("{notice}");
            sink.emit(LoopEvent::Notice(notice));
            return own;
        }
        Summarizer {
            adapter: Arc::clone(&summary.adapter),
            model: summary.model.clone(),
            output_cap: summary.output_cap,
            spend: summary.spend.clone(),
            reasons: thinks(summary.reasoning),
            target: Some(summary.clone()),
            ..own
        }
    }
}

/// Whether a model with the `reasoning` setting thinks before it answers.
fn thinks(reasoning: Option<crate::wire::ReasoningEffort>) -> bool {
    reasoning.is_some_and(|effort| effort != crate::wire::ReasoningEffort::Off)
}

impl Summarizer {
    /// The compaction model's `provider/model` when this summarizer sends to it; `None`
    /// for the loop's own model.
    pub fn compaction_model(&self) -> Option<String> {
        self.target.as_ref().map(|target| target.spec.clone())
    }

    /// Sends a summary request (`request` as built for the loop's own model; see
    /// [`SummaryModel::retarget`] for the compaction model), answering attempted tool
    /// calls with the denial and repeating, at most `compaction_tool_rounds` times. Every
    /// request sent is added to `reports`.
    pub async fn request(
        &self,
        request: ModelRequest,
        mut visibility: Visibility<'_>,
        cancel: &CancellationToken,
        reports: &mut Vec<RequestReport>,
        allowance: u64,
    ) -> SummaryOutcome {
        let mut request = match &self.target {
            Some(target) => target.retarget(request),
            None => request,
        };
        let guard = self.guard(allowance);
        let mut usage = Usage::default();
        let mut rounds = 0;
        loop {
            let sent_visibility = match &mut visibility {
                Visibility::Visible(sink) => Visibility::Visible(&mut **sink),
                Visibility::Private => Visibility::Private,
            };
            let started = Instant::now();
            let exchange = Exchange {
                adapter: self.adapter.as_ref(),
                request: &request,
                timeouts: &self.timeouts,
                cancel,
            };
            let sent = send_with_retries(exchange, &self.retry, guard, sent_visibility).await;
            let mut report = report_of(
                (self.adapter.protocol_name(), &self.model),
                RequestPurpose::Compaction,
                started,
                &sent,
            );
            report.compaction_model = self.compaction_model();
            reports.push(report);
            let response = match sent {
                Ok(response) => response,
                Err(failure) => {
                    return match failure.error {
                        ProviderError::Cancelled => SummaryOutcome::Cancelled { usage },
                        error => SummaryOutcome::Failed {
                            reason: error.to_string(),
                            usage,
                        },
                    }
                }
            };
            usage += response.usage;
            let truncation = response
                .truncated
                .clone()
                .or_else(|| Truncation::from_stop_reason(response.stop_reason.as_deref()));
            // A summary cut off is kept for what it says (the ledger carries the facts);
            // tool calls that were not complete are not run.
            if let Some(truncation) = truncation {
                return cut_summary(&response.text, &truncation, usage, &mut visibility);
            }
            if response.tool_calls.is_empty() {
                return complete_summary(&response.text, usage);
            }
            if rounds >= self.tool_rounds {
                return SummaryOutcome::ToolRoundsExhausted { usage };
            }
            rounds += 1;
            let results = match &mut visibility {
                Visibility::Visible(sink) => {
                    execute_calls(
                        &self.denying,
                        &NoHooks,
                        &response.tool_calls,
                        &mut **sink,
                        cancel,
                    )
                    .await
                }
                Visibility::Private => {
                    execute_calls(
                        &self.denying,
                        &NoHooks,
                        &response.tool_calls,
                        &mut Discard,
                        cancel,
                    )
                    .await
                }
            };
            if cancel.is_cancelled() {
                return SummaryOutcome::Cancelled { usage };
            }
            let messages = Arc::make_mut(&mut request.messages);
            messages.push(response.message());
            for result in results {
                messages.push(Message {
                    role: Role::Tool,
                    parts: vec![Part::ToolResult(result)],
                });
            }
        }
    }

    /// The bounds a summary answer is held to: the loop's, with pith's own cap lowered to
    /// [`SUMMARY_READ_FACTOR`] times the allowance unless the model reasons first (its
    /// thinking counts against the same cap).
    fn guard(&self, allowance: u64) -> GuardLimits<'_> {
        let mut output_cap = self.output_cap;
        if !self.reasons {
            let cap = (allowance * SUMMARY_READ_FACTOR).max(MIN_SUMMARY_READ_TOKENS);
            output_cap = output_cap.min(cap);
        }
        GuardLimits {
            counter: self.counter.as_ref(),
            output_cap,
            repeated_line_limit: self.repeated_line_limit,
            no_content: self.timeouts.no_content,
            spend: self.spend.as_deref(),
        }
    }
}

/// A summary answer cut off: kept for what it says, with a marker (shown as it is kept
/// when the summary is visible); the ledger carries the facts. Incomplete tool calls are
/// not run.
fn cut_summary(
    text: &str,
    truncation: &Truncation,
    usage: Usage,
    visibility: &mut Visibility<'_>,
) -> SummaryOutcome {
    match validate_summary(text) {
        Ok(summary) => {
            let marker = format!("\n[pith: the summary was cut off here: {truncation}]");
            if let Visibility::Visible(sink) = visibility {
                sink.emit(LoopEvent::TextDelta(marker.clone()));
            }
            SummaryOutcome::Summary {
                summary: format!("{summary}{marker}"),
                usage,
                cut_off: true,
            }
        }
        Err(_) => SummaryOutcome::Failed {
            reason: format!("the summary was cut off before any text: {truncation}"),
            usage,
        },
    }
}

/// A summary answer that ended by itself, checked.
fn complete_summary(text: &str, usage: Usage) -> SummaryOutcome {
    match validate_summary(text) {
        Ok(summary) => SummaryOutcome::Summary {
            summary: summary.to_owned(),
            usage,
            cut_off: false,
        },
        Err(error) => SummaryOutcome::Failed {
            reason: error.to_string(),
            usage,
        },
    }
}
