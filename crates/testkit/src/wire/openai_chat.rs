//! OpenAI Chat Completions (`POST /v1/chat/completions`) on the wire: `chat.completion.chunk`
//! SSE events ending in `data: [DONE]`, the `chat.completion` JSON body, and the OpenAI error
//! body `{"error": {message, type, param, code}}` shared with the Responses API.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::error_kind::ErrorKind;
use super::fragments::{argument_fragments, text_fragments};
use super::plan::{TurnPlan, CREATED_AT};
use super::sse::SseEvent;
use crate::protocol::Protocol;

fn completion_id(plan: &TurnPlan<'_>) -> String {
    format!("chatcmpl-testkit-{}", plan.number)
}

fn finish_reason(plan: &TurnPlan<'_>) -> &'static str {
    if plan.cut {
        "length"
    } else if plan.turn.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

/// The `usage` object of a completion.
fn usage(plan: &TurnPlan<'_>) -> Value {
    let usage = plan.turn.effective_usage();
    let mut value = json!({
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached(), "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens.unwrap_or(0),
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    });
    // OpenRouter's usage accounting adds the request's cost in dollars.
    if let Some(cost) = usage.cost {
        value["cost"] = json!(cost);
    }
    value
}

/// The streamed answer: role chunk, reasoning/text/tool-call delta chunks, finish chunk,
/// usage chunk (when asked), `[DONE]`.
pub(crate) fn stream_events(plan: &TurnPlan<'_>) -> Vec<SseEvent> {
    let id = completion_id(plan);
    let chunk = |delta: Value, finish_reason: Value| {
        let mut chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": CREATED_AT,
            "model": plan.model,
            "system_fingerprint": "fp_testkit",
            "choices": [{
                "index": 0,
                "delta": delta,
                "logprobs": null,
                "finish_reason": finish_reason
            }]
        });
        if plan.include_usage {
            chunk["usage"] = Value::Null;
        }
        SseEvent::data(chunk.to_string())
    };

    let mut events = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    if let Some(reasoning) = plan.reasoning() {
        for piece in text_fragments(reasoning) {
            events.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    for piece in text_fragments(&plan.turn.text) {
        events.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, (call, call_id)) in plan.calls().enumerate() {
        events.push(chunk(
            json!({"tool_calls": [{
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""}
            }]}),
            Value::Null,
        ));
        for piece in argument_fragments(&call.arguments_text()) {
            events.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    events.push(chunk(json!({}), json!(finish_reason(plan))));
    if plan.include_usage && !plan.turn.no_usage {
        let usage_chunk = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": CREATED_AT,
            "model": plan.model,
            "system_fingerprint": "fp_testkit",
            "choices": [],
            "usage": usage(plan)
        });
        events.push(SseEvent::data(usage_chunk.to_string()));
    }
    events.push(SseEvent::data("[DONE]"));
    events
}

/// The error a Chat Completions stream carries when it fails after its 200: a data line
/// holding only the error object.
pub(crate) fn stream_error_event() -> SseEvent {
    let (_, body) = error_answer(Protocol::OpenAiChat, &ErrorKind::ServerError);
    SseEvent::data(body.to_string())
}

/// The non-streaming `chat.completion` body.
pub(crate) fn json_body(plan: &TurnPlan<'_>) -> Value {
    let content = if plan.turn.text.is_empty() && !plan.turn.tool_calls.is_empty() {
        Value::Null
    } else {
        json!(plan.turn.text)
    };
    let mut message = json!({
        "role": "assistant",
        "content": content,
        "refusal": null,
        "annotations": []
    });
    if let Some(reasoning) = plan.reasoning() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !plan.turn.tool_calls.is_empty() {
        message["tool_calls"] = plan
            .calls()
            .map(|(call, call_id)| {
                json!({
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_text()}
                })
            })
            .collect();
    }
    plan.usage_field(
        json!({
            "id": completion_id(plan),
            "object": "chat.completion",
            "created": CREATED_AT,
            "model": plan.model,
            "system_fingerprint": "fp_testkit",
            "choices": [{
                "index": 0,
                "message": message,
                "logprobs": null,
                "finish_reason": finish_reason(plan)
            }],
            "usage": usage(plan)
        }),
        "usage",
    )
}

/// Status and OpenAI error body for both OpenAI protocols (they share the error shape; only
/// the context-length message differs).
pub(crate) fn error_answer(protocol: Protocol, kind: &ErrorKind) -> (StatusCode, Value) {
    let body = |message: String, error_type: &str, param: Value, code: Value| json!({"error": {"message": message, "type": error_type, "param": param, "code": code}});
    match kind {
        ErrorKind::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            body(
                "Rate limit reached for requests per min (RPM): Limit 500, Used 500, \
                 Requested 1. Please try again later."
                    .to_owned(),
                "requests",
                Value::Null,
                json!("rate_limit_exceeded"),
            ),
        ),
        ErrorKind::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            body(
                "The server had an error while processing your request. Sorry about that!"
                    .to_owned(),
                "server_error",
                Value::Null,
                Value::Null,
            ),
        ),
        ErrorKind::Overloaded => (
            StatusCode::SERVICE_UNAVAILABLE,
            body(
                "The server is overloaded or not ready yet.".to_owned(),
                "server_error",
                Value::Null,
                Value::Null,
            ),
        ),
        ErrorKind::ContextLength {
            prompt_tokens,
            limit,
        } => {
            let (message, param) = match protocol {
                Protocol::OpenAiResponses => (
                    "Your input exceeds the context window of this model. Please adjust your \
                     input and try again."
                        .to_owned(),
                    "input",
                ),
                _ => (
                    format!(
                        "This model's maximum context length is {limit} tokens. However, your \
                         messages resulted in {prompt_tokens} tokens. Please reduce the length \
                         of the messages."
                    ),
                    "messages",
                ),
            };
            (
                StatusCode::BAD_REQUEST,
                body(
                    message,
                    "invalid_request_error",
                    json!(param),
                    json!("context_length_exceeded"),
                ),
            )
        }
        ErrorKind::InvalidRequest { message, param } => (
            StatusCode::BAD_REQUEST,
            body(
                message.clone(),
                "invalid_request_error",
                param.as_ref().map_or(Value::Null, |p| json!(p)),
                Value::Null,
            ),
        ),
        ErrorKind::ProviderReturned => (
            StatusCode::BAD_GATEWAY,
            json!({"error": {
                "code": 502,
                "message": "Provider returned error",
                "metadata": {
                    "provider_name": "Testkit Upstream",
                    "raw": "{\"error\":{\"message\":\"upstream connection reset\"}}"
                }
            }}),
        ),
        ErrorKind::Testkit { status, message } => {
            let error_type = if status.is_server_error() {
                "server_error"
            } else {
                "invalid_request_error"
            };
            (
                *status,
                body(message.clone(), error_type, Value::Null, Value::Null),
            )
        }
    }
}
