//! Wire formats: how one scripted turn looks on each provider's API — as an SSE event list,
//! as a non-streaming JSON body, and as that provider's error bodies. Pure functions from a
//! [`TurnPlan`] (`plan`) to bytes-to-be; the server decides when and how they are sent.
//! One module per protocol; what they share: `plan`, `sse` (one event), `fragments`
//! (how deltas are cut), `error_kind` (which error to answer).

pub(crate) mod anthropic;
pub(crate) mod bedrock;
mod error_kind;
mod fragments;
pub(crate) mod gemini;
pub(crate) mod openai_chat;
pub(crate) mod openai_responses;
mod plan;
mod sse;

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::Value;

pub(crate) use self::error_kind::ErrorKind;
pub(crate) use self::fragments::floor_char_boundary;
pub(crate) use self::plan::{
    encrypted_content, redacted_data, thinking_signature, TurnPlan, DEFAULT_MODEL,
};
pub(crate) use self::sse::SseEvent;
use crate::protocol::Protocol;

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
