//! The borrowed wire types of a Responses request and the conversion that fills them:
//! the system prompt as `instructions`; user and system messages as `input_text`
//! messages; assistant text (when not empty) as an `output_text` message followed by one
//! `function_call` item per call; each tool result as a `function_call_output` item, any
//! text of a tool message as a user message. `store: false`: pith sends the whole history.

use std::borrow::Cow;

use pith_core::{Part, Role};
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::{arguments_text, text_of, ModelRequest};

/// The request body.
#[derive(Debug, Serialize)]
pub struct Body<'a> {
    model: &'a str,
    input: Vec<Item<'a>>,
    stream: bool,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: [Content<'a>; 1],
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: &'a str,
    },
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText { text: Cow<'a, str> },
    OutputText { text: Cow<'a, str> },
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
    strict: bool,
}

fn input_message<'a>(role: &'static str, text: Cow<'a, str>) -> Item<'a> {
    Item::Message {
        role,
        content: [Content::InputText { text }],
    }
}

pub(super) fn body(request: &ModelRequest) -> Body<'_> {
    let mut input = Vec::with_capacity(request.messages.len());
    for message in request.messages.iter() {
        match message.role {
            Role::System => input.push(input_message("system", text_of(message))),
            Role::User => input.push(input_message("user", text_of(message))),
            Role::Assistant => {
                let text = text_of(message);
                if !text.is_empty() {
                    input.push(Item::Message {
                        role: "assistant",
                        content: [Content::OutputText { text }],
                    });
                }
                for call in message.tool_calls() {
                    input.push(Item::FunctionCall {
                        call_id: &call.id,
                        name: &call.name,
                        arguments: arguments_text(&call.arguments),
                    });
                }
            }
            Role::Tool => {
                for part in &message.parts {
                    match part {
                        Part::ToolResult(result) => input.push(Item::FunctionCallOutput {
                            call_id: &result.call_id,
                            output: &result.content,
                        }),
                        Part::Text { text } => {
                            input.push(input_message("user", Cow::Borrowed(text)))
                        }
                        Part::ToolCall(_) => {}
                    }
                }
            }
        }
    }
    Body {
        model: &request.model,
        input,
        stream: true,
        store: false,
        instructions: (!request.system.is_empty()).then_some(request.system.as_str()),
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
                strict: false,
            })
            .collect(),
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature.map(f64::from),
    }
}

/// The request body as JSON bytes, serialised straight from the request's messages
/// (borrowed, no intermediate `serde_json::Value` tree): every request carries the whole
/// history, so this runs once per tool turn over everything said so far. Plain data with
/// string keys: serialising cannot fail.
pub fn encode_body(request: &ModelRequest) -> Vec<u8> {
    serde_json::to_vec(&body(request)).unwrap_or_default()
}

/// The borrowed request body.
pub fn wire_body(request: &ModelRequest) -> Body<'_> {
    body(request)
}

/// The request body as a JSON value (tests and the prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::to_value(body(request)).unwrap_or(Value::Null)
}
