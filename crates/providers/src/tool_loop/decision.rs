//! Before every request: measure the facts, ask [`decide`], carry out the action.
//!
//! Every compaction decision of a turn is made here. A turn's request goes through
//! [`AgentLoop::prepare_turn_request`], which may micro-compact, compact through the LLM,
//! or fit the request, deciding again after each step until the answer is "send" or
//! "fit". Before an LLM compaction it computes the floor (what the replacement holds
//! whatever the summary says; see [`pith_core::context::floor`]): when no plan of the
//! replacement can help, no request is made and the breaker arms. A compaction's own
//! request goes through [`AgentLoop::fit_if_needed`]: the same decision with LLM
//! compaction and micro-compaction ruled out, so only an overflow acts.
//!
//! Every estimate here is in the server's terms (calibrated); the overflow fitter counts
//! with pith's tokenizer, so it fits to the input budget divided by the calibration.

use std::sync::Arc;
use std::time::Instant;

use pith_core::context::floor::{summary_allowance, Floor, ReplacementPlan};
use pith_core::context::ledger::RenderedLedger;
use pith_core::context::pins::RenderedPins;
use pith_core::context::{
    collapse, decide, held_by_ceiling, prune_old_tool_outputs, Action, Facts, GovernorNotice,
    PauseReason,
};
use pith_core::events::{MicroCompaction, MicroReason};
use pith_core::summary::{replacement_text, ReplacementParts, RestoredFile};
use pith_core::tokens::count_message;
use pith_core::{EventSink, HistoryRewrite, LoopEvent, Message, ToolDefinition, TurnSink};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::context_state::Sent;
use crate::tool_loop::options::{LoopError, TurnSummary};
use crate::tool_loop::overflow::{fit_to_budget_with, Fitted};
use crate::wire::adapter::ModelRequest;

/// A request ready to send.
pub(super) struct Prepared {
    /// The request.
    pub request: ModelRequest,
    /// What the usage reported for it is weighed against.
    pub sent: Sent,
}

/// Dedup + prune of the history, not yet applied.
struct MicroCandidate {
    replacement: Vec<Message>,
    reclaimable: u64,
    /// When measuring it began (the step's duration counts from here).
    started: Instant,
}

/// An LLM compaction that can help: the replacement's plan, its parts as rendered for it,
/// and its floor.
pub(super) struct CompactionPlan {
    /// How much ledger and how many files it carries.
    pub plan: ReplacementPlan,
    /// The ledger as it carries it.
    pub ledger: Option<RenderedLedger>,
    /// The files it re-attaches.
    pub restored: Vec<RestoredFile>,
    /// What it holds whatever the summary says.
    pub floor: Floor,
}

/// What an automatic compaction starts from: the plan the decision chose and where the
/// turn stands.
pub(super) struct AutoCompactStart<'a> {
    /// What the replacement carries.
    pub plan: CompactionPlan,
    /// The request's estimated size before compacting.
    pub tokens_before: u64,
    /// The session's progress, where a failure arms the breaker
    /// (see [`pith_core::context::Facts::progress`]).
    pub progress: u64,
    /// The user's last message, repeated after the summary.
    pub last_user_text: &'a str,
}

impl AgentLoop {
    /// Prepares the next request of a turn. See the module docs.
    pub(super) async fn prepare_turn_request(
        &mut self,
        last_user_text: &str,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
        summary: &mut TurnSummary,
    ) -> Result<Prepared, LoopError> {
        self.reap_cancelled_prepared(sink).await;
        let mut micro_allowed = self.options.micro_compaction;
        let mut llm_allowed = self.options.auto_compaction;
        // After a pause longer than the cache's TTL, the next request rewrites the cache
        // anyway: work that would soon be due is done now (docs/context-pipeline.md).
        let cold = self
            .context
            .cache_cold(self.options.prompt_cache.ttl, Instant::now());
        let prune = self.options.prune.within(&self.context.budget, cold);
        loop {
            let tools = self.tools.definitions();
            let estimated = self.context.estimate(&self.system_prompt, &tools);
            let estimate = estimated.total as u64;
            let budget = if cold {
                self.context.budget.cooled()
            } else {
                self.context.budget
            };
            let candidate = (micro_allowed
                && self.context.governor().new_history_since_attempt
                && budget.reaches_micro(estimate))
            .then(|| self.micro_candidate(&prune));
            let content = self
                .context
                .estimator
                .calibration()
                .scale(estimated.counted as u64);
            let facts = Facts {
                estimate,
                content,
                micro_reclaimable: candidate.as_ref().map_or(0, |c| c.reclaimable),
                micro_minimum: prune.minimum,
                llm_allowed,
            };
            let action = decide(&facts, &budget, self.context.governor());
            if action != Action::None {
                tracing::debug!(?facts, governor = ?self.context.governor(), ?budget, ?action, "compaction decision");
            }
            if action != Action::Llm && held_by_ceiling(&facts, &budget, self.context.governor()) {
                if let Some(notice) = self.context.ceiling_notice() {
                    sink.emit(LoopEvent::Governor(notice));
                }
            }
            match (action, candidate) {
                (Action::Micro, Some(candidate)) => {
                    micro_allowed = false;
                    self.micro_compact(candidate, estimate, &tools, sink);
                }
                (Action::Llm, _) => {
                    llm_allowed = false;
                    match self.plan_compaction(last_user_text, &tools) {
                        Ok(plan) => {
                            let start = AutoCompactStart {
                                plan,
                                tokens_before: estimate,
                                progress: facts.progress(),
                                last_user_text,
                            };
                            self.auto_compact(start, sink, cancel, summary).await?;
                        }
                        Err(floor) => {
                            let notice = self.context.compaction_paused(
                                PauseReason::CannotHelp {
                                    floor: floor.total(),
                                    pins: floor.pins,
                                },
                                facts.progress(),
                            );
                            tracing::debug!(floor = %floor.describe(), "no compaction can help");
                            sink.emit(LoopEvent::Governor(notice));
                        }
                    }
                }
                (Action::OverflowFallback, _) => {
                    let history = Arc::clone(&self.context.history);
                    let fitted = self.fit(&history, &tools, last_user_text)?;
                    sink.emit(LoopEvent::Notice(fitted.notice()));
                    return Ok(self.install_fitted(fitted, estimate, tools, sink));
                }
                // `Micro` is only decided with a measured candidate; without one, send.
                (Action::None | Action::Micro, _) => {
                    self.maybe_prepare_summary(&facts, last_user_text, &tools, sink, cancel)
                        .await;
                    return Ok(Prepared {
                        request: self.request(Arc::clone(&self.context.history), tools),
                        sent: Sent::history(&estimated, self.context.history.len()),
                    });
                }
            }
        }
    }

    /// The messages of a compaction request, fitted when they would not fit: [`decide`]
    /// with neither LLM nor micro-compaction available acts only on an overflow.
    pub(super) fn fit_if_needed(
        &mut self,
        messages: Vec<Message>,
        tools: &[ToolDefinition],
    ) -> Vec<Message> {
        let (estimate, _) = self
            .context
            .estimate_other(&self.system_prompt, &messages, tools);
        let facts = Facts {
            estimate,
            content: estimate,
            micro_reclaimable: 0,
            micro_minimum: self.options.prune.minimum,
            llm_allowed: false,
        };
        match decide(&facts, &self.context.budget, self.context.governor()) {
            Action::OverflowFallback => match self.fit(&messages, tools, "") {
                Ok(fitted) => {
                    tracing::debug!(notice = %fitted.notice(), "compaction request fitted");
                    fitted.messages
                }
                // The summary request itself cannot fit: send it as it is and let the
                // provider's refusal fail this attempt (the turn goes on).
                Err(error) => {
                    tracing::debug!(%error, "compaction request cannot fit");
                    messages
                }
            },
            Action::None | Action::Micro | Action::Llm => messages,
        }
    }

    /// The fitted request, within the input budget in the server's terms; the session
    /// ledger stands in for any dropped messages (the latest user message stays in the
    /// request, so the ledger leaves it out). `Err` when even the fitted request is too
    /// large: what is never cut does not fit.
    fn fit(
        &self,
        messages: &[Message],
        tools: &[ToolDefinition],
        last_user_text: &str,
    ) -> Result<Fitted, LoopError> {
        let ledger = self.render_ledger(true);
        let calibration = self.context.estimator.calibration();
        let budget = calibration.unscale(self.context.budget.input_budget);
        let fitted = fit_to_budget_with(
            self.counter().as_ref(),
            &self.system_prompt,
            messages,
            tools,
            budget,
            ledger.as_ref().map(|l| l.text.as_str()),
        );
        if fitted.tokens_after <= budget {
            return Ok(fitted);
        }
        let counter = self.counter();
        let scale = |tokens: usize| calibration.scale(tokens as u64);
        let system =
            pith_core::tokens::estimate_request(counter.as_ref(), &self.system_prompt, &[], &[]);
        let message = Message::user(last_user_text);
        Err(LoopError::ContextTooLarge(format!(
            "system prompt {}, tools {}, latest message {}, against an input budget of {} tokens",
            pith_core::thousands(scale(system.system)),
            pith_core::thousands(scale(pith_core::tokens::count_tools(
                counter.as_ref(),
                tools
            ))),
            pith_core::thousands(scale(count_message(counter.as_ref(), &message))),
            pith_core::thousands(self.context.budget.input_budget),
        )))
    }

    /// The first plan of the replacement (the default, then smaller ones) whose floor
    /// leaves a compaction able to help; `Err` with the smallest plan's floor when none
    /// does.
    pub(super) fn plan_compaction(
        &self,
        last_user_text: &str,
        tools: &[ToolDefinition],
    ) -> Result<CompactionPlan, Floor> {
        let mut last = Floor::default();
        // The pins are the same in every plan (none shrinks them): read once.
        let pins = self.render_pins();
        for plan in self.default_plan().fallbacks() {
            let candidate = self.floor_of(plan, &pins, last_user_text, tools);
            if candidate.floor.can_help(&self.context.budget) {
                return Ok(candidate);
            }
            last = candidate.floor;
        }
        Err(last)
    }

    /// The replacement of `plan` rendered without a summary, and its floor.
    fn floor_of(
        &self,
        plan: ReplacementPlan,
        pins: &RenderedPins,
        last_user_text: &str,
        tools: &[ToolDefinition],
    ) -> CompactionPlan {
        let counter = self.counter();
        let counter = counter.as_ref();
        let calibration = self.context.estimator.calibration();
        let scale = |tokens: usize| calibration.scale(tokens as u64);
        let ledger = self.render_ledger_for(&plan, true);
        let restored = self.restore_files_for(&plan);
        let empty = Message::user(replacement_text(ReplacementParts {
            summary: "",
            ledger: ledger.as_ref().map(|l| l.text.as_str()),
            pins: &pins.text,
            restored_files: &restored,
            last_user_message: Some(last_user_text),
        }));
        let whole =
            pith_core::tokens::estimate_request(counter, &self.system_prompt, &[empty], tools);
        let ledger_tokens = ledger.as_ref().map_or(0, |l| l.tokens);
        let restored_tokens: usize = restored.iter().map(|f| counter.count(&f.content)).sum();
        let message_tokens = counter.count(last_user_text);
        let framing = whole
            .messages
            .saturating_sub(ledger_tokens + restored_tokens + pins.tokens + message_tokens)
            + pith_core::tokens::REQUEST_FRAMING_TOKENS;
        let floor = Floor {
            system: scale(whole.system),
            tools: scale(whole.tools),
            message: scale(message_tokens),
            ledger: scale(ledger_tokens),
            restored: scale(restored_tokens),
            pins: scale(pins.tokens),
            summary: summary_allowance(self.context.budget.working_budget(), ledger.is_some()),
            framing: scale(framing),
        };
        CompactionPlan {
            plan,
            ledger,
            restored,
            floor,
        }
    }

    /// The fitted history, persisted and installed like any rewrite, so that the
    /// transcript holds what the model is sent and later requests build on it (a stable
    /// prefix for the prompt cache); the request is the new history. When it cannot be
    /// persisted, the fitted messages are sent without being installed, and the user is
    /// told.
    fn install_fitted(
        &mut self,
        fitted: Fitted,
        tokens_before: u64,
        tools: Vec<ToolDefinition>,
        sink: &mut dyn TurnSink,
    ) -> Prepared {
        let counted = fitted.tokens_after;
        let calibration = self.context.estimator.calibration();
        let step = MicroCompaction {
            reason: MicroReason::Overflow,
            tokens_after: calibration.scale(counted),
            tokens_reclaimed: tokens_before.saturating_sub(calibration.scale(counted)),
            tokens_before,
            replacement: fitted.messages,
            duration_ms: 0,
        };
        if let Err(error) = sink.persist(&HistoryRewrite::Micro(step.clone())) {
            tracing::warn!(%error, "overflow fit not persisted; sent without installing it");
            sink.emit(LoopEvent::Notice(format!(
                "the fitted request could not be recorded: {error}"
            )));
            return Prepared {
                request: self.request(Arc::new(step.replacement), tools),
                sent: Sent::counted(counted, true),
            };
        }
        self.context.install(step.replacement.clone());
        sink.emit(LoopEvent::MicroCompaction(step));
        Prepared {
            request: self.request(Arc::clone(&self.context.history), tools),
            sent: Sent::counted(counted, false),
        }
    }

    /// Dedup + prune (with `prune`'s thresholds) of the current history, without
    /// applying it.
    fn micro_candidate(&self, prune: &pith_core::context::PruneConfig) -> MicroCandidate {
        let started = Instant::now();
        let tools = &self.tools;
        let history = &self.context.history;
        let (deduplicated, _) = collapse(history, |name| tools.is_read_only(name));
        let counter = self.counter();
        let (pruned, _) = prune_old_tool_outputs(&deduplicated, counter.as_ref(), prune);
        // Dedup and prune keep the message count and change only some contents: tokenize
        // just the messages that changed, not the whole history twice.
        let reclaimable: usize = history
            .iter()
            .zip(&pruned)
            .filter(|(old, new)| old != new)
            .map(|(old, new)| {
                count_message(counter.as_ref(), old)
                    .saturating_sub(count_message(counter.as_ref(), new))
            })
            .sum();
        MicroCandidate {
            replacement: pruned,
            reclaimable: self
                .context
                .estimator
                .calibration()
                .scale(reclaimable as u64),
            started,
        }
    }

    /// Persists, then installs, a micro-compaction. When it cannot be persisted the
    /// history stays as it is and the user is told.
    fn micro_compact(
        &mut self,
        candidate: MicroCandidate,
        tokens_before: u64,
        tools: &[ToolDefinition],
        sink: &mut dyn TurnSink,
    ) {
        let (tokens_after, _) =
            self.context
                .estimate_other(&self.system_prompt, &candidate.replacement, tools);
        let step = MicroCompaction {
            reason: MicroReason::Prune,
            replacement: candidate.replacement,
            tokens_reclaimed: tokens_before
                .saturating_sub(tokens_after)
                .max(candidate.reclaimable.min(tokens_before)),
            tokens_before,
            tokens_after,
            duration_ms: u64::try_from(candidate.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        };
        let rewrite = HistoryRewrite::Micro(step);
        if let Err(error) = sink.persist(&rewrite) {
            tracing::warn!(%error, "micro-compaction not persisted; history unchanged");
            sink.emit(LoopEvent::Notice(format!(
                "old tool outputs were not cleared: {error}"
            )));
            return;
        }
        let HistoryRewrite::Micro(step) = rewrite else {
            return;
        };
        // Dedup and prune keep every message in its place: a prepared summary's mark
        // still holds (a rewrite that moved messages would begin a new epoch).
        if step.replacement.len() == self.context.history.len() {
            self.context.install_in_place(step.replacement.clone());
        } else {
            self.context.install(step.replacement.clone());
        }
        sink.emit(LoopEvent::MicroCompaction(step));
    }

    /// Emits what the governor has to say.
    pub(super) fn tell(&self, notices: Vec<GovernorNotice>, sink: &mut dyn EventSink) {
        for notice in notices {
            sink.emit(LoopEvent::Governor(notice));
        }
    }
}
