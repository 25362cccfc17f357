//! Carrying out a slash command typed in the editor's prompt (`commands.rs` parses
//! them): `/compact` with its updates and its own cancellable token, `/context`,
//! `/ledger`, `/pin`, `/unpin`, `/model`. Each answers as the agent's message.

use agent_client_protocol::v1::schema::{SessionUpdate, StopReason};
use pith_agent::{Conversation, LoopError};
use pith_core::EventSink;
use tokio_util::sync::CancellationToken;

use crate::commands::SlashCommand;
use crate::session::{AcpSession, PromptError};
use crate::sink::{Outbox, SessionSink};
use crate::updates::ManualEnd;

impl AcpSession {
    /// Runs `command` in `conversation`; the updates go to `sink`.
    pub(crate) async fn command<O: Outbox>(
        &self,
        conversation: &mut Conversation,
        command: SlashCommand,
        sink: &mut SessionSink<O>,
        cancel: &CancellationToken,
    ) -> Result<StopReason, PromptError> {
        match command {
            SlashCommand::Compact { focus } => {
                compact(self, conversation, focus.as_deref(), sink, cancel).await
            }
            SlashCommand::Context => {
                answer(sink, &context_text(conversation));
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
            SlashCommand::Pin { argument } => {
                let text = match argument {
                    None => pins_text(conversation),
                    Some(argument) => match conversation.pin(pith_agent::pin_of_argument(&argument)) {
                        Ok(row) => format!(
                            "Pinned {} ({} tokens): the model sees it with your next message, and every compaction keeps it whole.",
                            row.pin.label(),
                            row.tokens.unwrap_or(0)
                        ),
                        Err(error) => format!("/pin failed: {error}"),
                    },
                };
                answer(sink, &text);
                Ok(StopReason::EndTurn)
            }
            SlashCommand::Unpin { target } => {
                let text = match conversation.unpin(&target) {
                    Ok(removed) if removed.is_empty() => "Nothing was pinned.".to_owned(),
                    Ok(removed) => format!(
                        "Unpinned {}: compactions from now on no longer carry it.",
                        removed
                            .iter()
                            .map(pith_agent::Pin::label)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    Err(error) => format!("/unpin failed: {error}"),
                };
                answer(sink, &text);
                Ok(StopReason::EndTurn)
            }
            // Not offered in an editor (`commands::parse` leaves them messages).
            SlashCommand::Sessions
            | SlashCommand::Resume { .. }
            | SlashCommand::Clear
            | SlashCommand::Rewind { .. }
            | SlashCommand::RewindUndo
            | SlashCommand::Help
            | SlashCommand::Exit => {
                answer(sink, "This command is not available in the editor.");
                Ok(StopReason::EndTurn)
            }
            SlashCommand::Model { name } => {
                let text = match name {
                    None => format!("Model: {}", conversation.model_spec()),
                    Some(spec) => {
                        let change = crate::config_options::Change::Model(spec);
                        match self.apply(conversation, &change) {
                            Ok(notices) => {
                                sink.send_all(vec![self.config_update()]);
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

/// `/compact [focus]`: its start, its summary streamed, its end.
async fn compact<O: Outbox>(
    session: &AcpSession,
    conversation: &mut Conversation,
    focus: Option<&str>,
    sink: &mut SessionSink<O>,
    cancel: &CancellationToken,
) -> Result<StopReason, PromptError> {
    let before = conversation.estimate().total as u64;
    let started = sink.mapper().manual_started(before);
    sink.send_all(started);
    let child = cancel.child_token();
    session.compaction_slot().started(child.clone());
    let mut summary = ManualSummary { sink: &mut *sink };
    let result = conversation.compact(focus, &mut summary, &child).await;
    session.compaction_slot().ended();
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

/// `/context`'s answer: the context used, the thresholds, the compactions, the spend.
fn context_text(conversation: &mut Conversation) -> String {
    let estimate = conversation.estimate().total as u64;
    let budget = conversation.budget();
    let totals = conversation.compaction_totals();
    let spend = match conversation.spend_report() {
        Ok(spend) => spend.line(),
        Err(error) => format!("Session: cost unknown ({error})"),
    };
    format!(
        "Context: {estimate} of {} tokens used ({}%); automatic compaction at {} tokens; {} automatic compaction(s) applied so far.\n{spend}\n{}",
        budget.window,
        estimate * 100 / budget.window.max(1),
        budget.auto_threshold,
        totals.applied,
        pins_text(conversation)
    )
}

/// The pins with their tokens, against the budget (`/pin`, `/context`).
fn pins_text(conversation: &Conversation) -> String {
    let view = conversation.pins_view();
    if view.budget_tokens == 0 {
        return "Pins: off ([context] pins_percent = 0).".to_owned();
    }
    let mut text = format!("Pins: {} of {} tokens.", view.tokens, view.budget_tokens);
    for row in &view.rows {
        let size = row
            .tokens
            .map_or_else(|| "unreadable".to_owned(), |t| format!("{t} tokens"));
        let status = if row.carried {
            ""
        } else {
            " (NOT CARRIED: over the budget or unreadable)"
        };
        text.push_str(&format!(
            "\n{}. {} — {size}{status}",
            row.number,
            row.pin.label()
        ));
    }
    text
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
