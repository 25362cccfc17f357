//! The borrowed wire types of a Responses request and the conversion that fills them:
//! the system prompt as `instructions`; user and system messages as `input_text`
//! messages; assistant text (when not empty) as a message with string content, followed by one
//! `function_call` item per call; each tool result as a `function_call_output` item, any
//! text of a tool message as a user message. `store: false`: pith sends the whole history.
//!
//! Reasoning: with `include: ["reasoning.encrypted_content"]` (sent for reasoning models
//! and whenever a reasoning setting is given, with `reasoning.effort`) each reasoning item
//! of the answer comes back with its encrypted content; pith sends every such item back
//! in its place among the assistant's items — its summary and encrypted content as they
//! came, without the item id (with `store: false` no item is stored server-side, so an id
//! would name nothing). Reasoning from other protocols is never sent.
//!
//! Images: `input_image` parts with a base64 data URL, in the user message or inside the
//! `function_call_output` of the tool that returned them (its output becomes a list of
//! `input_text` and `input_image`).
//!
//! `--output-schema`: `text.format` `json_schema` on every request of the job (an object
//! schema; strict when it is in OpenAI's strict subset), and `tool_choice: "none"` on the
//! correction request (see `wire::structured`).

use std::borrow::Cow;

use pith_core::{Part, Role};
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::{arguments_text, text_of, ModelRequest};
use crate::wire::openai_controls::OpenAiControls;

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
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<ReasoningConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    include: Vec<&'static str>,
    /// `--output-schema`: `{"format": {"type": "json_schema", …}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Value>,
    /// `tool_choice` and `prompt_cache_key`.
    #[serde(flatten)]
    controls: OpenAiControls<'a>,
}

/// `reasoning: {"effort": …, "summary": "auto"}`.
#[derive(Debug, Serialize)]
struct ReasoningConfig {
    effort: &'static str,
    summary: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Vec<Content<'a>>,
    },
    /// An assistant message as the schema's "easy" input message: its text as a string
    /// (an `output_text` part would need the id, status and annotations of an output).
    #[serde(rename = "message")]
    AssistantText {
        role: &'static str,
        content: Cow<'a, str>,
    },
    Reasoning {
        summary: Vec<Summary<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: String,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
    },
}

/// A `summary_text` part of a reasoning item.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Summary<'a> {
    SummaryText { text: &'a str },
}

/// A function call's output: its text, or a list of parts when the tool returned images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum Output<'a> {
    Text(&'a str),
    Parts(Vec<Content<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Content<'a> {
    InputText {
        text: Cow<'a, str>,
    },
    InputImage {
        image_url: String,
        detail: &'static str,
    },
}

/// An `input_image` part with the image as a base64 data URL.
fn image_content<'a>(image: &pith_core::Image) -> Content<'a> {
    Content::InputImage {
        image_url: format!("data:{};base64,{}", image.media_type, image.data),
        detail: "auto",
    }
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
        content: vec![Content::InputText { text }],
    }
}

/// A user message: its text, then its images.
fn user_message(message: &pith_core::Message) -> Item<'_> {
    let text = text_of(message);
    let mut content = Vec::with_capacity(1);
    if !text.is_empty() || message.images().next().is_none() {
        content.push(Content::InputText { text });
    }
    content.extend(message.images().map(image_content));
    Item::Message {
        role: "user",
        content,
    }
}

/// The assistant's items in their order: reasoning, text, function calls.
fn assistant_items<'a>(message: &'a pith_core::Message, input: &mut Vec<Item<'a>>) {
    let text = text_of(message);
    let mut text_sent = text.is_empty();
    let mut text = Some(text);
    for part in &message.parts {
        match part {
            Part::Reasoning(reasoning)
                if reasoning.origin == "openai-responses" && reasoning.is_replayable() =>
            {
                input.push(Item::Reasoning {
                    summary: if reasoning.text.is_empty() {
                        Vec::new()
                    } else {
                        vec![Summary::SummaryText {
                            text: &reasoning.text,
                        }]
                    },
                    encrypted_content: reasoning.encrypted.as_deref(),
                });
            }
            Part::Text { .. } if !text_sent => {
                text_sent = true;
                if let Some(text) = text.take() {
                    input.push(Item::AssistantText {
                        role: "assistant",
                        content: text,
                    });
                }
            }
            Part::ToolCall(call) => input.push(Item::FunctionCall {
                call_id: &call.id,
                name: &call.name,
                arguments: arguments_text(&call.arguments),
            }),
            _ => {}
        }
    }
}

pub(super) fn body(request: &ModelRequest, reasoning_model: bool) -> Body<'_> {
    let mut input = Vec::with_capacity(request.messages.len());
    for message in request.messages.iter() {
        match message.role {
            Role::System => input.push(input_message("system", text_of(message))),
            Role::User => input.push(user_message(message)),
            Role::Assistant => assistant_items(message, &mut input),
            Role::Tool => {
                for part in &message.parts {
                    match part {
                        Part::ToolResult(result) => input.push(Item::FunctionCallOutput {
                            call_id: &result.call_id,
                            output: Output::Text(&result.content),
                        }),
                        Part::Image(image) => {
                            // The image the tool just returned joins its output.
                            if let Some(Item::FunctionCallOutput { output, .. }) = input.last_mut()
                            {
                                if let Output::Text(text) = *output {
                                    *output = Output::Parts(vec![Content::InputText {
                                        text: Cow::Borrowed(text),
                                    }]);
                                }
                                if let Output::Parts(parts) = output {
                                    parts.push(image_content(image));
                                }
                            } else {
                                input.push(Item::Message {
                                    role: "user",
                                    content: vec![image_content(image)],
                                });
                            }
                        }
                        Part::Text { text } => {
                            input.push(input_message("user", Cow::Borrowed(text)))
                        }
                        Part::ToolCall(_) | Part::Reasoning(_) => {}
                    }
                }
            }
        }
    }
    let effort = request.reasoning.and_then(|r| r.openai_effort());
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
        reasoning: effort.map(|effort| ReasoningConfig {
            effort,
            summary: "auto",
        }),
        include: if reasoning_model || effort.is_some() {
            vec!["reasoning.encrypted_content"]
        } else {
            Vec::new()
        },
        text: request
            .output
            .as_ref()
            .filter(|o| o.object_root())
            .map(|o| {
                let mut format = o.openai_schema();
                format["type"] = Value::from("json_schema");
                serde_json::json!({ "format": format })
            }),
        controls: OpenAiControls::of(request),
    }
}

/// The request body as JSON bytes, serialised straight from the request's messages
/// (borrowed, no intermediate `serde_json::Value` tree): every request carries the whole
/// history, so this runs once per tool turn over everything said so far. Plain data with
/// string keys: serialising cannot fail. `reasoning_model`: ask for the reasoning items'
/// encrypted content even without a reasoning setting.
pub fn encode_body(request: &ModelRequest, reasoning_model: bool) -> Vec<u8> {
    serde_json::to_vec(&body(request, reasoning_model)).unwrap_or_default()
}

/// The borrowed request body.
pub fn wire_body(request: &ModelRequest, reasoning_model: bool) -> Body<'_> {
    body(request, reasoning_model)
}

/// The request body as a JSON value (tests and the prompt-cache parity checks), for a
/// model not known to reason.
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::to_value(body(request, false)).unwrap_or(Value::Null)
}
