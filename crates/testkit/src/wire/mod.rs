//! Wire formats: how one scripted turn looks on each provider's API — as an SSE event list,
//! as a non-streaming JSON body, and as that provider's error bodies. Pure functions from a
//! [`TurnPlan`] to bytes-to-be; the server decides when and how they are sent.

pub(crate) mod anthropic;
pub(crate) mod bedrock;
pub(crate) mod gemini;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::Value;

use crate::script::{Protocol, ToolCall, Turn};

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

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    /// The `event:` line, when the protocol uses one.
    pub name: Option<String>,
    /// The `data:` payload (one line of JSON, or `[DONE]`).
    pub data: String,
}

impl SseEvent {
    /// An event with an `event:` line whose data is `payload`.
    pub(crate) fn named(name: &str, payload: &Value) -> SseEvent {
        SseEvent {
            name: Some(name.to_owned()),
            data: payload.to_string(),
        }
    }

    /// A data-only event.
    pub(crate) fn data(data: impl Into<String>) -> SseEvent {
        SseEvent {
            name: None,
            data: data.into(),
        }
    }

    /// The event's bytes on the wire, blank-line terminated.
    pub(crate) fn encode(&self) -> Bytes {
        let mut text = String::with_capacity(self.data.len() + 32);
        if let Some(name) = &self.name {
            text.push_str("event: ");
            text.push_str(name);
            text.push('\n');
        }
        text.push_str("data: ");
        text.push_str(&self.data);
        text.push_str("\n\n");
        Bytes::from(text)
    }

    /// The same event with its JSON cut in half: what `malformed_sse` inserts.
    pub(crate) fn corrupted(&self) -> SseEvent {
        let cut = floor_char_boundary(&self.data, self.data.len() / 2);
        SseEvent {
            name: self.name.clone(),
            data: self.data[..cut].to_owned(),
        }
    }
}

/// One event of a streamed answer: a server-sent event, or (Bedrock) a binary
/// event-stream message.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StreamEvent {
    /// A server-sent event.
    Sse(SseEvent),
    /// An `application/vnd.amazon.eventstream` message.
    Frame(aws_smithy_types::event_stream::Message),
    /// Bytes as they are (a deliberately corrupted frame).
    Raw(Bytes),
}

impl StreamEvent {
    /// The event's bytes on the wire.
    pub(crate) fn encode(&self) -> Bytes {
        match self {
            StreamEvent::Sse(event) => event.encode(),
            StreamEvent::Frame(message) => bedrock::encode(message),
            StreamEvent::Raw(bytes) => bytes.clone(),
        }
    }

    /// The same event made unreadable: JSON cut in half, or a frame whose CRC fails.
    pub(crate) fn corrupted(&self) -> StreamEvent {
        match self {
            StreamEvent::Sse(event) => StreamEvent::Sse(event.corrupted()),
            StreamEvent::Frame(message) => StreamEvent::Raw(bedrock::corrupted(message)),
            StreamEvent::Raw(bytes) => StreamEvent::Raw(bytes.slice(..bytes.len() / 2)),
        }
    }
}

/// The largest char boundary of `text` not after `index`.
pub(crate) fn floor_char_boundary(text: &str, index: usize) -> usize {
    let mut cut = index.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// Longest fragment a text or argument delta carries, in characters.
const MAX_FRAGMENT_CHARS: usize = 16;

/// Splits `text` into consecutive fragments of at most 16 characters, and into at least
/// `min_parts` fragments when it has that many characters. Empty text gives no fragment.
pub(crate) fn fragments(text: &str, min_parts: usize) -> Vec<&str> {
    let chars = text.chars().count();
    if chars == 0 {
        return Vec::new();
    }
    let size = chars
        .div_ceil(min_parts.max(1))
        .clamp(1, MAX_FRAGMENT_CHARS);
    let mut pieces = Vec::with_capacity(chars.div_ceil(size));
    let mut start = 0;
    let mut taken = 0;
    for (offset, _) in text.char_indices() {
        if taken == size {
            pieces.push(&text[start..offset]);
            start = offset;
            taken = 0;
        }
        taken += 1;
    }
    pieces.push(&text[start..]);
    pieces
}

/// Splits a text delta stream: at least two fragments.
pub(crate) fn text_fragments(text: &str) -> Vec<&str> {
    fragments(text, 2)
}

/// Splits tool-call arguments: at least three fragments.
pub(crate) fn argument_fragments(arguments: &str) -> Vec<&str> {
    fragments(arguments, 3)
}

/// Which error body to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ErrorKind {
    /// 429 rate limit.
    RateLimited,
    /// 500 internal error.
    ServerError,
    /// Anthropic 529 / OpenAI and Gemini 503.
    Overloaded,
    /// 400 context length exceeded.
    ContextLength {
        /// Tokens the prompt is reported to have.
        prompt_tokens: u64,
        /// The model's maximum.
        limit: u64,
    },
    /// A 400 the real API gives for what the client sent (a thinking block missing or
    /// altered, a reasoning item without its encrypted content, an unsupported field),
    /// in the provider's own wording.
    InvalidRequest {
        /// The provider's message.
        message: String,
        /// OpenAI's `param`, when it names one.
        param: Option<String>,
    },
    /// OpenRouter's wrapper of a failed upstream provider (HTTP 502).
    ProviderReturned,
    /// A testkit-level problem (script exhausted, wrong path, bad body), with its status.
    Testkit {
        /// HTTP status to answer with.
        status: StatusCode,
        /// Human-readable explanation, starting with `pith-testkit:`.
        message: String,
    },
}

/// The streamed answer to a turn.
pub(crate) fn stream_events(protocol: Protocol, plan: &TurnPlan<'_>) -> Vec<StreamEvent> {
    let sse = match protocol {
        Protocol::OpenAiChat => openai_chat::stream_events(plan),
        Protocol::OpenAiResponses => openai_responses::stream_events(plan),
        Protocol::Anthropic => anthropic::stream_events(plan),
        Protocol::Gemini => gemini::stream_events(plan),
        Protocol::Bedrock => {
            return bedrock::stream_messages(plan)
                .into_iter()
                .map(StreamEvent::Frame)
                .collect()
        }
    };
    sse.into_iter().map(StreamEvent::Sse).collect()
}

/// The non-streaming answer to a turn.
pub(crate) fn json_body(protocol: Protocol, plan: &TurnPlan<'_>) -> Value {
    match protocol {
        Protocol::OpenAiChat => openai_chat::json_body(plan),
        Protocol::OpenAiResponses => openai_responses::json_body(plan),
        Protocol::Anthropic => anthropic::json_body(plan),
        Protocol::Gemini => gemini::json_body(plan),
        Protocol::Bedrock => bedrock::json_body(plan),
    }
}

/// The error event a provider sends inside a 200 stream; `sequence_number` is its position
/// (used by the Responses API).
pub(crate) fn stream_error_event(protocol: Protocol, sequence_number: usize) -> StreamEvent {
    StreamEvent::Sse(match protocol {
        Protocol::OpenAiChat => openai_chat::stream_error_event(),
        Protocol::OpenAiResponses => openai_responses::stream_error_event(sequence_number),
        Protocol::Anthropic => anthropic::stream_error_event(),
        Protocol::Gemini => gemini::stream_error_event(),
        Protocol::Bedrock => return StreamEvent::Frame(bedrock::stream_exception()),
    })
}

/// The status and body of an error answer.
pub(crate) fn error_answer(protocol: Protocol, kind: &ErrorKind) -> (StatusCode, Value) {
    match protocol {
        Protocol::OpenAiChat | Protocol::OpenAiResponses => {
            openai_chat::error_answer(protocol, kind)
        }
        Protocol::Anthropic => anthropic::error_answer(kind),
        Protocol::Gemini => gemini::error_answer(kind),
        Protocol::Bedrock => {
            let (status, body, _) = bedrock::error_answer(kind);
            (status, body)
        }
    }
}

/// Headers an error answer carries besides its body (Bedrock's `x-amzn-ErrorType`).
pub(crate) fn error_headers(protocol: Protocol, kind: &ErrorKind) -> Vec<(&'static str, String)> {
    match protocol {
        Protocol::Bedrock => {
            let (_, _, error_type) = bedrock::error_answer(kind);
            vec![(
                "x-amzn-errortype",
                format!("{error_type}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            )]
        }
        _ => Vec::new(),
    }
}

/// The `content-type` of a streamed answer in `protocol`.
pub(crate) fn stream_content_type(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Bedrock => bedrock::CONTENT_TYPE,
        _ => SSE_CONTENT_TYPE,
    }
}

/// The `content-type` of a streamed answer.
pub(crate) const SSE_CONTENT_TYPE: &str = "text/event-stream; charset=utf-8";

/// The `content-type` of a JSON answer.
pub(crate) const JSON_CONTENT_TYPE: &str = "application/json";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragments_rejoin_to_the_original_and_respect_the_minimum_count() {
        for text in [
            "",
            "a",
            "ab",
            "Let me look.",
            &"x".repeat(100),
            "héllo wörld ✓✓✓",
        ] {
            let pieces = text_fragments(text);
            assert_eq!(pieces.concat(), text);
            if text.chars().count() >= 2 {
                assert!(pieces.len() >= 2, "{text:?} split into {pieces:?}");
            }
            assert!(pieces
                .iter()
                .all(|p| p.chars().count() <= MAX_FRAGMENT_CHARS));
        }
        assert!(argument_fragments(r#"{"path":"a"}"#).len() >= 3);
    }

    #[test]
    fn sse_events_encode_with_optional_event_line() {
        let named = SseEvent::named("ping", &serde_json::json!({"type": "ping"}));
        assert_eq!(
            named.encode(),
            Bytes::from("event: ping\ndata: {\"type\":\"ping\"}\n\n")
        );
        assert_eq!(
            SseEvent::data("[DONE]").encode(),
            Bytes::from("data: [DONE]\n\n")
        );
        let corrupt = named.corrupted();
        assert!(serde_json::from_str::<Value>(&corrupt.data).is_err());
    }
}
