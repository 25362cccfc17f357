//! Google Gemini (`POST /v1beta/models/{model}:streamGenerateContent?alt=sse`, and
//! `:generateContent` for one JSON body) on the wire: data-only SSE events, each a whole
//! `GenerateContentResponse` chunk — thought summaries (`"thought": true`), text,
//! `functionCall` parts (whole, never in pieces), and a last chunk with the
//! `finishReason` and the `usageMetadata`; there is no final event, the stream just ends.
//! Errors are Google's `{"error": {code, message, status}}`.
//!
//! Thought signatures: a reasoning turn's signature ([`super::plan::thinking_signature`]) comes
//! on its first `functionCall` part, or, for an answer without calls, on a final empty
//! text part, as the API sends them.

use hyper::StatusCode;
use serde_json::{json, Value};

use super::error_kind::ErrorKind;
use super::fragments::text_fragments;
use super::plan::{thinking_signature, TurnPlan};
use super::sse::SseEvent;

/// The testkit's response id of turn `number`.
fn response_id(plan: &TurnPlan<'_>) -> String {
    format!("testkit-response-{}", plan.number)
}

/// A call's `args`: the arguments object, or (a script's raw argument text, which Gemini
/// could never send) the text as a JSON string.
pub(crate) fn args(arguments: &Value) -> Value {
    match arguments {
        Value::String(raw) => {
            serde_json::from_str::<Value>(raw).unwrap_or_else(|_| Value::String(raw.clone()))
        }
        other => other.clone(),
    }
}

/// The parts of the answer, each in its own chunk when streamed.
fn parts(plan: &TurnPlan<'_>, streamed: bool) -> Vec<Value> {
    let mut parts = Vec::new();
    let signature = plan.reasoning().map(|_| thinking_signature(plan.number));
    if let Some(reasoning) = plan.reasoning() {
        if streamed {
            for piece in text_fragments(reasoning) {
                parts.push(json!({"text": piece, "thought": true}));
            }
        } else {
            parts.push(json!({"text": reasoning, "thought": true}));
        }
    }
    if !plan.turn.text.is_empty() {
        if streamed {
            for piece in text_fragments(&plan.turn.text) {
                parts.push(json!({"text": piece}));
            }
        } else {
            parts.push(json!({"text": plan.turn.text}));
        }
    }
    let mut signature_left = signature;
    for (call, id) in plan.calls() {
        let mut part =
            json!({"functionCall": {"id": id, "name": call.name, "args": args(&call.arguments)}});
        if plan.omit_call_ids {
            if let Some(call) = part["functionCall"].as_object_mut() {
                call.remove("id");
            }
        }
        if let Some(signature) = signature_left.take() {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    match signature_left {
        // A text answer's signature comes on an empty last part.
        Some(signature) => parts.push(json!({"text": "", "thoughtSignature": signature})),
        None if parts.is_empty() => parts.push(json!({"text": ""})),
        None => {}
    }
    parts
}

fn finish_reason(plan: &TurnPlan<'_>) -> &'static str {
    if plan.cut {
        "MAX_TOKENS"
    } else {
        "STOP"
    }
}

/// `usageMetadata`: `promptTokenCount` includes the cached part; thinking tokens are
/// counted apart from the candidates'.
fn usage(plan: &TurnPlan<'_>) -> Value {
    let usage = plan.turn.effective_usage();
    let thoughts = usage.reasoning_tokens.unwrap_or(0).min(usage.output_tokens);
    let mut metadata = json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens - thoughts,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    });
    if usage.cached() > 0 {
        metadata["cachedContentTokenCount"] = json!(usage.cached());
    }
    if thoughts > 0 {
        metadata["thoughtsTokenCount"] = json!(thoughts);
    }
    metadata
}

/// One `GenerateContentResponse` with `parts`.
fn response(plan: &TurnPlan<'_>, parts: Vec<Value>, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    json!({
        "candidates": [candidate],
        "modelVersion": plan.model,
        "responseId": response_id(plan),
    })
}

/// The streamed answer: one chunk per part, the last part's chunk also ending the answer
/// with its `finishReason` and usage.
pub(crate) fn stream_events(plan: &TurnPlan<'_>) -> Vec<SseEvent> {
    let mut parts = parts(plan, true);
    let last = parts.pop().unwrap_or_else(|| json!({"text": ""}));
    let mut events: Vec<SseEvent> = parts
        .into_iter()
        .map(|part| SseEvent::data(response(plan, vec![part], None).to_string()))
        .collect();
    let mut end = response(plan, vec![last], Some(finish_reason(plan)));
    if !plan.turn.no_usage {
        end["usageMetadata"] = usage(plan);
    }
    events.push(SseEvent::data(end.to_string()));
    events
}

/// The non-streaming `generateContent` body.
pub(crate) fn json_body(plan: &TurnPlan<'_>) -> Value {
    let mut body = response(plan, parts(plan, false), Some(finish_reason(plan)));
    if !plan.turn.no_usage {
        body["usageMetadata"] = usage(plan);
    }
    body
}

/// The error a Gemini stream carries when it fails after its 200: an overloaded model.
pub(crate) fn stream_error_event() -> SseEvent {
    let (_, body) = error_answer(&ErrorKind::Overloaded);
    SseEvent::data(body.to_string())
}

/// Google's status name of an HTTP status.
fn status_name(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

/// Status and Google error body.
pub(crate) fn error_answer(kind: &ErrorKind) -> (StatusCode, Value) {
    let (status, message) = match kind {
        ErrorKind::RateLimited => (
            StatusCode::TOO_MANY_REQUESTS,
            "You exceeded your current quota, please check your plan and billing details."
                .to_owned(),
        ),
        ErrorKind::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting".to_owned(),
        ),
        ErrorKind::Overloaded => (
            StatusCode::SERVICE_UNAVAILABLE,
            "The model is overloaded. Please try again later.".to_owned(),
        ),
        ErrorKind::ContextLength {
            prompt_tokens,
            limit,
        } => (
            StatusCode::BAD_REQUEST,
            format!(
                "The input token count ({prompt_tokens}) exceeds the maximum number of tokens allowed ({limit})."
            ),
        ),
        ErrorKind::InvalidRequest { message, .. } => (StatusCode::BAD_REQUEST, message.clone()),
        ErrorKind::ProviderReturned => (
            StatusCode::BAD_GATEWAY,
            "The service is currently unavailable.".to_owned(),
        ),
        ErrorKind::Testkit { status, message } => (*status, message.clone()),
    };
    (
        status,
        json!({"error": {"code": status.as_u16(), "message": message, "status": status_name(status)}}),
    )
}
