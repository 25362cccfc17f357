//! The generic tool loop: one implementation for every provider.
//!
//! An [`AgentLoop`] owns one conversation: its system prompt, its system-free history
//! (the seed's "compaction history": it includes the raw tool activity of the active
//! turn), the tool registry, the budget and the request estimator. [`AgentLoop::run_turn`]
//! drives one user turn: before every model request it consults the compaction policy,
//! then streams the request, runs the requested tools, and repeats until the model
//! answers without tool calls. [`AgentLoop::compact`] is the manual `/compact`.
//!
//! Events go to the caller through an unbounded channel in the order they happen; the
//! loop never prints. History changes only at well-defined points: a new user message, a
//! completed assistant message, completed tool results, and an applied compaction.

use std::sync::Arc;

use pith_core::context::{
    collapse, decide, prune_old_tool_outputs, Action, PolicyState, PruneConfig,
};
use pith_core::events::{compaction_token, MicroCompaction};
use pith_core::tokens::count_message;
use pith_core::{
    AutoCompaction, ContextBudget, LoopEvent, Message, RequestEstimate, RequestEstimator, Role,
    ToolCall, ToolRegistry, ToolResult, Usage,
};
use thiserror::Error;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::adapter::{ModelRequest, ProviderAdapter};
use crate::compaction::{self, PrivateOutcome};
use crate::error::ProviderError;
use crate::overflow;
use crate::request::{send_with_retries, Timeouts, Visibility};
use crate::retry::RetryPolicy;

/// Knobs of the loop, with the defaults a user of pith gets.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOptions {
    /// Automatic (LLM) compaction at the budget's auto threshold. `--no-auto-compact`
    /// turns it off.
    pub auto_compaction: bool,
    /// Most model requests in one user turn (`--max-turns`); `None` for no limit.
    pub max_requests_per_turn: Option<u32>,
    /// Retry policy for transient failures.
    pub retry: RetryPolicy,
    /// Request and idle-stream timeouts.
    pub timeouts: Timeouts,
    /// Output cap sent with every request.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// Most rounds of rejected tool calls a compaction request may go through before
    /// it is given up.
    pub compaction_tool_rounds: u32,
    /// Micro-compaction (dedup + prune, no LLM) at the budget's micro threshold.
    pub micro_compaction: bool,
    /// Prune thresholds of micro-compaction.
    pub prune: PruneConfig,
}

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            auto_compaction: true,
            max_requests_per_turn: None,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            max_output_tokens: None,
            temperature: None,
            compaction_tool_rounds: 2,
            micro_compaction: true,
            prune: PruneConfig::default(),
        }
    }
}

/// Why a turn or a manual compaction stopped without completing.
#[derive(Debug, Clone, Error)]
pub enum LoopError {
    /// The provider failed for good (after retries).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The turn's token was cancelled (Ctrl+C, SIGINT, …).
    #[error("cancelled")]
    Cancelled,
    /// The turn reached `max_requests_per_turn`.
    #[error("stopped after {0} model requests (--max-turns)")]
    MaxRequests(u32),
    /// A manual compaction could not produce a usable summary.
    #[error("compaction failed: {0}")]
    Compaction(String),
}

/// The result of a completed turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSummary {
    /// Usage over every request of the turn, compaction requests included.
    pub usage: Usage,
    /// Model requests sent for the turn itself (compaction requests excluded).
    pub requests: u32,
    /// Tool calls executed.
    pub tool_calls: u32,
}

/// A turn that stopped early, with what it used.
#[derive(Debug, Clone)]
pub struct TurnFailure {
    /// Why it stopped.
    pub error: LoopError,
    /// Usage and counts up to the failure.
    pub summary: TurnSummary,
}

/// The result of a manual compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct ManualCompaction {
    /// The validated summary (trimmed).
    pub summary: String,
    /// The new history: one user message holding the summary.
    pub replacement: Vec<Message>,
    /// Usage of the compaction requests.
    pub usage: Usage,
    /// Estimated request size before.
    pub tokens_before: u64,
    /// Estimated request size after.
    pub tokens_after: u64,
}

/// One conversation driven through one provider. See the module docs.
pub struct AgentLoop {
    adapter: Arc<dyn ProviderAdapter>,
    model: String,
    budget: ContextBudget,
    system_prompt: String,
    tools: ToolRegistry,
    /// Shared with the request in flight (copy on write: pushing clones only while a
    /// request still holds it, which it never does between requests).
    history: Arc<Vec<Message>>,
    estimator: RequestEstimator,
    options: LoopOptions,
    policy: PolicyState,
}

impl std::fmt::Debug for AgentLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoop")
            .field("protocol", &self.adapter.protocol_name())
            .field("model", &self.model)
            .field("budget", &self.budget)
            .field("history_len", &self.history.len())
            .finish()
    }
}

impl AgentLoop {
    /// A loop for `model` on `adapter` with an empty history.
    pub fn new(
        adapter: Arc<dyn ProviderAdapter>,
        model: impl Into<String>,
        budget: ContextBudget,
        system_prompt: impl Into<String>,
        tools: ToolRegistry,
        estimator: RequestEstimator,
        options: LoopOptions,
    ) -> Self {
        Self {
            adapter,
            model: model.into(),
            budget,
            system_prompt: system_prompt.into(),
            tools,
            history: Arc::new(Vec::new()),
            estimator,
            options,
            policy: PolicyState::default(),
        }
    }

    /// The conversation so far, without the system prompt.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Replaces the conversation (resuming a session, `/clear`). System messages are
    /// dropped: the loop adds its own system prompt to every request.
    pub fn set_history(&mut self, history: Vec<Message>) {
        self.history = Arc::new(pith_core::summary::strip_system(&history));
        self.estimator.clear_usage();
        self.policy = PolicyState::default();
    }

    /// The system prompt sent with every request.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Replaces the system prompt (e.g. after project instructions changed).
    pub fn set_system_prompt(&mut self, system_prompt: impl Into<String>) {
        self.system_prompt = system_prompt.into();
    }

    /// The budget thresholds in force.
    pub fn budget(&self) -> ContextBudget {
        self.budget
    }

    /// The model id requests are sent to.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The loop's options.
    pub fn options_mut(&mut self) -> &mut LoopOptions {
        &mut self.options
    }

    /// The tool registry.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// Estimates the next request as it stands (system prompt + history + tools).
    pub fn estimate(&mut self) -> RequestEstimate {
        let tools = self.tools.definitions();
        self.estimator
            .estimate(&self.system_prompt, &self.history, &tools)
    }

    fn request(
        &self,
        messages: Arc<Vec<Message>>,
        tools: Vec<pith_core::ToolDefinition>,
    ) -> ModelRequest {
        ModelRequest {
            model: self.model.clone(),
            system: self.system_prompt.clone(),
            messages,
            tools,
            max_output_tokens: self.options.max_output_tokens,
            temperature: self.options.temperature,
        }
    }

    /// Runs one user turn to completion. See the module docs for the order of events.
    pub async fn run_turn(
        &mut self,
        user_message: Message,
        events: &UnboundedSender<LoopEvent>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnFailure> {
        let mut summary = TurnSummary::default();
        let last_user_text = user_message.text_content();
        Arc::make_mut(&mut self.history).push(user_message);
        self.policy.record_new_tool_turn();

        // Beyond the seed: a history that already crosses the threshold when the user
        // speaks is compacted before the first request, with the new message retained.
        let mut compaction_due = true;
        loop {
            if cancel.is_cancelled() {
                return Err(TurnFailure {
                    error: LoopError::Cancelled,
                    summary,
                });
            }
            if compaction_due {
                if let Err(error) = self
                    .before_request(&last_user_text, events, cancel, &mut summary)
                    .await
                {
                    return Err(TurnFailure { error, summary });
                }
            }
            if let Some(limit) = self.options.max_requests_per_turn {
                if summary.requests >= limit {
                    return Err(TurnFailure {
                        error: LoopError::MaxRequests(limit),
                        summary,
                    });
                }
            }

            let tools = self.tools.definitions();
            let estimate = self
                .estimator
                .estimate(&self.system_prompt, &self.history, &tools);
            let mut messages = Arc::clone(&self.history);
            if self.budget.overflows(estimate.total as u64) {
                let fitted = overflow::fit_to_budget(
                    self.estimator.counter().as_ref(),
                    &self.system_prompt,
                    &messages,
                    &tools,
                    self.budget.input_budget,
                );
                let _ = events.send(LoopEvent::Notice(fitted.notice()));
                messages = Arc::new(fitted.messages);
            }
            let request = self.request(messages, tools);
            summary.requests += 1;
            let sent = send_with_retries(
                self.adapter.as_ref(),
                &request,
                &self.options.retry,
                &self.options.timeouts,
                Visibility::Visible(events),
                cancel,
            )
            .await;
            // The request shares the history: release it so appending does not copy it.
            drop(request);
            let response = match sent {
                Ok(response) => response,
                Err(failure) => {
                    // Keep what the user already saw, never an orphan tool call.
                    if !failure.partial.text.is_empty() {
                        self.push(Message::assistant(failure.partial.text), events);
                    }
                    let error = match failure.error {
                        ProviderError::Cancelled => LoopError::Cancelled,
                        other => LoopError::Provider(other),
                    };
                    return Err(TurnFailure { error, summary });
                }
            };
            summary.usage += response.usage;
            if response.usage_reported {
                let _ = events.send(LoopEvent::Usage(response.usage));
            }

            let calls = response.tool_calls;
            if response.text.is_empty() && calls.is_empty() {
                // An empty answer still closes the turn; keep the history well-formed.
                let _ = events.send(LoopEvent::TurnFinished {
                    usage: summary.usage,
                });
                return Ok(summary);
            }
            self.push(
                Message::assistant_with_calls(response.text, calls.clone()),
                events,
            );
            if response.usage_reported {
                self.estimator.record_usage(
                    response.usage.input_tokens,
                    response.usage.output_tokens,
                    self.history.len(),
                );
            }
            if calls.is_empty() {
                let _ = events.send(LoopEvent::TurnFinished {
                    usage: summary.usage,
                });
                return Ok(summary);
            }

            let results = execute_calls(&self.tools, &calls, events, cancel).await;
            summary.tool_calls += u32::try_from(calls.len()).unwrap_or(u32::MAX);
            for result in results {
                self.push(
                    Message {
                        role: Role::Tool,
                        parts: vec![pith_core::Part::ToolResult(result)],
                    },
                    events,
                );
            }
            self.policy.record_new_tool_turn();
            if cancel.is_cancelled() {
                return Err(TurnFailure {
                    error: LoopError::Cancelled,
                    summary,
                });
            }
            compaction_due = true;
        }
    }

    fn push(&mut self, message: Message, events: &UnboundedSender<LoopEvent>) {
        let _ = events.send(LoopEvent::MessageAppended(message.clone()));
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Runs the compaction policy before a request: micro-compaction (dedup + prune),
    /// then automatic LLM compaction, as `pith_core::context::policy::decide` says. The
    /// trigger conditions of seed 002 ("Trigger points") are the policy state: automatic
    /// compaction enabled, new history (a tool turn, or a new user message: the
    /// start-of-turn trigger) since the last attempt, and the estimate at the threshold.
    async fn before_request(
        &mut self,
        last_user_text: &str,
        events: &UnboundedSender<LoopEvent>,
        cancel: &CancellationToken,
        summary: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        // At most one micro step and one LLM attempt per request.
        for _ in 0..2 {
            let estimate = self.estimate().total as u64;
            self.policy.llm_allowed = self.options.auto_compaction;
            self.policy.micro_minimum = self.options.prune.minimum;
            let micro = if self.options.micro_compaction
                && self.policy.new_history_since_attempt
                && self.budget.reaches_micro(estimate)
            {
                Some(self.micro_candidate())
            } else {
                None
            };
            self.policy.micro_reclaimable = micro.as_ref().map_or(0, |(_, reclaimed)| *reclaimed);
            match decide(estimate, &self.budget, &self.policy) {
                Action::None | Action::OverflowFallback => return Ok(()),
                Action::Micro => {
                    let Some((replacement, reclaimed)) = micro else {
                        return Ok(());
                    };
                    self.history = Arc::new(replacement.clone());
                    let tokens_after = self.estimate().total as u64;
                    let freed = estimate
                        .saturating_sub(tokens_after)
                        .max(reclaimed.min(estimate));
                    let _ = events.send(LoopEvent::MicroCompaction(MicroCompaction {
                        replacement,
                        tokens_reclaimed: freed,
                        tokens_before: estimate,
                        tokens_after,
                    }));
                    if self.policy.record_attempt(freed, &self.budget) {
                        let _ = events.send(LoopEvent::Notice(format!(
                            "micro-compaction freed only {freed} tokens; automatic compaction waits for new history"
                        )));
                    }
                    // Micro may have been enough; if not, the policy now sees the new
                    // estimate (new history is cleared, so only an overflow acts again).
                    self.policy.new_history_since_attempt = self.budget.reaches_auto(tokens_after);
                }
                Action::Llm => {
                    return self
                        .auto_compact(estimate, last_user_text, events, cancel, summary)
                        .await;
                }
            }
        }
        Ok(())
    }

    /// Dedup + prune of the current history, without applying it: (new history, tokens
    /// it would free).
    fn micro_candidate(&self) -> (Vec<Message>, u64) {
        let tools = &self.tools;
        let (deduplicated, _) = collapse(&self.history, |name| tools.is_read_only(name));
        let counter = self.estimator.counter();
        let (pruned, _) =
            prune_old_tool_outputs(&deduplicated, counter.as_ref(), &self.options.prune);
        // Dedup and prune keep the message count and change only some contents: tokenize
        // just the messages that changed, not the whole history twice.
        let reclaimed: usize = self
            .history
            .iter()
            .zip(&pruned)
            .filter(|(old, new)| old != new)
            .map(|(old, new)| {
                count_message(counter.as_ref(), old)
                    .saturating_sub(count_message(counter.as_ref(), new))
            })
            .sum();
        (pruned, reclaimed as u64)
    }

    /// The private automatic compaction (seed 002 "Private compaction request").
    async fn auto_compact(
        &mut self,
        estimate: u64,
        last_user_text: &str,
        events: &UnboundedSender<LoopEvent>,
        cancel: &CancellationToken,
        summary: &mut TurnSummary,
    ) -> Result<(), LoopError> {
        let tokens_before = estimate;

        let child = compaction_token(cancel);
        let _ = events.send(LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: child.clone(),
        }));
        let tools = self.tools.definitions();
        let request = self.request(
            Arc::new(compaction::auto_request_messages(
                self.estimator.counter().as_ref(),
                &self.system_prompt,
                &self.history,
                &tools,
                self.budget.input_budget,
            )),
            tools,
        );
        let outcome = compaction::run_private(
            self.adapter.as_ref(),
            request,
            &self.tools.denying(),
            &self.options,
            &child,
        )
        .await;
        summary.usage += outcome.usage();
        match outcome {
            PrivateOutcome::Summary {
                summary: text,
                usage,
            } => {
                let replacement = pith_core::summary::build_auto_replacement(
                    &[Message::system(self.system_prompt.clone())],
                    &text,
                    last_user_text,
                );
                self.history = Arc::new(pith_core::summary::strip_system(&replacement));
                let tokens_after = self.estimate().total as u64;
                let _ = events.send(LoopEvent::AutoCompaction(AutoCompaction::Applied {
                    replacement,
                    summary: text,
                    usage: Some(usage),
                    tokens_before,
                    tokens_after,
                }));
                let freed = tokens_before.saturating_sub(tokens_after);
                if self.policy.record_attempt(freed, &self.budget) {
                    let _ = events.send(LoopEvent::Notice(format!(
                        "automatic compaction freed only {freed} tokens; the next attempt waits for new history"
                    )));
                }
                Ok(())
            }
            PrivateOutcome::Cancelled { .. } => {
                self.policy.record_attempt(0, &self.budget);
                // Every Started gets its terminal event, also when the whole turn was
                // cancelled (the child token is cancelled with it): front-ends drop the
                // child's cancel handle and their "Compacting…" state on it.
                let _ = events.send(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
                if cancel.is_cancelled() {
                    return Err(LoopError::Cancelled);
                }
                Ok(())
            }
            PrivateOutcome::Failed { reason, .. } => {
                self.policy.record_attempt(0, &self.budget);
                if cancel.is_cancelled() {
                    let _ = events.send(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
                    return Err(LoopError::Cancelled);
                }
                let _ = events.send(LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }));
                Ok(())
            }
        }
    }

    /// Manual compaction (`/compact [focus]`): the normal system prompt, history and tools
    /// plus the manual prompt, streamed visibly; tool calls are rejected; on success the
    /// history becomes one user message holding the summary. On failure or cancellation
    /// the history is unchanged.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        events: &UnboundedSender<LoopEvent>,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        if self.history.is_empty() {
            return Err(LoopError::Compaction(
                "there is no conversation to compact yet".to_owned(),
            ));
        }
        let tokens_before = self.estimate().total as u64;
        let tools = self.tools.definitions();
        let mut messages = self.history.to_vec();
        messages.push(Message::user(pith_core::summary::manual_prompt(focus)));
        let request = self.request(Arc::new(messages), tools);
        let outcome = compaction::run_visible(
            self.adapter.as_ref(),
            request,
            &self.tools.denying(),
            &self.options,
            events,
            cancel,
        )
        .await;
        match outcome {
            PrivateOutcome::Summary { summary, usage } => {
                let replacement = pith_core::summary::build_manual_replacement(&summary);
                self.history = Arc::new(replacement.clone());
                self.policy = PolicyState::default();
                let tokens_after = self.estimate().total as u64;
                Ok(ManualCompaction {
                    summary,
                    replacement,
                    usage,
                    tokens_before,
                    tokens_after,
                })
            }
            PrivateOutcome::Cancelled { .. } => Err(LoopError::Cancelled),
            PrivateOutcome::Failed { reason, .. } => Err(LoopError::Compaction(reason)),
        }
    }
}

/// Runs the calls of one assistant message. Consecutive read-only calls run concurrently;
/// results come back in call order. Every call gets a result, also on cancellation, so
/// the history never holds an unanswered tool call.
pub(crate) async fn execute_calls(
    tools: &ToolRegistry,
    calls: &[ToolCall],
    events: &UnboundedSender<LoopEvent>,
    cancel: &CancellationToken,
) -> Vec<ToolResult> {
    let mut results = Vec::with_capacity(calls.len());
    let mut index = 0;
    while index < calls.len() {
        let mut end = index + 1;
        if tools.is_read_only(&calls[index].name) && !tools.is_denying() {
            while end < calls.len() && tools.is_read_only(&calls[end].name) {
                end += 1;
            }
        }
        let group = &calls[index..end];
        for call in group {
            let _ = events.send(LoopEvent::ToolCallStarted(call.clone()));
        }
        let outcomes = futures::future::join_all(group.iter().map(|call| async move {
            if cancel.is_cancelled() {
                ToolResult {
                    call_id: call.id.clone(),
                    content: "cancelled before it ran".to_owned(),
                    is_error: true,
                }
            } else {
                tools.execute(call, cancel).await
            }
        }))
        .await;
        for (call, result) in group.iter().zip(outcomes) {
            let _ = events.send(LoopEvent::ToolCallFinished {
                call: call.clone(),
                result: result.clone(),
            });
            results.push(result);
        }
        index = end;
    }
    results
}
