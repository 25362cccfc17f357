//! Anthropic Messages (`POST /v1/messages`) on the wire: `message_start`,
//! `content_block_start`, `ping`, `content_block_delta` (`thinking_delta`, `signature_delta`,
//! `text_delta`, `input_json_delta`), `content_block_stop`, `message_delta`, `message_stop`;
//! the `message` JSON body; and Anthropic's `{"type": "error", "error": {type, message}}`.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::error_kind::ErrorKind;
use super::fragments::{argument_fragments, text_fragments};
use super::plan::{redacted_data, thinking_signature, TurnPlan};
use super::sse::SseEvent;

/// Anthropic's non-standard "overloaded" status.
const STATUS_OVERLOADED: u16 = 529;

/// One content block of the answer, in its final form (Bedrock's answer has the same
/// blocks).
pub(super) enum ContentBlock {
    Thinking {
        text: String,
        signature: String,
    },
    RedactedThinking {
        data: String,
    },
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        arguments: String,
    },
}

impl ContentBlock {
    fn completed(&self) -> Value {
        match self {
            ContentBlock::Thinking { text, signature } => {
                json!({"type": "thinking", "thinking": text, "signature": signature})
            }
            ContentBlock::RedactedThinking { data } => {
                json!({"type": "redacted_thinking", "data": data})
            }
            ContentBlock::Text { text } => json!({"type": "text", "text": text}),
            ContentBlock::ToolUse {
                id,
                name,
                arguments,
            } => {
                let input = serde_json::from_str::<Value>(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.clone()));
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
        }
    }

    fn started(&self) -> Value {
        match self {
            ContentBlock::Thinking { .. } => {
                json!({"type": "thinking", "thinking": "", "signature": ""})
            }
            // A redacted block arrives whole in its start event; no delta follows.
            ContentBlock::RedactedThinking { data } => {
                json!({"type": "redacted_thinking", "data": data})
            }
            ContentBlock::Text { .. } => json!({"type": "text", "text": ""}),
            ContentBlock::ToolUse { id, name, .. } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": {}})
            }
        }
    }

    /// The `delta` objects that stream this block's content.
    fn deltas(&self) -> Vec<Value> {
        match self {
            ContentBlock::Thinking { text, signature } => text_fragments(text)
                .into_iter()
                .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                .chain([json!({"type": "signature_delta", "signature": signature})])
                .collect(),
            ContentBlock::RedactedThinking { .. } => Vec::new(),
            ContentBlock::Text { text } => text_fragments(text)
                .into_iter()
                .map(|piece| json!({"type": "text_delta", "text": piece}))
                .collect(),
            // Anthropic opens a tool input with an empty fragment, then the JSON in pieces.
            ContentBlock::ToolUse { arguments, .. } => std::iter::once("")
                .chain(argument_fragments(arguments))
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect(),
        }
    }
}

/// The answer's blocks in order: thinking, redacted thinking, text, tool calls.
pub(super) fn content_blocks(plan: &TurnPlan<'_>) -> Vec<ContentBlock> {
    let mut blocks = Vec::new();
    if let Some(reasoning) = plan.reasoning() {
        blocks.push(ContentBlock::Thinking {
            text: reasoning.to_owned(),
            signature: thinking_signature(plan.number),
        });
    }
    if plan.turn.redacted_thinking {
        blocks.push(ContentBlock::RedactedThinking {
            data: redacted_data(plan.number),
        });
    }
    if plan.has_text_message() {
        blocks.push(ContentBlock::Text {
            text: plan.turn.text.clone(),
        });
    }
    for (call, call_id) in plan.calls() {
        blocks.push(ContentBlock::ToolUse {
            id: call_id.to_owned(),
            name: call.name.clone(),
            arguments: call.arguments_text(),
        });
    }
    blocks
}

fn message_id(plan: &TurnPlan<'_>) -> String {
    format!("msg_testkit_{}", plan.number)
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

/// Anthropic usage: `input_tokens` excludes the cache read and the cache write, reported
/// separately.
fn usage(plan: &TurnPlan<'_>, output_tokens: u64) -> Value {
    let usage = plan.turn.effective_usage();
    json!({
        "input_tokens": usage.input_tokens - usage.cached() - usage.cache_written(),
        "cache_creation_input_tokens": usage.cache_written(),
        "cache_read_input_tokens": usage.cached(),
        "output_tokens": output_tokens
    })
}

fn event(event_type: &str, mut payload: Value) -> SseEvent {
    payload["type"] = json!(event_type);
    SseEvent::named(event_type, &payload)
}

/// The streamed answer, event by event.
pub(crate) fn stream_events(plan: &TurnPlan<'_>) -> Vec<SseEvent> {
    let message = plan.usage_field(
        json!({
            "id": message_id(plan),
            "type": "message",
            "role": "assistant",
            "model": plan.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage(plan, 1)
        }),
        "usage",
    );
    let mut events = vec![event("message_start", json!({ "message": message }))];
    for (index, block) in content_blocks(plan).iter().enumerate() {
        events.push(event(
            "content_block_start",
            json!({"index": index, "content_block": block.started()}),
        ));
        if index == 0 {
            events.push(event("ping", json!({})));
        }
        for delta in block.deltas() {
            events.push(event(
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            ));
        }
        events.push(event("content_block_stop", json!({"index": index})));
    }
    events.push(event(
        "message_delta",
        plan.usage_field(
            json!({
                "delta": {"stop_reason": stop_reason(plan), "stop_sequence": null},
                // Cumulative usage, as the API sends today (older examples show only
                // output_tokens here; message_start already carried the input side).
                "usage": usage(plan, plan.turn.effective_usage().output_tokens)
            }),
            "usage",
        ),
    ));
    events.push(event("message_stop", json!({})));
    events
}

/// The `error` event an Anthropic stream carries when it fails after its 200 (typically
/// `overloaded_error`).
pub(crate) fn stream_error_event() -> SseEvent {
    let (_, body) = error_answer(&ErrorKind::Overloaded);
    SseEvent::named("error", &json!({"type": "error", "error": body["error"]}))
}

/// The non-streaming `message` body.
pub(crate) fn json_body(plan: &TurnPlan<'_>) -> Value {
    let content: Vec<Value> = content_blocks(plan)
        .iter()
        .map(ContentBlock::completed)
        .collect();
    plan.usage_field(
        json!({
            "id": message_id(plan),
            "type": "message",
            "role": "assistant",
            "model": plan.model,
            "content": content,
            "stop_reason": stop_reason(plan),
            "stop_sequence": null,
            "usage": usage(plan, plan.turn.effective_usage().output_tokens)
        }),
        "usage",
    )
}

/// Status and Anthropic error body.
pub(crate) fn error_answer(kind: &ErrorKind) -> (StatusCode, Value) {
    let (status, error_type, message) = match kind {
        ErrorKind::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_error",
            "This request would exceed your organization's rate limit. Please try again later."
                .to_owned(),
        ),
        ErrorKind::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "Internal server error".to_owned(),
        ),
        ErrorKind::Overloaded => (
            StatusCode::from_u16(STATUS_OVERLOADED).unwrap_or(StatusCode::SERVICE_UNAVAILABLE),
            "overloaded_error",
            "Overloaded".to_owned(),
        ),
        ErrorKind::ContextLength {
            prompt_tokens,
            limit,
        } => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            format!("prompt is too long: {prompt_tokens} tokens > {limit} maximum"),
        ),
        ErrorKind::InvalidRequest { message, .. } => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            message.clone(),
        ),
        ErrorKind::ProviderReturned => (
            StatusCode::BAD_GATEWAY,
            "api_error",
            "Provider returned error".to_owned(),
        ),
        ErrorKind::Testkit { status, message } => {
            let error_type = if status.is_server_error() {
                "api_error"
            } else if *status == StatusCode::NOT_FOUND {
                "not_found_error"
            } else {
                "invalid_request_error"
            };
            (*status, error_type, message.clone())
        }
    };
    (
        status,
        json!({
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_testkit"
        }),
    )
}
