//! pith's loop events as ACP `session/update` notifications: the one mapping of this
//! front-end (docs/acp.md has the table).
//!
//! - text and reasoning → `agent_message_chunk`, `agent_thought_chunk`;
//! - a tool call → `tool_call` (kind, title, locations, a diff for `write` / `edit`),
//!   its result → `tool_call_update` with what the model saw (a `bash` output squashed);
//! - usage → `usage_update` (context used against the window, the session's cost);
//! - compaction → `compaction_update` (in progress, completed, cancelled, failed; tokens
//!   before and after and the ledger in `_meta.pith`) and the summary as
//!   `compaction_summary_chunk` — or notices, for a client without `session.compaction`;
//! - notices, the governor, hooks, retries, a cut-off answer → `notice`, or a thought
//!   chunk prefixed `pith:` for a client without `session.notices`;
//! - a subagent's events → `subagent_update` and the child's own session updates, or, for
//!   a client without `subagents`, its tool calls nested in the parent's session.

use std::collections::HashMap;
use std::path::PathBuf;

use agent_client_protocol::v1::schema::{
    CompactionId, CompactionStatus, CompactionSummaryChunk, CompactionUpdate, ContentBlock,
    ContentChunk, Cost, IdleStateUpdate, IdleStopReason, Meta, Notice, NoticeSeverity,
    RunningStateUpdate, SessionId, SessionNotification, SessionUpdate, StateUpdate, SubagentUpdate,
    ToolCallId, ToolCallUpdate, ToolCallUpdateFields, UsageUpdate,
};
use pith_agent::Prices;
use pith_core::events::MicroReason;
use pith_core::rewrite::MicroCompaction;
use pith_core::{
    AutoCompaction, HookOutcome, HookRun, LoopEvent, SubagentEvent, ToolCall, ToolResult,
};
use pith_session::SessionSpend;
use serde_json::{json, Value};

use crate::running::{RunningCall, RunningCalls};
use crate::tool_calls;

/// What the client said it can show (`initialize`'s client capabilities).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientView {
    /// `session.compaction`: compaction updates and summary chunks.
    pub compaction: bool,
    /// `session.notices`: notices.
    pub notices: bool,
    /// `subagents`: child sessions announced with `subagent_update`.
    pub subagents: bool,
}

/// The model figures a `usage_update` needs.
#[derive(Debug, Clone)]
pub struct ModelFigures {
    /// The context window, tokens.
    pub window: u64,
    /// The model the session's requests go to (`provider/model`).
    pub model: String,
    /// Every model's prices (the session's cost: its own requests and its subagents').
    pub prices: Prices,
}

/// Turns one session's loop events into notifications; it keeps what the mapping needs
/// across events (the compaction in progress, the subagents announced, the usage so far).
#[derive(Debug)]
pub struct EventMapper {
    session: SessionId,
    cwd: PathBuf,
    view: ClientView,
    figures: ModelFigures,
    /// What the session's requests spent so far, by model (its cost;
    /// `pith_session::spend` says how it is counted, here from the events, after a load
    /// from the records).
    spent: SessionSpend,
    /// Compactions started in this session (their ids).
    compactions: u64,
    /// The automatic compaction in progress.
    compaction: Option<CompactionId>,
    running: RunningCalls,
    /// For a subagent shown inside its parent's session: how its ids and titles are
    /// told apart from the parent's.
    nested: Option<Nesting>,
    /// The subagents seen, by child session id.
    children: HashMap<String, EventMapper>,
    /// This mapper shows a subagent.
    child: bool,
}

/// How a subagent's events show in its parent's session (a client without
/// `subagents`).
#[derive(Debug, Clone)]
struct Nesting {
    /// Prefix of the child's tool call and compaction ids (its session id).
    ids: String,
    /// The agent, in front of titles.
    agent: String,
    /// The parent's `task` call.
    parent_call: String,
}

impl EventMapper {
    /// A mapper for `session` (workspace `cwd`), for a client that shows `view`.
    pub fn new(
        session: SessionId,
        cwd: PathBuf,
        view: ClientView,
        figures: ModelFigures,
        running: RunningCalls,
    ) -> Self {
        Self {
            session,
            cwd,
            view,
            figures,
            spent: SessionSpend::default(),
            compactions: 0,
            compaction: None,
            running,
            nested: None,
            children: HashMap::new(),
            child: false,
        }
    }

    /// What the session spent before this mapper saw any of it (a loaded session's, from
    /// its records), for its cost.
    pub fn add_spent(&mut self, spend: &SessionSpend) {
        self.spent.add_all(spend);
    }

    /// The model changed (`/model`).
    pub fn set_figures(&mut self, figures: ModelFigures) {
        self.figures = figures;
    }

    /// The running calls this mapper records (shared with the session's approver).
    pub fn running(&self) -> &RunningCalls {
        &self.running
    }

    /// A tool call announced (nested under its parent call for a client without subagents).
    fn tool_started(&mut self, call: &ToolCall, out: &mut Vec<SessionNotification>) {
        let id = self.call_id(&call.id);
        self.running.start(RunningCall {
            session: self.session.clone(),
            id: id.clone(),
            tool: call.name.clone(),
        });
        let mut announced = tool_calls::started(&id, call, &self.cwd, true);
        if let Some(nesting) = &self.nested {
            announced.title = format!("[{}] {}", nesting.agent, announced.title);
            announced.meta = Some(pith_meta(json!({"parentToolCallId": nesting.parent_call})));
        }
        self.push(out, SessionUpdate::ToolCall(announced));
    }

    /// A tool call's result, and a subagent's end with its spend.
    fn tool_finished(
        &mut self,
        call: &ToolCall,
        result: &ToolResult,
        out: &mut Vec<SessionNotification>,
    ) {
        let id = self.call_id(&call.id);
        self.running.finish(&id);
        let terminal = self.running.take_terminal(&id);
        self.push(
            out,
            SessionUpdate::ToolCallUpdate(tool_calls::finished(&id, result, terminal)),
        );
        if let Some(child) = &result.child_session {
            self.spent.add(&child.model, child.usage);
            self.child_finished(&child.session_id, result.is_error, out);
        }
    }

    /// A micro-compaction or an overflow fitting: a completed compaction update (or a
    /// notice) and the new usage.
    fn micro_compaction(&mut self, step: &MicroCompaction, out: &mut Vec<SessionNotification>) {
        let (trigger, text) = match step.reason {
            MicroReason::Prune => (
                "micro",
                format!(
                    "Old tool outputs cleared ({} → {} tokens)",
                    step.tokens_before, step.tokens_after
                ),
            ),
            MicroReason::Overflow => (
                "overflow",
                format!(
                    "The request was fitted to the context window ({} → {} tokens)",
                    step.tokens_before, step.tokens_after
                ),
            ),
        };
        if self.view.compaction {
            let id = self.next_compaction_id(trigger);
            let update =
                CompactionUpdate::new(id, CompactionStatus::Completed).meta(pith_meta(json!({
                    "trigger": trigger,
                    "tokensBefore": step.tokens_before,
                    "tokensAfter": step.tokens_after,
                    "durationMs": step.duration_ms,
                })));
            self.push(out, SessionUpdate::CompactionUpdate(update));
        } else {
            self.notice(out, NoticeSeverity::Info, text);
        }
        if self.is_top() {
            self.push(
                out,
                SessionUpdate::UsageUpdate(self.usage_update(step.tokens_after)),
            );
        }
    }

    /// The notifications for `event`, in order.
    pub fn map(&mut self, event: &LoopEvent) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        self.map_into(event, &mut out);
        out
    }

    fn map_into(&mut self, event: &LoopEvent, out: &mut Vec<SessionNotification>) {
        match event {
            LoopEvent::TextDelta(text) if self.nested.is_none() && !text.is_empty() => {
                self.push(out, SessionUpdate::AgentMessageChunk(chunk(text)));
            }
            LoopEvent::ReasoningDelta(text) if self.nested.is_none() && !text.is_empty() => {
                self.push(out, SessionUpdate::AgentThoughtChunk(chunk(text)));
            }
            LoopEvent::ToolCallStarted(call) => self.tool_started(call, out),
            LoopEvent::ToolCallFinished { call, result } => self.tool_finished(call, result, out),
            // A compaction model's summary is charged at its own prices.
            LoopEvent::RequestFinished(report) => {
                let model = report
                    .compaction_model
                    .clone()
                    .unwrap_or_else(|| self.figures.model.clone());
                self.spent.add(&model, report.usage);
            }
            LoopEvent::Usage(usage) => {
                if self.is_top() {
                    let used = usage.input_tokens + usage.output_tokens;
                    self.push(out, SessionUpdate::UsageUpdate(self.usage_update(used)));
                }
            }
            LoopEvent::AutoCompaction(lifecycle) => self.auto_compaction(lifecycle, out),
            LoopEvent::MicroCompaction(step) => self.micro_compaction(step, out),
            LoopEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => self.notice(
                out,
                NoticeSeverity::Warning,
                format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
            ),
            LoopEvent::Hook(run) => {
                if let Some((severity, text)) = hook_notice(run) {
                    self.notice(out, severity, text);
                }
            }
            LoopEvent::Notice(text) => self.notice(out, NoticeSeverity::Info, text.clone()),
            LoopEvent::Governor(notice) => self.notice(out, NoticeSeverity::Warning, notice.text()),
            LoopEvent::OutputTruncated { reason } => self.notice(
                out,
                NoticeSeverity::Warning,
                format!("The answer was cut off: {reason}; incomplete tool calls were not run."),
            ),
            LoopEvent::Subagent(child) => self.subagent(child, out),
            LoopEvent::PlanUpdated(plan) => {
                self.push(out, SessionUpdate::Plan(crate::plan::to_acp(plan)))
            }
            // ACP has no checkpoint update; rewinds are pith's own commands.
            LoopEvent::Checkpoint(_)
            | LoopEvent::TextDelta(_)
            | LoopEvent::ReasoningDelta(_)
            | LoopEvent::RequestStarted { .. }
            | LoopEvent::MessageAppended(_)
            | LoopEvent::TurnFinished { .. } => {}
        }
    }

    /// A manual compaction (`/compact`) started.
    pub fn manual_started(&mut self, tokens_before: u64) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        let id = self.next_compaction_id("manual");
        self.compaction = Some(id.clone());
        if self.view.compaction {
            let update = CompactionUpdate::new(id, CompactionStatus::InProgress).meta(pith_meta(
                json!({"trigger": "manual", "tokensBefore": tokens_before}),
            ));
            self.push(&mut out, SessionUpdate::CompactionUpdate(update));
        } else {
            self.notice(
                &mut out,
                NoticeSeverity::Info,
                format!("Compacting the context ({tokens_before} tokens)…"),
            );
        }
        out
    }

    /// A piece of a manual compaction's summary, which streams visibly.
    pub fn manual_summary(&mut self, text: &str) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        if text.is_empty() {
            return out;
        }
        match (&self.compaction, self.view.compaction) {
            (Some(id), true) => {
                let update = CompactionSummaryChunk::new(id.clone(), ContentBlock::from(text));
                self.push(&mut out, SessionUpdate::CompactionSummaryChunk(update));
            }
            _ => self.push(&mut out, SessionUpdate::AgentMessageChunk(chunk(text))),
        }
        out
    }

    /// The manual compaction ended: `Ok((before, after))`, or why it did not apply.
    pub fn manual_finished(
        &mut self,
        result: Result<(u64, u64), ManualEnd>,
    ) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        let id = self
            .compaction
            .take()
            .unwrap_or_else(|| self.next_compaction_id("manual"));
        let (status, error, text, meta) = match result {
            Ok((before, after)) => (
                CompactionStatus::Completed,
                None,
                format!("Context compacted ({before} → {after} tokens)"),
                json!({"trigger": "manual", "tokensBefore": before, "tokensAfter": after}),
            ),
            Err(ManualEnd::Cancelled) => (
                CompactionStatus::Cancelled,
                None,
                "Compaction cancelled; the history is unchanged".to_owned(),
                json!({"trigger": "manual"}),
            ),
            Err(ManualEnd::Failed(reason)) => (
                CompactionStatus::Failed,
                Some(reason.clone()),
                format!("/compact failed: {reason}; the history is unchanged"),
                json!({"trigger": "manual"}),
            ),
        };
        if self.view.compaction {
            let mut update = CompactionUpdate::new(id, status).meta(pith_meta(meta));
            if let Some(error) = error {
                update = update.error(error);
            }
            self.push(&mut out, SessionUpdate::CompactionUpdate(update));
        } else {
            self.notice(&mut out, NoticeSeverity::Info, text);
        }
        out
    }

    /// A `usage_update` for `used` tokens of the window, with the session's cost so far.
    pub fn usage_update(&self, used: u64) -> UsageUpdate {
        let update = UsageUpdate::new(used, self.figures.window);
        match self.figures.prices.cost(&self.spent) {
            Some(amount) => update.cost(Cost::new(amount, "USD")),
            None => update,
        }
    }

    /// A notification of this mapper's session.
    pub fn notification(&self, update: SessionUpdate) -> SessionNotification {
        SessionNotification::new(self.session.clone(), update)
    }

    /// A notice (see the module docs for clients without notices).
    pub fn notice_updates(
        &mut self,
        severity: NoticeSeverity,
        text: String,
    ) -> Vec<SessionNotification> {
        let mut out = Vec::new();
        self.notice(&mut out, severity, text);
        out
    }

    /// Ends the running automatic compaction as cancelled (`meta` in `_meta.pith`), or
    /// tells `words` to a client without compaction updates.
    fn compaction_cancelled(
        &mut self,
        meta: serde_json::Value,
        words: String,
        out: &mut Vec<SessionNotification>,
    ) {
        let id = self
            .compaction
            .take()
            .unwrap_or_else(|| self.next_compaction_id("auto"));
        if self.view.compaction {
            let update =
                CompactionUpdate::new(id, CompactionStatus::Cancelled).meta(pith_meta(meta));
            self.push(out, SessionUpdate::CompactionUpdate(update));
        } else {
            self.notice(out, NoticeSeverity::Info, words);
        }
    }

    fn auto_compaction(&mut self, lifecycle: &AutoCompaction, out: &mut Vec<SessionNotification>) {
        match lifecycle {
            AutoCompaction::Started {
                tokens_before,
                background,
                ..
            } => self.compaction_started(*tokens_before, *background, out),
            AutoCompaction::Applied {
                summary, figures, ..
            } => {
                let id = self
                    .compaction
                    .take()
                    .unwrap_or_else(|| self.next_compaction_id("auto"));
                if self.view.compaction {
                    if !summary.is_empty() {
                        let chunk = CompactionSummaryChunk::new(
                            id.clone(),
                            ContentBlock::from(summary.as_str()),
                        );
                        self.push(out, SessionUpdate::CompactionSummaryChunk(chunk));
                    }
                    let update = CompactionUpdate::new(id, CompactionStatus::Completed).meta(
                        pith_meta(json!({
                            "trigger": "auto",
                            "tokensBefore": figures.tokens_before,
                            "tokensAfter": figures.tokens_after,
                            "ledgerTokens": figures.ledger_tokens,
                            "durationMs": figures.duration_ms,
                            "waitedMs": figures.waited_ms,
                        })),
                    );
                    self.push(out, SessionUpdate::CompactionUpdate(update));
                } else {
                    let ledger = if figures.ledger_tokens > 0 {
                        format!(", ledger {} tokens", figures.ledger_tokens)
                    } else {
                        String::new()
                    };
                    self.notice(
                        out,
                        NoticeSeverity::Info,
                        format!(
                            "Context compacted automatically ({} → {} tokens{ledger})",
                            figures.tokens_before, figures.tokens_after
                        ),
                    );
                }
                if self.is_top() {
                    self.push(
                        out,
                        SessionUpdate::UsageUpdate(self.usage_update(figures.tokens_after)),
                    );
                }
            }
            AutoCompaction::Cancelled => self.compaction_cancelled(
                json!({"trigger": "auto"}),
                "Automatic compaction cancelled; the turn goes on with the full history".to_owned(),
                out,
            ),
            AutoCompaction::Unused { reason, .. } => self.compaction_cancelled(
                json!({"trigger": "auto", "unused": reason}),
                format!("The summary prepared in the background was not used: {reason}"),
                out,
            ),
            AutoCompaction::Failed { reason } => self.compaction_failed(reason, out),
        }
    }

    /// An automatic compaction started (or a summary started in the background).
    fn compaction_started(
        &mut self,
        tokens_before: u64,
        background: bool,
        out: &mut Vec<SessionNotification>,
    ) {
        let id = self.next_compaction_id("auto");
        self.compaction = Some(id.clone());
        if self.view.compaction {
            let update = CompactionUpdate::new(id, CompactionStatus::InProgress).meta(pith_meta(
                json!({"trigger": "auto", "tokensBefore": tokens_before,
                                 "background": background}),
            ));
            self.push(out, SessionUpdate::CompactionUpdate(update));
        } else if background {
            self.notice(
                out,
                NoticeSeverity::Info,
                format!("Preparing a summary in the background ({tokens_before} tokens); the turn goes on…"),
            );
        } else {
            self.notice(
                out,
                NoticeSeverity::Info,
                format!("Compacting the context automatically ({tokens_before} tokens)…"),
            );
        }
    }

    /// An automatic compaction failed; the turn goes on.
    fn compaction_failed(&mut self, reason: &str, out: &mut Vec<SessionNotification>) {
        let id = self
            .compaction
            .take()
            .unwrap_or_else(|| self.next_compaction_id("auto"));
        if self.view.compaction {
            let update = CompactionUpdate::new(id, CompactionStatus::Failed)
                .error(reason.to_owned())
                .meta(pith_meta(json!({"trigger": "auto"})));
            self.push(out, SessionUpdate::CompactionUpdate(update));
        } else {
            self.notice(
                out,
                NoticeSeverity::Warning,
                format!(
                    "Automatic compaction failed: {reason}; the turn goes on with the full history"
                ),
            );
        }
    }

    fn subagent(&mut self, event: &SubagentEvent, out: &mut Vec<SessionNotification>) {
        if !self.children.contains_key(&event.session_id) {
            let mut child = EventMapper::new(
                SessionId::new(event.session_id.as_str()),
                self.cwd.clone(),
                self.view,
                self.figures.clone(),
                self.running.clone(),
            );
            child.child = true;
            if self.view.subagents {
                let announce = SubagentUpdate::new(SessionId::new(event.session_id.as_str()))
                    .title(event.agent.clone())
                    .description(format!(
                        "the `{}` agent of task call {}",
                        event.agent, event.call_id
                    ))
                    .state(StateUpdate::Running(RunningStateUpdate::new()));
                self.push(out, SessionUpdate::SubagentUpdate(announce));
            } else {
                child.session = self.session.clone();
                child.nested = Some(Nesting {
                    ids: format!("{}/", event.session_id),
                    agent: event.agent.clone(),
                    parent_call: self.call_id(&event.call_id),
                });
            }
            self.children.insert(event.session_id.clone(), child);
        }
        if let Some(child) = self.children.get_mut(&event.session_id) {
            child.map_into(&event.event, out);
        }
    }

    fn child_finished(&mut self, session: &str, failed: bool, out: &mut Vec<SessionNotification>) {
        if !self.view.subagents || !self.children.contains_key(session) {
            return;
        }
        let reason = if failed {
            IdleStopReason::Error(agent_client_protocol::v1::schema::ErrorStopReason::new())
        } else {
            IdleStopReason::EndTurn
        };
        let idle = SubagentUpdate::new(SessionId::new(session)).state(StateUpdate::Idle(
            IdleStateUpdate::new().stop_reason(reason),
        ));
        self.push(out, SessionUpdate::SubagentUpdate(idle));
    }

    fn notice(&self, out: &mut Vec<SessionNotification>, severity: NoticeSeverity, text: String) {
        let text = match &self.nested {
            Some(nesting) => format!("[{}] {text}", nesting.agent),
            None => text,
        };
        if self.view.notices {
            // The first line is the title; the rest (a hook's message, a long reason)
            // the description.
            let notice = match text.split_once('\n') {
                Some((title, rest)) if !rest.trim().is_empty() => {
                    Notice::new(severity, title).description(rest.trim().to_owned())
                }
                _ => Notice::new(severity, text.trim_end()),
            };
            self.push(out, SessionUpdate::Notice(notice));
        } else {
            self.push(
                out,
                SessionUpdate::AgentThoughtChunk(chunk(&format!("\npith: {text}\n"))),
            );
        }
    }

    fn push(&self, out: &mut Vec<SessionNotification>, update: SessionUpdate) {
        out.push(self.notification(update));
    }

    /// True for the conversation the user talks to (not a subagent).
    fn is_top(&self) -> bool {
        !self.child
    }

    fn call_id(&self, id: &str) -> String {
        match &self.nested {
            Some(nesting) => format!("{}{id}", nesting.ids),
            None => id.to_owned(),
        }
    }

    fn next_compaction_id(&mut self, kind: &str) -> CompactionId {
        self.compactions += 1;
        let prefix = self.nested.as_ref().map_or("", |n| n.ids.as_str());
        CompactionId::new(format!("{prefix}{kind}-{}", self.compactions))
    }
}

/// Why a manual compaction did not apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManualEnd {
    /// The user cancelled it.
    Cancelled,
    /// It failed; the reason.
    Failed(String),
}

/// A text chunk.
pub fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text))
}

/// `{"pith": value}`: pith's own figures in an update's `_meta`.
pub fn pith_meta(value: Value) -> Meta {
    let mut meta = Meta::new();
    meta.insert("pith".to_owned(), value);
    meta
}

/// How a hook run shows: blocks and failures always, a successful run only when it has a
/// message for the user.
fn hook_notice(run: &HookRun) -> Option<(NoticeSeverity, String)> {
    let what = format!("{} hook `{}`", run.event, run.command);
    let message = run.message.as_deref().unwrap_or("");
    match run.outcome {
        HookOutcome::Proceed if message.is_empty() => None,
        HookOutcome::Proceed => Some((NoticeSeverity::Info, format!("{what}: {message}"))),
        HookOutcome::Block => Some((
            NoticeSeverity::Warning,
            format!("{what} blocked: {message}"),
        )),
        HookOutcome::Error | HookOutcome::Timeout => {
            Some((NoticeSeverity::Error, format!("{what} failed: {message}")))
        }
    }
}

/// The update ending a call that got no result (the turn stopped while it ran).
pub fn cancelled_call(id: &str) -> ToolCallUpdate {
    ToolCallUpdate::new(
        ToolCallId::new(id),
        ToolCallUpdateFields::new()
            .status(agent_client_protocol::v1::schema::ToolCallStatus::Failed)
            .content(vec!["cancelled".to_owned().into()]),
    )
}
