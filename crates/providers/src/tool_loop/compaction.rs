//! Summary compactions: the private automatic one inside a turn (docs/context-pipeline.md,
//! "Policy") and the visible manual `/compact`.
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
//! Bounded: the automatic compaction runs only with a plan whose floor can help (see
//! `decision`), and the summary is held to its allowance
//! ([`pith_core::context::floor::summary_allowance`]): pith stops reading a summary at four
//! times the allowance, keeps one that was cut off (the ledger carries the facts), and
//! cuts a longer one to the allowance. A replacement that is not smaller than what it
//! replaces is not applied. Every way an attempt can end tells the governor.
//!
//! Transactional: the replacement is handed to the [`TurnSink`] to persist, and installed
//! only when that succeeded. On cancellation, failure or a failed write, the history is
//! unchanged.

use std::sync::Arc;
use std::time::Instant;

use pith_core::context::floor::summary_allowance;
use pith_core::context::ledger::RenderedLedger;
use pith_core::context::PauseReason;
use pith_core::events::compaction_token;
use pith_core::hooks::{context_block, CompactGate, CompactionFacts};
use pith_core::prompts::FALLBACK_SUMMARY_WITH_LEDGER;
use pith_core::summary::{
    auto_prompt_with, fallback_summary, head_tokens, manual_prompt_with, replacement_text,
    with_hook_instructions, ReplacementParts, RestoredFile,
};
use pith_core::{
    AutoCompaction, Carried, Compaction, CompactionTrigger, EventSink, HistoryRewrite, HookEvent,
    LoopEvent, Message, Part, RequestReport, ToolDefinition, TurnSink, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::decision::{AutoCompactStart, CompactionPlan};
use crate::tool_loop::options::{LoopError, ManualCompaction, TurnSummary};
use crate::tool_loop::report::emit_hooks;
use crate::tool_loop::request::Visibility;
use crate::tool_loop::summary_outcome::SummaryOutcome;

/// Most tokens of pith's own summary when the model could not write one: the smaller of
/// 8,000 and a tenth of the input budget.
const FALLBACK_SUMMARY_MAX_TOKENS: u64 = 8_000;

impl AgentLoop {
    /// The automatic compaction of `start.plan`, run privately inside a turn and awaited
    /// (see `prepared` for one prepared ahead). `Err` only when the turn itself was
    /// cancelled; every other outcome lets the turn go on.
    pub(super) async fn auto_compact(
        &mut self,
        start: AutoCompactStart<'_>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
        turn: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        let instructions = match self
            .ask_pre_compact(start.tokens_before, sink, cancel)
            .await
        {
            CompactGate::Proceed { instructions } => instructions,
            CompactGate::Block { reason } => {
                self.context.compaction_skipped();
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
        self.context.compaction_started(start.progress);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: child.clone(),
            tokens_before: start.tokens_before,
            background: false,
        }));
        let tools = self.tools.definitions();
        tracing::debug!(plan = ?start.plan.plan, floor = %start.plan.floor.describe(), "automatic compaction");
        let AutoSummaryRequest {
            request,
            counted,
            estimate,
            allowance,
        } = self.auto_summary_request(start.plan.ledger.as_ref(), instructions, &tools);
        let mut reports = Vec::new();
        let summarizer = self.summarizer_for(estimate, sink);
        let outcome = summarizer
            .request(
                request,
                Visibility::Private,
                &child,
                &mut reports,
                allowance,
            )
            .await;
        let done = SummaryDone {
            outcome,
            reports,
            counted,
            allowance,
            started,
            waiting: started,
            tail: Vec::new(),
            model: summarizer.compaction_model(),
        };
        self.finish_auto(done, start, sink, cancel, turn).await
    }

    /// Asks the `PreCompact` hooks about an automatic compaction at `tokens` (what they
    /// ran is reported): proceed, with instructions for the summary, or block.
    pub(super) async fn ask_pre_compact(
        &self,
        tokens: u64,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> CompactGate {
        let hooks = Arc::clone(&self.hooks);
        let gate = hooks
            .pre_compact(CompactionTrigger::Auto, tokens, None, cancel)
            .await;
        emit_hooks(gate.runs, sink);
        gate.value
    }

    /// The automatic compaction's summary request over the history as it is now: the
    /// history, then the automatic prompt with `ledger`'s request text and the hooks'
    /// `instructions`, fitted when it would not fit.
    pub(super) fn auto_summary_request(
        &mut self,
        ledger: Option<&RenderedLedger>,
        instructions: Option<String>,
        tools: &[ToolDefinition],
    ) -> AutoSummaryRequest {
        let mut messages = self.history_for_summary();
        messages.push(Message::user(with_hook_instructions(
            auto_prompt_with(ledger.map(|l| l.summary_request_text.as_str())),
            instructions.as_deref(),
        )));
        let messages = self.fit_if_needed(messages, tools);
        let (estimate, counted) =
            self.context
                .estimate_other(&self.system_prompt, &messages, tools);
        AutoSummaryRequest {
            request: self.request(Arc::new(messages), tools.to_vec()),
            counted,
            estimate,
            allowance: summary_allowance(self.context.budget.working_budget(), ledger.is_some()),
        }
    }

    /// Applies the summary of an automatic compaction (in place or prepared ahead), with
    /// `done.tail` kept verbatim after the replacement; every way it can end tells the
    /// governor. `Err` only when the turn itself was cancelled.
    pub(super) async fn finish_auto(
        &mut self,
        done: SummaryDone,
        start: AutoCompactStart<'_>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
        turn: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        let AutoCompactStart {
            plan,
            tokens_before,
            progress,
            last_user_text,
        } = start;
        let SummaryDone {
            outcome,
            reports,
            counted,
            allowance,
            started,
            waiting,
            tail,
            model,
        } = done;
        let CompactionPlan {
            ledger, restored, ..
        } = plan;
        let usage = outcome.usage();
        self.account_summary(reports, counted, usage, model.is_some(), sink);
        turn.usage += usage;
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                self.summary_of_exhausted_rounds(ledger.is_some(), sink)
            }
            SummaryOutcome::Cancelled { .. } => {
                self.context.compaction_skipped();
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
                if cancel.is_cancelled() {
                    self.context.compaction_skipped();
                    sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
                    return Err(LoopError::Cancelled);
                }
                self.fail_compaction(reason, progress, sink);
                return Ok(());
            }
        };

        let tools = self.tools.definitions();
        let summary = self.within_allowance(summary, allowance);
        let last_user =
            (!Self::tail_holds_user_message(&tail, last_user_text)).then_some(last_user_text);
        let (mut replacement, carried) = self.replacement(&summary, ledger, restored, last_user);
        replacement.extend(tail);
        let (replacement, tokens_after) = self
            .after_summary(
                AfterSummary {
                    trigger: CompactionTrigger::Auto,
                    summary: &summary,
                    tokens_before,
                    tools: &tools,
                },
                replacement,
                sink,
                cancel,
            )
            .await;
        if tokens_after >= tokens_before {
            self.fail_compaction(
                format!(
                    "the replacement ({} tokens) is not smaller than the history it would replace ({} tokens); not applied",
                    pith_core::format::thousands(tokens_after),
                    pith_core::format::thousands(tokens_before)
                ),
                progress,
                sink,
            );
            return Ok(());
        }
        let compaction = Compaction {
            trigger: CompactionTrigger::Auto,
            replacement,
            summary,
            tokens_before,
            tokens_after,
            usage: Some(usage),
            model,
            carried,
        };
        let rewrite = HistoryRewrite::Compaction(compaction);
        if let Err(error) = sink.persist(&rewrite) {
            tracing::warn!(%error, "automatic compaction not persisted; history unchanged");
            self.fail_compaction(error.to_string(), progress, sink);
            return Ok(());
        }
        let HistoryRewrite::Compaction(compaction) = rewrite else {
            return Ok(());
        };
        self.auto_applied(compaction, started, waiting, sink);
        Ok(())
    }

    /// An automatic compaction's persisted `compaction` installed: the governor learns
    /// what it freed, the front-end gets `Applied` (how long it took, and how long the
    /// turn waited for it) and any pause the governor decided.
    fn auto_applied(
        &mut self,
        compaction: Compaction,
        started: Instant,
        waiting: Instant,
        sink: &mut dyn TurnSink,
    ) {
        let (tokens_before, tokens_after) = (compaction.tokens_before, compaction.tokens_after);
        self.install_compaction(&compaction.replacement, &compaction.carried, sink);
        let freed = tokens_before.saturating_sub(tokens_after);
        let paused = self.context.compaction_applied(freed, tokens_after);
        let millis =
            |since: Instant| u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Applied {
            replacement: compaction.replacement,
            summary: compaction.summary,
            usage: compaction.usage,
            tokens_before,
            tokens_after,
            ledger_tokens: compaction.carried.ledger_tokens,
            duration_ms: millis(started),
            waited_ms: millis(waiting),
        }));
        self.tell(paused.into_iter().collect(), sink);
    }

    /// A summary's requests accounted for: reported, the last one's usage calibrating
    /// this server's counts (another model's says nothing of them), and `usage` added to
    /// the compaction model's account when it went there.
    fn account_summary(
        &mut self,
        reports: Vec<RequestReport>,
        counted: u64,
        usage: Usage,
        on_compaction_model: bool,
        sink: &mut dyn TurnSink,
    ) {
        self.context.last_request_at = Some(Instant::now());
        if let Some(reported) = reports
            .last()
            .filter(|r| r.usage_reported && r.compaction_model.is_none())
        {
            self.context.observe_summary_usage(reported.usage, counted);
        }
        self.emit_requests(reports, sink);
        if on_compaction_model {
            self.compaction_model_spent += usage;
        }
    }

    /// The summary when the model kept calling tools instead of writing one: the
    /// fallback, with a notice.
    fn summary_of_exhausted_rounds(&self, has_ledger: bool, sink: &mut dyn TurnSink) -> String {
        sink.emit(LoopEvent::Notice(
            "the model kept calling tools instead of summarising; compacted without its summary"
                .to_owned(),
        ));
        self.fallback_summary(has_ledger)
    }

    /// A persisted compaction's replacement installed as the history; the files it
    /// restored count as seen and its pins as carried.
    fn install_compaction(
        &mut self,
        replacement: &[Message],
        carried: &Carried,
        sink: &mut dyn TurnSink,
    ) {
        self.context.install(replacement.to_vec());
        self.mark_restored_seen(&carried.restored_files);
        self.pins_carried(carried, sink);
    }

    /// An automatic compaction that did not apply: the front-end learns why, and the
    /// breaker arms at `progress` (see [`pith_core::context::Facts::progress`]).
    fn fail_compaction(&mut self, reason: String, progress: u64, sink: &mut dyn TurnSink) {
        let notice = self.context.compaction_paused(
            PauseReason::Failed {
                detail: reason.clone(),
            },
            progress,
        );
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }));
        sink.emit(LoopEvent::Governor(notice));
    }

    /// `summary` cut to its allowance (its head, and a note of what was left out).
    fn within_allowance(&self, summary: String, allowance: u64) -> String {
        let counter = self.counter();
        let max = usize::try_from(allowance).unwrap_or(usize::MAX);
        match head_tokens(counter.as_ref(), &summary, max) {
            Some(head) => format!(
                "{head}\n[pith: the summary was cut here, at its allowance of {} tokens]",
                pith_core::format::thousands(allowance)
            ),
            None => summary,
        }
    }

    /// The PreCompact hooks before a manual compaction: their instructions for the
    /// summary. The user asked for this one: a hook's block is shown, not obeyed.
    async fn manual_gate(
        &mut self,
        tokens_before: u64,
        focus: Option<&str>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Option<String> {
        let hooks = Arc::clone(&self.hooks);
        let gate = hooks
            .pre_compact(CompactionTrigger::Manual, tokens_before, focus, cancel)
            .await;
        emit_hooks(gate.runs, sink);
        match gate.value {
            CompactGate::Proceed { instructions } => instructions,
            // The user asked for this one: a hook's block is shown, not obeyed.
            CompactGate::Block { reason } => {
                sink.emit(LoopEvent::Notice(format!(
                    "a PreCompact hook asked not to compact ({reason}); compacting as you asked"
                )));
                None
            }
        }
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
        if self.context.history.is_empty() {
            return Err(LoopError::Compaction(
                "there is no conversation to compact yet".to_owned(),
            ));
        }
        self.abandon_prepared(
            "a manual compaction replaces the history it was prepared for",
            sink,
        )
        .await;
        let tokens_before = self.estimate().total as u64;
        let instructions = self.manual_gate(tokens_before, focus, sink, cancel).await;
        if cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        let tools = self.tools.definitions();
        let plan = self.default_plan();
        let ledger = self.render_ledger_for(&plan, false);
        let allowance = summary_allowance(self.context.budget.working_budget(), ledger.is_some());
        let mut messages = self.history_for_summary();
        messages.push(Message::user(with_hook_instructions(
            manual_prompt_with(
                focus,
                ledger.as_ref().map(|l| l.summary_request_text.as_str()),
            ),
            instructions.as_deref(),
        )));
        let messages = self.fit_if_needed(messages, &tools);
        let (estimate, _) = self
            .context
            .estimate_other(&self.system_prompt, &messages, &tools);
        let request = self.request(Arc::new(messages), tools.clone());
        let mut reports = Vec::new();
        let summarizer = self.summarizer_for(estimate, sink);
        let model = summarizer.compaction_model();
        let outcome = summarizer
            .request(
                request,
                Visibility::Visible(&mut *sink),
                cancel,
                &mut reports,
                allowance,
            )
            .await;
        self.context.last_request_at = Some(Instant::now());
        self.emit_requests(reports, sink);
        let usage = outcome.usage();
        let summary = match outcome {
            SummaryOutcome::Summary { summary, .. } => summary,
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                self.summary_of_exhausted_rounds(ledger.is_some(), sink)
            }
            SummaryOutcome::Cancelled { .. } => return Err(LoopError::Cancelled),
            SummaryOutcome::Failed { reason, .. } => return Err(LoopError::Compaction(reason)),
        };
        let summary = self.within_allowance(summary, allowance);
        let restored = self.restore_files_for(&plan);
        let (replacement, carried) = self.replacement(&summary, ledger, restored, None);
        let (replacement, tokens_after) = self
            .after_summary(
                AfterSummary {
                    trigger: CompactionTrigger::Manual,
                    summary: &summary,
                    tokens_before,
                    tools: &tools,
                },
                replacement,
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
            model: model.clone(),
            carried: carried.clone(),
        }))?;
        self.install_compaction(&replacement, &carried, sink);
        self.context.governor_reset();
        Ok(ManualCompaction {
            summary,
            replacement,
            usage,
            model,
            tokens_before,
            tokens_after,
            ledger_tokens: carried.ledger_tokens,
            restored_files: carried.restored_files,
        })
    }

    /// The replacement history of a compaction: one user message with the summary, the
    /// ledger, the pins (read afresh), the re-attached files and (automatic compaction)
    /// the latest user message.
    fn replacement(
        &self,
        summary: &str,
        ledger: Option<RenderedLedger>,
        restored: Vec<RestoredFile>,
        last_user_message: Option<&str>,
    ) -> (Vec<Message>, Carried) {
        let pins = self.render_pins();
        let text = replacement_text(ReplacementParts {
            summary,
            ledger: ledger.as_ref().map(|l| l.text.as_str()),
            pins: &pins.text,
            restored_files: &restored,
            last_user_message,
        });
        let carried = Carried {
            ledger_tokens: ledger.as_ref().map_or(0, |l| l.tokens as u64),
            ledger: ledger.map(|l| l.text),
            restored_files: restored.into_iter().map(|f| f.path).collect(),
            pins_tokens: pins.tokens as u64,
            pins_left_out: pins.left_out.iter().map(|l| l.describe()).collect(),
        };
        (vec![Message::user(text)], carried)
    }

    /// The replacement with what the `PostCompact` (and `SessionStart` `compact`) hooks
    /// add appended as its last part, and its estimated size (in the server's terms).
    async fn after_summary(
        &mut self,
        facts: AfterSummary<'_>,
        mut replacement: Vec<Message>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> (Vec<Message>, u64) {
        let AfterSummary {
            trigger,
            summary,
            tokens_before,
            tools,
        } = facts;
        let estimate = |agent: &Self, messages: &[Message]| {
            agent
                .context
                .estimate_other(&agent.system_prompt, messages, tools)
                .0
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
        // The replacement's own message (the first): a verbatim tail follows it.
        let (Some(context), Some(first)) = (hooked.value, replacement.first_mut()) else {
            return (replacement, tokens_after);
        };
        first.parts.push(Part::Text {
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
        let max = FALLBACK_SUMMARY_MAX_TOKENS.min(self.context.budget.working_budget() / 10);
        fallback_summary(
            &self.context.history,
            self.counter().as_ref(),
            usize::try_from(max).unwrap_or(usize::MAX),
        )
    }
}

/// An automatic compaction's summary request, ready to send.
pub(super) struct AutoSummaryRequest {
    /// The request.
    pub request: crate::wire::adapter::ModelRequest,
    /// pith's count of it, weighed against its reported usage.
    pub counted: u64,
    /// Its estimate in the server's terms (the count, calibrated).
    pub estimate: u64,
    /// Most tokens of the summary.
    pub allowance: u64,
}

/// A summary request that ended, with what applying it needs.
pub(super) struct SummaryDone {
    /// How it ended.
    pub outcome: SummaryOutcome,
    /// The requests it sent, not yet reported.
    pub reports: Vec<RequestReport>,
    /// pith's count of the request, weighed against its reported usage.
    pub counted: u64,
    /// Most tokens of the summary.
    pub allowance: u64,
    /// When the compaction started (its request was sent).
    pub started: Instant,
    /// When the turn started waiting for it (`started` for a compaction in place).
    pub waiting: Instant,
    /// The messages after the summary's mark, kept verbatim after the replacement (empty
    /// for a compaction in place: the summary covers the whole history).
    pub tail: Vec<Message>,
    /// The compaction model its requests went to (`provider/model`), if not the loop's.
    pub model: Option<String>,
}

/// What [`AgentLoop::after_summary`] needs to know about the compaction.
struct AfterSummary<'a> {
    trigger: CompactionTrigger,
    summary: &'a str,
    tokens_before: u64,
    tools: &'a [pith_core::ToolDefinition],
}
