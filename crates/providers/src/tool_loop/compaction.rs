//! Summary compactions: the private automatic one inside a turn (docs/context-pipeline.md,
//! "Policy") and the visible manual `/compact`. Both, and the automatic one prepared ahead
//! (`prepared`), go through the one pipeline of `compaction_pipeline` (gate, ask, settle,
//! verify and apply); this module holds what each does around it.
//!
//! The summary request reuses the loop's adapter, system prompt, history and tool
//! definitions (so the provider's prompt cache can reuse the whole prefix) and appends the
//! compaction prompt as the last user message; the request is fitted like any other when
//! it would not fit. Tool calls the model attempts are answered by the denying registry
//! with the tool-error text and the request is repeated, at most `compaction_tool_rounds`
//! times; the summary is the text of the last response. A model that keeps calling tools
//! past those rounds gets no further say: pith compacts with its own deterministic summary
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
//! cuts a longer one to the allowance. An automatic replacement that is not smaller than
//! what it replaces is not applied (a manual one is: the user asked). Every way an
//! automatic attempt can end tells the governor.
//!
//! Transactional: the replacement is handed to the [`TurnSink`] to persist, and installed
//! only when that succeeded. On cancellation, failure or a failed write, the history is
//! unchanged.

use std::time::Instant;

use pith_core::context::PauseReason;
use pith_core::events::compaction_token;
use pith_core::hooks::CompactGate;
use pith_core::{AutoCompaction, Compaction, CompactionFigures, LoopEvent, Message, TurnSink};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::compaction_pipeline::{
    NotApplied, Settled, Summarized, SummaryAnswer, SummaryRequest, AUTOMATIC, MANUAL,
};
use crate::tool_loop::decision::{AutoCompactStart, CompactionPlan};
use crate::tool_loop::options::{LoopError, ManualCompaction, TurnSummary};
use crate::tool_loop::request::Visibility;

impl AgentLoop {
    /// The automatic compaction of `start.plan`, run privately inside a turn and awaited:
    /// with the summary prepared ahead when one still applies (`prepared`), else in place.
    /// `Err` only when the turn itself was cancelled; every other outcome lets the turn go
    /// on.
    pub(super) async fn auto_compact(
        &mut self,
        start: AutoCompactStart<'_>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
        turn: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        if let Some(done) = self.prepared_summary(&start, sink, cancel).await {
            return self.finish_auto(done, start, sink, cancel, turn).await;
        }
        let gate = self
            .pre_compact_gate(AUTOMATIC, start.tokens_before, None, sink, cancel)
            .await;
        let instructions = match gate {
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
        let SummaryRequest {
            request,
            counted,
            estimate,
            allowance,
        } = self.summary_request(
            AUTOMATIC,
            None,
            start.plan.ledger.as_ref(),
            instructions,
            &tools,
        );
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
            answer: SummaryAnswer {
                outcome,
                reports,
                counted,
            },
            allowance,
            started,
            waiting: started,
            tail: Vec::new(),
            model: summarizer.compaction_model(),
        };
        self.finish_auto(done, start, sink, cancel, turn).await
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
        let CompactionPlan {
            ledger, restored, ..
        } = plan;
        let on_compaction_model = done.model.is_some();
        let (settled, usage) = self.settle_summary(
            AUTOMATIC,
            done.answer,
            on_compaction_model,
            ledger.is_some(),
            sink,
        );
        turn.usage += usage;
        let summary = match settled {
            Settled::Summary(summary) => summary,
            // Every Started gets its terminal event, also when the whole turn was
            // cancelled (the child token is cancelled with it): front-ends drop the
            // child's cancel handle and their "Compacting…" state on it.
            Settled::Cancelled => return self.auto_cancelled(sink, cancel),
            Settled::Failed(_) if cancel.is_cancelled() => {
                return self.auto_cancelled(sink, cancel)
            }
            Settled::Failed(reason) => {
                self.fail_compaction(reason, progress, sink);
                return Ok(());
            }
        };
        let summarized = Summarized {
            rules: AUTOMATIC,
            summary,
            allowance: done.allowance,
            ledger,
            restored,
            last_user: Some(last_user_text),
            tail: done.tail,
            tokens_before,
            usage,
            model: done.model,
        };
        match self.apply_summary(summarized, sink, cancel).await {
            Ok(compaction) => self.auto_applied(compaction, done.started, done.waiting, sink),
            Err(not_applied) => {
                if let NotApplied::NotPersisted(error) = &not_applied {
                    tracing::warn!(%error, "automatic compaction not persisted; history unchanged");
                }
                self.fail_compaction(not_applied.to_string(), progress, sink);
            }
        }
        Ok(())
    }

    /// An automatic compaction that was cancelled: the governor and the front-end learn
    /// it; `Err` when the whole turn was.
    fn auto_cancelled(
        &mut self,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<(), LoopError> {
        self.context.compaction_skipped();
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
        if cancel.is_cancelled() {
            Err(LoopError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// An automatic compaction's applied `compaction`: the governor learns what it
    /// freed, the front-end gets `Applied` (how long it took, and how long the turn
    /// waited for it) and any pause the governor decided.
    fn auto_applied(
        &mut self,
        compaction: Compaction,
        started: Instant,
        waiting: Instant,
        sink: &mut dyn TurnSink,
    ) {
        let (tokens_before, tokens_after) = (compaction.tokens_before, compaction.tokens_after);
        let freed = tokens_before.saturating_sub(tokens_after);
        let paused = self.context.compaction_applied(freed, tokens_after);
        let millis =
            |since: Instant| u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Applied {
            replacement: compaction.replacement,
            summary: compaction.summary,
            usage: compaction.usage,
            figures: CompactionFigures {
                tokens_before,
                tokens_after,
                ledger_tokens: compaction.carried.ledger_tokens,
                duration_ms: millis(started),
                waited_ms: millis(waiting),
            },
        }));
        self.tell(paused.into_iter().collect(), sink);
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
        let gate = self
            .pre_compact_gate(MANUAL, tokens_before, focus, sink, cancel)
            .await;
        if cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        let instructions = match gate {
            CompactGate::Proceed { instructions } => instructions,
            CompactGate::Block { .. } => None,
        };
        let tools = self.tools.definitions();
        let plan = self.default_plan();
        let ledger = self.render_ledger_for(&plan, false);
        let ask = self.summary_request(MANUAL, focus, ledger.as_ref(), instructions, &tools);
        let mut reports = Vec::new();
        let summarizer = self.summarizer_for(ask.estimate, sink);
        let model = summarizer.compaction_model();
        let outcome = summarizer
            .request(
                ask.request,
                Visibility::Visible(&mut *sink),
                cancel,
                &mut reports,
                ask.allowance,
            )
            .await;
        let answer = SummaryAnswer {
            outcome,
            reports,
            counted: ask.counted,
        };
        let (settled, usage) =
            self.settle_summary(MANUAL, answer, model.is_some(), ledger.is_some(), sink);
        let summary = match settled {
            Settled::Summary(summary) => summary,
            Settled::Cancelled => return Err(LoopError::Cancelled),
            Settled::Failed(reason) => return Err(LoopError::Compaction(reason)),
        };
        let summarized = Summarized {
            rules: MANUAL,
            summary,
            allowance: ask.allowance,
            ledger,
            restored: self.restore_files_for(&plan),
            last_user: None,
            tail: Vec::new(),
            tokens_before,
            usage,
            model,
        };
        let compaction =
            self.apply_summary(summarized, sink, cancel)
                .await
                .map_err(|not_applied| match not_applied {
                    NotApplied::NotPersisted(error) => LoopError::Persist(error),
                    other => LoopError::Compaction(other.to_string()),
                })?;
        self.context.governor_reset();
        Ok(ManualCompaction {
            ledger_tokens: compaction.carried.ledger_tokens,
            restored_files: compaction.carried.restored_files,
            summary: compaction.summary,
            replacement: compaction.replacement,
            usage,
            model: compaction.model,
            tokens_before,
            tokens_after: compaction.tokens_after,
        })
    }
}

/// A summary request that ended, with what applying it as an automatic compaction needs.
pub(super) struct SummaryDone {
    /// How it ended, and its requests.
    pub answer: SummaryAnswer,
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
