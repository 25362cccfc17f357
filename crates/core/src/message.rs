//! The provider-neutral message model.
//!
//! Every history pith keeps — the loop's compaction history, the session transcript, the
//! replacement installed by a compaction — is a `Vec<Message>`. The serialised form is
//! part of the session file format: field and variant names are fixed by explicit serde
//! attributes and pinned by the exact-JSON tests below, so renaming a Rust identifier can
//! never silently change what is on disk.

use serde::{Deserialize, Serialize};

use crate::effect::FileEffect;

/// Who authored a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// Instructions to the model (system prompt, project instructions).
    #[serde(rename = "system")]
    System,
    /// The human, or text pith sends on the human's behalf (e.g. a compacted context).
    #[serde(rename = "user")]
    User,
    /// The model: text and tool calls.
    #[serde(rename = "assistant")]
    Assistant,
    /// Results of tool calls, answering an assistant message's calls.
    #[serde(rename = "tool")]
    Tool,
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned call id; the matching [`ToolResult::call_id`] refers to it.
    #[serde(rename = "id")]
    pub id: String,
    /// Tool name as advertised in the tool definitions.
    #[serde(rename = "name")]
    pub name: String,
    /// Parsed JSON arguments. Arguments that were not valid JSON are kept as a JSON string.
    #[serde(rename = "arguments")]
    pub arguments: serde_json::Value,
}

/// The outcome of one tool call, as shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this result answers.
    #[serde(rename = "call_id")]
    pub call_id: String,
    /// Text the model sees (already squashed at capture time, see `context::squash`).
    #[serde(rename = "content")]
    pub content: String,
    /// True when the tool failed or refused; the model sees the content as an error.
    #[serde(rename = "is_error", default)]
    pub is_error: bool,
    /// What the call did to files (never sent to the model; the session ledger's facts).
    #[serde(rename = "effects", default, skip_serializing_if = "Vec::is_empty")]
    pub effects: Vec<FileEffect>,
}

impl ToolResult {
    /// A result without effects.
    pub fn new(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
            effects: Vec::new(),
        }
    }
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Part {
    /// Plain text.
    #[serde(rename = "text")]
    Text {
        /// The text itself.
        #[serde(rename = "text")]
        text: String,
    },
    /// A tool call made by the assistant.
    #[serde(rename = "tool_call")]
    ToolCall(ToolCall),
    /// A tool result carried by a [`Role::Tool`] message.
    #[serde(rename = "tool_result")]
    ToolResult(ToolResult),
}

/// A message: a role and its ordered parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Author of the message.
    #[serde(rename = "role")]
    pub role: Role,
    /// Ordered content.
    #[serde(rename = "parts")]
    pub parts: Vec<Part>,
}

impl Message {
    /// A message holding one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self {
            role,
            parts: vec![Part::Text { text: text.into() }],
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant message with only text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// An assistant message with optional text followed by tool calls.
    pub fn assistant_with_calls(text: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        let text = text.into();
        let mut parts = Vec::with_capacity(calls.len() + 1);
        if !text.is_empty() {
            parts.push(Part::Text { text });
        }
        parts.extend(calls.into_iter().map(Part::ToolCall));
        Self {
            role: Role::Assistant,
            parts,
        }
    }

    /// A tool message carrying one result.
    pub fn tool_result(
        call_id: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self {
            role: Role::Tool,
            parts: vec![Part::ToolResult(ToolResult::new(
                call_id, content, is_error,
            ))],
        }
    }

    /// All text parts joined without separator (tool calls and results excluded).
    pub fn text_content(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text { text } = part {
                out.push_str(text);
            }
        }
        out
    }

    /// The tool calls of this message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results of this message, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult(result) => Some(result),
            _ => None,
        })
    }

    /// True when this is a system message.
    pub fn is_system(&self) -> bool {
        self.role == Role::System
    }
}

/// The most recent user message that carries text, if any.
///
/// Automatic compaction retains this message verbatim outside the summary.
pub fn last_user_text(messages: &[Message]) -> Option<String> {
    messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text { .. })))
        .map(Message::text_content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_message_has_the_documented_json_shape() {
        let msg = Message::user("hi");
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"role": "user", "parts": [{"type": "text", "text": "hi"}]})
        );
    }

    #[test]
    fn tool_call_and_result_have_the_documented_json_shape() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: json!({"path": "src/lib.rs"}),
        };
        let assistant = Message::assistant_with_calls("Let me look.", vec![call]);
        assert_eq!(
            serde_json::to_value(&assistant).unwrap(),
            json!({"role": "assistant", "parts": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "src/lib.rs"}}
            ]})
        );
        let result = Message::tool_result("c1", "fn main() {}", false);
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"role": "tool", "parts": [
                {"type": "tool_result", "call_id": "c1", "content": "fn main() {}", "is_error": false}
            ]})
        );
    }

    #[test]
    fn every_role_and_part_round_trips_through_json() {
        let history = vec![
            Message::system("be brief"),
            Message::user("fix it"),
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: "a".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls -la", "timeout_ms": 5000}),
                }],
            ),
            Message::tool_result("a", "total 0\n", true),
            Message::assistant("done ✓"),
        ];
        let text = serde_json::to_string(&history).unwrap();
        let back: Vec<Message> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, history);
    }

    #[test]
    fn missing_is_error_defaults_to_false() {
        let part: Part =
            serde_json::from_value(json!({"type": "tool_result", "call_id": "x", "content": "ok"}))
                .unwrap();
        assert_eq!(part, Part::ToolResult(ToolResult::new("x", "ok", false)));
    }

    #[test]
    fn unknown_role_is_a_clear_error() {
        let err = serde_json::from_value::<Message>(json!({"role": "wizard", "parts": []}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("wizard"), "{err}");
    }

    #[test]
    fn last_user_text_skips_tool_messages_and_finds_latest_user() {
        let history = vec![
            Message::user("first"),
            Message::assistant("ok"),
            Message::user("second"),
            Message::tool_result("c", "out", false),
        ];
        assert_eq!(last_user_text(&history).as_deref(), Some("second"));
        assert_eq!(last_user_text(&[]), None);
    }
}
