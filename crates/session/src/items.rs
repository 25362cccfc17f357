//! Visible transcript items: what the user saw during a turn, as stored in an
//! `assistant_turn` checkpoint and shown again by `pith replay`.
//!
//! Items are the UI's record, separate from the model messages: a front-end records what
//! it rendered (text, tool cards, notices such as "Context compacted automatically"), and
//! replay shows exactly that. When a front-end recorded no items, [`items_from_messages`]
//! derives them from the turn's messages.

use pith_core::{Message, Part, Role};
use serde::{Deserialize, Serialize};

/// Longest argument summary kept for a tool call card, in characters.
pub const ARGUMENTS_SUMMARY_CHARS: usize = 200;

/// One visible element of an assistant turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum TranscriptItem {
    /// Assistant text as streamed to the user.
    #[serde(rename = "assistant_text")]
    AssistantText {
        /// The text.
        #[serde(rename = "text")]
        text: String,
    },
    /// A tool call card.
    #[serde(rename = "tool_call")]
    ToolCall {
        /// The provider's call id (links the result).
        #[serde(rename = "call_id")]
        call_id: String,
        /// Tool name.
        #[serde(rename = "name")]
        name: String,
        /// One-line summary of the arguments (see [`summarize_arguments`]).
        #[serde(rename = "arguments")]
        arguments: String,
    },
    /// A tool result card: the (squashed) content the model saw.
    #[serde(rename = "tool_result")]
    ToolResult {
        /// The call this answers.
        #[serde(rename = "call_id")]
        call_id: String,
        /// Squashed content or preview.
        #[serde(rename = "content")]
        content: String,
        /// True when the tool failed or refused.
        #[serde(rename = "is_error", default)]
        is_error: bool,
        /// Spill file holding the raw output, relative to the session directory, when
        /// squashing dropped anything.
        #[serde(rename = "spill", default, skip_serializing_if = "Option::is_none")]
        spill: Option<String>,
        /// The session of the subagent the call ran (the `task` tool), whose transcript
        /// `pith replay --expand` shows nested here.
        #[serde(
            rename = "child_session",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        child_session: Option<String>,
    },
    /// A status line shown to the user (e.g. "Context compacted automatically").
    #[serde(rename = "notice")]
    Notice {
        /// The text shown.
        #[serde(rename = "text")]
        text: String,
    },
}

/// Compact one-line JSON of tool arguments, cut at [`ARGUMENTS_SUMMARY_CHARS`] characters
/// with a trailing `…` when longer.
pub fn summarize_arguments(arguments: &serde_json::Value) -> String {
    let full = match arguments {
        serde_json::Value::String(raw) => raw.clone(),
        other => other.to_string(),
    };
    match full.char_indices().nth(ARGUMENTS_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &full[..cut]),
        None => full,
    }
}

/// An `update_plan` call's arguments as the plan they set: its progress, then its
/// checklist, one step a line (`None` for other calls and for a plan the tool refused).
fn plan_summary(call: &pith_core::ToolCall) -> Option<String> {
    if call.name != pith_core::PLAN_TOOL {
        return None;
    }
    let plan = pith_core::Plan::from_arguments(&call.arguments).ok()?;
    Some(
        format!("{}\n{}", plan.progress(), plan.checklist())
            .trim_end()
            .to_owned(),
    )
}

/// The visible items of a turn reconstructed from its messages: assistant text, one card
/// per tool call and one per tool result, in order. System and user messages show
/// nothing here (user messages are their own records).
pub fn items_from_messages(messages: &[Message]) -> Vec<TranscriptItem> {
    let mut items = Vec::new();
    for message in messages {
        if matches!(message.role, Role::System | Role::User) {
            continue;
        }
        for part in &message.parts {
            match part {
                Part::Text { text } if !text.is_empty() => {
                    items.push(TranscriptItem::AssistantText { text: text.clone() })
                }
                Part::Text { .. } => {}
                Part::ToolCall(call) => items.push(TranscriptItem::ToolCall {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: plan_summary(call)
                        .unwrap_or_else(|| summarize_arguments(&call.arguments)),
                }),
                Part::ToolResult(result) => items.push(TranscriptItem::ToolResult {
                    call_id: result.call_id.clone(),
                    content: result.content.clone(),
                    is_error: result.is_error,
                    spill: None,
                    child_session: result.child_session.as_ref().map(|c| c.session_id.clone()),
                }),
                // Reasoning is never answer text, and an image shows as its result's card.
                Part::Reasoning(_) | Part::Image(_) => {}
            }
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::ToolCall;
    use serde_json::json;

    #[test]
    fn a_plan_call_shows_as_its_checklist() {
        let plan = |arguments| {
            items_from_messages(&[Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: "p1".into(),
                    name: pith_core::PLAN_TOOL.into(),
                    arguments,
                }],
            )])
        };
        let items = plan(json!({"steps": [
            {"step": "read", "status": "done", "note": "ok"},
            {"step": "fix", "status": "pending"}
        ]}));
        assert!(
            matches!(&items[0], TranscriptItem::ToolCall { arguments, .. }
            if arguments == "2 steps: 1 done, 0 in progress, 1 pending\n[x] read — ok\n[ ] fix")
        );
        // A refused plan shows its raw arguments, as any call does.
        let items = plan(json!({"steps": "x"}));
        assert!(
            matches!(&items[0], TranscriptItem::ToolCall { arguments, .. }
            if arguments == r#"{"steps":"x"}"#)
        );
    }

    #[test]
    fn items_follow_the_turn_in_order() {
        let turn = vec![
            Message::assistant_with_calls(
                "Looking.",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                }],
            ),
            Message::tool_result("c1", "fn a() {}", false),
            Message::assistant("Done."),
        ];
        assert_eq!(
            items_from_messages(&turn),
            vec![
                TranscriptItem::AssistantText {
                    text: "Looking.".into()
                },
                TranscriptItem::ToolCall {
                    call_id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"path":"a.rs"}"#.into()
                },
                TranscriptItem::ToolResult {
                    call_id: "c1".into(),
                    content: "fn a() {}".into(),
                    is_error: false,
                    spill: None,
                    child_session: None
                },
                TranscriptItem::AssistantText {
                    text: "Done.".into()
                },
            ]
        );
    }

    #[test]
    fn long_arguments_are_cut_on_a_char_boundary() {
        let args = json!({"text": "é".repeat(500)});
        let summary = summarize_arguments(&args);
        assert_eq!(summary.chars().count(), ARGUMENTS_SUMMARY_CHARS + 1);
        assert!(summary.ends_with('…'));
    }

    #[test]
    fn items_have_the_documented_json_shape() {
        let item = TranscriptItem::Notice {
            text: "Context compacted automatically".into(),
        };
        assert_eq!(
            serde_json::to_value(&item).unwrap(),
            json!({"type": "notice", "text": "Context compacted automatically"})
        );
    }
}
