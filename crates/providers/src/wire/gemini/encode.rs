//! The borrowed wire types of a `generateContent` request and the conversion that fills
//! them.
//!
//! Conversion rules: the system prompt (and system messages inside the conversation,
//! joined to it) travels as `systemInstruction`; user and tool messages are `user`
//! contents, assistant messages `model` contents; consecutive contents of the same role
//! merge; a conversation that does not start with the user gets a `(conversation
//! continues)` user content. Tool results are `functionResponse` parts first in their
//! content (`response.output`, or `response.error` for a failed tool, named after the
//! call they answer), then the content's text and images (`inlineData`). Tool calls are
//! `functionCall` parts; arguments that are not an object are wrapped as
//! `{"raw_arguments": …}`. Tools are `functionDeclarations` with their JSON Schema as
//! `parametersJsonSchema` (no conversion to Google's OpenAPI subset).
//!
//! Call ids: a call id Gemini sent goes back in `functionCall.id` and
//! `functionResponse.id`; an id pith made up ([`GENERATED_ID_PREFIX`], for a call Gemini
//! sent without one) is never sent: Gemini pairs those by order and name.
//!
//! Thought signatures: a Gemini [`pith_core::Reasoning`] in an assistant message (origin
//! `gemini`, with its signature) stands right before the part the signature came on, and
//! goes back as that part's `thoughtSignature`, unchanged; one at the end of the message
//! (the API's final empty text part) goes back on an empty text part. The thought text
//! itself is never sent (the API does not take thought summaries back). Reasoning of
//! other protocols is left out.
//!
//! Reasoning setting: `generationConfig.thinkingConfig` with `includeThoughts` and, for
//! Gemini 3 models, a `thinkingLevel` (`low` below a 10,000-token budget, else `high`),
//! for earlier ones a `thinkingBudget` (the setting's Anthropic budget).
//!
//! `--output-schema`: the correction request carries `responseMimeType:
//! application/json` and the schema as `responseJsonSchema`, with function calling off
//! (`toolConfig.functionCallingConfig.mode: NONE`); other requests carry nothing (see
//! `wire::structured`).

use crate::wire::arguments::ObjectArguments;
use std::borrow::Cow;
use std::collections::HashMap;

use pith_core::{Message, Part};
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::ModelRequest;
use crate::wire::reasoning::ReasoningEffort;
use crate::wire::turns::{alternate, Alternating, Side, CONVERSATION_CONTINUES};

/// The origin of the reasoning parts this protocol produces and takes back.
pub const ORIGIN: &str = "gemini";

/// Prefix of the ids pith gives calls Gemini sent without one; such ids stay in pith.
pub const GENERATED_ID_PREFIX: &str = "gemini-call-";

/// The request body.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Body<'a> {
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tools<'a>>,
    #[serde(skip_serializing_if = "GenerationConfig::is_empty")]
    generation_config: GenerationConfig<'a>,
    /// Function calling off, for the forced structured answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<Value>,
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [TextOnly<'a>; 1],
}

#[derive(Serialize)]
struct TextOnly<'a> {
    text: Cow<'a, str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: Vec<FunctionDeclaration<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionDeclaration<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<&'a Value>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
    /// `application/json` for the forced structured answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    /// The `--output-schema` schema, for the forced structured answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<&'a Value>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.thinking_config.is_none()
            && self.response_json_schema.is_none()
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ThinkingConfig {
    include_thoughts: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<&'static str>,
}

#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<WirePart<'a>>,
}

/// One part: exactly one of its data fields, and the thought signature that came with it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WirePart<'a> {
    #[serde(flatten)]
    data: PartData<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum PartData<'a> {
    Text(&'a str),
    InlineData(InlineData<'a>),
    FunctionCall(FunctionCall<'a>),
    FunctionResponse(FunctionResponse<'a>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InlineData<'a> {
    mime_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    args: ObjectArguments<'a>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    name: &'a str,
    response: ResponseValue<'a>,
}

/// `{"output": …}` or, for a failed tool, `{"error": …}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum ResponseValue<'a> {
    Output(&'a str),
    Error(&'a str),
}

fn plain(data: PartData<'_>) -> WirePart<'_> {
    WirePart {
        data,
        thought_signature: None,
    }
}

/// The id as sent: Gemini's own, never one pith made up.
fn wire_id(id: &str) -> Option<&str> {
    (!id.is_empty() && !id.starts_with(GENERATED_ID_PREFIX)).then_some(id)
}

/// The `thinkingConfig` for a reasoning setting on `model`.
fn thinking_config(model: &str, reasoning: Option<ReasoningEffort>) -> Option<ThinkingConfig> {
    let effort = reasoning.and_then(ReasoningEffort::enabled)?;
    let budget = effort.anthropic_budget();
    let gemini_3 = model
        .rsplit('/')
        .next()
        .is_some_and(|id| id.starts_with("gemini-3"));
    Some(if gemini_3 {
        ThinkingConfig {
            include_thoughts: true,
            thinking_budget: None,
            thinking_level: Some(if budget < 10_000 { "low" } else { "high" }),
        }
    } else {
        ThinkingConfig {
            include_thoughts: true,
            thinking_budget: Some(budget),
            thinking_level: None,
        }
    })
}

/// The request body, borrowed from `request`.
pub fn body(request: &ModelRequest) -> Body<'_> {
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|part| match part {
            Part::ToolCall(call) => Some((call.id.as_str(), call.name.as_str())),
            _ => None,
        })
        .collect();
    let Alternating {
        system: system_text,
        turns,
        ..
    } = alternate(
        request,
        |message| user_parts(message, &names),
        model_parts,
        || plain(PartData::Text(CONVERSATION_CONTINUES)),
    );
    let contents: Vec<Content<'_>> = turns
        .into_iter()
        .map(|(side, parts)| Content {
            role: match side {
                Side::User => "user",
                Side::Assistant => "model",
            },
            parts,
        })
        .collect();
    let declarations: Vec<FunctionDeclaration<'_>> = request
        .tools
        .iter()
        .map(|tool| FunctionDeclaration {
            name: &tool.name,
            description: &tool.description,
            parameters_json_schema: Some(&tool.parameters)
                .filter(|schema| schema.as_object().is_some_and(|o| !o.is_empty())),
        })
        .collect();
    // Gemini 2.5 refuses a response schema beside function declarations in use: the
    // schema goes only with the forced answer, function calling off.
    let forced = request.output.as_ref().filter(|o| o.force);
    Body {
        contents,
        system_instruction: (!system_text.is_empty()).then_some(SystemInstruction {
            parts: [TextOnly { text: system_text }],
        }),
        tools: if declarations.is_empty() {
            Vec::new()
        } else {
            vec![Tools {
                function_declarations: declarations,
            }]
        },
        generation_config: GenerationConfig {
            max_output_tokens: request.max_output_tokens,
            temperature: request.temperature.map(f64::from),
            thinking_config: thinking_config(&request.model, request.reasoning),
            response_mime_type: forced.map(|_| "application/json"),
            response_json_schema: forced.map(|o| o.schema.as_ref()),
        },
        tool_config: forced
            .filter(|_| !request.tools.is_empty())
            .map(|_| serde_json::json!({"functionCallingConfig": {"mode": "NONE"}})),
    }
}

fn user_parts<'a>(message: &'a Message, names: &HashMap<&str, &'a str>) -> Vec<WirePart<'a>> {
    let mut responses = Vec::new();
    let mut others = Vec::new();
    for part in &message.parts {
        match part {
            Part::Text { text } if !text.is_empty() => others.push(plain(PartData::Text(text))),
            Part::ToolResult(result) => {
                let content = if result.content.is_empty() {
                    "(no output)"
                } else {
                    result.content.as_str()
                };
                responses.push(plain(PartData::FunctionResponse(FunctionResponse {
                    id: wire_id(&result.call_id),
                    name: names
                        .get(result.call_id.as_str())
                        .copied()
                        .unwrap_or(result.call_id.as_str()),
                    response: if result.is_error {
                        ResponseValue::Error(content)
                    } else {
                        ResponseValue::Output(content)
                    },
                })));
            }
            Part::Image(image) => others.push(plain(PartData::InlineData(InlineData {
                mime_type: &image.media_type,
                data: &image.data,
            }))),
            _ => {}
        }
    }
    responses.extend(others);
    responses
}

fn model_parts(message: &Message) -> Vec<WirePart<'_>> {
    let mut parts = Vec::new();
    let mut signature: Option<&str> = None;
    for part in &message.parts {
        let data = match part {
            Part::Reasoning(reasoning) if reasoning.origin == ORIGIN => {
                if let Some(pending) = signature.take() {
                    // Two signatures in a row: the first one stood on an empty part.
                    parts.push(WirePart {
                        data: PartData::Text(""),
                        thought_signature: Some(pending),
                    });
                }
                signature = reasoning.signature.as_deref();
                continue;
            }
            Part::Text { text } if !text.is_empty() => PartData::Text(text),
            Part::ToolCall(call) => PartData::FunctionCall(FunctionCall {
                id: wire_id(&call.id),
                name: &call.name,
                args: ObjectArguments::of(&call.arguments),
            }),
            _ => continue,
        };
        parts.push(WirePart {
            data,
            thought_signature: signature.take(),
        });
    }
    if let Some(pending) = signature {
        parts.push(WirePart {
            data: PartData::Text(""),
            thought_signature: Some(pending),
        });
    }
    parts
}

/// The request body as JSON bytes, serialised straight from the request's messages (no
/// intermediate `serde_json::Value` tree).
pub fn encode_body(request: &ModelRequest) -> Vec<u8> {
    // Plain data with string keys: serialising into a Vec cannot fail.
    serde_json::to_vec(&body(request)).unwrap_or_default()
}

/// The request body as a JSON value (tests and the prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::from_slice(&encode_body(request)).unwrap_or(Value::Null)
}
