//! The session ledger of a recorded session: the same fold the loop keeps as the
//! history grows, replayed over every record of the transcript, so a resumed session
//! carries the facts of its whole life, compactions before the resume included.

use std::path::Path;

use pith_core::context::ledger::{Ledger, Observed};
use pith_core::Role;
use pith_session::{Event, Record};

/// An empty ledger for a new session in `cwd`.
pub fn fresh(cwd: &Path) -> Ledger {
    Ledger::new(Some(cwd.display().to_string()))
}

/// The ledger of the session whose records are `records`, in `cwd`.
///
/// Only the records on the current line of the conversation count: turns a conversation
/// rewind abandoned are not the session's any more (docs/rewind.md).
pub fn rebuild(cwd: &Path, records: &[Record]) -> Ledger {
    let line = pith_session::current_line(records);
    let observed = line.into_iter().flat_map(|record| -> Vec<Observed<'_>> {
        match &record.event {
            Event::UserMessage { message } if message.role == Role::User => {
                vec![Observed::User(message_text(message))]
            }
            Event::AssistantTurn { messages, .. } => {
                messages.iter().map(Observed::Message).collect()
            }
            _ => Vec::new(),
        }
    });
    Ledger::rebuild(Some(cwd.display().to_string()), observed)
}

/// The text of a user message (its first text part: user messages hold one).
fn message_text(message: &pith_core::Message) -> &str {
    message
        .parts
        .iter()
        .find_map(|part| match part {
            pith_core::Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{Message, ToolCall};
    use serde_json::json;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            ts: String::new(),
            event,
        }
    }

    #[test]
    fn the_whole_transcript_is_folded_in_order() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "src/lib.rs"}),
        };
        let records = vec![
            record(
                1,
                Event::UserMessage {
                    message: Message::user("keep the API stable"),
                },
            ),
            record(
                2,
                Event::AssistantTurn {
                    messages: vec![
                        Message::assistant_with_calls("", vec![call]),
                        Message::tool_result("c1", "fn parse() {}", false),
                    ],
                    items: Vec::new(),
                    usage: None,
                    interrupted: false,
                    error: None,
                    compaction_model_usage: None,
                },
            ),
        ];
        let ledger = rebuild(Path::new("/repo"), &records);
        assert_eq!(ledger.user_messages().len(), 1);
        assert_eq!(ledger.user_messages()[0].text, "keep the API stable");
        assert_eq!(ledger.files().len(), 1);
        assert_eq!(ledger.files()[0].path, "src/lib.rs");
        assert!(fresh(Path::new("/repo")).is_empty());
    }

    #[test]
    fn the_plan_of_the_latest_accepted_update_plan_call_is_rebuilt() {
        let plan_turn = |id: &str, steps: serde_json::Value, refused: bool| {
            let call = ToolCall {
                id: id.into(),
                name: pith_core::PLAN_TOOL.into(),
                arguments: json!({ "steps": steps }),
            };
            Event::AssistantTurn {
                messages: vec![
                    Message::assistant_with_calls("", vec![call]),
                    Message::tool_result(id, "Plan updated.", refused),
                ],
                items: Vec::new(),
                usage: None,
                interrupted: false,
                error: None,
                compaction_model_usage: None,
            }
        };
        let records = vec![
            record(
                1,
                plan_turn("p1", json!([{"step": "a", "status": "in_progress"}]), false),
            ),
            record(
                2,
                Event::CompactionApplied {
                    trigger: pith_session::CompactionTrigger::Auto,
                    messages: vec![Message::user("<compacted_context>S</compacted_context>")],
                    summary: "S".into(),
                    tokens_before: 9_000,
                    tokens_after: 900,
                    usage: None,
                    ledger: None,
                    ledger_tokens: 0,
                    restored_files: Vec::new(),
                    model: None,
                },
            ),
            record(
                3,
                plan_turn(
                    "p2",
                    json!([{"step": "a", "status": "done", "note": "kept"}]),
                    false,
                ),
            ),
            record(4, plan_turn("p3", json!([{"step": "b"}]), true)),
        ];
        let ledger = rebuild(Path::new("/repo"), &records);
        assert_eq!(ledger.plan().checklist(), "[x] a — kept");
    }
}
