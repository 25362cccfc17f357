//! Summaries prepared ahead (docs/context-pipeline.md, "Summaries prepared ahead").
//!
//! When a request's estimate passes the mark (`prepare_summary_percent` of the automatic
//! threshold; [`pith_core::context::prepare_permitted`]), the loop starts the automatic
//! compaction's summary request in a background task, over the history as it is then and
//! with the same prefix as any request (the prompt cache is reused), and sends the turn's
//! request without waiting. When the threshold is reached, the governor decides as always;
//! if it decides to compact, the prepared summary is used: awaited when it is not ready
//! yet (never longer than a compaction started then would take), and applied with every
//! message after its mark kept verbatim after the replacement.
//!
//! Nothing of it is written before it is applied: the task holds only its request, so a
//! crash, a cancel (its child token, as for a compaction in place) or a rewrite of the
//! history leaves the transcript as if it never started. A prepared summary that cannot
//! be used (the history was rewritten under it, the messages after its mark grew too
//! large, the session ended first) is told as [`AutoCompaction::Unused`] with what it
//! cost, and its requests are reported like any.

use std::time::Instant;

use pith_core::context::{prepare_permitted, Facts};
use pith_core::events::compaction_token;
use pith_core::hooks::CompactGate;
use pith_core::tokens::count_message;
use pith_core::{AutoCompaction, EventSink, LoopEvent, ToolDefinition, TurnSink};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::compaction::SummaryDone;
use crate::tool_loop::compaction_pipeline::{SummaryAnswer, SummaryRequest, AUTOMATIC};
use crate::tool_loop::decision::AutoCompactStart;
use crate::tool_loop::prepared_task::PreparedSummary;
use crate::tool_loop::request::Visibility;
use crate::tool_loop::summary_outcome::SummaryOutcome;

impl AgentLoop {
    /// Starts preparing a summary when `facts` call for it (see the module docs); the
    /// `PreCompact` hooks run first and may block it. After a block, or when no plan of
    /// the replacement can help, none is prepared until the next compaction.
    pub(super) async fn maybe_prepare_summary(
        &mut self,
        facts: &Facts,
        last_user_text: &str,
        tools: &[ToolDefinition],
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) {
        if self.prepared.is_some()
            || self.prepare_declined
            || !prepare_permitted(
                facts,
                &self.context.budget,
                self.context.governor(),
                self.options.prepare_summary_percent,
            )
        {
            return;
        }
        // No plan can help now: the threshold's compaction finds out again (and pauses);
        // rendering the plans on every request until then would be wasted work.
        let Ok(plan) = self.plan_compaction(last_user_text, tools) else {
            self.prepare_declined = true;
            return;
        };
        let gate = self
            .pre_compact_gate(AUTOMATIC, facts.estimate, None, sink, cancel)
            .await;
        let instructions = match gate {
            CompactGate::Proceed { instructions } => instructions,
            CompactGate::Block { .. } => {
                self.prepare_declined = true;
                return;
            }
        };
        let SummaryRequest {
            request,
            counted,
            estimate,
            allowance,
        } = self.summary_request(AUTOMATIC, None, plan.ledger.as_ref(), instructions, tools);
        let child = compaction_token(cancel);
        let summarizer = self.summarizer_for(estimate, sink);
        let model = summarizer.compaction_model();
        let token = child.clone();
        let task = tokio::spawn(async move {
            let mut reports = Vec::new();
            let outcome = summarizer
                .request(
                    request,
                    Visibility::Private,
                    &token,
                    &mut reports,
                    allowance,
                )
                .await;
            (outcome, reports)
        });
        tracing::debug!(
            mark = self.context.history.len(),
            estimate = facts.estimate,
            "summary prepared in the background"
        );
        self.prepared = Some(PreparedSummary {
            mark: self.context.history.len(),
            epoch: self.context.epoch,
            counted,
            allowance,
            cancel: child.clone(),
            started: Instant::now(),
            task: Some(task),
            model,
        });
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: child,
            tokens_before: facts.estimate,
            background: true,
        }));
    }

    /// The prepared summary for the automatic compaction of `start`, awaited, when there
    /// is one that still applies (the compaction has then started); `None` when it is to
    /// run in place (a prepared one that no longer applies is ended unused first).
    pub(super) async fn prepared_summary(
        &mut self,
        start: &AutoCompactStart<'_>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Option<SummaryDone> {
        self.prepare_declined = false;
        let mut prepared = self.prepared.take()?;
        if let Some(reason) = self.stale_reason(&prepared, start) {
            self.discard(prepared, &reason, sink).await;
            return None;
        }
        let waiting = Instant::now();
        let (outcome, reports) = prepared.join(cancel).await;
        // A request that failed in the background (a server that dropped it while it
        // answered the turn) is not this compaction's failure: it runs in place.
        if let SummaryOutcome::Failed { reason, usage } = &outcome {
            if !cancel.is_cancelled() {
                self.emit_requests(reports, sink);
                sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Unused {
                    reason: format!("its request failed: {reason}"),
                    usage: *usage,
                    model: prepared.model.clone(),
                }));
                return None;
            }
        }
        self.context.compaction_started(start.progress);
        let tail = self.context.history[prepared.mark..].to_vec();
        Some(SummaryDone {
            answer: SummaryAnswer {
                outcome,
                reports,
                counted: prepared.counted,
            },
            allowance: prepared.allowance,
            started: prepared.started,
            waiting,
            tail,
            model: prepared.model.clone(),
        })
    }

    /// Why `prepared` cannot be used for `start`, if it cannot: the history was rewritten
    /// under it, or what came after its mark, with the smallest replacement, would
    /// already reach the threshold again.
    fn stale_reason(
        &self,
        prepared: &PreparedSummary,
        start: &AutoCompactStart<'_>,
    ) -> Option<String> {
        let history = &self.context.history;
        if prepared.epoch != self.context.epoch || prepared.mark > history.len() {
            return Some("the history was rewritten after it started".to_owned());
        }
        let counter = self.counter();
        let tail: usize = history[prepared.mark..]
            .iter()
            .map(|message| count_message(counter.as_ref(), message))
            .sum();
        let tail = self.context.estimator.calibration().scale(tail as u64);
        let after = start.plan.floor.total().saturating_add(tail);
        self.context.budget.reaches_auto(after).then(|| {
            format!(
                "the conversation after its mark ({} tokens) leaves no room; compacting it all",
                pith_core::thousands(tail)
            )
        })
    }

    /// Ends `prepared` unused: cancels it, reports its requests, and tells why.
    async fn discard(
        &mut self,
        mut prepared: PreparedSummary,
        reason: &str,
        sink: &mut dyn EventSink,
    ) {
        prepared.cancel.cancel();
        let (outcome, reports) = prepared.join(&CancellationToken::new()).await;
        let usage = outcome.usage();
        self.emit_requests(reports, sink);
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Unused {
            reason: reason.to_owned(),
            usage,
            model: prepared.model.clone(),
        }));
    }

    /// A prepared summary whose token was cancelled (Esc) ends here, told as cancelled
    /// like a compaction in place; none is prepared again before the next compaction.
    pub(super) async fn reap_cancelled_prepared(&mut self, sink: &mut dyn EventSink) {
        if !self
            .prepared
            .as_ref()
            .is_some_and(|prepared| prepared.cancel.is_cancelled())
        {
            return;
        }
        let Some(mut prepared) = self.prepared.take() else {
            return;
        };
        let (_, reports) = prepared.join(&CancellationToken::new()).await;
        self.emit_requests(reports, sink);
        self.prepare_declined = true;
        sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
    }

    /// Ends a summary still being prepared, unused, when the conversation stops here (a
    /// job that finished, a session closed): its requests are reported and it is told as
    /// [`AutoCompaction::Unused`]. Nothing when none is being prepared.
    pub async fn abandon_prepared_summary(&mut self, sink: &mut dyn EventSink) {
        self.abandon_prepared("the session stopped before it was needed", sink)
            .await;
    }

    /// Ends the summary being prepared, if any, unused for `reason`.
    pub(super) async fn abandon_prepared(&mut self, reason: &str, sink: &mut dyn EventSink) {
        if let Some(prepared) = self.prepared.take() {
            self.discard(prepared, reason, sink).await;
        }
    }

    /// The token that cancels the summary being prepared (or ready) for this
    /// conversation, if there is one.
    pub fn prepared_summary_cancel(&self) -> Option<CancellationToken> {
        self.prepared
            .as_ref()
            .map(|prepared| prepared.cancel.clone())
    }
}
