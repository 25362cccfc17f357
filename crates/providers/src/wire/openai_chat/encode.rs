//! The borrowed wire types of a Chat Completions request and the conversion that fills
//! them: the system prompt first; user and system messages as text; assistant messages
//! with their tool calls (content `""`, never null: llama-cpp-python rejects null); each
//! tool result as its own `tool` message, any text of a tool message as a user message.
//!
//! The output cap goes in the field the server honours ([`MaxTokensField`]): OpenAI's
//! reasoning models reject `max_tokens` and want `max_completion_tokens`; many compatible
//! servers know only `max_tokens`. Reasoning is never sent back (Chat has no field for
//! it). Images: `image_url` parts with a base64 data URL in a user message; a `tool`
//! message can carry only text, so the images tools returned follow the run of tool
//! messages in one user message that names the calls they came from.
//!
//! `--output-schema`: `response_format` `json_schema` on every request of the job (an
//! object schema; strict when it is in OpenAI's strict subset), and `tool_choice: "none"`
//! on the correction request (see `wire::structured`).

use std::borrow::Cow;

use pith_core::{Image, Message, Part, Role};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::adapter::{arguments_text, text_of, ModelRequest};
use crate::wire::openai_controls::OpenAiControls;

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
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// llama.cpp's repetition penalty (`[models."…"] repeat_penalty`; local models).
    #[serde(skip_serializing_if = "Option::is_none")]
    repeat_penalty: Option<f64>,
    /// OpenAI's `frequency_penalty` (`[models."…"] frequency_penalty`; local models).
    #[serde(skip_serializing_if = "Option::is_none")]
    frequency_penalty: Option<f64>,
    /// `--output-schema`: `{"type": "json_schema", "json_schema": {…}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
    /// `tool_choice` and `prompt_cache_key`.
    #[serde(flatten)]
    controls: OpenAiControls<'a>,
}

/// Which request field carries the output cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum MaxTokensField {
    /// `max_tokens`: llama.cpp, llama-cpp-python, vLLM, Ollama, OpenRouter (the default).
    #[default]
    #[serde(rename = "max_tokens")]
    MaxTokens,
    /// `max_completion_tokens`: OpenAI (its reasoning models reject `max_tokens`).
    #[serde(rename = "max_completion_tokens")]
    MaxCompletionTokens,
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
        content: UserContent<'a>,
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

/// A user message's content: its text, or a list of parts when it carries images.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ContentPart<'a>>),
}

#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ImageUrl },
}

#[derive(Debug, Serialize)]
struct ImageUrl {
    url: String,
    detail: &'static str,
}

fn image_part<'a>(image: &Image) -> ContentPart<'a> {
    ContentPart::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{};base64,{}", image.media_type, image.data),
            detail: "auto",
        },
    }
}

fn user_text(text: Cow<'_, str>) -> WireMessage<'_> {
    WireMessage::User {
        content: UserContent::Text(text),
    }
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

pub(super) fn body(request: &ModelRequest, max_tokens_field: MaxTokensField) -> Body<'_> {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system.is_empty() {
        messages.push(WireMessage::System {
            content: Cow::Borrowed(&request.system),
        });
    }
    // Images tools returned, held until their run of tool messages ends.
    let mut tool_images: Vec<(&str, &Image)> = Vec::new();
    for message in request.messages.iter() {
        if message.role != Role::Tool {
            flush_tool_images(&mut messages, &mut tool_images);
        }
        push_message(&mut messages, message, &mut tool_images);
    }
    flush_tool_images(&mut messages, &mut tool_images);
    let (max_tokens, max_completion_tokens) = match max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_output_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_output_tokens),
    };
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
        max_tokens,
        max_completion_tokens,
        temperature: request.temperature.map(f64::from),
        repeat_penalty: None,
        frequency_penalty: None,
        response_format: request
            .output
            .as_ref()
            .filter(|o| o.object_root())
            .map(|o| serde_json::json!({"type": "json_schema", "json_schema": o.openai_schema()})),
        controls: OpenAiControls::of(request),
    }
}

/// One user message with the images of the tool messages just sent, naming their calls.
fn flush_tool_images<'a>(out: &mut Vec<WireMessage<'a>>, images: &mut Vec<(&'a str, &'a Image)>) {
    if images.is_empty() {
        return;
    }
    let mut parts = Vec::with_capacity(images.len() * 2);
    for (call_id, image) in images.drain(..) {
        parts.push(ContentPart::Text {
            text: Cow::Owned(format!(
                "[the image `{}` returned by tool call {call_id}]",
                image.path
            )),
        });
        parts.push(image_part(image));
    }
    out.push(WireMessage::User {
        content: UserContent::Parts(parts),
    });
}

fn push_message<'a>(
    out: &mut Vec<WireMessage<'a>>,
    message: &'a Message,
    tool_images: &mut Vec<(&'a str, &'a Image)>,
) {
    match message.role {
        Role::System => out.push(WireMessage::System {
            content: text_of(message),
        }),
        Role::User if message.images().next().is_some() => {
            let text = text_of(message);
            let mut parts = Vec::new();
            if !text.is_empty() {
                parts.push(ContentPart::Text { text });
            }
            parts.extend(message.images().map(image_part));
            out.push(WireMessage::User {
                content: UserContent::Parts(parts),
            });
        }
        Role::User => out.push(user_text(text_of(message))),
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
            let mut call_id = "";
            for part in &message.parts {
                match part {
                    Part::ToolResult(result) => {
                        call_id = &result.call_id;
                        out.push(WireMessage::Tool {
                            tool_call_id: &result.call_id,
                            content: &result.content,
                        })
                    }
                    Part::Text { text } => out.push(user_text(Cow::Borrowed(text))),
                    Part::Image(image) => tool_images.push((call_id, image)),
                    Part::ToolCall(_) | Part::Reasoning(_) => {}
                }
            }
        }
    }
}

/// The request body as JSON bytes, serialised straight from the request's messages
/// (borrowed, no intermediate `serde_json::Value` tree): every request carries the whole
/// history, so this runs once per tool turn over everything said so far. Plain data with
/// string keys: serialising cannot fail.
pub fn encode_body(request: &ModelRequest, max_tokens_field: MaxTokensField) -> Vec<u8> {
    serde_json::to_vec(&body(request, max_tokens_field)).unwrap_or_default()
}

/// Penalties against repetition a server is sent (`None`: the field is left out and the
/// server's default applies). Very small local models need them; hosted ones get none.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Penalties {
    /// llama.cpp's `repeat_penalty` (1.0 is off).
    pub repeat: Option<f32>,
    /// OpenAI's `frequency_penalty`.
    pub frequency: Option<f32>,
}

/// [`encode_body`] with `penalties`.
pub fn encode_body_with_penalties(
    request: &ModelRequest,
    max_tokens_field: MaxTokensField,
    penalties: Penalties,
) -> Vec<u8> {
    let mut body = body(request, max_tokens_field);
    body.repeat_penalty = penalties.repeat.map(f64::from);
    body.frequency_penalty = penalties.frequency.map(f64::from);
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The borrowed request body.
pub fn wire_body(request: &ModelRequest, max_tokens_field: MaxTokensField) -> Body<'_> {
    body(request, max_tokens_field)
}

/// The request body as a JSON value with the cap in `max_tokens` (tests and the
/// prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::to_value(body(request, MaxTokensField::MaxTokens)).unwrap_or(Value::Null)
}
