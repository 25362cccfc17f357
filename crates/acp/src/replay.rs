//! `session/load`: a recorded session replayed to the editor as the updates it would
//! have seen — the user's messages (`user_message_chunk`, images included), the agent's
//! text and reasoning, every tool call with its result, and a compaction marker
//! (`compaction_update`, completed, with its summary and figures) where each compaction
//! applied. The replay is built from the transcript's records, so it shows exactly what
//! was recorded.

use agent_client_protocol::v1::schema::{
    CompactionId, CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, ImageContent,
    NoticeSeverity, SessionNotification, SessionUpdate,
};
use pith_core::context::pins::is_pinned_block;
use pith_core::{Message, Part, Role};
use pith_session::{Event, Record, SessionSpend};
use serde_json::json;

use crate::tool_calls;
use crate::updates::{chunk, pith_meta, ClientView, EventMapper};

/// The notifications replaying `records` into `mapper`'s session; what the records
/// spent (`pith_session::SessionSpend`) is added to what `mapper` counts as spent.
pub fn replay(
    records: &[Record],
    mapper: &mut EventMapper,
    view: ClientView,
) -> Vec<SessionNotification> {
    mapper.add_spent(&SessionSpend::from_records(records));
    let mut out = Vec::new();
    let mut cwd = std::path::PathBuf::new();
    for record in records {
        match &record.event {
            Event::SessionStarted { cwd: started, .. } => cwd = started.clone(),
            Event::UserMessage { message } => user(message, mapper, &mut out),
            Event::AssistantTurn { messages, .. } => {
                for message in messages {
                    assistant(message, mapper, &cwd, &mut out);
                }
            }
            Event::CompactionApplied {
                trigger,
                summary,
                tokens_before,
                tokens_after,
                ledger_tokens,
                ..
            } => {
                if view.compaction {
                    let update = completed_compaction(record)
                        .summary(vec![ContentBlock::from(summary.as_str())])
                        .meta(pith_meta(json!({
                            "trigger": trigger.as_str(),
                            "tokensBefore": tokens_before,
                            "tokensAfter": tokens_after,
                            "ledgerTokens": ledger_tokens,
                        })));
                    out.push(mapper.notification(SessionUpdate::CompactionUpdate(update)));
                } else {
                    out.extend(mapper.notice_updates(
                        NoticeSeverity::Info,
                        format!(
                            "Context compacted ({}; {tokens_before} → {tokens_after} tokens)",
                            trigger.as_str()
                        ),
                    ));
                }
            }
            Event::MicroCompactionApplied {
                tokens_before,
                tokens_after,
                ..
            } => {
                if view.compaction {
                    let update = completed_compaction(record).meta(pith_meta(json!({
                        "trigger": "micro",
                        "tokensBefore": tokens_before,
                        "tokensAfter": tokens_after,
                    })));
                    out.push(mapper.notification(SessionUpdate::CompactionUpdate(update)));
                }
            }
            Event::Rewind(rewind) => out.extend(mapper.notice_updates(
                NoticeSeverity::Info,
                format!(
                    "Rewound to turn {} ({})",
                    rewind.turn,
                    rewind.mode.describe()
                ),
            )),
            Event::Pin(change) => out.extend(mapper.notice_updates(
                NoticeSeverity::Info,
                match change.action {
                    pith_session::PinAction::Add => format!("Pinned {}", change.pin.label()),
                    pith_session::PinAction::Remove => {
                        format!("Unpinned {}", change.pin.label())
                    }
                },
            )),
            Event::HookRun(_)
            | Event::Checkpoint(_)
            | Event::ModelSwitched { .. }
            | Event::Unknown { .. } => {}
        }
    }
    out
}

/// The finished compaction that `record` recorded, as the client is shown it.
fn completed_compaction(record: &Record) -> CompactionUpdate {
    CompactionUpdate::new(
        CompactionId::new(format!("record-{}", record.seq)),
        CompactionStatus::Completed,
    )
}

fn user(message: &Message, mapper: &EventMapper, out: &mut Vec<SessionNotification>) {
    for part in &message.parts {
        let block = match part {
            // The block of pins pith added is not the user's words.
            Part::Text { text } if !text.is_empty() && !is_pinned_block(text) => {
                ContentBlock::from(text.as_str())
            }
            Part::Image(image) => ContentBlock::Image(ImageContent::new(
                image.data.clone(),
                image.media_type.clone(),
            )),
            _ => continue,
        };
        out.push(mapper.notification(SessionUpdate::UserMessageChunk(ContentChunk::new(block))));
    }
}

fn assistant(
    message: &Message,
    mapper: &EventMapper,
    cwd: &std::path::Path,
    out: &mut Vec<SessionNotification>,
) {
    if message.role == Role::System || message.role == Role::User {
        return;
    }
    for part in &message.parts {
        let update = match part {
            Part::ToolCall(call) if call.name == pith_core::PLAN_TOOL => {
                out.push(
                    mapper.notification(SessionUpdate::ToolCall(tool_calls::started(
                        &call.id, call, cwd, false,
                    ))),
                );
                // The plan as it stood after this call: the check the tool made, so a
                // refused call changes nothing here either.
                match pith_core::Plan::from_arguments(&call.arguments) {
                    Ok(plan) => SessionUpdate::Plan(crate::plan::to_acp(&plan)),
                    Err(_) => continue,
                }
            }
            Part::Text { text } if !text.is_empty() => {
                SessionUpdate::AgentMessageChunk(chunk(text))
            }
            Part::Reasoning(reasoning) if !reasoning.text.is_empty() => {
                SessionUpdate::AgentThoughtChunk(chunk(&reasoning.text))
            }
            Part::ToolCall(call) => {
                SessionUpdate::ToolCall(tool_calls::started(&call.id, call, cwd, false))
            }
            Part::ToolResult(result) => {
                SessionUpdate::ToolCallUpdate(tool_calls::finished(&result.call_id, result, None))
            }
            _ => continue,
        };
        out.push(mapper.notification(update));
    }
}
