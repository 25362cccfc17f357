//! Summary compactions: the private automatic one inside a turn (seed 002 "Private
//! compaction request") and the visible manual `/compact`.
//!
//! Both reuse the loop's adapter, system prompt, history and tool definitions (so the
//! provider's prompt cache can reuse the whole prefix) and append the compaction prompt as
//! the last user message; the request is fitted like any other when it would not fit.
//! Tool calls the model attempts are answered by the denying registry with the tool-error
//! text and the request is repeated, at most `compaction_tool_rounds` times; the summary
//! is the text of the last response. A model that keeps calling tools past those rounds
//! gets no further say: pith compacts with its own deterministic summary
//! (`summary::fallback_summary`) rather than fail while the context stays full.
//!
//! Transactional: the replacement is handed to the [`TurnSink`] to persist, and installed
//! only when that succeeded. On cancellation, failure or a failed write, the history is
//! unchanged.

use std::sync::Arc;

use pith_core::events::compaction_token;
use pith_core::summary::{
    auto_prompt, build_manual_replacement, compacted_user_text, fallback_summary, manual_prompt,
    validate_summary,
};
use pith_core::{
    AutoCompaction, Compaction, CompactionTrigger, Discard, HistoryRewrite, LoopEvent, Message,
    Part, Role, TurnSink, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::execute::execute_calls;
use crate::tool_loop::options::{LoopError, ManualCompaction, TurnSummary};
use crate::tool_loop::request::{send_with_retries, Visibility};
use crate::wire::adapter::ModelRequest;
use crate::wire::error::ProviderError;

/// Most tokens of pith's own summary when the model could not write one: the smaller of
/// 8,000 and a tenth of the input budget.
const FALLBACK_SUMMARY_MAX_TOKENS: u64 = 8_000;

/// How a summary request ended.
#[derive(Debug, Clone, PartialEq)]
enum SummaryOutcome {
    /// A valid (non-empty, trimmed) summary.
    Summary { summary: String, usage: Usage },
    /// The model kept calling tools past the allowed rounds.
    ToolRoundsExhausted { usage: Usage },
    /// The compaction's token was cancelled.
    Cancelled { usage: Usage },
    /// The request failed or the summary was empty.
    Failed { reason: String, usage: Usage },
}

impl SummaryOutcome {
    fn usage(&self) -> Usage {
        match self {
            Self::Summary { usage, .. }
            | Self::ToolRoundsExhausted { usage }
            | Self::Cancelled { usage }
            | Self::Failed { usage, .. } => *usage,
        }
    }
}

impl AgentLoop {
    /// The automatic compaction, run privately inside a turn. `Err` only when the turn
    /// itself was cancelled; every other outcome lets the turn go on.
    pub(super) async fn auto_compact(
        &mut self,
        tokens_before: u64,
        last_user_text: &str,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
        turn: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        let child = compaction_token(cancel);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: child.clone(),
        }));
        let tools = self.tools.definitions();
        let mut messages = self.history_for_summary();
        messages.push(Message::user(auto_prompt()));
        let messages = self.fit_if_needed(messages, &tools);
        let request = self.request(Arc::new(messages), tools.clone());
        let outcome = self
            .summary_request(request, Visibility::Private, &child)
            .await;
        let usage = outcome.usage();
        turn.usage += usage;
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                sink.emit(LoopEvent::Notice(
                    "the model kept calling tools instead of summarising; compacted without its summary"
                        .to_owned(),
                ));
                self.fallback_summary()
            }
            SummaryOutcome::Cancelled { .. } => {
                self.memory.record_unapplied_attempt();
                // Every Started gets its terminal event, also when the whole turn was
                // cancelled (the child token is cancelled with it): front-ends drop the
                // child's cancel handle and their "Compacting…" state on it.
                sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
                return if cancel.is_cancelled() {
                    Err(LoopError::Cancelled)
                } else {
                    Ok(())
                };
            }
            SummaryOutcome::Failed { reason, .. } => {
                self.memory.record_unapplied_attempt();
                if cancel.is_cancelled() {
                    sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
                    return Err(LoopError::Cancelled);
                }
                sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }));
                return Ok(());
            }
        };

        let replacement = vec![Message::user(compacted_user_text(&summary, last_user_text))];
        let tokens_after = self
            .estimator
            .estimate(&self.system_prompt, &replacement, &tools)
            .total as u64;
        let compaction = Compaction {
            trigger: CompactionTrigger::Auto,
            replacement,
            summary,
            tokens_before,
            tokens_after,
            usage: Some(usage),
        };
        let rewrite = HistoryRewrite::Compaction(compaction);
        if let Err(error) = sink.persist(&rewrite) {
            tracing::warn!(%error, "automatic compaction not persisted; history unchanged");
            self.memory.record_unapplied_attempt();
            sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Failed {
                reason: error.to_string(),
            }));
            return Ok(());
        }
        let HistoryRewrite::Compaction(compaction) = rewrite else {
            return Ok(());
        };
        self.install(compaction.replacement.clone());
        let freed = tokens_before.saturating_sub(tokens_after);
        let useless = self
            .memory
            .record_attempt(freed, tokens_after, &self.budget);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Applied {
            replacement: compaction.replacement,
            summary: compaction.summary,
            usage: compaction.usage,
            tokens_before,
            tokens_after,
        }));
        if useless {
            sink.emit(LoopEvent::Notice(format!(
                "automatic compaction freed only {freed} tokens; the next attempt waits until the context has grown by a tenth of its budget"
            )));
        }
        Ok(())
    }

    /// Manual compaction (`/compact [focus]`): the normal system prompt, history and tools
    /// plus the manual prompt, streamed visibly; tool calls are rejected; on success the
    /// history becomes one user message holding the summary, persisted first. On failure
    /// or cancellation the history is unchanged.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        if self.history.is_empty() {
            return Err(LoopError::Compaction(
                "there is no conversation to compact yet".to_owned(),
            ));
        }
        let tokens_before = self.estimate().total as u64;
        let tools = self.tools.definitions();
        let mut messages = self.history_for_summary();
        messages.push(Message::user(manual_prompt(focus)));
        let messages = self.fit_if_needed(messages, &tools);
        let request = self.request(Arc::new(messages), tools.clone());
        let outcome = self
            .summary_request(request, Visibility::Visible(&mut *sink), cancel)
            .await;
        let usage = outcome.usage();
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                sink.emit(LoopEvent::Notice(
                    "the model kept calling tools instead of summarising; compacted without its summary"
                        .to_owned(),
                ));
                self.fallback_summary()
            }
            SummaryOutcome::Cancelled { .. } => return Err(LoopError::Cancelled),
            SummaryOutcome::Failed { reason, .. } => return Err(LoopError::Compaction(reason)),
        };
        let replacement = build_manual_replacement(&summary);
        let tokens_after = self
            .estimator
            .estimate(&self.system_prompt, &replacement, &tools)
            .total as u64;
        sink.persist(&HistoryRewrite::Compaction(Compaction {
            trigger: CompactionTrigger::Manual,
            replacement: replacement.clone(),
            summary: summary.clone(),
            tokens_before,
            tokens_after,
            usage: Some(usage),
        }))?;
        self.install(replacement.clone());
        self.memory = Default::default();
        Ok(ManualCompaction {
            summary,
            replacement,
            usage,
            tokens_before,
            tokens_after,
        })
    }

    /// pith's own summary of the current history, for when the model could not write one.
    fn fallback_summary(&self) -> String {
        let max = FALLBACK_SUMMARY_MAX_TOKENS.min(self.budget.input_budget / 10);
        fallback_summary(
            &self.history,
            self.estimator.counter().as_ref(),
            usize::try_from(max).unwrap_or(usize::MAX),
        )
    }

    /// Sends a summary request, answering attempted tool calls with the denial and
    /// repeating, at most `compaction_tool_rounds` times.
    async fn summary_request(
        &self,
        mut request: ModelRequest,
        mut visibility: Visibility<'_>,
        cancel: &CancellationToken,
    ) -> SummaryOutcome {
        let mut usage = Usage::default();
        let denying = self.tools.denying();
        let mut rounds = 0;
        loop {
            let sent_visibility = match &mut visibility {
                Visibility::Visible(sink) => Visibility::Visible(&mut **sink),
                Visibility::Private => Visibility::Private,
            };
            let response = match send_with_retries(
                self.adapter.as_ref(),
                &request,
                &self.options.retry,
                &self.options.timeouts,
                self.guard(),
                sent_visibility,
                cancel,
            )
            .await
            {
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
            if let Some(truncation) = &response.truncated {
                return SummaryOutcome::Failed {
                    reason: format!("the summary was cut off: {truncation}"),
                    usage,
                };
            }
            if response.tool_calls.is_empty() {
                return match validate_summary(&response.text) {
                    Ok(summary) => SummaryOutcome::Summary {
                        summary: summary.to_owned(),
                        usage,
                    },
                    Err(error) => SummaryOutcome::Failed {
                        reason: error.to_string(),
                        usage,
                    },
                };
            }
            if rounds >= self.options.compaction_tool_rounds {
                return SummaryOutcome::ToolRoundsExhausted { usage };
            }
            rounds += 1;
            let results = match &mut visibility {
                Visibility::Visible(sink) => {
                    execute_calls(&denying, &response.tool_calls, &mut **sink, cancel).await
                }
                Visibility::Private => {
                    execute_calls(&denying, &response.tool_calls, &mut Discard, cancel).await
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
}
