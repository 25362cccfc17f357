//! AWS Bedrock Converse (`POST /model/{modelId}/converse-stream`) on the wire: binary
//! `application/vnd.amazon.eventstream` messages, each with `:message-type: event`, an
//! `:event-type` and a JSON payload — `messageStart`, `contentBlockStart` (tool use),
//! `contentBlockDelta` (`text`, `toolUse.input`, `reasoningContent` text / signature /
//! redactedContent), `contentBlockStop`, `messageStop`, `metadata` (usage, after the
//! stop); exceptions as `:message-type: exception` messages; the non-streaming `Converse`
//! body; and Bedrock's error bodies (`{"message"}` with an `x-amzn-ErrorType` header).
//! Frames are written by `aws-smithy-eventstream`, the AWS SDK's own encoder.

use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Value};

use super::anthropic::{content_blocks as blocks, ContentBlock as Block};
use super::error_kind::ErrorKind;
use super::fragments::{argument_fragments, text_fragments};
use super::plan::TurnPlan;

/// The `content-type` of a streamed answer.
pub(crate) const CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// An event message: `:event-type`, `:content-type` and `:message-type` headers, as
/// Bedrock sends them, and `payload`.
pub(crate) fn event(event_type: &str, payload: &Value) -> Message {
    Message::new(Bytes::from(payload.to_string()))
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(event_type.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ))
}

/// An exception message (`:exception-type`, payload `{"message": …}`).
pub(crate) fn exception(exception_type: &str, message: &str) -> Message {
    Message::new(Bytes::from(json!({ "message": message }).to_string()))
        .add_header(Header::new(
            ":exception-type",
            HeaderValue::String(exception_type.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("exception".into()),
        ))
}

/// The bytes of `message` on the wire (prelude, headers, payload, both CRCs).
pub(crate) fn encode(message: &Message) -> Bytes {
    let mut bytes = Vec::new();
    // Headers and payloads the testkit builds are far below the format's limits.
    if aws_smithy_eventstream::frame::write_message_to(message, &mut bytes).is_err() {
        return Bytes::new();
    }
    Bytes::from(bytes)
}

/// The encoded `message` with one payload byte flipped: its message CRC no longer matches
/// (what `malformed_sse` inserts in a Bedrock stream).
pub(crate) fn corrupted(message: &Message) -> Bytes {
    let mut bytes = encode(message).to_vec();
    if bytes.len() > 16 {
        let at = bytes.len() - 5;
        bytes[at] ^= 0x20;
    }
    Bytes::from(bytes)
}

fn stop_reason(plan: &TurnPlan<'_>) -> &'static str {
    if plan.cut {
        "max_tokens"
    } else if plan.turn.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// Bedrock usage: `inputTokens` excludes the cache read and the cache write, reported
/// separately.
fn usage(plan: &TurnPlan<'_>) -> Value {
    let usage = plan.turn.effective_usage();
    let input = usage.input_tokens - usage.cached() - usage.cache_written();
    json!({
        "inputTokens": input,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.input_tokens + usage.output_tokens,
        "cacheReadInputTokens": usage.cached(),
        "cacheWriteInputTokens": usage.cache_written()
    })
}

/// The streamed answer, message by message.
pub(crate) fn stream_messages(plan: &TurnPlan<'_>) -> Vec<Message> {
    let mut messages = vec![event("messageStart", &json!({"role": "assistant"}))];
    for (index, block) in blocks(plan).iter().enumerate() {
        let delta = |delta: Value| {
            event(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": delta}),
            )
        };
        match block {
            Block::Thinking { text, signature } => {
                for piece in text_fragments(text) {
                    messages.push(delta(json!({"reasoningContent": {"text": piece}})));
                }
                messages.push(delta(json!({"reasoningContent": {"signature": signature}})));
            }
            Block::RedactedThinking { data } => {
                messages.push(delta(
                    json!({"reasoningContent": {"redactedContent": data}}),
                ));
            }
            Block::Text { text } => {
                for piece in text_fragments(text) {
                    messages.push(delta(json!({"text": piece})));
                }
            }
            Block::ToolUse {
                id,
                name,
                arguments,
            } => {
                messages.push(event(
                    "contentBlockStart",
                    &json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": id, "name": name}}}),
                ));
                for piece in argument_fragments(arguments) {
                    messages.push(delta(json!({"toolUse": {"input": piece}})));
                }
            }
        }
        messages.push(event(
            "contentBlockStop",
            &json!({"contentBlockIndex": index}),
        ));
    }
    messages.push(event(
        "messageStop",
        &json!({"stopReason": stop_reason(plan)}),
    ));
    messages.push(event(
        "metadata",
        &plan.usage_field(
            json!({"usage": usage(plan), "metrics": {"latencyMs": 42}}),
            "usage",
        ),
    ));
    messages
}

/// The exception a Bedrock stream carries when it fails after the 200: the service is
/// overloaded (Anthropic's in-stream `overloaded_error` as Bedrock reports it).
pub(crate) fn stream_exception() -> Message {
    exception(
        "serviceUnavailableException",
        "Bedrock is unable to process your request.",
    )
}

/// The non-streaming `Converse` body.
pub(crate) fn json_body(plan: &TurnPlan<'_>) -> Value {
    let content: Vec<Value> = blocks(plan)
        .iter()
        .map(|block| match block {
            Block::Thinking { text, signature } => {
                json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}})
            }
            Block::RedactedThinking { data } => json!({"reasoningContent": {"redactedContent": data}}),
            Block::Text { text } => json!({"text": text}),
            Block::ToolUse {
                id,
                name,
                arguments,
            } => {
                let input = serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
            }
        })
        .collect();
    plan.usage_field(
        json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop_reason(plan),
            "usage": usage(plan),
            "metrics": {"latencyMs": 42}
        }),
        "usage",
    )
}

/// Status, Bedrock error body and its `x-amzn-ErrorType`.
pub(crate) fn error_answer(kind: &ErrorKind) -> (StatusCode, Value, &'static str) {
    let (status, error_type, message) = match kind {
        ErrorKind::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            "ThrottlingException",
            "Too many requests, please wait before trying again.".to_owned(),
        ),
        ErrorKind::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerException",
            "The server encountered an internal error while processing the request.".to_owned(),
        ),
        ErrorKind::Overloaded => (
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.".to_owned(),
        ),
        ErrorKind::ContextLength {
            prompt_tokens,
            limit,
        } => (
            StatusCode::BAD_REQUEST,
            "ValidationException",
            format!(
                "The model returned the following errors: prompt is too long: {prompt_tokens} tokens > {limit} maximum"
            ),
        ),
        ErrorKind::InvalidRequest { message, .. } => (
            StatusCode::BAD_REQUEST,
            "ValidationException",
            message.clone(),
        ),
        ErrorKind::ProviderReturned => (
            StatusCode::from_u16(424).unwrap_or(StatusCode::BAD_GATEWAY),
            "ModelErrorException",
            "The model failed to process the request.".to_owned(),
        ),
        ErrorKind::Testkit { status, message } => {
            let error_type = if status.is_server_error() {
                "InternalServerException"
            } else if *status == StatusCode::NOT_FOUND {
                "ResourceNotFoundException"
            } else {
                "ValidationException"
            };
            (*status, error_type, message.clone())
        }
    };
    (status, json!({ "message": message }), error_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_a_corrupted_one_fails_its_crc() {
        let message = event("messageStart", &json!({"role": "assistant"}));
        let decoded = aws_smithy_eventstream::frame::read_message_from(encode(&message)).unwrap();
        assert_eq!(decoded, message);
        assert!(aws_smithy_eventstream::frame::read_message_from(corrupted(&message)).is_err());
    }
}
