//! Before every request: measure the facts, ask [`decide`], carry out the action.
//!
//! This is the only place the loop looks at the budget. A turn's request goes through
//! [`AgentLoop::prepare_turn_request`], which may micro-compact, compact through the LLM,
//! or fit the request, deciding again after each step until the answer is "send" or
//! "fit". A compaction's own request goes through [`AgentLoop::fit_if_needed`]: the same
//! decision with LLM compaction and micro-compaction ruled out, so only an overflow acts.

use std::sync::Arc;
use std::time::Instant;

use pith_core::context::{collapse, decide, prune_old_tool_outputs, Action, Facts};
use pith_core::events::MicroCompaction;
use pith_core::tokens::count_message;
use pith_core::{HistoryRewrite, LoopEvent, Message, ToolDefinition, TurnSink};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::options::{LoopError, TurnSummary};
use crate::tool_loop::overflow::{fit_to_budget_with, Fitted};
use crate::wire::adapter::ModelRequest;

/// A request ready to send.
pub(super) struct Prepared {
    /// The request.
    pub request: ModelRequest,
    /// True when it was fitted to the budget: it differs from the history, so the usage
    /// the provider reports for it must not anchor the history's estimate.
    pub fitted: bool,
}

/// Dedup + prune of the history, not yet applied.
struct MicroCandidate {
    replacement: Vec<Message>,
    reclaimable: u64,
    /// When measuring it began (the step's duration counts from here).
    started: Instant,
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
        let mut micro_allowed = self.options.micro_compaction;
        let mut llm_allowed = self.options.auto_compaction;
        loop {
            let tools = self.tools.definitions();
            let estimate = self
                .estimator
                .estimate(&self.system_prompt, &self.history, &tools)
                .total as u64;
            let candidate = (micro_allowed
                && self.memory.new_history_since_attempt
                && self.budget.reaches_micro(estimate))
            .then(|| self.micro_candidate());
            let facts = Facts {
                estimate,
                micro_reclaimable: candidate.as_ref().map_or(0, |c| c.reclaimable),
                micro_minimum: self.options.prune.minimum,
                llm_allowed,
            };
            let action = decide(&facts, &self.budget, &self.memory);
            if action != Action::None {
                tracing::debug!(?facts, memory = ?self.memory, budget = ?self.budget, ?action, "compaction decision");
            }
            match (action, candidate) {
                (Action::Micro, Some(candidate)) => {
                    micro_allowed = false;
                    self.micro_compact(candidate, estimate, &tools, sink);
                }
                (Action::Llm, _) => {
                    llm_allowed = false;
                    self.auto_compact(estimate, last_user_text, sink, cancel, summary)
                        .await?;
                }
                (Action::OverflowFallback, _) => {
                    let fitted = self.fit(&self.history, &tools);
                    sink.emit(LoopEvent::Notice(fitted.notice()));
                    return Ok(Prepared {
                        request: self.request(Arc::new(fitted.messages), tools),
                        fitted: true,
                    });
                }
                // `Micro` is only decided with a measured candidate; without one, send.
                (Action::None | Action::Micro, _) => {
                    return Ok(Prepared {
                        request: self.request(Arc::clone(&self.history), tools),
                        fitted: false,
                    })
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
        let estimate = self
            .estimator
            .estimate(&self.system_prompt, &messages, tools)
            .total as u64;
        let facts = Facts {
            estimate,
            micro_reclaimable: 0,
            micro_minimum: self.options.prune.minimum,
            llm_allowed: false,
        };
        match decide(&facts, &self.budget, &self.memory) {
            Action::OverflowFallback => {
                let fitted = self.fit(&messages, tools);
                tracing::debug!(notice = %fitted.notice(), "compaction request fitted");
                fitted.messages
            }
            Action::None | Action::Micro | Action::Llm => messages,
        }
    }

    /// The fitted request; the session ledger stands in for any dropped messages (the
    /// latest user message stays in the request, so the ledger leaves it out).
    fn fit(&self, messages: &[Message], tools: &[ToolDefinition]) -> Fitted {
        let ledger = self.render_ledger(true);
        fit_to_budget_with(
            self.estimator.counter().as_ref(),
            &self.system_prompt,
            messages,
            tools,
            self.budget.input_budget,
            ledger.as_ref().map(|l| l.text.as_str()),
        )
    }

    /// Dedup + prune of the current history, without applying it.
    fn micro_candidate(&self) -> MicroCandidate {
        let started = Instant::now();
        let tools = &self.tools;
        let (deduplicated, _) = collapse(&self.history, |name| tools.is_read_only(name));
        let counter = self.estimator.counter();
        let (pruned, _) =
            prune_old_tool_outputs(&deduplicated, counter.as_ref(), &self.options.prune);
        // Dedup and prune keep the message count and change only some contents: tokenize
        // just the messages that changed, not the whole history twice.
        let reclaimable: usize = self
            .history
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
            reclaimable: reclaimable as u64,
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
        let tokens_after = self
            .estimator
            .estimate(&self.system_prompt, &candidate.replacement, tools)
            .total as u64;
        let step = MicroCompaction {
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
        self.install(step.replacement.clone());
        sink.emit(LoopEvent::MicroCompaction(step));
    }
}
