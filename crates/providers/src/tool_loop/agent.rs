//! The [`AgentLoop`] value: one conversation's state as the loop holds it, and its
//! read-only accessors. Turns are in `turn`, the per-request decision in `decision`, the
//! summary compactions in `compaction`, the session ledger and re-attached files in
//! `carry`.

use std::sync::Arc;

use pith_core::context::ledger::{FileProbe, Ledger};
use pith_core::context::PolicyMemory;
use pith_core::{
    ContextBudget, EventSink, LoopEvent, LoopHooks, Message, NoHooks, RequestEstimate,
    RequestEstimator, TokenCounter, ToolDefinition, ToolRegistry,
};

use crate::tool_loop::guard::GuardLimits;
use crate::tool_loop::options::LoopOptions;
use crate::tool_loop::spend::SpendGuard;
use crate::wire::adapter::{ModelRequest, ProviderAdapter};

/// One conversation driven through one provider.
///
/// It owns the system prompt, the system-free history (the seed's "compaction history":
/// it includes the raw tool activity of the active turn), the tool registry, the budget,
/// the request estimator and the compaction policy's memory. History changes only at
/// well-defined points: a new user message, a completed assistant message, completed tool
/// results, and a rewrite (compaction) that its [`pith_core::TurnSink`] persisted first.
pub struct AgentLoop {
    pub(super) adapter: Arc<dyn ProviderAdapter>,
    pub(super) model: String,
    pub(super) budget: ContextBudget,
    pub(super) system_prompt: String,
    pub(super) tools: ToolRegistry,
    /// Shared with the request in flight (copy on write: pushing clones only while a
    /// request still holds it, which it never does between requests).
    pub(super) history: Arc<Vec<Message>>,
    pub(super) estimator: RequestEstimator,
    pub(super) options: LoopOptions,
    pub(super) memory: PolicyMemory,
    /// The session ledger, observed as the history grows (see `carry`).
    pub(super) ledger: Ledger,
    /// The disk as the ledger sees it, when the loop has a workspace.
    pub(super) files: Option<Arc<dyn FileProbe>>,
    /// Called at the loop's hook points (tool calls, compactions, the end of an answer).
    pub(super) hooks: Arc<dyn LoopHooks>,
    /// Model requests sent so far (the id of the next one is this plus one).
    pub(super) requests_sent: u64,
    /// The job's ceilings, checked before every request (see `spend`).
    pub(super) spend: Option<Arc<SpendGuard>>,
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
            memory: PolicyMemory::default(),
            ledger: Ledger::default(),
            files: None,
            hooks: Arc::new(NoHooks),
            requests_sent: 0,
            spend: None,
        }
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

    /// The conversation so far, without the system prompt.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// Replaces the conversation (resuming a session, `/clear`, switching models). System
    /// messages are dropped: the loop adds its own system prompt to every request.
    pub fn set_history(&mut self, history: Vec<Message>) {
        self.history = Arc::new(pith_core::summary::strip_system(&history));
        self.estimator.clear_usage();
        self.memory = PolicyMemory::default();
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
        self.budget
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
        self.estimator.counter()
    }

    /// Estimates the next request as it stands (system prompt + history + tools).
    pub fn estimate(&mut self) -> RequestEstimate {
        let tools = self.tools.definitions();
        self.estimator
            .estimate(&self.system_prompt, &self.history, &tools)
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
        }
    }

    /// The history as a summary request carries it: every image becomes its placeholder
    /// text (path, size, estimated tokens), so a session full of screenshots can always be
    /// summarised; without images it is the history itself, byte for byte (prompt-cache
    /// parity with the parent request).
    pub(super) fn history_for_summary(&self) -> Vec<Message> {
        if pith_core::context::has_images(&self.history) {
            pith_core::context::replace_images(&self.history, self.estimator.counter().as_ref())
        } else {
            self.history.to_vec()
        }
    }

    /// The bounds every answer of this loop is held to.
    pub(super) fn guard(&self) -> GuardLimits<'_> {
        GuardLimits {
            counter: self.estimator.counter().as_ref(),
            output_cap: self.options.output_cap,
            repeated_line_limit: self.options.repeated_line_limit,
            no_content: self.options.timeouts.no_content,
            spend: self.spend.as_deref(),
        }
    }

    /// Appends a message to the history and reports it.
    pub(super) fn push(&mut self, message: Message, events: &mut dyn EventSink) {
        self.observe_appended(&message);
        events.emit(LoopEvent::MessageAppended(message.clone()));
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Installs a persisted rewrite: the new history, a fresh estimator anchor.
    pub(super) fn install(&mut self, replacement: Vec<Message>) {
        self.history = Arc::new(replacement);
        self.estimator.clear_usage();
    }
}
