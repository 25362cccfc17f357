//! The REPL session: start-up (configuration, model, session new / continued / resumed),
//! the prompt loop, turns, `/compact` and the other slash commands.
//!
//! Persistence goes through `pith_session`: the user message before each turn, every loop
//! event through the [`TurnRecorder`] (which writes an automatic compaction's checkpoint
//! and `compaction_applied` atomically), and a manual `/compact`'s single
//! `compaction_applied` only after it succeeded.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_core::context::ContextConfig;
use pith_core::{LoopEvent, Message, Role, TokenCounter};
use pith_providers::config::{Config, ResolvedModel};
use pith_providers::setup::{
    build_agent_loop, default_estimator, resolve_choice, LoopFlags, ModelChoice,
};
use pith_providers::{AgentLoop, LoopError};
use pith_session::{
    project_ui, render, CompactionTrigger, Event, NewSession, Observed, Session, SessionStore,
    TurnRecorder,
};
use pith_tools::{build_registry, PermissionMode, ToolsConfig};
use tokio::runtime::Runtime;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_util::sync::CancellationToken;

use crate::approver::{ApprovalQuestion, ChannelApprover};
use crate::busy::{drive, BusyIo};
use crate::commands::{parse_input, Command, Input, HELP};
use crate::context_view::ContextFigures;
use crate::input::{Entry, LineSource};
use crate::render::{Screen, Tone};
use crate::state::BusyState;
use crate::status::Status;

/// Which session the REPL starts in.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Start {
    /// A new session.
    #[default]
    New,
    /// The latest session of this project (`--continue`).
    Continue,
    /// A given session (`--resume ID`).
    Resume(String),
}

/// The options of `pith` with no subcommand.
#[derive(Debug, Clone, Default)]
pub struct ReplOptions {
    /// `--model provider/model`.
    pub model: Option<String>,
    /// `--context-window`.
    pub context_window: Option<u64>,
    /// `--approval`; default: the configuration's `approval`, else `ask`.
    pub approval: Option<PermissionMode>,
    /// `--no-auto-compact`.
    pub no_auto_compact: bool,
    /// Which session to start in.
    pub start: Start,
    /// The workspace (the current directory).
    pub cwd: PathBuf,
}

/// Why the REPL could not start.
#[derive(Debug, thiserror::Error)]
pub enum ReplError {
    /// Bad options or configuration (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Anything else (exit 1).
    #[error("{0}")]
    Failure(String),
}

impl ReplError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            ReplError::Usage(_) => 2,
            ReplError::Failure(_) => 1,
        }
    }
}

fn usage(error: impl std::fmt::Display) -> ReplError {
    ReplError::Usage(error.to_string())
}

fn failure(error: impl std::fmt::Display) -> ReplError {
    ReplError::Failure(error.to_string())
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Runs the REPL until `/exit`, Ctrl+D or the end of piped input.
pub fn run(options: ReplOptions) -> Result<(), ReplError> {
    let interactive = crate::terminal::is_interactive();
    crate::terminal::install_panic_hook();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| failure(format!("cannot start the async runtime: {e}")))?;
    let screen = Screen::new(Box::new(io::stdout()), interactive);
    let mut app = runtime.block_on(async { App::start(options, screen) })?;
    let history_file = app
        .store
        .root()
        .parent()
        .map(|p| p.join("repl-history.txt"));
    let mut source = if interactive {
        LineSource::editor(history_file)
    } else {
        LineSource::piped()
    };
    app.prompt_loop(&runtime, &mut source);
    app.close();
    drop(source);
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

/// One open conversation: its loop, its session, its model.
struct Conversation {
    agent: AgentLoop,
    session: Session,
    resolved: ResolvedModel,
    /// Created by this process and still without a user message: removed on leave.
    unused: bool,
}

struct App {
    cwd: PathBuf,
    config: Config,
    context: ContextConfig,
    store: SessionStore,
    flags: LoopFlags,
    window_override: Option<u64>,
    mode: PermissionMode,
    approver: Arc<ChannelApprover>,
    approvals: UnboundedReceiver<ApprovalQuestion>,
    counter: Arc<dyn TokenCounter>,
    conversation: Option<Conversation>,
    screen: Screen,
    status: Status,
    queued: VecDeque<String>,
    type_ahead: String,
}

enum Flow {
    Continue,
    Exit,
}

impl App {
    fn start(options: ReplOptions, mut screen: Screen) -> Result<Self, ReplError> {
        let cwd = std::fs::canonicalize(&options.cwd).map_err(|e| {
            usage(format!(
                "cannot use {} as the workspace: {e}",
                options.cwd.display()
            ))
        })?;
        let config = Config::load(&cwd, &env).map_err(usage)?;
        let context = config.context_config().map_err(usage)?;
        let mode = match options.approval {
            Some(mode) => mode,
            None => match &config.approval {
                Some(name) => name.parse().map_err(usage)?,
                None => PermissionMode::Ask,
            },
        };
        let store = SessionStore::from_env().map_err(usage)?;
        let resume_id = match &options.start {
            Start::New => None,
            Start::Resume(id) => Some(id.clone()),
            Start::Continue => {
                let latest = store.latest_session_id(&cwd).map_err(failure)?;
                if latest.is_none() {
                    screen.message(
                        Tone::Dim,
                        "No earlier session in this project; starting a new one.",
                    );
                }
                latest
            }
        };
        let resumed =
            match resume_id {
                Some(id) => Some(store.resume(&id).map_err(|e| {
                    if e.is_usage() {
                        usage(e)
                    } else {
                        failure(e)
                    }
                })?),
                None => None,
            };
        let choice = ModelChoice {
            requested: options.model.clone(),
            recorded: resumed.as_ref().and_then(|r| r.recorded_model.clone()),
            context_window: options.context_window,
        };
        let resolved = resolve_choice(&choice, &config, &env).map_err(usage)?;
        for warning in &resolved.warnings {
            screen.message(Tone::Error, warning);
        }
        let (approver, approvals) = ChannelApprover::new();
        let estimator = default_estimator();
        let counter = estimator.counter().clone();
        let flags = LoopFlags {
            no_auto_compact: options.no_auto_compact,
            max_requests_per_turn: None,
        };
        let status = Status {
            model: resolved.spec(),
            used: 0,
            budget: pith_core::ContextBudget::for_window(resolved.context_window),
            auto_compaction: false,
        };
        let mut app = Self {
            cwd,
            config,
            context,
            store,
            flags,
            window_override: options.context_window,
            mode,
            approver: Arc::new(approver),
            approvals,
            counter,
            conversation: None,
            screen,
            status,
            queued: VecDeque::new(),
            type_ahead: String::new(),
        };
        let conversation = match resumed {
            Some(resumed) => {
                for warning in &resumed.warnings {
                    app.screen
                        .message(Tone::Error, &format!("warning: {warning}"));
                }
                app.show_replay(&resumed.records);
                let agent = app.build_agent(&resumed.session, &resolved, resumed.history)?;
                Conversation {
                    agent,
                    session: resumed.session,
                    resolved,
                    unused: false,
                }
            }
            None => app.new_conversation(resolved)?,
        };
        app.install(conversation);
        app.banner();
        Ok(app)
    }

    fn build_agent(
        &self,
        session: &Session,
        resolved: &ResolvedModel,
        history: Vec<Message>,
    ) -> Result<AgentLoop, ReplError> {
        let spill_dir = session.spill_dir().map_err(failure)?;
        let mut tools_config = ToolsConfig::new(&self.cwd, spill_dir)
            .with_mode(self.mode)
            .with_approver(self.approver.clone());
        tools_config.squash = self.context.squash.clone();
        let tools = build_registry(tools_config).map_err(usage)?;
        let mut agent = build_agent_loop(
            resolved,
            &self.config,
            &self.context,
            &self.cwd,
            tools,
            self.flags,
        )
        .map_err(usage)?;
        agent.set_history(history);
        Ok(agent)
    }

    fn new_conversation(&self, resolved: ResolvedModel) -> Result<Conversation, ReplError> {
        let session = self
            .store
            .create(NewSession {
                cwd: self.cwd.clone(),
                provider: resolved.provider.clone(),
                model: resolved.model.clone(),
            })
            .map_err(failure)?;
        let agent = self.build_agent(&session, &resolved, Vec::new())?;
        Ok(Conversation {
            agent,
            session,
            resolved,
            unused: true,
        })
    }

    /// Makes `conversation` current; the previous one is closed (and removed if unused).
    fn install(&mut self, conversation: Conversation) {
        if let Some(previous) = self.conversation.take() {
            retire(previous);
        }
        self.conversation = Some(conversation);
        self.refresh_status();
    }

    fn refresh_status(&mut self) {
        if let Some(conversation) = &mut self.conversation {
            let estimate = conversation.agent.estimate();
            self.status = Status {
                model: conversation.resolved.spec(),
                used: estimate.total as u64,
                budget: conversation.agent.budget(),
                auto_compaction: conversation.agent.options_mut().auto_compaction,
            };
        }
    }

    fn banner(&mut self) {
        let Some(conversation) = &self.conversation else {
            return;
        };
        let text = format!(
            "pith · {} · session {} · approval {} · /help for commands",
            conversation.resolved.spec(),
            conversation.session.id(),
            self.mode
        );
        self.screen.message(Tone::Dim, &text);
    }

    fn show_replay(&mut self, records: &[pith_session::Record]) {
        let mut rendered = Vec::new();
        if render::ui_text(&project_ui(records), &mut rendered).is_ok() {
            self.screen.block(&String::from_utf8_lossy(&rendered));
        }
    }

    fn close(&mut self) {
        if let Some(conversation) = self.conversation.take() {
            retire(conversation);
        }
    }

    fn prompt_loop(&mut self, runtime: &Runtime, source: &mut LineSource) {
        loop {
            let line = match self.queued.pop_front() {
                Some(line) => {
                    self.screen.message(Tone::Dim, &format!("› {line}"));
                    line
                }
                None => {
                    if self.screen.is_interactive() {
                        let status = self.status.text();
                        self.screen.message(Tone::Dim, &status);
                    }
                    let initial = std::mem::take(&mut self.type_ahead);
                    match source.read(&initial) {
                        Ok(Entry::Line(line)) => line,
                        Ok(Entry::Interrupted) => {
                            self.screen
                                .message(Tone::Dim, "(Ctrl+D on an empty prompt or /exit leaves)");
                            continue;
                        }
                        Ok(Entry::End) => break,
                        Err(e) => {
                            self.screen
                                .message(Tone::Error, &format!("cannot read input: {e}"));
                            break;
                        }
                    }
                }
            };
            let flow = match parse_input(&line) {
                Input::Empty => Flow::Continue,
                Input::Invalid(message) => {
                    self.screen.message(Tone::Error, &message);
                    Flow::Continue
                }
                Input::Prompt(text) => {
                    runtime.block_on(self.turn(text));
                    Flow::Continue
                }
                Input::Command(command) => self.command(runtime, command),
            };
            if matches!(flow, Flow::Exit) {
                break;
            }
        }
    }

    fn command(&mut self, runtime: &Runtime, command: Command) -> Flow {
        match command {
            Command::Exit => return Flow::Exit,
            Command::Help => self.help(),
            Command::Compact { focus } => runtime.block_on(self.compact(focus)),
            Command::Context => self.context_report(),
            Command::Sessions => self.sessions(),
            Command::Resume { id } => self.resume(&id),
            Command::Clear => self.clear(),
            Command::Model { name } => self.switch_model(name),
        }
        Flow::Continue
    }

    fn help(&mut self) {
        let mut text = String::from("Commands:\n");
        for (usage, what) in HELP {
            text.push_str(&format!("  {usage:<18} {what}\n"));
        }
        text.push_str(
            "Keys while pith works: Esc cancels a running compaction (the answer keeps \
             streaming), Ctrl+C stops the turn.\nAt the prompt: Alt+Enter or a trailing \\ \
             for a new line, Ctrl+D on an empty prompt leaves.",
        );
        self.screen.block(&text);
    }

    async fn turn(&mut self, text: String) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let user = Message::user(text);
        if let Err(error) = conversation.session.append(Event::UserMessage {
            message: user.clone(),
        }) {
            self.screen.message(
                Tone::Error,
                &format!("cannot record the message, so it was not sent: {error}"),
            );
            return;
        }
        conversation.unused = false;
        let cancel = CancellationToken::new();
        let mut busy = BusyState::turn(cancel.clone());
        let mut recorder = TurnRecorder::new();
        let (tx, mut rx) = unbounded_channel();
        let Conversation { agent, session, .. } = conversation;
        self.screen.start_answer();
        let outcome = drive(
            agent.run_turn(user, &tx, &cancel),
            &mut busy,
            &mut rx,
            BusyIo {
                screen: &mut self.screen,
                approvals: &mut self.approvals,
                status: &mut self.status,
            },
            |event, busy, screen, status| {
                on_turn_event(event, busy, screen, status, &mut recorder, session)
            },
        )
        .await;
        let error = outcome.err().map(|failure| failure.error);
        let interrupted = matches!(error, Some(LoopError::Cancelled));
        if let Err(e) = recorder.finish(session, interrupted, error.as_ref().map(|e| e.to_string()))
        {
            self.screen.message(
                Tone::Error,
                &format!("cannot record the end of the turn: {e}"),
            );
        }
        match error {
            None => {}
            Some(LoopError::Cancelled) => self
                .screen
                .message(Tone::Dim, "Turn stopped; what was shown is saved."),
            Some(other) => self.screen.message(Tone::Error, &format!("error: {other}")),
        }
        self.finish_busy(busy);
    }

    async fn compact(&mut self, focus: Option<String>) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let snapshot = conversation.agent.history().to_vec();
        let cancel = CancellationToken::new();
        let mut busy = BusyState::manual_compaction(cancel.clone());
        let (tx, mut rx) = unbounded_channel();
        let Conversation { agent, session, .. } = conversation;
        self.screen.start_answer();
        let outcome = drive(
            agent.compact(focus.as_deref(), &tx, &cancel),
            &mut busy,
            &mut rx,
            BusyIo {
                screen: &mut self.screen,
                approvals: &mut self.approvals,
                status: &mut self.status,
            },
            on_compact_event,
        )
        .await;
        match outcome {
            Ok(done) => {
                let record = Event::CompactionApplied {
                    trigger: CompactionTrigger::Manual,
                    messages: done.replacement.clone(),
                    summary: done.summary.clone(),
                    tokens_before: done.tokens_before,
                    tokens_after: done.tokens_after,
                    usage: Some(done.usage),
                };
                match session.append(record) {
                    Ok(_) => self.screen.message(
                        Tone::Info,
                        &format!(
                            "Context compacted ({} → {} tokens)",
                            done.tokens_before, done.tokens_after
                        ),
                    ),
                    Err(error) => {
                        agent.set_history(snapshot);
                        self.screen.message(
                            Tone::Error,
                            &format!(
                                "cannot save the compaction ({error}); the history is unchanged"
                            ),
                        );
                    }
                }
            }
            Err(LoopError::Cancelled) => self
                .screen
                .message(Tone::Info, "Compaction cancelled; the history is unchanged"),
            Err(error) => self.screen.message(
                Tone::Error,
                &format!("/compact failed: {error}; the history is unchanged"),
            ),
        }
        self.finish_busy(busy);
    }

    fn finish_busy(&mut self, busy: BusyState) {
        let (queued, unfinished) = busy.finish();
        self.queued.extend(queued);
        self.type_ahead = unfinished;
        self.refresh_status();
    }

    fn context_report(&mut self) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let estimate = conversation.agent.estimate();
        let figures = ContextFigures::new(
            conversation.agent.budget(),
            estimate,
            conversation.agent.history(),
            self.counter.as_ref(),
        );
        self.screen.block(&figures.lines().join("\n"));
    }

    fn sessions(&mut self) {
        let sessions = match self.store.list_sessions(Some(&self.cwd)) {
            Ok(sessions) => sessions,
            Err(e) => {
                self.screen
                    .message(Tone::Error, &format!("cannot list sessions: {e}"));
                return;
            }
        };
        let mut table = Vec::new();
        if render::sessions_table(&sessions, &mut table).is_ok() {
            self.screen.block(&String::from_utf8_lossy(&table));
        }
        if let Some(conversation) = &self.conversation {
            let current = format!("current: {}", conversation.session.id());
            self.screen.message(Tone::Dim, &current);
        }
    }

    fn resume(&mut self, query: &str) {
        let target = match self.store.locate(query) {
            Ok(dir) => dir,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        if let Some(conversation) = &self.conversation {
            if same_dir(&target, conversation.session.dir()) {
                self.screen
                    .message(Tone::Dim, "That is the current session.");
                return;
            }
        }
        let resumed = match self.store.resume(&target.display().to_string()) {
            Ok(resumed) => resumed,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let choice = ModelChoice {
            requested: None,
            recorded: resumed.recorded_model.clone(),
            context_window: self.window_override,
        };
        let resolved = match resolve_choice(&choice, &self.config, &env) {
            Ok(resolved) => resolved,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let agent = match self.build_agent(&resumed.session, &resolved, resumed.history) {
            Ok(agent) => agent,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        for warning in &resumed.warnings {
            self.screen
                .message(Tone::Error, &format!("warning: {warning}"));
        }
        self.show_replay(&resumed.records);
        self.install(Conversation {
            agent,
            session: resumed.session,
            resolved,
            unused: false,
        });
        self.banner();
    }

    fn clear(&mut self) {
        let Some(resolved) = self.conversation.as_ref().map(|c| c.resolved.clone()) else {
            return;
        };
        match self.new_conversation(resolved) {
            Ok(conversation) => {
                self.install(conversation);
                self.screen.message(Tone::Info, "New session.");
                self.banner();
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }

    fn switch_model(&mut self, name: Option<String>) {
        let Some(name) = name else {
            let text = self.status.text();
            self.screen.message(Tone::Info, &text);
            return;
        };
        let choice = ModelChoice {
            requested: Some(name),
            recorded: None,
            context_window: self.window_override,
        };
        let resolved = match resolve_choice(&choice, &self.config, &env) {
            Ok(resolved) => resolved,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let Some(conversation) = self.conversation.as_ref() else {
            return;
        };
        let history = conversation.agent.history().to_vec();
        match self.build_agent(&conversation.session, &resolved, history) {
            Ok(agent) => {
                for warning in &resolved.warnings {
                    self.screen.message(Tone::Error, warning);
                }
                if let Some(conversation) = self.conversation.as_mut() {
                    conversation.agent = agent;
                    conversation.resolved = resolved;
                }
                self.refresh_status();
                let text = format!("Model: {}", self.status.text());
                self.screen.message(Tone::Info, &text);
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }
}

/// Handles one event of a turn: persistence first (the recorder), then the screen.
fn on_turn_event(
    event: LoopEvent,
    busy: &mut BusyState,
    screen: &mut Screen,
    status: &mut Status,
    recorder: &mut TurnRecorder,
    session: &mut Session,
) {
    if let LoopEvent::AutoCompaction(pith_core::AutoCompaction::Applied { .. }) = &event {
        // Flush what is visible before the checkpoint that records it.
        screen.end_text();
    }
    match recorder.observe(&event, session) {
        Ok(Observed::Compacted(note)) => status.used = note.tokens_after,
        Ok(Observed::Nothing) => {}
        Err(error) => screen.message(Tone::Error, &format!("cannot save the compaction: {error}")),
    }
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => screen.tool_finished(&result),
        LoopEvent::MessageAppended(message) => {
            if message.role == Role::Assistant {
                // The next model request starts a new answer (and a new markdown state).
                screen.start_answer();
            }
        }
        LoopEvent::Usage(usage) => status.used = usage.input_tokens + usage.output_tokens,
        LoopEvent::AutoCompaction(lifecycle) => {
            if let Some(notice) = busy.on_auto_compaction(&lifecycle) {
                screen.message(Tone::Info, &notice.text());
            }
        }
        LoopEvent::MicroCompaction(step) => screen.message(
            Tone::Dim,
            &format!(
                "Old tool outputs cleared ({} → {} tokens)",
                step.tokens_before, step.tokens_after
            ),
        ),
        LoopEvent::Notice(text) => screen.message(Tone::Dim, &text),
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => screen.message(
            Tone::Dim,
            &format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
        ),
        LoopEvent::ReasoningDelta(_)
        | LoopEvent::RequestStarted { .. }
        | LoopEvent::TurnFinished { .. } => {}
    }
}

/// Handles one event of a manual compaction: the summary streams visibly; rejected tool
/// calls show as cards.
fn on_compact_event(event: LoopEvent, _: &mut BusyState, screen: &mut Screen, _: &mut Status) {
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => screen.tool_finished(&result),
        LoopEvent::Notice(text) => screen.message(Tone::Dim, &text),
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => screen.message(
            Tone::Dim,
            &format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
        ),
        _ => {}
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Closes a conversation; a session this process created and never used is removed so
/// `/sessions` and `--continue` do not fill up with empty ones.
fn retire(conversation: Conversation) {
    let dir = conversation.session.dir().to_path_buf();
    let unused = conversation.unused;
    drop(conversation);
    if unused {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::AutoCompaction;
    use pith_session::ReadOptions;
    use std::io::Write;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_applied_automatic_compaction_is_flushed_persisted_and_announced_without_its_summary() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::at(root.path().join("sessions"));
        let mut session = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "test".into(),
                model: "m".into(),
            })
            .unwrap();
        session.append(Event::user_text("go")).unwrap();
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        let turn = CancellationToken::new();
        let mut busy = BusyState::turn(turn.clone());
        let mut status = Status {
            model: "test/m".into(),
            used: 0,
            budget: pith_core::ContextBudget::for_window(20_000),
            auto_compaction: true,
        };
        let mut recorder = TurnRecorder::new();
        let events = vec![
            LoopEvent::TextDelta("Before".into()),
            LoopEvent::MessageAppended(Message::assistant("Before")),
            LoopEvent::AutoCompaction(AutoCompaction::Started {
                cancel: turn.child_token(),
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Applied {
                replacement: vec![
                    Message::system("sys"),
                    Message::user("<compacted_context>SECRET</compacted_context>"),
                ],
                summary: "SECRET".into(),
                usage: None,
                tokens_before: 15_000,
                tokens_after: 900,
            }),
            LoopEvent::TextDelta("After".into()),
        ];
        for event in events {
            on_turn_event(
                event,
                &mut busy,
                &mut screen,
                &mut status,
                &mut recorder,
                &mut session,
            );
        }
        drop(screen);
        let shown = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            shown,
            "Before\nContext compacted automatically (15000 → 900 tokens)\nAfter\n"
        );
        assert_eq!(status.used, 900, "the status follows the replacement");
        let kinds: Vec<String> = session
            .read(ReadOptions::default())
            .unwrap()
            .records
            .iter()
            .map(|r| r.event.kind().to_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "session_started",
                "user_message",
                "assistant_turn",
                "compaction_applied"
            ]
        );
    }
}
