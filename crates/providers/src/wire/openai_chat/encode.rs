//! The borrowed wire types of a Chat Completions request and the conversion that fills
//! them: the system prompt first; user and system messages as text; assistant messages
//! with their tool calls (content `""`, never null: llama-cpp-python rejects null); each
//! tool result as its own `tool` message, any text of a tool message as a user message.

use std::borrow::Cow;

use pith_core::{Message, Part, Role};
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::{arguments_text, text_of, ModelRequest};

/// The request body.
#[derive(Debug, Serialize)]
pub struct Body<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Debug, Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        content: Cow<'a, str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

#[derive(Debug, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCall<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunctionCall<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Debug, Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Debug, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

pub(super) fn body(request: &ModelRequest) -> Body<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: Cow::Borrowed(&request.system),
        });
    }
    for message in request.messages.iter() {
        push_message(&mut messages, message);
    }
    Body {
        model: &request.model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request
            .tools
            .iter()
            .map(|t| WireTool {
                kind: "function",
                function: WireFunction {
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                },
            })
            .collect(),
        max_tokens: request.max_output_tokens,
        temperature: request.temperature.map(f64::from),
    }
}

fn push_message<'a>(out: &mut Vec<WireMessage<'a>>, message: &'a Message) {
    match message.role {
        Role::System => out.push(WireMessage::System {
            content: text_of(message),
        }),
        Role::User => out.push(WireMessage::User {
            content: text_of(message),
        }),
        Role::Assistant => out.push(WireMessage::Assistant {
            content: text_of(message),
            tool_calls: message
                .tool_calls()
                .map(|c| WireCall {
                    id: &c.id,
                    kind: "function",
                    function: WireFunctionCall {
                        name: &c.name,
                        arguments: arguments_text(&c.arguments),
                    },
                })
                .collect(),
        }),
        Role::Tool => {
            for part in &message.parts {
                match part {
                    Part::ToolResult(result) => out.push(WireMessage::Tool {
                        tool_call_id: &result.call_id,
                        content: &result.content,
                    }),
                    Part::Text { text } => out.push(WireMessage::User {
                        content: Cow::Borrowed(text),
                    }),
                    Part::ToolCall(_) => {}
                }
            }
        }
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
