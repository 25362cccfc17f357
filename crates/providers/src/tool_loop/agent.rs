//! The [`AgentLoop`] value: one conversation's state as the loop holds it, and its
//! read-only accessors. Its context (history, budget, estimate, governor, ledger) is one
//! [`ContextState`] (`context_state`); turns are in `turn`, the per-request decision in
//! `decision`, the summary compactions in `compaction`, the session ledger and re-attached
//! files in `carry`.

use std::sync::Arc;

use pith_core::{
    ContextBudget, EventSink, LoopEvent, LoopHooks, Message, NoHooks, RequestEstimate,
    RequestEstimator, TokenCounter, ToolDefinition, ToolRegistry,
};

use crate::tool_loop::context_state::ContextState;
use crate::tool_loop::guard::GuardLimits;
use crate::tool_loop::options::LoopOptions;
use crate::tool_loop::spend::SpendGuard;
use crate::wire::adapter::{ModelRequest, ProviderAdapter};

/// One conversation driven through one provider.
///
/// It owns the system prompt, the tool registry and its [`ContextState`]: the
/// system-free history (the seed's "compaction history": it includes the raw tool
/// activity of the active turn), the budget, the request estimator and the governor.
/// History changes only at well-defined points: a new user message, a completed assistant
/// message, completed tool results, and a rewrite (compaction) that its
/// [`pith_core::TurnSink`] persisted first.
pub struct AgentLoop {
    pub(super) adapter: Arc<dyn ProviderAdapter>,
    pub(super) model: String,
    pub(super) system_prompt: String,
    pub(super) tools: ToolRegistry,
    pub(super) context: ContextState,
    pub(super) options: LoopOptions,
    /// Called at the loop's hook points (tool calls, compactions, the end of an answer).
    pub(super) hooks: Arc<dyn LoopHooks>,
    /// Model requests sent so far (the id of the next one is this plus one).
    pub(super) requests_sent: u64,
    /// The doom-loop guard's count of identical calls in a row.
    pub(super) repeats: pith_core::RepeatTracker,
    /// Asked when the model repeats itself `stop_after` times.
    pub(super) repeat_gate: Arc<dyn pith_core::RepeatGate>,
    /// The job's ceilings, checked before every request (see `spend`).
    pub(super) spend: Option<Arc<SpendGuard>>,
    /// The summary being prepared in the background, if any (see `prepared`).
    pub(super) prepared: Option<crate::tool_loop::prepared_task::PreparedSummary>,
    /// A `PreCompact` hook blocked preparing one, or no plan could help: none is prepared
    /// until the next automatic compaction (or a new history).
    pub(super) prepare_declined: bool,
    /// The model summaries are requested from, when not this loop's (`summary_model`).
    pub(super) summary_model: Option<crate::tool_loop::summary_model::SummaryModel>,
    /// What the automatic compactions' summaries sent to it used since the last
    /// [`AgentLoop::take_compaction_model_usage`] (part of the turns' usage).
    pub(super) compaction_model_spent: pith_core::Usage,
}

pith_core::debug_fields!(AgentLoop |this| {
    protocol: this.adapter.protocol_name(),
    model: this.model,
    budget: this.context.budget,
    history_len: this.context.history.len(),
});

/// What an [`AgentLoop`] is built from (its history starts empty; hooks, the repeat gate,
/// the spend guard, a history and a ledger are set afterwards).
pub struct LoopSetup {
    /// The provider's adapter.
    pub adapter: Arc<dyn ProviderAdapter>,
    /// The model id sent with every request.
    pub model: String,
    /// The budget of the model's window.
    pub budget: ContextBudget,
    /// The system prompt.
    pub system_prompt: String,
    /// The tools the model may call.
    pub tools: ToolRegistry,
    /// How requests are estimated before they are sent.
    pub estimator: RequestEstimator,
    /// The loop's options.
    pub options: LoopOptions,
}

impl AgentLoop {
    /// A loop for `setup.model` on `setup.adapter` with an empty history.
    pub fn new(setup: LoopSetup) -> Self {
        let LoopSetup {
            adapter,
            model,
            budget,
            system_prompt,
            tools,
            mut estimator,
            options,
        } = setup;
        estimator.set_usage_band(options.usage_band);
        let context = ContextState::new(budget, estimator, options.max_auto_compactions_per_turn);
        Self {
            adapter,
            model,
            system_prompt,
            tools,
            context,
            options,
            hooks: Arc::new(NoHooks),
            requests_sent: 0,
            repeats: Default::default(),
            repeat_gate: Arc::new(pith_core::StopRepeating),
            spend: None,
            prepared: None,
            prepare_declined: false,
            summary_model: None,
            compaction_model_spent: Default::default(),
        }
    }

    /// The part of the turns' usage ([`crate::TurnSummary::usage`]) that automatic
    /// compactions sent to the compaction model since the last call, charged at its
    /// prices; reset.
    pub fn take_compaction_model_usage(&mut self) -> pith_core::Usage {
        std::mem::take(&mut self.compaction_model_spent)
    }

    /// Sends the summary requests of compactions to `model` when they fit its window
    /// (default: none, this loop's own model).
    pub fn set_summary_model(&mut self, model: Option<crate::tool_loop::SummaryModel>) {
        self.summary_model = model;
    }

    /// The model summaries are requested from, when not this loop's own.
    pub fn summary_model(&self) -> Option<&crate::tool_loop::SummaryModel> {
        self.summary_model.as_ref()
    }

    /// Holds every request of this loop to the job's ceilings (default: none).
    pub fn set_spend_guard(&mut self, guard: Option<Arc<SpendGuard>>) {
        self.spend = guard;
    }

    /// Sets the hooks the loop calls before and after tool calls and compactions and
    /// when the model stops (default: [`NoHooks`]).
    pub fn set_hooks(&mut self, hooks: Arc<dyn LoopHooks>) {
        self.hooks = hooks;
    }

    /// Sets who is asked whether to go on when the model repeats the same call
    /// (default: nobody, so the turn stops; see [`pith_core::RepeatGate`]).
    pub fn set_repeat_gate(&mut self, gate: Arc<dyn pith_core::RepeatGate>) {
        self.repeat_gate = gate;
    }

    /// The conversation so far, without the system prompt.
    pub fn history(&self) -> &[Message] {
        &self.context.history
    }

    /// Replaces the conversation (resuming a session, `/clear`, switching models). System
    /// messages are dropped: the loop adds its own system prompt to every request.
    pub fn set_history(&mut self, history: Vec<Message>) {
        // A summary prepared for the old history is of no use (dropping it cancels it).
        self.prepared = None;
        self.prepare_declined = false;
        self.context.replace_history(history);
    }

    /// The system prompt sent with every request.
    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    /// Replaces the system prompt (the conversation rebuilds it at every user turn, so
    /// edits to the project's instruction files apply at the next turn).
    pub fn set_system_prompt(&mut self, system_prompt: impl Into<String>) {
        self.system_prompt = system_prompt.into();
    }

    /// The budget thresholds in force.
    pub fn budget(&self) -> ContextBudget {
        self.context.budget
    }

    /// The conversation's calibration: server tokens per counted token, and whether the
    /// server's usage is believed at all (for `/context`).
    pub fn calibration(&self) -> pith_core::context::Calibration {
        self.context.estimator.calibration()
    }

    /// The governor's state: the breaker, this turn's automatic compactions (for
    /// `/context` and the REPL's status line).
    pub fn governor(&self) -> &pith_core::context::Governor {
        self.context.governor()
    }

    /// The model id requests are sent to.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The loop's options.
    pub fn options(&self) -> &LoopOptions {
        &self.options
    }

    /// The loop's options, to change them between turns (tests and benchmarks tune
    /// timeouts; front-ends set them once through their settings).
    pub fn options_mut(&mut self) -> &mut LoopOptions {
        &mut self.options
    }

    /// The tool registry.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The token counter of the estimate (for breakdowns such as `/context`).
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        self.context.estimator.counter()
    }

    /// Estimates the next request as it stands (system prompt + history + tools).
    pub fn estimate(&mut self) -> RequestEstimate {
        let tools = self.tools.definitions();
        self.context.estimate(&self.system_prompt, &tools)
    }

    /// [`AgentLoop::estimate`], counted: never the start-up upper bound (it waits for
    /// the counter's tables). For figures shown to the user.
    pub fn counted_estimate(&mut self) -> RequestEstimate {
        let tools = self.tools.definitions();
        self.context.counted_estimate(&self.system_prompt, &tools)
    }

    /// A request of `messages` with this loop's model, system prompt and options.
    pub(super) fn request(
        &self,
        messages: Arc<Vec<Message>>,
        tools: Vec<ToolDefinition>,
    ) -> ModelRequest {
        ModelRequest {
            model: self.model.clone(),
            system: self.system_prompt.clone(),
            messages,
            tools,
            max_output_tokens: self.options.max_output_tokens,
            temperature: self.options.temperature,
            reasoning: self.options.reasoning,
            output: self.options.output.clone(),
            cache: crate::wire::adapter::CacheHints {
                anchor: Some(self.context.stable_prefix).filter(|anchor| *anchor > 0),
                key: self.options.prompt_cache.key.clone(),
                no_message_breakpoints: false,
            },
        }
    }

    /// The history as a summary request carries it: every image becomes its placeholder
    /// text (path, size, estimated tokens), so a session full of screenshots can always be
    /// summarised; without images it is the history itself, byte for byte (prompt-cache
    /// parity with the parent request).
    pub(super) fn history_for_summary(&self) -> Vec<Message> {
        let history = &self.context.history;
        if pith_core::context::has_images(history) {
            pith_core::context::replace_images(history, self.counter().as_ref())
        } else {
            history.to_vec()
        }
    }

    /// The bounds every answer of this loop is held to.
    pub(super) fn guard(&self) -> GuardLimits<'_> {
        GuardLimits {
            counter: self.context.estimator.counter().as_ref(),
            output_cap: self.options.output_cap,
            repeated_line_limit: self.options.repeated_line_limit,
            no_content: self.options.timeouts.no_content,
            spend: self.spend.as_deref(),
        }
    }

    /// Appends a message to the history and reports it.
    pub(super) fn push(&mut self, message: Message, events: &mut dyn EventSink) {
        events.emit(LoopEvent::MessageAppended(message.clone()));
        self.context.push(message);
    }
}
