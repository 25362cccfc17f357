//! The REPL session: start-up (configuration, model, session new / continued / resumed),
//! the open conversation and the prompt loop. Jobs (a turn, `/compact`) are in `jobs`,
//! the other slash commands in `slash`.
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

mod jobs;
mod slash;

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
