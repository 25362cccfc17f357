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

use pith_core::{ContextBudget, EventSink, Message, RequestEstimate, TokenCounter};
use pith_providers::models::config::Config;
use pith_providers::{AgentLoop, LoopError, ManualCompaction, TurnSummary};
use pith_session::{
    Event, NewSession, Record, Session, SessionError, SessionStore, SessionSummary,
};
use pith_tools::{Approver, PermissionMode, ToolsConfig, Toolset};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::exit::ExitCode;
use crate::overrides::{Overrides, SessionChoice};
use crate::recording::{CompactionNote, Recording, TurnRecorder};
use crate::settings::Settings;

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
}

impl TurnOutcome {
    /// The exit code of a process whose job was this turn.
    pub fn exit_code(&self) -> ExitCode {
        match (&self.error, &self.record_error) {
            (Some(TurnError::Loop(LoopError::Cancelled)), _) => ExitCode::Interrupted,
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
}

impl Conversation {
    /// Opens a new or resumed conversation, resolving the settings once: `overrides`,
    /// then the configuration files of the workspace, then the defaults.
    pub fn open(
        overrides: Overrides,
        frontend: Frontend,
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
                create_session(&store, &cwd, &settings)?,
                Vec::new(),
                None,
                true,
            ),
        };
        let agent = build_agent(&cwd, &settings, &frontend, &mut session, history)?;
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

    /// [`Conversation::run_turn`] with a prepared user message (text and images).
    pub async fn run_message(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
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
        // Edits to AGENTS.md or PITH.md apply from the next turn; an unchanged prompt
        // stays byte-identical for the prompt cache.
        let prompt = self.settings.system_prompt(&self.cwd);
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
        let (summary, error) = match result {
            Ok(summary) => (summary, None),
            Err(failure) => (failure.summary, Some(failure.error)),
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
        TurnOutcome {
            text: recorder.final_text(),
            summary,
            compactions: recorder.compactions().to_vec(),
            error: error.map(TurnError::Loop),
            record_error,
        }
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
        let mut recorder = TurnRecorder::new();
        let mut recording = Recording {
            recorder: &mut recorder,
            session: &mut self.session,
            frontend: sink,
        };
        self.agent.compact(focus, &mut recording, cancel).await
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
        let agent = build_agent(
            &self.cwd,
            &settings,
            &self.frontend,
            &mut self.session,
            history,
        )?;
        let notices = settings.notices.clone();
        self.overrides = overrides;
        self.settings = settings;
        self.agent = agent;
        Ok(notices)
    }

    /// Starts a new session with the same settings (`/clear`). The previous session is
    /// closed, and removed if it was never used.
    pub fn clear(&mut self) -> Result<(), ConversationError> {
        let mut session = create_session(&self.store, &self.cwd, &self.settings)?;
        let agent = build_agent(
            &self.cwd,
            &self.settings,
            &self.frontend,
            &mut session,
            Vec::new(),
        )?;
        self.replace_session(session, agent, true);
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
        let agent = build_agent(
            &self.cwd,
            &settings,
            &self.frontend,
            &mut resumed.session,
            resumed.history,
        )?;
        let mut notices = settings.notices.clone();
        notices.extend(resumed.warnings.iter().map(|w| format!("warning: {w}")));
        self.settings = settings;
        self.replace_session(resumed.session, agent, false);
        Ok(Opened {
            value: (),
            notices,
            resumed: Some(resumed.records),
        })
    }

    fn replace_session(&mut self, session: Session, agent: AgentLoop, unused: bool) {
        let previous = std::mem::replace(&mut self.session, session);
        let was_unused = std::mem::replace(&mut self.unused, unused);
        self.agent = agent;
        retire(previous, was_unused);
    }

    /// Closes the conversation; a session this process created and never used is
    /// removed, so session lists do not fill up with empty ones.
    pub fn close(self) {
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

    /// Whether automatic compaction is on.
    pub fn auto_compaction(&self) -> bool {
        self.settings.loop_options.auto_compaction
    }

    /// The estimate of the next request as the history stands.
    pub fn estimate(&mut self) -> RequestEstimate {
        self.agent.estimate()
    }

    /// The history, without the system prompt.
    pub fn history(&self) -> &[Message] {
        self.agent.history()
    }

    /// The counter the estimate uses.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        self.agent.counter()
    }
}

fn create_session(
    store: &SessionStore,
    cwd: &Path,
    settings: &Settings,
) -> Result<Session, ConversationError> {
    store
        .create(NewSession {
            cwd: cwd.to_path_buf(),
            provider: settings.model.provider.clone(),
            model: settings.model.model.clone(),
        })
        .map_err(ConversationError::failure)
}

/// The loop of `session` with its tools and `history`.
fn build_agent(
    cwd: &Path,
    settings: &Settings,
    frontend: &Frontend,
    session: &mut Session,
    history: Vec<Message>,
) -> Result<AgentLoop, ConversationError> {
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
    let mut agent = settings
        .build_loop(cwd, tools.registry())
        .map_err(ConversationError::usage)?;
    agent.set_history(history);
    Ok(agent)
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
