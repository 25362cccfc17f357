//! The tokens of what a request carries: messages (text, tool calls and results,
//! reasoning, images), tool definitions and the framing the provider adds around them,
//! and the estimate of a whole request from scratch ([`estimate_request`]).

use serde::{Deserialize, Serialize};

use crate::context::tokens::counter::TokenCounter;
use crate::protocol::message::{Image, Message, Part, Reasoning};
use crate::protocol::tool::ToolDefinition;

/// Tokens added per message for role markers and separators in the provider's framing.
///
/// OpenAI documents 3 tokens per chat message plus the role; Anthropic's framing is of
/// the same order. 4 is a deliberate slight over-estimate: the budget's margin absorbs it.
pub const MESSAGE_FRAMING_TOKENS: usize = 4;
/// Tokens added once per request (reply priming and the system block's own framing).
pub const REQUEST_FRAMING_TOKENS: usize = 3;
/// Tokens added per tool call or tool result part (call id, name and structure).
pub const TOOL_PART_FRAMING_TOKENS: usize = 8;
/// Tokens added per tool definition (the function wrapper around the schema).
pub const TOOL_DEFINITION_FRAMING_TOKENS: usize = 8;

/// Tokens of one message: its parts plus [`MESSAGE_FRAMING_TOKENS`].
pub fn count_message(counter: &dyn TokenCounter, message: &Message) -> usize {
    let mut total = MESSAGE_FRAMING_TOKENS;
    for part in &message.parts {
        total += match part {
            Part::Text { text } => counter.count(text),
            Part::ToolCall(call) => {
                TOOL_PART_FRAMING_TOKENS
                    + counter.count(&call.name)
                    + count_json(counter, &call.arguments)
            }
            Part::ToolResult(result) => TOOL_PART_FRAMING_TOKENS + counter.count(&result.content),
            Part::Reasoning(reasoning) => count_reasoning(counter, reasoning),
            Part::Image(image) => count_image(counter, image),
        };
    }
    total
}

/// Tokens of an image part: its framing plus the provider's formula for its size.
pub fn count_image(counter: &dyn TokenCounter, image: &Image) -> usize {
    TOOL_PART_FRAMING_TOKENS + counter.image_tokens(image.width, image.height)
}

/// Tokens of a reasoning part as it goes back to the provider: nothing for reasoning
/// that is never sent (no signature, nothing encrypted); otherwise its text plus its
/// opaque payload at 4 bytes a token (encrypted reasoning is the reasoning itself, in a
/// form only the provider reads).
pub fn count_reasoning(counter: &dyn TokenCounter, reasoning: &Reasoning) -> usize {
    if !reasoning.is_replayable() {
        return 0;
    }
    TOOL_PART_FRAMING_TOKENS
        + counter.count(&reasoning.text)
        + reasoning
            .encrypted
            .as_ref()
            .map_or(0, |e| e.len().div_ceil(4))
}

/// Tokens of the tool definitions as sent to the provider.
pub fn count_tools(counter: &dyn TokenCounter, tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|tool| {
            TOOL_DEFINITION_FRAMING_TOKENS
                + counter.count(&tool.name)
                + counter.count(&tool.description)
                + count_json(counter, &tool.parameters)
        })
        .sum()
}

/// Tokens of a JSON value as sent: a string as its text, anything else as JSON.
fn count_json(counter: &dyn TokenCounter, value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(s) => counter.count(s),
        other => counter.count(&other.to_string()),
    }
}

/// A breakdown of one request's estimated input tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequestEstimate {
    /// System prompt, including its message framing.
    pub system: usize,
    /// Tool definitions.
    pub tools: usize,
    /// Conversation messages, including their framing.
    pub messages: usize,
    /// The estimate of the whole request in the server's terms: what thresholds are
    /// compared against. Anchored on a plausible usage report, else pith's count times
    /// the conversation's calibration (see [`crate::context::calibration`]).
    pub total: usize,
    /// True when `total` was anchored on usage the provider reported.
    pub anchored_on_reported_usage: bool,
    /// pith's own count of the request (system + tools + messages + framing), uncalibrated.
    #[serde(default)]
    pub counted: usize,
    /// True when every figure is an upper bound (texts counted as their bytes, before the
    /// exact counter was ready), not a count. See [`upper_bound_estimate`].
    #[serde(default)]
    pub upper_bound: bool,
}

/// Estimates the whole request from scratch, without any cache.
///
/// Used where no loop state exists (e.g. `/context` on a resumed session, tests); the
/// tool loop uses [`RequestEstimator`], which returns the same figure for the same input
/// when no usage has been reported.
pub fn estimate_request(
    counter: &dyn TokenCounter,
    system: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> RequestEstimate {
    let system_tokens = system_tokens(counter, system);
    let tools_tokens = count_tools(counter, tools);
    let message_tokens: usize = messages.iter().map(|m| count_message(counter, m)).sum();
    RequestEstimate {
        system: system_tokens,
        tools: tools_tokens,
        messages: message_tokens,
        total: REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens,
        anchored_on_reported_usage: false,
        counted: REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens,
        upper_bound: false,
    }
}

/// Tokens of the system prompt with its message framing (nothing without one).
pub(super) fn system_tokens(counter: &dyn TokenCounter, system: &str) -> usize {
    if system.is_empty() {
        0
    } else {
        MESSAGE_FRAMING_TOKENS + counter.count(system)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::{BpeCounter, Encoding, ImageFormula};

    fn o200k() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn reasoning_counts_only_when_it_goes_back_and_images_by_formula() {
        use crate::protocol::message::{Image, Reasoning};
        let counter = o200k().with_image_formula(ImageFormula::OpenAiTiles);
        let shown_only = Message {
            role: crate::protocol::message::Role::Assistant,
            parts: vec![Part::Reasoning(Reasoning {
                origin: "openai-chat".into(),
                text: "a long chain of thought".repeat(50),
                ..Reasoning::default()
            })],
        };
        assert_eq!(count_message(&counter, &shown_only), MESSAGE_FRAMING_TOKENS);
        let signed = Message {
            role: crate::protocol::message::Role::Assistant,
            parts: vec![Part::Reasoning(Reasoning {
                origin: "anthropic".into(),
                text: "hello world".into(),
                signature: Some("sig".into()),
                ..Reasoning::default()
            })],
        };
        assert_eq!(
            count_message(&counter, &signed),
            MESSAGE_FRAMING_TOKENS + TOOL_PART_FRAMING_TOKENS + 2
        );
        let image = Message {
            role: crate::protocol::message::Role::User,
            parts: vec![Part::Image(Image {
                path: "a.png".into(),
                media_type: "image/png".into(),
                width: 1024,
                height: 1024,
                data: "x".repeat(100_000),
            })],
        };
        assert_eq!(
            count_message(&counter, &image),
            MESSAGE_FRAMING_TOKENS + TOOL_PART_FRAMING_TOKENS + 765,
            "an image costs its formula, not its base64 text"
        );
    }
}
