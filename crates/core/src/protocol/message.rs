//! The provider-neutral message model.
//!
//! Every history pith keeps — the loop's compaction history, the session transcript, the
//! replacement installed by a compaction — is a `Vec<Message>`. The serialised form is
//! part of the session file format: field and variant names are fixed by explicit serde
//! attributes and pinned by the exact-JSON tests below, so renaming a Rust identifier can
//! never silently change what is on disk.

use serde::{Deserialize, Serialize};

use crate::protocol::effect::FileEffect;
use crate::protocol::subagent::ChildRun;

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
    /// The child conversation this call ran (the `task` tool): the link to its
    /// transcript and what it used (never sent to the model).
    #[serde(
        rename = "child_session",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub child_session: Option<ChildRun>,
}

impl ToolResult {
    /// A result without effects.
    pub fn new(call_id: impl Into<String>, content: impl Into<String>, is_error: bool) -> Self {
        Self {
            call_id: call_id.into(),
            content: content.into(),
            is_error,
            effects: Vec::new(),
            child_session: None,
        }
    }
}

/// The model's reasoning, kept in the history so it can be sent back.
///
/// `text` is what a person may read (Anthropic's thinking, an OpenAI reasoning summary, a
/// Chat server's `reasoning_content`); it is never answer text. The opaque fields are what
/// the provider needs to accept the reasoning back unchanged: an Anthropic `signature`
/// (over `text`), an Anthropic `redacted_thinking` block's data or an OpenAI reasoning
/// item's `encrypted_content` (`encrypted`), and an OpenAI reasoning item's `id`.
/// `origin` names the wire protocol that produced it (`anthropic`, `openai-responses`,
/// `openai-chat`): reasoning only ever goes back to the protocol that made it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// The wire protocol that produced it.
    #[serde(rename = "origin")]
    pub origin: String,
    /// Readable reasoning text; empty when the provider sent none (redacted, or no
    /// summary).
    #[serde(rename = "text", default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// The provider's id of the reasoning item (OpenAI Responses).
    #[serde(rename = "id", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The provider's signature over `text` (Anthropic `thinking` blocks).
    #[serde(rename = "signature", default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// Reasoning only the provider can read: OpenAI `encrypted_content`, or the data of an
    /// Anthropic `redacted_thinking` block.
    #[serde(rename = "encrypted", default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<String>,
}

impl Reasoning {
    /// True when the provider can take this reasoning back (it carries a signature or
    /// encrypted content); plain reasoning text is for people only and is never sent.
    pub fn is_replayable(&self) -> bool {
        self.signature.is_some() || self.encrypted.is_some()
    }
}

/// An image the model sees (a screenshot `read` returned, or one the user attached).
///
/// `data` is the encoded file (base64), already scaled to the provider's limits;
/// `width`/`height` are its pixel size after scaling (token estimates use them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The path the image was read from, as shown to the model.
    #[serde(rename = "path")]
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    #[serde(rename = "media_type")]
    pub media_type: String,
    /// Width in pixels.
    #[serde(rename = "width")]
    pub width: u32,
    /// Height in pixels.
    #[serde(rename = "height")]
    pub height: u32,
    /// The encoded image, base64 (standard alphabet, padded).
    #[serde(rename = "data")]
    pub data: String,
}

impl Image {
    /// The text an image becomes once it leaves the history (compaction, pruning,
    /// fitting): where it was, its size and its estimated cost, and how to see it again.
    pub fn placeholder(&self, tokens: usize) -> String {
        format!(
            "[image: {}, {}\u{d7}{}, ~{tokens} tokens \u{2014} read it again to see it]",
            self.path, self.width, self.height
        )
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
    /// The model's reasoning (assistant messages only). Never answer text.
    #[serde(rename = "reasoning")]
    Reasoning(Reasoning),
    /// An image: in a user message (attached by the user), or in a tool message after
    /// the result of the `read` call that returned it.
    #[serde(rename = "image")]
    Image(Image),
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

/// Declares, for each `name: Variant`, a method `name` iterating over the parts of that
/// variant (each holding a value of the type of the same name) in order.
macro_rules! parts_of_kind {
    ($($(#[$doc:meta])* $name:ident: $variant:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> impl Iterator<Item = &$variant> {
            self.parts.iter().filter_map(|part| match part {
                Part::$variant(inner) => Some(inner),
                _ => None,
            })
        }
    )*};
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

    parts_of_kind! {
        /// The tool calls of this message, in order.
        tool_calls: ToolCall;
        /// The tool results of this message, in order.
        tool_results: ToolResult;
        /// The reasoning parts of this message, in order.
        reasoning: Reasoning;
        /// The images of this message, in order.
        images: Image;
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
    fn reasoning_and_image_have_the_documented_json_shape() {
        let mut assistant = Message::assistant("Done.");
        assistant.parts.insert(
            0,
            Part::Reasoning(Reasoning {
                origin: "anthropic".into(),
                text: "Check the tests.".into(),
                signature: Some("sig".into()),
                ..Reasoning::default()
            }),
        );
        assistant.parts.push(Part::Reasoning(Reasoning {
            origin: "openai-responses".into(),
            id: Some("rs_1".into()),
            encrypted: Some("gAAA".into()),
            ..Reasoning::default()
        }));
        assert_eq!(
            serde_json::to_value(&assistant).unwrap(),
            json!({"role": "assistant", "parts": [
                {"type": "reasoning", "origin": "anthropic", "text": "Check the tests.", "signature": "sig"},
                {"type": "text", "text": "Done."},
                {"type": "reasoning", "origin": "openai-responses", "id": "rs_1", "encrypted": "gAAA"}
            ]})
        );
        let image = Image {
            path: "shot.png".into(),
            media_type: "image/png".into(),
            width: 640,
            height: 480,
            data: "iVBO".into(),
        };
        let user = Message {
            role: Role::User,
            parts: vec![Part::Image(image.clone())],
        };
        assert_eq!(
            serde_json::to_value(&user).unwrap(),
            json!({"role": "user", "parts": [
                {"type": "image", "path": "shot.png", "media_type": "image/png", "width": 640, "height": 480, "data": "iVBO"}
            ]})
        );
        let back: Message =
            serde_json::from_value(serde_json::to_value(&assistant).unwrap()).unwrap();
        assert_eq!(back, assistant);
        assert_eq!(
            back.text_content(),
            "Done.",
            "reasoning is never answer text"
        );
        assert_eq!(back.reasoning().count(), 2);
        assert_eq!(
            image.placeholder(410),
            "[image: shot.png, 640\u{d7}480, ~410 tokens \u{2014} read it again to see it]"
        );
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
