//! One ACP session: a pith `Conversation` and what the protocol needs around it — the
//! event mapper that lives across turns, the turn's token (`session/cancel`,
//! `$/cancel_request`), the running compaction's token (`_pith/cancel_compaction`), the
//! permission policy (`session/set_mode`), and the configuration options
//! (`session/set_config_option`; a change of model or reasoning asked for while a turn
//! runs applies when it ends).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock, NoticeSeverity, SessionConfigOption, SessionId,
    SessionInfoUpdate, SessionNotification, SessionUpdate, StopReason,
};
use pith_agent::{Conversation, ConversationError, LoopError, TurnError, TurnOutcome};
use pith_core::EventSink;
use pith_tools::PermissionPolicy;
use tokio_util::sync::CancellationToken;

use crate::commands;
use crate::config_options::{Change, Current};
use crate::running::RunningCalls;
use crate::sink::{CompactionSlot, Outbox, SessionSink};
use crate::updates::{cancelled_call, EventMapper, ModelFigures};

/// Why a prompt could not be carried out (a JSON-RPC error for the client).
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// A turn is already running in this session.
    #[error("a prompt is already running in this session; cancel it first")]
    Busy,
    /// The session was closed (`session/close`, `session/delete`).
    #[error("the session is closed")]
    Closed,
    /// The turn failed (provider error, transcript write, …).
    #[error("{0}")]
    Failed(String),
}

/// A session of the connection.
pub struct AcpSession {
    /// Its id (the pith session id).
    pub id: SessionId,
    /// `None` once closed.
    conversation: tokio::sync::Mutex<Option<Conversation>>,
    mapper: Arc<Mutex<EventMapper>>,
    turn: Mutex<Option<CancellationToken>>,
    compaction: CompactionSlot,
    policy: Mutex<Arc<PermissionPolicy>>,
    running: RunningCalls,
    /// What the configuration options show.
    config: Mutex<Current>,
    /// Changes of model or reasoning asked for while a turn ran.
    pending: Mutex<Vec<Change>>,
    /// The session has a title (a recorded one's is its first message).
    titled: AtomicBool,
}

impl AcpSession {
    /// Wraps an open conversation, mapping its events with `mapper`.
    pub fn new(conversation: Conversation, mapper: EventMapper) -> Self {
        let running = mapper.running().clone();
        let config = Current {
            model: conversation.model_spec(),
            models: conversation.model_choices(),
            mode: conversation.permissions().mode(),
            reasoning: conversation.reasoning(),
        };
        Self {
            id: SessionId::new(conversation.session_id()),
            policy: Mutex::new(conversation.permissions()),
            titled: AtomicBool::new(!conversation.history().is_empty()),
            conversation: tokio::sync::Mutex::new(Some(conversation)),
            mapper: Arc::new(Mutex::new(mapper)),
            turn: Mutex::new(None),
            compaction: CompactionSlot::default(),
            running,
            config: Mutex::new(config),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// The session's mapper (replay, notices).
    pub fn mapper(&self) -> std::sync::MutexGuard<'_, EventMapper> {
        lock(&self.mapper)
    }

    /// The running compaction's slot (its child token).
    pub(crate) fn compaction_slot(&self) -> &CompactionSlot {
        &self.compaction
    }

    /// `session/cancel`: stops the running turn, if any.
    pub fn cancel(&self) -> bool {
        match &*lock(&self.turn) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// `session/close`: stops the running turn as `session/cancel` does, waits for it to
    /// end (and be recorded), then closes the conversation. The session stays recorded:
    /// it can be listed, loaded and resumed later.
    pub async fn close(&self) {
        self.cancel();
        let closed = self.conversation.lock().await.take();
        if let Some(conversation) = closed {
            conversation.close();
        }
    }

    /// `_pith/cancel_compaction`: cancels only the running compaction.
    pub fn cancel_compaction(&self) -> bool {
        self.compaction.cancel()
    }

    /// `session/set_mode` (or the `mode` option): the approval level from the next tool
    /// call on.
    pub fn set_approval(&self, mode: pith_tools::PermissionMode) {
        lock(&self.policy).set_mode(mode);
        lock(&self.config).mode = mode;
    }

    /// The current approval level.
    pub fn approval(&self) -> pith_tools::PermissionMode {
        lock(&self.policy).mode()
    }

    /// The configuration options as they stand.
    pub fn config_options(&self) -> Vec<SessionConfigOption> {
        lock(&self.config).options()
    }

    /// A `config_option_update` with every option.
    pub fn config_update(&self) -> SessionNotification {
        SessionNotification::new(
            self.id.clone(),
            SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(self.config_options())),
        )
    }

    /// `session/set_config_option`: option `id` to `value`; every option as it stands
    /// after. The approval mode changes at once; the model and the reasoning level at
    /// once when no turn runs, else when the running turn ends.
    pub fn set_config(
        &self,
        id: &str,
        value: &str,
    ) -> Result<Vec<SessionConfigOption>, agent_client_protocol::Error> {
        let change = lock(&self.config).change(id, value)?;
        if let Change::Mode(mode) = change {
            self.set_approval(mode);
            return Ok(self.config_options());
        }
        match self.conversation.try_lock() {
            Ok(mut guard) => {
                let conversation = guard.as_mut().ok_or_else(|| {
                    agent_client_protocol::v1::schema::Error::session_not_found(self.id.clone())
                })?;
                self.apply(conversation, &change).map_err(|error| {
                    agent_client_protocol::Error::invalid_params().data(format!("value: {error}"))
                })?;
            }
            Err(_) => {
                lock(&self.config).apply(&change);
                lock(&self.pending).push(change);
            }
        }
        Ok(self.config_options())
    }

    /// Applies a change of model or reasoning to `conversation` (the approval mode is
    /// kept); the notices to show.
    pub(crate) fn apply(
        &self,
        conversation: &mut Conversation,
        change: &Change,
    ) -> Result<Vec<String>, ConversationError> {
        let mode = self.approval();
        let notices = match change {
            Change::Model(spec) => conversation.switch_model(spec)?,
            Change::Reasoning(level) => conversation.set_reasoning(*level)?,
            Change::Mode(mode) => {
                self.set_approval(*mode);
                return Ok(Vec::new());
            }
        };
        *lock(&self.policy) = conversation.permissions();
        self.set_approval(mode);
        self.mapper().set_figures(figures(conversation));
        let mut config = lock(&self.config);
        config.apply(change);
        config.model = conversation.model_spec();
        config.reasoning = conversation.reasoning();
        Ok(notices)
    }

    /// `session/prompt`: runs `blocks` as a turn (or a slash command), sending the
    /// updates to `outbox`; the stop reason, or why the turn failed.
    pub async fn prompt<O: Outbox>(
        &self,
        blocks: &[ContentBlock],
        outbox: O,
    ) -> Result<StopReason, PromptError> {
        let cancel = {
            let mut turn = lock(&self.turn);
            if turn.is_some() {
                return Err(PromptError::Busy);
            }
            let token = CancellationToken::new();
            *turn = Some(token.clone());
            token
        };
        let mut sink = SessionSink::new(self.mapper.clone(), self.compaction.clone(), outbox);
        let (result, prepared) = {
            let mut guard = self.conversation.lock().await;
            match guard.as_mut() {
                Some(conversation) => (
                    self.run(conversation, blocks, &mut sink, &cancel).await,
                    conversation.prepared_summary_cancel(),
                ),
                None => (Err(PromptError::Closed), None),
            }
        };
        // Calls that got no result (the turn stopped while they ran) end as cancelled.
        let ended: Vec<SessionNotification> = self
            .running
            .drain()
            .into_iter()
            .map(|call| {
                SessionNotification::new(
                    call.session,
                    SessionUpdate::ToolCallUpdate(cancelled_call(&call.id)),
                )
            })
            .collect();
        sink.send_all(ended);
        self.compaction.ended();
        // A summary still being prepared for the next prompt stays cancellable
        // (`_pith/cancel_compaction`) between prompts.
        if let Some(token) = prepared {
            self.compaction.started(token);
        }
        *lock(&self.turn) = None;
        result
    }

    /// The turn (or the command) of `blocks` in `conversation`, with the changes asked
    /// for meanwhile applied first and the session's title and time sent after.
    async fn run<O: Outbox>(
        &self,
        conversation: &mut Conversation,
        blocks: &[ContentBlock],
        sink: &mut SessionSink<O>,
        cancel: &CancellationToken,
    ) -> Result<StopReason, PromptError> {
        self.apply_pending(conversation, sink);
        let cwd = conversation.cwd().to_path_buf();
        let text = crate::prompt::text_of(blocks, &cwd);
        let result = match commands::parse(&text) {
            Some(Ok(command)) => self.command(conversation, command, sink, cancel).await,
            Some(Err(usage)) => {
                let notices = sink.mapper().notice_updates(NoticeSeverity::Warning, usage);
                sink.send_all(notices);
                Ok(StopReason::EndTurn)
            }
            None => {
                let limits = conversation.settings().image_limits();
                let (message, notices) = crate::prompt::user_message(blocks, &cwd, limits);
                for notice in notices {
                    sink.emit(pith_core::LoopEvent::Notice(notice));
                }
                let title = pith_session::title_of(&message);
                let outcome = conversation.run_message(message, sink, cancel).await;
                self.send_info(title, sink);
                stop_reason(&outcome)
            }
        };
        result
    }

    /// Applies the changes of model or reasoning asked for while a turn ran; one that
    /// fails is a notice (the options show what is in force).
    fn apply_pending<O: Outbox>(&self, conversation: &mut Conversation, sink: &mut SessionSink<O>) {
        let pending = std::mem::take(&mut *lock(&self.pending));
        if pending.is_empty() {
            return;
        }
        for change in &pending {
            if let Err(error) = self.apply(conversation, change) {
                let notices = sink
                    .mapper()
                    .notice_updates(NoticeSeverity::Warning, format!("{error}; not changed"));
                sink.send_all(notices);
            }
        }
        {
            let mut config = lock(&self.config);
            config.model = conversation.model_spec();
            config.reasoning = conversation.reasoning();
        }
        sink.send_all(vec![self.config_update()]);
    }

    /// `session_info_update` after a turn: the time, and the title the first time the
    /// session has one (the first line of its first message, as `session/list` shows it).
    fn send_info<O: Outbox>(&self, title: Option<String>, sink: &mut SessionSink<O>) {
        let mut info = SessionInfoUpdate::new().updated_at(pith_session::now_ts());
        if let Some(title) = title {
            if !self.titled.swap(true, Ordering::SeqCst) {
                info = info.title(title);
            }
        }
        let notification = sink
            .mapper()
            .notification(SessionUpdate::SessionInfoUpdate(info));
        sink.send_all(vec![notification]);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The model figures of `conversation` (for `usage_update`).
pub fn figures(conversation: &Conversation) -> ModelFigures {
    ModelFigures {
        window: conversation.budget().window,
        model: conversation.model_spec(),
        prices: conversation.prices(),
    }
}

/// The stop reason of a turn, or the error the prompt answers with.
pub fn stop_reason(outcome: &TurnOutcome) -> Result<StopReason, PromptError> {
    match &outcome.error {
        None => match &outcome.record_error {
            None => Ok(StopReason::EndTurn),
            Some(error) => Err(PromptError::Failed(format!(
                "the end of the turn could not be recorded: {error}"
            ))),
        },
        Some(TurnError::Loop(LoopError::Cancelled)) => Ok(StopReason::Cancelled),
        Some(TurnError::Loop(LoopError::MaxRequests(_))) => Ok(StopReason::MaxTurnRequests),
        Some(TurnError::Blocked(_)) => Ok(StopReason::Refusal),
        Some(error) => Err(PromptError::Failed(error.to_string())),
    }
}
