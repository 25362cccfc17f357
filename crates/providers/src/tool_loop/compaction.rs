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
//! Hooks: `PreCompact` runs first and may add instructions to the summary request or, for
//! an automatic compaction, block it (the turn goes on; the overflow fallback still fits
//! a request that would not fit). `PostCompact` (and `SessionStart` of source `compact`)
//! run once the summary exists and before the replacement is persisted, so what they
//! print is part of the recorded replacement.
//!
//! Transactional: the replacement is handed to the [`TurnSink`] to persist, and installed
//! only when that succeeded. On cancellation, failure or a failed write, the history is
//! unchanged.

use std::sync::Arc;
use std::time::Instant;

use pith_core::context::ledger::RenderedLedger;
use pith_core::events::compaction_token;
use pith_core::hooks::{context_block, CompactGate, CompactionFacts};
use pith_core::prompts::FALLBACK_SUMMARY_WITH_LEDGER;
use pith_core::summary::{
    auto_prompt_with, fallback_summary, manual_prompt_with, replacement_text, validate_summary,
    with_hook_instructions, ReplacementParts,
};
use pith_core::{
    AutoCompaction, Carried, Compaction, CompactionTrigger, Discard, EventSink, HistoryRewrite,
    HookEvent, LoopEvent, Message, NoHooks, Part, RequestPurpose, RequestReport, Role, TurnSink,
    Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::execute::execute_calls;
use crate::tool_loop::options::{LoopError, ManualCompaction, TurnSummary};
use crate::tool_loop::report::{emit_hooks, request_report};
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
        let hooks = Arc::clone(&self.hooks);
        let gate = hooks
            .pre_compact(CompactionTrigger::Auto, tokens_before, None, cancel)
            .await;
        emit_hooks(gate.runs, sink);
        let instructions = match gate.value {
            CompactGate::Proceed { instructions } => instructions,
            CompactGate::Block { reason } => {
                self.memory.record_unapplied_attempt();
                if cancel.is_cancelled() {
                    return Err(LoopError::Cancelled);
                }
                sink.emit(LoopEvent::Notice(format!(
                    "automatic compaction skipped: {reason}"
                )));
                return Ok(());
            }
        };
        let started = Instant::now();
        let child = compaction_token(cancel);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: child.clone(),
            tokens_before,
        }));
        let tools = self.tools.definitions();
        let ledger = self.render_ledger(true);
        let mut messages = self.history_for_summary();
        messages.push(Message::user(with_hook_instructions(
            auto_prompt_with(ledger.as_ref().map(|l| l.summary_request_text.as_str())),
            instructions.as_deref(),
        )));
        let messages = self.fit_if_needed(messages, &tools);
        let request = self.request(Arc::new(messages), tools.clone());
        let mut reports = Vec::new();
        let outcome = self
            .summary_request(request, Visibility::Private, &child, &mut reports)
            .await;
        self.emit_requests(reports, sink);
        let usage = outcome.usage();
        turn.usage += usage;
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                sink.emit(LoopEvent::Notice(
                    "the model kept calling tools instead of summarising; compacted without its summary"
                        .to_owned(),
                ));
                self.fallback_summary(ledger.is_some())
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

        let (replacement, carried) = self.replacement(&summary, ledger, Some(last_user_text));
        let (replacement, tokens_after) = self
            .after_summary(
                CompactionTrigger::Auto,
                replacement,
                &summary,
                tokens_before,
                &tools,
                sink,
                cancel,
            )
            .await;
        let compaction = Compaction {
            trigger: CompactionTrigger::Auto,
            replacement,
            summary,
            tokens_before,
            tokens_after,
            usage: Some(usage),
            carried,
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
        self.mark_restored_seen(&compaction.carried.restored_files);
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
            ledger_tokens: compaction.carried.ledger_tokens,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
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
        let hooks = Arc::clone(&self.hooks);
        let gate = hooks
            .pre_compact(CompactionTrigger::Manual, tokens_before, focus, cancel)
            .await;
        emit_hooks(gate.runs, sink);
        let instructions = match gate.value {
            CompactGate::Proceed { instructions } => instructions,
            // The user asked for this one: a hook's block is shown, not obeyed.
            CompactGate::Block { reason } => {
                sink.emit(LoopEvent::Notice(format!(
                    "a PreCompact hook asked not to compact ({reason}); compacting as you asked"
                )));
                None
            }
        };
        if cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        let tools = self.tools.definitions();
        let ledger = self.render_ledger(false);
        let mut messages = self.history_for_summary();
        messages.push(Message::user(with_hook_instructions(
            manual_prompt_with(
                focus,
                ledger.as_ref().map(|l| l.summary_request_text.as_str()),
            ),
            instructions.as_deref(),
        )));
        let messages = self.fit_if_needed(messages, &tools);
        let request = self.request(Arc::new(messages), tools.clone());
        let mut reports = Vec::new();
        let outcome = self
            .summary_request(
                request,
                Visibility::Visible(&mut *sink),
                cancel,
                &mut reports,
            )
            .await;
        self.emit_requests(reports, sink);
        let usage = outcome.usage();
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                sink.emit(LoopEvent::Notice(
                    "the model kept calling tools instead of summarising; compacted without its summary"
                        .to_owned(),
                ));
                self.fallback_summary(ledger.is_some())
            }
            SummaryOutcome::Cancelled { .. } => return Err(LoopError::Cancelled),
            SummaryOutcome::Failed { reason, .. } => return Err(LoopError::Compaction(reason)),
        };
        let (replacement, carried) = self.replacement(&summary, ledger, None);
        let (replacement, tokens_after) = self
            .after_summary(
                CompactionTrigger::Manual,
                replacement,
                &summary,
                tokens_before,
                &tools,
                sink,
                cancel,
            )
            .await;
        sink.persist(&HistoryRewrite::Compaction(Compaction {
            trigger: CompactionTrigger::Manual,
            replacement: replacement.clone(),
            summary: summary.clone(),
            tokens_before,
            tokens_after,
            usage: Some(usage),
            carried: carried.clone(),
        }))?;
        self.install(replacement.clone());
        self.mark_restored_seen(&carried.restored_files);
        self.memory = Default::default();
        Ok(ManualCompaction {
            summary,
            replacement,
            usage,
            tokens_before,
            tokens_after,
            ledger_tokens: carried.ledger_tokens,
            restored_files: carried.restored_files,
        })
    }

    /// The replacement history of a compaction: one user message with the summary, the
    /// ledger, the re-attached files and (automatic compaction) the latest user message.
    fn replacement(
        &self,
        summary: &str,
        ledger: Option<RenderedLedger>,
        last_user_message: Option<&str>,
    ) -> (Vec<Message>, Carried) {
        let restored = self.restore_files();
        let text = replacement_text(ReplacementParts {
            summary,
            ledger: ledger.as_ref().map(|l| l.text.as_str()),
            restored_files: &restored,
            last_user_message,
        });
        let carried = Carried {
            ledger_tokens: ledger.as_ref().map_or(0, |l| l.tokens as u64),
            ledger: ledger.map(|l| l.text),
            restored_files: restored.into_iter().map(|f| f.path).collect(),
        };
        (vec![Message::user(text)], carried)
    }

    /// The replacement with what the `PostCompact` (and `SessionStart` `compact`) hooks
    /// add appended as its last part, and its estimated size.
    #[allow(clippy::too_many_arguments)]
    async fn after_summary(
        &mut self,
        trigger: CompactionTrigger,
        mut replacement: Vec<Message>,
        summary: &str,
        tokens_before: u64,
        tools: &[pith_core::ToolDefinition],
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> (Vec<Message>, u64) {
        let estimate = |agent: &mut Self, messages: &[Message]| {
            agent
                .estimator
                .estimate(&agent.system_prompt, messages, tools)
                .total as u64
        };
        let tokens_after = estimate(self, &replacement);
        let hooks = Arc::clone(&self.hooks);
        let hooked = hooks
            .post_compact(
                CompactionFacts {
                    trigger,
                    tokens_before,
                    tokens_after,
                    summary,
                },
                cancel,
            )
            .await;
        emit_hooks(hooked.runs, sink);
        let (Some(context), Some(last)) = (hooked.value, replacement.last_mut()) else {
            return (replacement, tokens_after);
        };
        last.parts.push(Part::Text {
            text: context_block(HookEvent::PostCompact, &context),
        });
        let tokens_after = estimate(self, &replacement);
        (replacement, tokens_after)
    }

    /// pith's own summary of the current history, for when the model could not write one.
    /// With a ledger (which holds the user's messages) it is a short note.
    fn fallback_summary(&self, with_ledger: bool) -> String {
        if with_ledger {
            return FALLBACK_SUMMARY_WITH_LEDGER.to_owned();
        }
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
        reports: &mut Vec<RequestReport>,
    ) -> SummaryOutcome {
        let mut usage = Usage::default();
        let denying = self.tools.denying();
        let mut rounds = 0;
        loop {
            let sent_visibility = match &mut visibility {
                Visibility::Visible(sink) => Visibility::Visible(&mut **sink),
                Visibility::Private => Visibility::Private,
            };
            let started = Instant::now();
            let sent = send_with_retries(
                self.adapter.as_ref(),
                &request,
                &self.options.retry,
                &self.options.timeouts,
                self.guard(),
                sent_visibility,
                cancel,
            )
            .await;
            reports.push(request_report(
                self,
                RequestPurpose::Compaction,
                started,
                &sent,
            ));
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
                    execute_calls(
                        &denying,
                        &NoHooks,
                        &response.tool_calls,
                        &mut **sink,
                        cancel,
                    )
                    .await
                }
                Visibility::Private => {
                    execute_calls(
                        &denying,
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
}
