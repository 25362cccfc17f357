//! The [`Conversation`]: the one object both front-ends drive.
//!
//! It owns the session store, the open session, the settings it was opened with, the
//! tool loop and the system prompt. A front-end opens one with [`Conversation::open`],
//! then calls [`Conversation::run_turn`], [`Conversation::compact`],
//! [`Conversation::switch_model`], [`Conversation::clear`] or [`Conversation::resume`],
//! and renders the [`pith_core::LoopEvent`]s its [`EventSink`] receives. It never builds a loop,
//! resolves a model or writes the transcript itself.
//!
//! Persistence: the user message is recorded before a turn starts; the loop's events go
//! through the turn's [`TurnRecorder`] before they reach the front-end; every history
//! rewrite (automatic, manual or micro compaction) is written before the loop applies
//! it; the turn's final checkpoint is written when it ends, also after an error or a
//! cancellation.
//!
//! Cancellation follows seed 002: the turn's token stops the whole turn; the child token
//! carried by [`pith_core::AutoCompaction::Started`] stops only a running automatic
//! compaction, and front-ends cancel it through that token.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_core::context::ledger::{Ledger, RenderedLedger};
use pith_core::hooks::context_block;
use pith_core::{
    ChildRun, ContextBudget, EventSink, HookEvent, HookRun, LoopEvent, Message, Part,
    RequestEstimate, SpendMeter, TokenCounter, ToolRegistry, Usage,
};
use pith_hooks::{Hooks, HooksConfig, PromptGate, SessionInfo, SessionSource};
use pith_mcp::McpHub;
use pith_providers::models::config::Config;
use pith_providers::models::project::CutInstructions;
use pith_providers::{AgentLoop, LoopError, ManualCompaction, TurnSummary};
use pith_session::{
    Event, NewSession, Record, Session, SessionError, SessionStore, SessionSummary,
};
use pith_tools::{Approver, PermissionMode, ToolsConfig, Toolset};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::ceilings::TurnDeadline;
use crate::exit::ExitCode;
use crate::output_schema::{OutputSchema, SchemaMismatch};
use crate::overrides::{Overrides, SessionChoice};
use crate::recording::{CompactionNote, CompactionTotals, Recording, TurnRecorder};
use crate::settings::Settings;
use crate::subagents::depth::DepthLimit;
use crate::subagents::{Agents, ChildLauncher, ChildSpec, SubagentLimits, TaskTool};
use crate::telemetry::{Telemetry, TracedModel, TurnFacts, TurnTrace};

/// Looks up environment variables (keys, base URLs, config locations). Tests pass their
/// own; the binary passes the process environment.
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a front-end brings besides the command line.
#[derive(Clone)]
pub struct Frontend {
    /// Environment lookup.
    pub env: Env,
    /// Answers `ask` permission questions; `None` (headless) refuses what needs approval.
    pub approver: Option<Arc<dyn Approver>>,
}

impl Frontend {
    /// The process environment, no approver.
    pub fn process_env() -> Self {
        Self {
            env: Arc::new(|name: &str| std::env::var(name).ok()),
            approver: None,
        }
    }
}

/// Why a conversation could not be opened, or a command could not be carried out. The
/// conversation is unchanged after an error.
#[derive(Debug, Error)]
pub enum ConversationError {
    /// Bad options, configuration, model, key or session query.
    #[error("{0}")]
    Usage(String),
    /// The file system or the session store failed.
    #[error("{0}")]
    Failure(String),
}

impl ConversationError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Usage(_) => ExitCode::Usage,
            Self::Failure(_) => ExitCode::Failure,
        }
    }

    fn usage(error: impl std::fmt::Display) -> Self {
        Self::Usage(error.to_string())
    }

    fn failure(error: impl std::fmt::Display) -> Self {
        Self::Failure(error.to_string())
    }

    fn session(error: SessionError) -> Self {
        if error.is_usage() {
            Self::usage(error)
        } else {
            Self::failure(error)
        }
    }
}

/// A conversation just opened (or switched to by `/resume`), with what the user should
/// see first.
pub struct Opened<T> {
    /// The conversation (or, for `/resume`, nothing more).
    pub value: T,
    /// Warnings and notes (an unknown model's window, a quarantined transcript tail, …).
    pub notices: Vec<String>,
    /// The records of a resumed session, for rendering what happened before.
    pub resumed: Option<Vec<Record>>,
}

/// Why a turn did not complete.
#[derive(Debug, Clone, Error)]
pub enum TurnError {
    /// The loop stopped: provider failure, cancellation, `--max-turns`.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// The transcript could not be written: the user message (then nothing was sent) or
    /// the end of the turn.
    #[error("{0}")]
    Record(String),
    /// A `UserPromptSubmit` hook blocked the prompt: nothing was sent or recorded but the
    /// hook's run.
    #[error("a UserPromptSubmit hook blocked the prompt: {0}")]
    Blocked(String),
    /// The final answer did not match `--output-schema`, even after the one correction
    /// pith asked for.
    #[error("the final answer does not match the output schema, even after one correction: {0}")]
    SchemaNotMet(SchemaMismatch),
}

/// What a turn did.
#[derive(Debug, Clone, Default)]
pub struct TurnOutcome {
    /// The answer: text before an automatic compaction plus text after it.
    pub text: String,
    /// Usage and counts.
    pub summary: TurnSummary,
    /// Compactions persisted during the turn.
    pub compactions: Vec<CompactionNote>,
    /// Why the turn stopped early, if it did.
    pub error: Option<TurnError>,
    /// The end of the turn could not be recorded (reported besides `error`).
    pub record_error: Option<String>,
    /// The child conversations the turn's `task` calls ran, in the order they ended.
    pub children: Vec<ChildRun>,
    /// What compaction did and cost in the turn.
    pub compaction: CompactionTotals,
    /// The final answer as JSON, when the conversation has an output schema and the
    /// answer validated against it.
    pub structured_output: Option<serde_json::Value>,
}

impl TurnOutcome {
    /// Usage of the turn's own requests plus that of its children.
    pub fn total_usage(&self) -> Usage {
        let mut total = self.summary.usage;
        for child in &self.children {
            total += child.usage;
        }
        total
    }

    /// The ceiling that stopped the turn, if one did.
    pub fn ceiling(&self) -> Option<&pith_core::CeilingReached> {
        match &self.error {
            Some(TurnError::Loop(error)) => crate::ceilings::reached(error),
            _ => None,
        }
    }

    /// Adds what a follow-up turn of the same job did (the output schema's correction).
    fn absorb(&mut self, next: TurnOutcome) {
        if !self.text.is_empty() && !next.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&next.text);
        self.summary.usage += next.summary.usage;
        self.summary.requests += next.summary.requests;
        self.summary.tool_calls += next.summary.tool_calls;
        self.compactions.extend(next.compactions);
        self.compaction += next.compaction;
        self.children.extend(next.children);
        self.error = next.error;
        self.record_error = next.record_error.or(self.record_error.take());
    }

    /// A short class of why the turn stopped early (`""` when it did not), as telemetry
    /// reports it.
    pub fn error_kind(&self) -> &'static str {
        match (self.ceiling(), &self.error) {
            (Some(pith_core::CeilingReached::Cost { .. }), _) => "cost_ceiling",
            (Some(pith_core::CeilingReached::Duration { .. }), _) => "time_ceiling",
            (None, Some(TurnError::Loop(LoopError::Cancelled))) => "interrupted",
            (None, Some(TurnError::Loop(LoopError::MaxRequests(_)))) => "max_turns",
            (None, Some(TurnError::Loop(LoopError::ContextTooLarge(_)))) => "context_too_large",
            (None, Some(TurnError::Loop(LoopError::RepeatedCall { .. }))) => "doom_loop",
            (None, Some(TurnError::Loop(_))) => "provider_error",
            (None, Some(TurnError::Record(_))) => "record",
            (None, Some(TurnError::Blocked(_))) => "blocked",
            (None, Some(TurnError::SchemaNotMet(_))) => "output_schema",
            (None, None) if self.record_error.is_some() => "record",
            (None, None) => "",
        }
    }

    /// The exit code of a process whose job was this turn.
    pub fn exit_code(&self) -> ExitCode {
        match self.ceiling() {
            Some(pith_core::CeilingReached::Cost { .. }) => return ExitCode::CostCeiling,
            Some(pith_core::CeilingReached::Duration { .. }) => return ExitCode::TimeCeiling,
            None => {}
        }
        match (&self.error, &self.record_error) {
            (Some(TurnError::Loop(LoopError::Cancelled)), _) => ExitCode::Interrupted,
            (Some(TurnError::Loop(LoopError::ContextTooLarge(_))), _)
            | (
                Some(TurnError::Loop(LoopError::Provider(
                    pith_providers::ProviderError::ContextLengthExceeded { .. },
                ))),
                _,
            ) => ExitCode::ContextTooLarge,
            (Some(TurnError::Loop(LoopError::RepeatedCall { .. })), _) => ExitCode::RepeatedCall,
            (Some(TurnError::SchemaNotMet(_)), _) => ExitCode::SchemaNotMet,
            (Some(_), _) | (None, Some(_)) => ExitCode::Failure,
            (None, None) => ExitCode::Ok,
        }
    }
}

/// One conversation; see the module docs.
pub struct Conversation {
    cwd: PathBuf,
    config: Config,
    overrides: Overrides,
    frontend: Frontend,
    store: SessionStore,
    settings: Settings,
    session: Session,
    /// Created by this process and still without a user message: removed when left.
    unused: bool,
    agent: AgentLoop,
    /// The tools of `agent` (MCP tools are installed into its registry).
    toolset: Toolset,
    /// The conversation's MCP servers, shared by every loop it builds.
    mcp: Option<Arc<McpHub>>,
    /// The MCP tools are in `agent`'s registry.
    mcp_installed: bool,
    /// The hooks that run (user's, and the project's once trusted).
    hooks_config: Arc<HooksConfig>,
    /// The hooks of the current session (also installed in `agent`).
    hooks: Arc<Hooks>,
    /// The `SessionStart` hooks have yet to run for the current session (with this
    /// source), before its next prompt.
    session_start: Option<SessionSource>,
    /// Context the `SessionStart` hooks added, waiting for a prompt that is sent.
    session_context: Option<String>,
    /// What this conversation may delegate, and what it is when it is a child.
    delegation: Delegation,
    /// The child conversations run since the conversation opened (for `/context`).
    children: Vec<ChildRun>,
    /// Instruction files the user was warned about (cut to their share of the window).
    instructions_warned: std::collections::BTreeSet<String>,
    /// What compaction did and cost since the conversation opened (`/context`).
    compaction_totals: CompactionTotals,
    /// What the conversation (and its subagents) spent, against its ceilings.
    meter: Arc<SpendMeter>,
    /// The schema the final answer must match (`--output-schema`).
    output_schema: Option<Arc<OutputSchema>>,
    /// OpenTelemetry export, when configured (a top-level conversation only).
    telemetry: Option<Arc<Telemetry>>,
}

/// What a conversation may delegate to subagents, and what it is when it is one.
#[derive(Debug, Clone)]
struct Delegation {
    /// The agents offered to `task`.
    agents: Agents,
    /// `[agents]` limits.
    limits: SubagentLimits,
    /// Set for a child conversation.
    child: Option<ChildSpec>,
}

impl Conversation {
    /// Opens a new or resumed conversation, resolving the settings once: `overrides`,
    /// then the configuration files of the workspace, then the defaults.
    pub fn open(
        overrides: Overrides,
        frontend: Frontend,
    ) -> Result<Opened<Conversation>, ConversationError> {
        Self::open_with(overrides, frontend, None)
    }

    /// Opens a child conversation for a `task` call (see [`crate::subagents::child`]): a
    /// new session running `spec`'s agent, with its system prompt and tools, no MCP
    /// servers and no prompt hooks.
    pub fn open_child(
        overrides: Overrides,
        frontend: Frontend,
        spec: ChildSpec,
    ) -> Result<Opened<Conversation>, ConversationError> {
        Self::open_with(overrides, frontend, Some(spec))
    }

    fn open_with(
        overrides: Overrides,
        frontend: Frontend,
        child: Option<ChildSpec>,
    ) -> Result<Opened<Conversation>, ConversationError> {
        let cwd = std::fs::canonicalize(&overrides.cwd).map_err(|e| {
            ConversationError::usage(format!(
                "cannot use {} as the workspace: {e}",
                overrides.cwd.display()
            ))
        })?;
        let config = Config::load(&cwd, frontend.env.as_ref()).map_err(ConversationError::usage)?;
        let store =
            SessionStore::from_lookup(frontend.env.as_ref()).map_err(ConversationError::usage)?;
        let mut notices = Vec::new();
        let servers = match child {
            // Children get no MCP servers: each would start its own.
            Some(_) => crate::mcp::McpServers {
                servers: Vec::new(),
                notices: Vec::new(),
            },
            None => crate::mcp::configured_servers(
                &cwd,
                &config,
                &frontend.env,
                overrides.trust_project,
            )?,
        };
        notices.extend(servers.notices);
        let configured_agents = crate::subagents::catalog::configured_agents(
            &cwd,
            &frontend.env,
            overrides.trust_project,
        )?;
        if child.is_none() {
            notices.extend(configured_agents.notices);
        }
        let delegation = Delegation {
            agents: configured_agents.agents,
            limits: SubagentLimits::from_table(&config.agents)
                .map_err(|e| ConversationError::usage(format!("invalid configuration: {e}")))?,
            child,
        };
        let configured =
            crate::hooks::configured_hooks(&cwd, &config, &frontend.env, overrides.trust_project)?;
        notices.extend(configured.notices);
        let hooks_config = Arc::new(configured.config);
        let query = match &overrides.session {
            SessionChoice::New => None,
            SessionChoice::Resume(query) => Some(query.clone()),
            SessionChoice::Latest => {
                let latest = store
                    .latest_session_id(&cwd)
                    .map_err(ConversationError::session)?;
                if latest.is_none() {
                    notices.push("No earlier session in this project; starting a new one.".into());
                }
                latest
            }
        };
        let resumed = match query {
            Some(query) => Some(store.resume(&query).map_err(ConversationError::session)?),
            None => None,
        };
        let recorded = resumed.as_ref().and_then(|r| r.recorded_model.as_deref());
        let settings = Settings::resolve(&overrides, recorded, &config, frontend.env.as_ref())
            .map_err(ConversationError::usage)?;
        notices.extend(settings.notices.iter().cloned());
        // A subagent spends from its parent's account.
        let meter = match &delegation.child {
            Some(child) => Arc::clone(&child.meter),
            None => Arc::new(SpendMeter::new(settings.ceilings)),
        };
        let (mut session, history, records, unused) = match resumed {
            Some(resumed) => {
                notices.extend(resumed.warnings.iter().map(|w| format!("warning: {w}")));
                (
                    resumed.session,
                    resumed.history,
                    Some(resumed.records),
                    false,
                )
            }
            None => (
                create_session(
                    &store,
                    &cwd,
                    &settings,
                    delegation.child.as_ref().map(|c| c.parent_session.as_str()),
                )?,
                Vec::new(),
                None,
                true,
            ),
        };
        let ledger = match &records {
            Some(records) => crate::ledger::rebuild(&cwd, records),
            None => crate::ledger::fresh(&cwd),
        };
        let source = if records.is_some() {
            SessionSource::Resume
        } else {
            SessionSource::New
        };
        let (agent, toolset, hooks) = build_agent(
            &cwd,
            &settings,
            &frontend,
            &mut session,
            history,
            ledger,
            &hooks_config,
            (&overrides, &delegation, &meter),
        )?;
        let telemetry = match &delegation.child {
            Some(_) => None,
            None => start_telemetry(&config, &frontend.env, session.id(), &mut notices)?,
        };
        let mcp = crate::mcp::start(servers.servers, &frontend.env, &cwd);
        let (_, cut) = settings.system_prompt(&cwd);
        let instructions_warned = cut.iter().map(|c| c.name.clone()).collect();
        if delegation.child.is_none() {
            notices.extend(settings.instruction_warnings(&cut));
        }
        // A child's prompt comes from its parent's model: no prompt hooks run for it.
        let session_start = delegation.child.is_none().then_some(source);
        Ok(Opened {
            value: Conversation {
                cwd,
                config,
                overrides,
                frontend,
                store,
                settings,
                session,
                unused,
                agent,
                toolset,
                mcp,
                mcp_installed: false,
                hooks_config,
                hooks,
                session_start,
                session_context: None,
                delegation,
                children: Vec::new(),
                instructions_warned,
                compaction_totals: CompactionTotals::default(),
                meter,
                output_schema: None,
                telemetry,
            },
            notices,
            resumed: records,
        })
    }

    /// Runs one user turn: records the message, runs the loop with `sink` receiving its
    /// events, records the end of the turn. `cancel` stops the whole turn.
    pub async fn run_turn(
        &mut self,
        text: &str,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        self.run_message(Message::user(text), sink, cancel).await
    }

    /// The user message for `text` with the images its `@paths` name (see
    /// [`crate::attachments`]), and a notice per image left out.
    pub fn user_message(&self, text: &str) -> (Message, Vec<String>) {
        crate::attachments::user_message(text, &self.cwd, self.settings.image_limits())
    }

    /// [`Conversation::run_turn`] with a prepared user message (text and images). The
    /// turn runs under the time ceiling, if there is one (see [`crate::ceilings`]).
    pub async fn run_message(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let Some(telemetry) = self.telemetry.clone() else {
            return self.run_message_untraced(user, sink, cancel).await;
        };
        let prompt = user.text_content();
        let mut trace = TurnTrace::start(
            &telemetry,
            sink,
            "turn",
            self.traced_model(),
            self.session.id(),
            Some(&prompt),
        );
        let outcome = self.run_message_untraced(user, &mut trace, cancel).await;
        let answer = match &outcome.structured_output {
            Some(value) => value.to_string(),
            None => outcome.text.clone(),
        };
        let error = outcome
            .error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| outcome.record_error.clone());
        let usage = outcome.total_usage();
        trace.finish(TurnFacts {
            requests: outcome.summary.requests,
            tool_calls: outcome.summary.tool_calls,
            usage,
            cost: pith_core::usage_cost(&usage, self.settings.model.pricing.as_ref()),
            exit_code: outcome.exit_code().code(),
            answer: Some(&answer),
            error: error.as_deref(),
            error_type: outcome.error_kind(),
        });
        outcome
    }

    /// The model as telemetry names it.
    fn traced_model(&self) -> TracedModel {
        TracedModel {
            spec: self.settings.model.spec(),
            id: self.settings.model.model.clone(),
            pricing: self.settings.model.pricing,
        }
    }

    async fn run_message_untraced(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let deadline = TurnDeadline::start(&self.meter, cancel, self.delegation.child.is_some());
        let schema = self.output_schema.clone();
        self.agent.options_mut().output = schema.as_ref().map(|s| s.request(false));
        let mut outcome = self.run_message_until(user, sink, cancel, &deadline).await;
        if let Some(schema) = schema {
            if outcome.error.is_none() && outcome.record_error.is_none() {
                self.check_output(&schema, &mut outcome, sink, cancel, &deadline)
                    .await;
            }
        }
        outcome.error = outcome.error.map(|error| match error {
            TurnError::Loop(error) => TurnError::Loop(crate::ceilings::explain(
                error,
                cancel,
                &deadline,
                &self.meter,
            )),
            other => other,
        });
        outcome
    }

    /// Sets the schema the final answer of every turn must match (`--output-schema`;
    /// see [`crate::output_schema`]): its instructions follow each prompt, each request
    /// asks for it natively where the protocol can, and an answer that does not validate
    /// gets one correction.
    pub fn set_output_schema(&mut self, schema: Option<OutputSchema>) {
        self.output_schema = schema.map(Arc::new);
    }

    /// Validates the turn's final answer against `schema`; when it does not match, asks
    /// the model once to correct it (a recorded follow-up turn whose request forces the
    /// answer where the protocol can) and validates again.
    async fn check_output(
        &mut self,
        schema: &OutputSchema,
        outcome: &mut TurnOutcome,
        sink: &mut dyn EventSink,
        user_cancel: &CancellationToken,
        deadline: &TurnDeadline,
    ) {
        let mismatch = match schema.validate(&self.last_answer()) {
            Ok(value) => {
                outcome.structured_output = Some(value);
                return;
            }
            Err(mismatch) => mismatch,
        };
        sink.emit(LoopEvent::Notice(format!(
            "the answer does not match the output schema ({mismatch}); asking the model once to correct it"
        )));
        self.agent.options_mut().output = Some(schema.request(true));
        let correction = Message::user(schema.correction(&mismatch));
        let next = self
            .run_recorded(correction, sink, user_cancel, deadline)
            .await;
        self.agent.options_mut().output = Some(schema.request(false));
        let failed = next.error.is_some() || next.record_error.is_some();
        outcome.absorb(next);
        if failed {
            return;
        }
        match schema.validate(&self.last_answer()) {
            Ok(value) => outcome.structured_output = Some(value),
            Err(mismatch) => outcome.error = Some(TurnError::SchemaNotMet(mismatch)),
        }
    }

    /// The text of the last assistant message: the turn's final answer.
    fn last_answer(&self) -> String {
        self.agent
            .history()
            .last()
            .filter(|m| m.role == pith_core::Role::Assistant)
            .map(Message::text_content)
            .unwrap_or_default()
    }

    async fn run_message_until(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        user_cancel: &CancellationToken,
        deadline: &TurnDeadline,
    ) -> TurnOutcome {
        let cancel = deadline.token();
        let mut user = if self.delegation.child.is_some() {
            user
        } else {
            match self.before_prompt(user, sink, cancel).await {
                Ok(user) => user,
                Err(error) => {
                    return TurnOutcome {
                        error: Some(error),
                        ..TurnOutcome::default()
                    }
                }
            }
        };
        if let Some(schema) = &self.output_schema {
            append_text(&mut user, &schema.instructions());
        }
        self.run_recorded(user, sink, user_cancel, deadline).await
    }

    /// Records `user`, runs the loop's turn for it and records the end of the turn.
    async fn run_recorded(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        user_cancel: &CancellationToken,
        deadline: &TurnDeadline,
    ) -> TurnOutcome {
        let cancel = deadline.token();
        let user = match self.fit_user_message(user, sink) {
            Ok(user) => user,
            Err(error) => {
                return TurnOutcome {
                    error: Some(error),
                    ..TurnOutcome::default()
                }
            }
        };
        if let Err(error) = self.session.append(Event::UserMessage {
            message: user.clone(),
        }) {
            return TurnOutcome {
                error: Some(TurnError::Record(format!(
                    "cannot record the message, so it was not sent: {error}"
                ))),
                ..TurnOutcome::default()
            };
        }
        self.unused = false;
        self.session_context = None;
        self.prepare_mcp_tools(sink, cancel).await;
        // Edits to AGENTS.md or PITH.md apply from the next turn; an unchanged prompt
        // stays byte-identical for the prompt cache.
        let (prompt, cut) = self.system_prompt();
        if self.delegation.child.is_none() {
            for file in cut {
                if self.instructions_warned.insert(file.name.clone()) {
                    let warning = self.settings.instruction_warnings(&[file]);
                    for line in warning {
                        sink.emit(LoopEvent::Notice(line));
                    }
                }
            }
        }
        if prompt != self.agent.system_prompt() {
            self.agent.set_system_prompt(prompt);
        }
        let mut recorder = TurnRecorder::new();
        let result = {
            let mut recording = Recording {
                recorder: &mut recorder,
                session: &mut self.session,
                frontend: sink,
            };
            self.agent.run_turn(user, &mut recording, cancel).await
        };
        // MCP failures during the turn: the model had each as a tool error; tell the user.
        if let Some(hub) = &self.mcp {
            for notice in hub.take_notices().await {
                sink.emit(LoopEvent::Notice(notice));
            }
        }
        let (summary, error) = match result {
            Ok(summary) => (summary, None),
            Err(failure) => (
                failure.summary,
                Some(crate::ceilings::explain(
                    failure.error,
                    user_cancel,
                    deadline,
                    &self.meter,
                )),
            ),
        };
        let interrupted = matches!(error, Some(LoopError::Cancelled));
        let record_error = recorder
            .finish(
                &mut self.session,
                interrupted,
                error.as_ref().map(ToString::to_string),
            )
            .err()
            .map(|e| format!("cannot record the end of the turn: {e}"));
        let children = recorder.children().to_vec();
        self.children.extend(children.iter().cloned());
        let compaction = recorder.compaction_totals();
        self.compaction_totals += compaction;
        TurnOutcome {
            compaction,
            text: recorder.final_text(),
            summary,
            compactions: recorder.compactions().to_vec(),
            error: error.map(TurnError::Loop),
            record_error,
            children,
            structured_output: None,
        }
    }

    /// The system prompt as of now: the base instructions, or a child's agent prompt,
    /// with the environment and the project's instruction files read afresh (within
    /// their share of the window), and the files cut to fit.
    fn system_prompt(&self) -> (String, Vec<CutInstructions>) {
        match &self.delegation.child {
            Some(child) => {
                let counter = self.settings.counter();
                let prompt = pith_providers::models::project::agent_system_prompt_for(
                    &self.cwd,
                    &child.agent.prompt,
                    self.settings.concise_output,
                    Some(self.settings.instruction_budget(&counter)),
                );
                (prompt, Vec::new())
            }
            None => self.settings.system_prompt(&self.cwd),
        }
    }

    /// The user's message within its share of the window (`[context]
    /// user_message_percent`): a larger one is stored beside the transcript and sent as
    /// its head and tail with the file to read (see [`crate::oversized`]); the user is
    /// told in one line. `Err` when it cannot be stored: then nothing is sent.
    fn fit_user_message(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
    ) -> Result<Message, TurnError> {
        let max_tokens = usize::try_from(
            self.settings
                .context
                .user_message_tokens(self.settings.budget.input_budget),
        )
        .unwrap_or(usize::MAX);
        let counter = Arc::clone(self.agent.counter());
        let spill = self.toolset.env().capture.spill_dir().clone();
        match crate::oversized::fit_user_message(user, max_tokens, counter.as_ref(), &spill) {
            Ok((user, None)) => Ok(user),
            Ok((user, Some(spilled))) => {
                sink.emit(LoopEvent::Notice(spilled.notice(max_tokens)));
                Ok(user)
            }
            Err(error) => Err(TurnError::Record(format!(
                "your message is larger than its share of the context window ({} tokens) and could not be stored beside the transcript, so it was not sent: {error}",
                pith_core::format::thousands(max_tokens as u64)
            ))),
        }
    }

    /// The hooks before a prompt is sent: `SessionStart` (once per session) and
    /// `UserPromptSubmit`. Their runs are recorded and shown; the message to send is the
    /// prompt with their context after it, or the turn ends here when a hook blocked it.
    async fn before_prompt(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Message, TurnError> {
        let text = user.text_content();
        let text = text.as_str();
        let hooks = Arc::clone(&self.hooks);
        let mut runs = Vec::new();
        if let Some(source) = self.session_start.take() {
            let hooked = hooks.session_start(source, cancel).await;
            runs.extend(hooked.runs);
            self.session_context = hooked.value;
        }
        let gate = hooks.user_prompt_submit(text, cancel).await;
        runs.extend(gate.runs);
        self.record_hook_runs(runs, sink);
        if cancel.is_cancelled() {
            return Err(TurnError::Loop(LoopError::Cancelled));
        }
        let prompt_context = match gate.value {
            PromptGate::Block { reason } => return Err(TurnError::Blocked(reason)),
            PromptGate::Proceed { context } => context,
        };
        let mut added = String::new();
        if let Some(context) = &self.session_context {
            added.push_str(&context_block(HookEvent::SessionStart, context));
        }
        if let Some(context) = prompt_context {
            added.push_str(&context_block(HookEvent::UserPromptSubmit, &context));
        }
        let mut user = user;
        append_text(&mut user, &added);
        Ok(user)
    }

    /// Records hook runs that happened outside the loop and shows them to `sink`. A run
    /// that cannot be recorded is still shown, with a notice.
    fn record_hook_runs(&mut self, runs: Vec<HookRun>, sink: &mut dyn EventSink) {
        for run in runs {
            match self.session.append(Event::HookRun(run.clone())) {
                Ok(_) => self.unused = false,
                Err(error) => sink.emit(LoopEvent::Notice(format!(
                    "cannot record the {} hook's run: {error}",
                    run.event
                ))),
            }
            sink.emit(LoopEvent::Hook(run));
        }
    }

    /// Waits for the MCP servers to start (each within its start-up timeout), tells
    /// `sink` about those that failed, and installs their tools into the loop's registry,
    /// once per loop. [`Conversation::run_turn`] does it first; a front-end may do it
    /// earlier (e.g. for `/context`). Free once done.
    pub async fn prepare_mcp_tools(
        &mut self,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) {
        let Some(hub) = self.mcp.clone() else {
            return;
        };
        if self.mcp_installed {
            return;
        }
        tokio::select! {
            () = hub.wait_started() => {}
            () = cancel.cancelled() => return,
        }
        for notice in hub.take_notices().await {
            sink.emit(LoopEvent::Notice(notice));
        }
        let budget = self.settings.budget.input_budget
            * u64::from(self.settings.context.mcp_defer_percent)
            / 100;
        let registry = self.toolset.registry();
        let counter = self.agent.counter().clone();
        let installed = hub
            .install(&registry, self.toolset.env(), budget, counter.as_ref())
            .await;
        if installed.deferred {
            pith_mcp::reload_from_history(&registry.loader(), self.agent.history());
        }
        self.mcp_installed = true;
    }

    /// Tokens of the MCP tool definitions the next request advertises (the loader and
    /// its catalog included): the `/context` row.
    pub fn mcp_definition_tokens(&self) -> usize {
        let definitions: Vec<_> = self
            .agent
            .tools()
            .definitions()
            .into_iter()
            .filter(|d| pith_mcp::is_mcp_definition(&d.name))
            .collect();
        pith_core::tokens::count_tools(self.agent.counter().as_ref(), &definitions)
    }

    /// The conversation's MCP servers, if any are configured.
    pub fn mcp(&self) -> Option<&Arc<McpHub>> {
        self.mcp.as_ref()
    }

    /// Manual compaction (`/compact [focus]`): the summary streams to `sink`; on success
    /// the replacement was persisted, then installed. On failure or cancellation the
    /// history is unchanged.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        let Some(telemetry) = self.telemetry.clone() else {
            return self.compact_untraced(focus, sink, cancel).await;
        };
        let mut trace = TurnTrace::start(
            &telemetry,
            sink,
            "compaction manual",
            self.traced_model(),
            self.session.id(),
            focus,
        );
        let result = self.compact_untraced(focus, &mut trace, cancel).await;
        trace.finish_manual_compaction(&result);
        result
    }

    async fn compact_untraced(
        &mut self,
        focus: Option<&str>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        let mut recorder = TurnRecorder::new();
        let result = {
            let mut recording = Recording {
                recorder: &mut recorder,
                session: &mut self.session,
                frontend: sink,
            };
            self.agent.compact(focus, &mut recording, cancel).await
        };
        self.compaction_totals += recorder.compaction_totals();
        result
    }

    /// Continues this conversation with another model (`/model provider/model`): the
    /// history stays, the settings are resolved again for the new model. Returns the
    /// notices to show.
    pub fn switch_model(&mut self, spec: &str) -> Result<Vec<String>, ConversationError> {
        let overrides = Overrides {
            model: Some(spec.to_owned()),
            ..self.overrides.clone()
        };
        let settings =
            Settings::resolve(&overrides, None, &self.config, self.frontend.env.as_ref())
                .map_err(ConversationError::usage)?;
        let history = self.agent.history().to_vec();
        let (agent, toolset, hooks) = build_agent(
            &self.cwd,
            &settings,
            &self.frontend,
            &mut self.session,
            history,
            self.agent.ledger().clone(),
            &self.hooks_config,
            (&overrides, &self.delegation, &self.meter),
        )?;
        let notices = settings.notices.clone();
        self.overrides = overrides;
        self.settings = settings;
        self.agent = agent;
        self.toolset = toolset;
        self.hooks = hooks;
        self.mcp_installed = false;
        Ok(notices)
    }

    /// Starts a new session with the same settings (`/clear`). The previous session is
    /// closed, and removed if it was never used.
    pub fn clear(&mut self) -> Result<(), ConversationError> {
        let mut session = create_session(&self.store, &self.cwd, &self.settings, None)?;
        let built = build_agent(
            &self.cwd,
            &self.settings,
            &self.frontend,
            &mut session,
            Vec::new(),
            crate::ledger::fresh(&self.cwd),
            &self.hooks_config,
            (&self.overrides, &self.delegation, &self.meter),
        )?;
        self.replace_session(session, built, true);
        self.session_start = Some(SessionSource::New);
        Ok(())
    }

    /// Switches to another recorded session of any project (`/resume ID`), with its
    /// recorded model. The previous session is closed, and removed if it was never used.
    pub fn resume(&mut self, query: &str) -> Result<Opened<()>, ConversationError> {
        let target = self
            .store
            .locate(query)
            .map_err(ConversationError::session)?;
        if same_dir(&target, self.session.dir()) {
            return Err(ConversationError::Usage(
                "That is the current session.".into(),
            ));
        }
        let mut resumed = self
            .store
            .resume(&target.display().to_string())
            .map_err(ConversationError::session)?;
        let overrides = Overrides {
            model: None,
            ..self.overrides.clone()
        };
        let settings = Settings::resolve(
            &overrides,
            resumed.recorded_model.as_deref(),
            &self.config,
            self.frontend.env.as_ref(),
        )
        .map_err(ConversationError::usage)?;
        let built = build_agent(
            &self.cwd,
            &settings,
            &self.frontend,
            &mut resumed.session,
            resumed.history,
            crate::ledger::rebuild(&self.cwd, &resumed.records),
            &self.hooks_config,
            (&overrides, &self.delegation, &self.meter),
        )?;
        let mut notices = settings.notices.clone();
        notices.extend(resumed.warnings.iter().map(|w| format!("warning: {w}")));
        self.settings = settings;
        self.replace_session(resumed.session, built, false);
        self.session_start = Some(SessionSource::Resume);
        Ok(Opened {
            value: (),
            notices,
            resumed: Some(resumed.records),
        })
    }

    fn replace_session(
        &mut self,
        session: Session,
        built: (AgentLoop, Toolset, Arc<Hooks>),
        unused: bool,
    ) {
        let previous = std::mem::replace(&mut self.session, session);
        let was_unused = std::mem::replace(&mut self.unused, unused);
        (self.agent, self.toolset, self.hooks) = built;
        self.session_context = None;
        self.mcp_installed = false;
        self.children.clear();
        retire(previous, was_unused);
    }

    /// Closes the conversation; a session this process created and never used is
    /// removed, so session lists do not fill up with empty ones.
    pub fn close(self) {
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown();
        }
        retire(self.session, self.unused);
    }

    /// The sessions of this conversation's project, newest activity first.
    pub fn project_sessions(&self) -> Result<Vec<SessionSummary>, ConversationError> {
        self.store
            .list_sessions(Some(&self.cwd))
            .map_err(ConversationError::session)
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// The transcript file.
    pub fn transcript_path(&self) -> &Path {
        self.session.transcript_path()
    }

    /// pith's data directory (sessions, logs, the REPL's input history).
    pub fn data_dir(&self) -> Option<&Path> {
        self.store.root().parent()
    }

    /// The workspace.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `provider/model`.
    pub fn model_spec(&self) -> String {
        self.settings.model.spec()
    }

    /// The budget in force.
    pub fn budget(&self) -> ContextBudget {
        self.settings.budget
    }

    /// Tool permissions.
    pub fn approval(&self) -> PermissionMode {
        self.settings.approval
    }

    /// The permission policy of the current session's tools, to switch the approval
    /// mode while the conversation runs (ACP's `session/set_mode`). `/model`, `/clear`
    /// and `/resume` build a new policy from the settings' mode.
    pub fn permissions(&self) -> Arc<pith_tools::PermissionPolicy> {
        self.toolset.permissions()
    }

    /// Whether automatic compaction is on.
    pub fn auto_compaction(&self) -> bool {
        self.settings.loop_options.auto_compaction
    }

    /// What compaction did and cost since the conversation opened (manual compactions
    /// included): the `/context` rows.
    pub fn compaction_totals(&self) -> CompactionTotals {
        self.compaction_totals
    }

    /// The cost of `usage` in US dollars: the provider's own figure when it reported one,
    /// else the model's prices; `None` when neither is known.
    pub fn cost_of(&self, usage: &Usage) -> Option<f64> {
        if usage.provider_cost_nanousd > 0 {
            return Some(usage.provider_cost_nanousd as f64 / 1e9);
        }
        self.settings.model.pricing.map(|p| p.cost(usage))
    }

    /// The conversation's calibration of pith's count against the server's reports.
    pub fn calibration(&self) -> pith_core::context::Calibration {
        self.agent.calibration()
    }

    /// The compaction governor's state: whether automatic compaction is paused and why,
    /// this turn's automatic compactions (`/context`, the REPL's status line).
    pub fn governor(&self) -> &pith_core::context::Governor {
        self.agent.governor()
    }

    /// The estimate of the next request as the history stands.
    pub fn estimate(&mut self) -> RequestEstimate {
        self.agent.estimate()
    }

    /// The session ledger as the next compaction would carry it (`None` when the ledger
    /// is off or has nothing yet), for `/ledger` and `/context`.
    pub fn ledger_preview(&self) -> Option<RenderedLedger> {
        self.agent.render_ledger(false)
    }

    /// The ledger's token budget (0 when it is off).
    pub fn ledger_budget_tokens(&self) -> usize {
        self.agent.ledger_budget_tokens()
    }

    /// The history, without the system prompt.
    pub fn history(&self) -> &[Message] {
        self.agent.history()
    }

    /// The counter the estimate uses.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        self.agent.counter()
    }

    /// The child conversations (`task` calls) run in the current session since it was
    /// opened or switched to, with what each used: the `/context` rows.
    pub fn children(&self) -> &[ChildRun] {
        &self.children
    }

    /// What the conversation and its subagents spent so far, against its ceilings.
    pub fn spend(&self) -> &Arc<SpendMeter> {
        &self.meter
    }

    /// The agents `task` offers (a child at the depth limit has no `task` tool).
    pub fn agents(&self) -> &Agents {
        &self.delegation.agents
    }

    /// The agent this conversation runs, when it is a child.
    pub fn child_agent(&self) -> Option<&str> {
        self.delegation
            .child
            .as_ref()
            .map(|c| c.agent.name.as_str())
    }
}

/// Appends `added` to the message's text (its images stay where they are).
fn append_text(message: &mut Message, added: &str) {
    if added.is_empty() {
        return;
    }
    match message.parts.iter_mut().find_map(|part| match part {
        Part::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) => text.push_str(added),
        None => message.parts.insert(
            0,
            Part::Text {
                text: added.to_owned(),
            },
        ),
    }
}

/// Telemetry, when `[telemetry]` or the `OTEL_*` variables configure it. A telemetry that
/// cannot start is a notice, never a failure of the conversation.
fn start_telemetry(
    config: &Config,
    env: &Env,
    session_id: &str,
    notices: &mut Vec<String>,
) -> Result<Option<Arc<Telemetry>>, ConversationError> {
    if config.project_telemetry_ignored {
        notices.push(
            "the project's [telemetry] is ignored: telemetry is configured in your own config.toml or the OTEL_* variables"
                .into(),
        );
    }
    let resolved = crate::telemetry::resolve(&config.telemetry, env.as_ref())
        .map_err(ConversationError::usage)?;
    notices.extend(resolved.notices);
    let Some(settings) = resolved.settings else {
        return Ok(None);
    };
    let secrets = pith_providers::models::config::secret_variables(config)
        .iter()
        .filter_map(|name| env(name))
        .collect();
    match Telemetry::start(&settings, session_id, secrets) {
        Ok(telemetry) => Ok(Some(Arc::new(telemetry))),
        Err(error) => {
            notices.push(format!("telemetry is off: {error}"));
            Ok(None)
        }
    }
}

/// A new session; a subagent's names its `parent`.
fn create_session(
    store: &SessionStore,
    cwd: &Path,
    settings: &Settings,
    parent: Option<&str>,
) -> Result<Session, ConversationError> {
    let new = NewSession {
        cwd: cwd.to_path_buf(),
        provider: settings.model.provider.clone(),
        model: settings.model.model.clone(),
    };
    match parent {
        Some(parent) => store.create_child(new, parent),
        None => store.create(new),
    }
    .map_err(ConversationError::failure)
}

/// The loop of `session` with its tools, hooks, `history` and session `ledger`, the
/// tool set (MCP tools join its registry before the first turn) and the session's hooks.
/// A child's loop has only its agent's tools; a conversation above the depth limit also
/// gets the `task` tool, whose children start from `overrides`.
#[allow(clippy::too_many_arguments)]
fn build_agent(
    cwd: &Path,
    settings: &Settings,
    frontend: &Frontend,
    session: &mut Session,
    history: Vec<Message>,
    ledger: Ledger,
    hooks_config: &Arc<HooksConfig>,
    (overrides, delegation, meter): (&Overrides, &Delegation, &Arc<SpendMeter>),
) -> Result<(AgentLoop, Toolset, Arc<Hooks>), ConversationError> {
    session.set_max_record_bytes(settings.max_record_bytes);
    let spill_dir = session.spill_dir().map_err(ConversationError::failure)?;
    let mut tools = ToolsConfig::new(cwd, spill_dir)
        .with_mode(settings.approval)
        .with_sandbox(settings.sandbox.clone())
        .with_images(settings.image_limits());
    if let Some(approver) = &frontend.approver {
        tools = tools.with_approver(approver.clone());
    }
    tools.squash = settings.context.squash.clone();
    let tools = Toolset::new(tools).map_err(ConversationError::usage)?;
    let registry = match &delegation.child {
        None => tools.registry(),
        Some(child) => {
            let all = tools.registry();
            ToolRegistry::new(
                child
                    .agent
                    .tools
                    .iter()
                    .filter_map(|name| all.get(name))
                    .collect(),
            )
        }
    };
    let depth = delegation.child.as_ref().map_or(0, |c| c.depth);
    if depth < delegation.limits.max_depth {
        let launcher = ChildLauncher {
            overrides: overrides.clone(),
            frontend: frontend.clone(),
            parent_model: settings.model.spec(),
            permissions: tools.permissions(),
            capture: tools.env().capture.clone(),
            agents: delegation.agents.clone(),
            limits: delegation.limits,
            depth: depth + 1,
            parent_session: session.id().to_owned(),
            meter: Arc::clone(meter),
            slots: Arc::new(tokio::sync::Semaphore::new(delegation.limits.max_parallel)),
            questions: Arc::default(),
        };
        registry.register(Arc::new(TaskTool::new(Arc::new(launcher))));
    } else {
        registry.defer(Arc::new(DepthLimit {
            max_depth: delegation.limits.max_depth,
        }));
    }
    let mut agent = settings
        .build_loop(cwd, registry)
        .map_err(ConversationError::usage)?;
    agent.set_history(history);
    agent.set_ledger(ledger);
    let guard = crate::ceilings::spend_guard(meter, settings, Arc::clone(agent.counter()))
        .map_err(ConversationError::usage)?;
    agent.set_spend_guard(guard);
    agent.set_file_probe(tools.disk_probe());
    let hooks = Arc::new(
        Hooks::new(
            Arc::clone(hooks_config),
            SessionInfo {
                session_id: session.id().to_owned(),
                transcript_path: session.transcript_path().to_path_buf(),
                cwd: cwd.to_path_buf(),
            },
            settings.context.squash.clone(),
        )
        .with_approver(frontend.approver.clone()),
    );
    agent.set_hooks(hooks.clone());
    agent.set_repeat_gate(Arc::new(crate::repeat_gate::AskToGoOn::new(
        frontend.approver.clone(),
    )));
    Ok((agent, tools, hooks))
}

fn retire(session: Session, unused: bool) {
    let dir = session.dir().to_path_buf();
    drop(session);
    if unused {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

impl std::fmt::Debug for Conversation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conversation")
            .field("session", &self.session.id())
            .field("model", &self.settings.model.spec())
            .field("cwd", &self.cwd)
            .finish()
    }
}
