//! One turn ready to render, and the identifiers its answer carries (timestamps,
//! signatures, encrypted content), the same every run.

use serde_json::Value;

use crate::turn::{ToolCall, Turn};

/// A fixed creation timestamp (2026-01-01T00:00:00Z) so answers are byte-for-byte
/// reproducible.
pub(crate) const CREATED_AT: u64 = 1_767_225_600;

/// The model name reported when the request names none.
pub(crate) const DEFAULT_MODEL: &str = "testkit-model";

/// One turn, ready to render: the scripted turn plus what the request decided.
pub(crate) struct TurnPlan<'a> {
    /// The scripted turn.
    pub turn: &'a Turn,
    /// 1-based position of the turn in the script (used in response ids).
    pub number: usize,
    /// The resolved id of each tool call of the turn.
    pub tool_call_ids: &'a [String],
    /// The request's `model`, echoed back.
    pub model: String,
    /// Chat Completions only: `stream_options.include_usage` was true.
    pub include_usage: bool,
    /// Responses only: the request asked for `reasoning.encrypted_content`.
    pub encrypted_reasoning: bool,
    /// Gemini only: `functionCall` parts without `id`.
    pub omit_call_ids: bool,
    /// The answer was cut at the request's output cap (`max_tokens`): it ends with the
    /// protocol's length stop.
    pub cut: bool,
}

/// The signature the testkit gives the thinking block of turn `number`.
pub(crate) fn thinking_signature(number: usize) -> String {
    format!("testkit-signature-{number}")
}

/// The data of turn `number`'s `redacted_thinking` block.
pub(crate) fn redacted_data(number: usize) -> String {
    format!("testkit-redacted-{number}")
}

/// The `encrypted_content` of turn `number`'s reasoning item.
pub(crate) fn encrypted_content(number: usize) -> String {
    format!("testkit-encrypted-{number}")
}

impl TurnPlan<'_> {
    /// `value` without its `key` (`usage`, `usageMetadata`) when the turn reports no
    /// usage; unchanged otherwise.
    pub(crate) fn usage_field(&self, mut value: Value, key: &str) -> Value {
        if self.turn.no_usage {
            if let Value::Object(map) = &mut value {
                map.remove(key);
            }
        }
        value
    }

    /// Tool calls paired with their resolved ids.
    pub(crate) fn calls(&self) -> impl Iterator<Item = (&ToolCall, &str)> {
        self.turn
            .tool_calls
            .iter()
            .zip(self.tool_call_ids.iter().map(String::as_str))
    }

    /// The reasoning text, when the turn has some.
    pub(crate) fn reasoning(&self) -> Option<&str> {
        self.turn.reasoning.as_deref().filter(|r| !r.is_empty())
    }

    /// Whether a text message is part of the answer: when there is text, or when there is
    /// nothing else (an empty turn answers with one empty text message).
    pub(crate) fn has_text_message(&self) -> bool {
        !self.turn.text.is_empty() || self.turn.tool_calls.is_empty()
    }
}
