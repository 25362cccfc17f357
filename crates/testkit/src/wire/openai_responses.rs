//! OpenAI Responses (`POST /v1/responses`) on the wire: typed SSE events (`event:` line plus
//! JSON with `type` and an increasing `sequence_number`) from `response.created` to
//! `response.completed`, and the `response` JSON object for non-streaming requests. Errors
//! use the shared OpenAI body (see `openai_chat`).

use serde_json::{json, Value};

use super::fragments::{argument_fragments, text_fragments};
use super::plan::{encrypted_content, TurnPlan, CREATED_AT};
use super::sse::SseEvent;

/// One output item of the response, in its final (completed) form, plus its ids.
enum OutputItem {
    Reasoning {
        id: String,
        text: String,
        encrypted: Option<String>,
    },
    Message {
        id: String,
        text: String,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
}

impl OutputItem {
    fn completed(&self) -> Value {
        match self {
            OutputItem::Reasoning {
                id,
                text,
                encrypted,
            } => {
                let mut item = json!({
                    "id": id,
                    "type": "reasoning",
                    "summary": [summary_part(text)]
                });
                if let Some(encrypted) = encrypted {
                    item["encrypted_content"] = json!(encrypted);
                }
                item
            }
            OutputItem::Message { id, text } => json!({
                "id": id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [text_part(text)]
            }),
            OutputItem::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => json!({
                "id": id,
                "type": "function_call",
                "status": "completed",
                "call_id": call_id,
                "name": name,
                "arguments": arguments
            }),
        }
    }

    fn in_progress(&self) -> Value {
        match self {
            OutputItem::Reasoning { id, .. } => {
                json!({"id": id, "type": "reasoning", "summary": []})
            }
            OutputItem::Message { id, .. } => json!({
                "id": id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": []
            }),
            OutputItem::FunctionCall {
                id, call_id, name, ..
            } => json!({
                "id": id,
                "type": "function_call",
                "status": "in_progress",
                "call_id": call_id,
                "name": name,
                "arguments": ""
            }),
        }
    }
}

fn text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn summary_part(text: &str) -> Value {
    json!({"type": "summary_text", "text": text})
}

fn output_items(plan: &TurnPlan<'_>) -> Vec<OutputItem> {
    let mut items = Vec::new();
    if let Some(reasoning) = plan.reasoning() {
        items.push(OutputItem::Reasoning {
            id: format!("rs_testkit_{}", plan.number),
            text: reasoning.to_owned(),
            encrypted: plan
                .encrypted_reasoning
                .then(|| encrypted_content(plan.number)),
        });
    }
    if plan.has_text_message() {
        items.push(OutputItem::Message {
            id: format!("msg_testkit_{}", plan.number),
            text: plan.turn.text.clone(),
        });
    }
    for (index, (call, call_id)) in plan.calls().enumerate() {
        items.push(OutputItem::FunctionCall {
            id: format!("fc_testkit_{}_{}", plan.number, index + 1),
            call_id: call_id.to_owned(),
            name: call.name.clone(),
            arguments: call.arguments_text(),
        });
    }
    items
}

fn usage(plan: &TurnPlan<'_>) -> Value {
    let usage = plan.turn.effective_usage();
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached()},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens.unwrap_or(0)},
        "total_tokens": usage.input_tokens + usage.output_tokens
    })
}

/// The `response` object with `status`, `output` and `usage`.
fn response_object(plan: &TurnPlan<'_>, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let response = json!({
        "id": format!("resp_testkit_{}", plan.number),
        "object": "response",
        "created_at": CREATED_AT,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "model": plan.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null},
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {}
    });
    let mut response = plan.usage_field(response, "usage");
    if status == "completed" {
        response["completed_at"] = json!(CREATED_AT);
    }
    response
}

/// Numbers events in order: every payload gets its `sequence_number`, starting at 0.
struct EventSequence {
    events: Vec<SseEvent>,
}

impl EventSequence {
    fn push(&mut self, event_type: &str, mut payload: Value) {
        payload["type"] = json!(event_type);
        payload["sequence_number"] = json!(self.events.len());
        self.events.push(SseEvent::named(event_type, &payload));
    }
}

/// The streamed answer, event by event.
pub(crate) fn stream_events(plan: &TurnPlan<'_>) -> Vec<SseEvent> {
    let items = output_items(plan);
    let mut sequence = EventSequence { events: Vec::new() };
    let started = response_object(plan, "in_progress", Vec::new(), Value::Null);
    sequence.push("response.created", json!({"response": started}));
    sequence.push("response.in_progress", json!({"response": started}));
    for (output_index, item) in items.iter().enumerate() {
        sequence.push(
            "response.output_item.added",
            json!({"output_index": output_index, "item": item.in_progress()}),
        );
        match item {
            OutputItem::Reasoning { id, text, .. } => {
                let at = json!({"item_id": id, "output_index": output_index, "summary_index": 0});
                sequence.push(
                    "response.reasoning_summary_part.added",
                    with(&at, "part", summary_part("")),
                );
                for piece in text_fragments(text) {
                    sequence.push(
                        "response.reasoning_summary_text.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                sequence.push(
                    "response.reasoning_summary_text.done",
                    with(&at, "text", json!(text)),
                );
                sequence.push(
                    "response.reasoning_summary_part.done",
                    with(&at, "part", summary_part(text)),
                );
            }
            OutputItem::Message { id, text } => {
                let at = json!({"item_id": id, "output_index": output_index, "content_index": 0});
                sequence.push(
                    "response.content_part.added",
                    with(&at, "part", text_part("")),
                );
                for piece in text_fragments(text) {
                    let mut delta = with(&at, "delta", json!(piece));
                    delta["logprobs"] = json!([]);
                    sequence.push("response.output_text.delta", delta);
                }
                let mut done = with(&at, "text", json!(text));
                done["logprobs"] = json!([]);
                sequence.push("response.output_text.done", done);
                sequence.push(
                    "response.content_part.done",
                    with(&at, "part", text_part(text)),
                );
            }
            OutputItem::FunctionCall {
                id,
                name,
                arguments,
                ..
            } => {
                let at = json!({"item_id": id, "output_index": output_index});
                for piece in argument_fragments(arguments) {
                    sequence.push(
                        "response.function_call_arguments.delta",
                        with(&at, "delta", json!(piece)),
                    );
                }
                let mut done = with(&at, "arguments", json!(arguments));
                done["name"] = json!(name);
                sequence.push("response.function_call_arguments.done", done);
            }
        }
        sequence.push(
            "response.output_item.done",
            json!({"output_index": output_index, "item": item.completed()}),
        );
    }
    let output = items.iter().map(OutputItem::completed).collect();
    sequence.push(
        "response.completed",
        json!({"response": response_object(plan, "completed", output, usage(plan))}),
    );
    sequence.events
}

/// `base` with one more field.
fn with(base: &Value, key: &str, value: Value) -> Value {
    let mut object = base.clone();
    object[key] = value;
    object
}

/// The `error` event a Responses stream carries when it fails after its 200.
pub(crate) fn stream_error_event(sequence_number: usize) -> SseEvent {
    SseEvent::named(
        "error",
        &json!({
            "type": "error",
            "code": "server_error",
            "message": "The server had an error while processing your request. Sorry about that!",
            "param": null,
            "sequence_number": sequence_number
        }),
    )
}

/// The non-streaming `response` body.
pub(crate) fn json_body(plan: &TurnPlan<'_>) -> Value {
    let output = output_items(plan)
        .iter()
        .map(OutputItem::completed)
        .collect();
    response_object(plan, "completed", output, usage(plan))
}
