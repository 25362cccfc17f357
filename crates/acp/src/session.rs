//! One ACP session: a pith `Conversation` and what the protocol needs around it — the
//! event mapper that lives across turns, the turn's token (`session/cancel`), the running
//! compaction's token (`_pith/cancel_compaction`) and the permission policy
//! (`session/set_mode`).

use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::{
    ContentBlock, NoticeSeverity, SessionId, SessionNotification, SessionUpdate, StopReason,
};
use pith_agent::{Conversation, LoopError, TurnError, TurnOutcome};
use pith_core::EventSink;
use pith_tools::PermissionPolicy;
use tokio_util::sync::CancellationToken;

use crate::commands::{self, SlashCommand};
use crate::running::RunningCalls;
use crate::sink::{CompactionSlot, Outbox, SessionSink};
use crate::updates::{cancelled_call, EventMapper, ManualEnd, ModelFigures};

/// Why a prompt could not be carried out (a JSON-RPC error for the client).
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// A turn is already running in this session.
    #[error("a prompt is already running in this session; cancel it first")]
    Busy,
    /// The turn failed (provider error, transcript write, …).
    #[error("{0}")]
    Failed(String),
}

/// A session of the connection.
pub struct AcpSession {
    /// Its id (the pith session id).
    pub id: SessionId,
    conversation: tokio::sync::Mutex<Conversation>,
    mapper: Arc<Mutex<EventMapper>>,
    turn: Mutex<Option<CancellationToken>>,
    compaction: CompactionSlot,
    policy: Mutex<Arc<PermissionPolicy>>,
    running: RunningCalls,
}

impl AcpSession {
    /// Wraps an open conversation, mapping its events with `mapper`.
    pub fn new(conversation: Conversation, mapper: EventMapper) -> Self {
        let running = mapper.running().clone();
        Self {
            id: SessionId::new(conversation.session_id()),
            policy: Mutex::new(conversation.permissions()),
            conversation: tokio::sync::Mutex::new(conversation),
            mapper: Arc::new(Mutex::new(mapper)),
            turn: Mutex::new(None),
            compaction: CompactionSlot::default(),
            running,
        }
    }

    /// The session's mapper (replay, notices).
    pub fn mapper(&self) -> std::sync::MutexGuard<'_, EventMapper> {
        self.mapper.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `session/cancel`: stops the running turn, if any.
    pub fn cancel(&self) -> bool {
        match &*self.turn.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Closes the conversation (a session never prompted is removed, as in the REPL),
    /// once nothing else holds the session; otherwise it is dropped as it is.
    pub fn close(self: Arc<Self>) {
        match Arc::try_unwrap(self) {
            Ok(session) => session.conversation.into_inner().close(),
            Err(_) => tracing::warn!("a session was still in use when the connection closed"),
        }
    }

    /// `_pith/cancel_compaction`: cancels only the running compaction.
    pub fn cancel_compaction(&self) -> bool {
        self.compaction.cancel()
    }

    /// `session/set_mode`: the approval level from the next tool call on.
    pub fn set_approval(&self, mode: pith_tools::PermissionMode) {
        self.policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set_mode(mode);
    }

    /// The current approval level.
    pub fn approval(&self) -> pith_tools::PermissionMode {
        self.policy
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mode()
    }

    /// `session/prompt`: runs `blocks` as a turn (or a slash command), sending the
    /// updates to `outbox`; the stop reason, or why the turn failed.
    pub async fn prompt<O: Outbox>(
        &self,
        blocks: &[ContentBlock],
        outbox: O,
    ) -> Result<StopReason, PromptError> {
        let cancel = {
            let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
            if turn.is_some() {
                return Err(PromptError::Busy);
            }
            let token = CancellationToken::new();
            *turn = Some(token.clone());
            token
        };
        let mut sink = SessionSink::new(self.mapper.clone(), self.compaction.clone(), outbox);
        let result = {
            let mut conversation = self.conversation.lock().await;
            let cwd = conversation.cwd().to_path_buf();
            match commands::parse(&crate::prompt::text_of(blocks, &cwd)) {
                Some(Ok(command)) => {
                    self.command(&mut conversation, command, &mut sink, &cancel)
                        .await
                }
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
                    let outcome = conversation.run_message(message, &mut sink, &cancel).await;
                    stop_reason(&outcome)
                }
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
        *self.turn.lock().unwrap_or_else(PoisonError::into_inner) = None;
        result
    }

    async fn command<O: Outbox>(
        &self,
        conversation: &mut Conversation,
        command: SlashCommand,
        sink: &mut SessionSink<O>,
        cancel: &CancellationToken,
    ) -> Result<StopReason, PromptError> {
        match command {
            SlashCommand::Compact { focus } => {
                let before = conversation.estimate().total as u64;
                let started = sink.mapper().manual_started(before);
                sink.send_all(started);
                let child = cancel.child_token();
                self.compaction.started(child.clone());
                let mut summary = ManualSummary { sink: &mut *sink };
                let result = conversation
                    .compact(focus.as_deref(), &mut summary, &child)
                    .await;
                self.compaction.ended();
                let end = match result {
                    Ok(done) => Ok((done.tokens_before, done.tokens_after)),
                    Err(LoopError::Cancelled) => Err(ManualEnd::Cancelled),
                    Err(error) => Err(ManualEnd::Failed(error.to_string())),
                };
                let finished = sink.mapper().manual_finished(end);
                sink.send_all(finished);
                if cancel.is_cancelled() {
                    return Ok(StopReason::Cancelled);
                }
                Ok(StopReason::EndTurn)
            }
            SlashCommand::Context => {
                let estimate = conversation.estimate().total as u64;
                let budget = conversation.budget();
                let totals = conversation.compaction_totals();
                let text = format!(
                    "Context: {estimate} of {} tokens used ({}%); automatic compaction at {} tokens; {} automatic compaction(s) applied so far.",
                    budget.window,
                    estimate * 100 / budget.window.max(1),
                    budget.auto_threshold,
                    totals.applied
                );
                answer(sink, &text);
                Ok(StopReason::EndTurn)
            }
            SlashCommand::Ledger => {
                let text = match conversation.ledger_preview() {
                    Some(ledger) => format!(
                        "Session ledger ({} tokens):\n{}",
                        ledger.tokens, ledger.text
                    ),
                    None => "The session ledger is empty.".to_owned(),
                };
                answer(sink, &text);
                Ok(StopReason::EndTurn)
            }
            SlashCommand::Model { name } => {
                let text = match name {
                    None => format!("Model: {}", conversation.model_spec()),
                    Some(spec) => {
                        let mode = self.approval();
                        match conversation.switch_model(&spec) {
                            Ok(notices) => {
                                *self.policy.lock().unwrap_or_else(PoisonError::into_inner) =
                                    conversation.permissions();
                                self.set_approval(mode);
                                sink.mapper().set_figures(figures(conversation));
                                let mut text = format!("Model: {}", conversation.model_spec());
                                for notice in notices {
                                    text.push_str(&format!("\n{notice}"));
                                }
                                text
                            }
                            Err(error) => format!("/model failed: {error}; the model is unchanged"),
                        }
                    }
                };
                answer(sink, &text);
                Ok(StopReason::EndTurn)
            }
        }
    }
}

/// A command's answer, as the agent's message.
fn answer<O: Outbox>(sink: &mut SessionSink<O>, text: &str) {
    let update = SessionUpdate::AgentMessageChunk(crate::updates::chunk(text));
    let notification = sink.mapper().notification(update);
    sink.send_all(vec![notification]);
}

/// A manual compaction's sink: its summary streams as `compaction_summary_chunk`.
struct ManualSummary<'a, O: Outbox> {
    sink: &'a mut SessionSink<O>,
}

impl<O: Outbox> EventSink for ManualSummary<'_, O> {
    fn emit(&mut self, event: pith_core::LoopEvent) {
        match event {
            pith_core::LoopEvent::TextDelta(text) => {
                let chunks = self.sink.mapper().manual_summary(&text);
                self.sink.send_all(chunks);
            }
            other => self.sink.emit(other),
        }
    }
}

/// The model figures of `conversation` (for `usage_update`).
pub fn figures(conversation: &Conversation) -> ModelFigures {
    ModelFigures {
        window: conversation.budget().window,
        pricing: conversation.settings().model.pricing,
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
