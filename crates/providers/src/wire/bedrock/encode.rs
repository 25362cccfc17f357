//! The borrowed wire types of a Converse request and the conversion that fills them.
//!
//! Conversion rules (the Converse API's, which are Anthropic's for every model): system
//! messages inside the conversation join the system prompt; tool results travel first in
//! a user message (`toolResult` blocks), then its text; consecutive messages of the same
//! role merge; a conversation that does not start with the user gets a
//! `(conversation continues)` user message; blank text blocks are left out (the API
//! refuses them). Deterministic: the same history gives the same bytes.
//!
//! Prompt caching: for models that take `cachePoint` blocks (Anthropic Claude and Amazon
//! Nova; [`supports_cache_points`]) one goes after the system prompt, after the tool
//! definitions, at the end of the stable prefix and at the end of the last message, as
//! pith marks Anthropic's own API.
//!
//! Reasoning: for Anthropic models with a reasoning setting the body asks for thinking in
//! `additionalModelRequestFields` (`thinking`, the setting's budget; `maxTokens` raised
//! above it when needed; no `temperature`), and every Bedrock reasoning block of the
//! history goes back unchanged in its place — `reasoningText` with its signature,
//! `redactedContent` as received. Other models' reasoning settings are not sent.
//!
//! Images: `image` blocks (`format` + base64 `source.bytes`); an image a tool returned goes
//! inside that `toolResult`'s content, after its text.
//!
//! `--output-schema`: the correction request adds the `structured_output` tool (the schema
//! as its input schema) and forces it (`toolConfig.toolChoice`), without thinking; the
//! adapter reads that call back as the answer's text (see `wire::structured`).

use crate::wire::arguments::ObjectArguments;
use std::borrow::Cow;

use pith_core::Message;
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::ModelRequest;
use crate::wire::reasoning::{cap_above_budget, thinking_budget};
use crate::wire::structured::{STRUCTURED_OUTPUT_NAME, STRUCTURED_OUTPUT_TOOL_DESCRIPTION};
use crate::wire::turns::{
    alternate, assistant_parts, user_parts, Loose, Said, Side, CONVERSATION_CONTINUES,
};

/// The `origin` of reasoning blocks this protocol produced (only they are sent back).
pub const ORIGIN: &str = "bedrock";

/// Output cap used when the request does not name one.
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The request body of `ConverseStream` (the model id travels in the URL).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Body<'a> {
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock<'a>>,
    inference_config: InferenceConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_model_request_fields: Option<AdditionalFields>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InferenceConfig {
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
}

#[derive(Serialize)]
struct AdditionalFields {
    thinking: Thinking,
}

/// `{"type": "enabled", "budget_tokens": N}` (Anthropic's own field, passed through).
#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

/// `{"type": "default"}`.
#[derive(Serialize, Clone, Copy)]
struct CachePoint {
    #[serde(rename = "type")]
    kind: &'static str,
}

const CACHE_POINT: CachePoint = CachePoint { kind: "default" };

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum SystemBlock<'a> {
    Text(Cow<'a, str>),
    CachePoint(CachePoint),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    tools: Vec<WireTool<'a>>,
    /// The forced structured answer: `{"tool": {"name": "structured_output"}}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum WireTool<'a> {
    ToolSpec(ToolSpec<'a>),
    CachePoint(CachePoint),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolSpec<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: InputSchema<'a>,
}

#[derive(Serialize)]
struct InputSchema<'a> {
    json: &'a Value,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Block<'a> {
    Text(&'a str),
    Image(ImageBlock<'a>),
    ToolUse(ToolUse<'a>),
    ToolResult(ToolResult<'a>),
    ReasoningContent(ReasoningContent<'a>),
    CachePoint(CachePoint),
}

#[derive(Serialize)]
struct ImageBlock<'a> {
    format: &'a str,
    source: ImageSource<'a>,
}

#[derive(Serialize)]
struct ImageSource<'a> {
    bytes: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolUse<'a> {
    tool_use_id: &'a str,
    name: &'a str,
    input: ObjectArguments<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolResult<'a> {
    tool_use_id: &'a str,
    content: Vec<ResultBlock<'a>>,
    status: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum ResultBlock<'a> {
    Text(&'a str),
    Image(ImageBlock<'a>),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum ReasoningContent<'a> {
    ReasoningText { text: &'a str, signature: &'a str },
    RedactedContent(&'a str),
}

/// Whether `model` takes `cachePoint` blocks: Anthropic Claude and Amazon Nova models
/// (bare ids, inference profiles such as `us.anthropic.…`, and ARNs naming them).
pub fn supports_cache_points(model: &str) -> bool {
    model.contains("anthropic.") || model.contains("amazon.nova")
}

/// Whether `model` is an Anthropic model (extended thinking through
/// `additionalModelRequestFields`).
pub fn is_anthropic(model: &str) -> bool {
    model.contains("anthropic.")
}

/// The `format` of an image block for a media type (`image/png` → `png`).
fn image_format(media_type: &str) -> &str {
    media_type.strip_prefix("image/").unwrap_or(media_type)
}

fn image_block(image: &pith_core::Image) -> ImageBlock<'_> {
    ImageBlock {
        format: image_format(&image.media_type),
        source: ImageSource { bytes: &image.data },
    }
}

/// The typed body of `request`.
pub fn body(request: &ModelRequest) -> Body<'_> {
    let forced = request.output.as_ref().filter(|o| o.force);
    let thinking = thinking_budget(request.reasoning, forced.is_some())
        .filter(|_| is_anthropic(&request.model));
    let caching = supports_cache_points(&request.model);
    let alternating = alternate(
        request,
        user_blocks,
        |message| assistant_blocks(message, thinking.is_some()),
        || Block::Text(CONVERSATION_CONTINUES),
    );
    let message_points = caching && !request.cache.no_message_breakpoints;
    let messages = wire_messages(alternating.turns, alternating.anchor, message_points);
    let mut system = Vec::new();
    if !alternating.system.trim().is_empty() {
        system.push(SystemBlock::Text(alternating.system));
        if caching {
            system.push(SystemBlock::CachePoint(CACHE_POINT));
        }
    }
    let tools = wire_tools(request, caching);
    let max_tokens = cap_above_budget(request.max_output_tokens, thinking, DEFAULT_MAX_TOKENS);
    Body {
        messages,
        system,
        inference_config: InferenceConfig {
            max_tokens,
            temperature: request
                .temperature
                .filter(|_| thinking.is_none())
                .map(f64::from),
        },
        tool_config: (!tools.is_empty()).then_some(ToolConfig {
            tools,
            tool_choice: forced
                .map(|_| serde_json::json!({"tool": {"name": STRUCTURED_OUTPUT_NAME}})),
        }),
        additional_model_request_fields: thinking.map(|budget_tokens| AdditionalFields {
            thinking: Thinking {
                kind: "enabled",
                budget_tokens,
            },
        }),
    }
}

/// The turns as Converse messages; with `cache_points`, a cache point at the end of the
/// stable prefix (`anchor`) and one at the end of the last message.
fn wire_messages<'a>(
    turns: Vec<(Side, Vec<Block<'a>>)>,
    anchor: Option<(usize, usize)>,
    cache_points: bool,
) -> Vec<WireMessage<'a>> {
    let mut messages: Vec<WireMessage<'a>> = turns
        .into_iter()
        .map(|(side, content)| WireMessage {
            role: side.role(),
            content,
        })
        .collect();
    if cache_points {
        if let Some((turn, block)) = anchor {
            let is_last = turn + 1 == messages.len() && messages[turn].content.len() == block + 1;
            if let Some(message) = messages.get_mut(turn).filter(|_| !is_last) {
                message
                    .content
                    .insert(block + 1, Block::CachePoint(CACHE_POINT));
            }
        }
        if let Some(last) = messages.last_mut() {
            last.content.push(Block::CachePoint(CACHE_POINT));
        }
    }
    messages
}

/// The request's tools, a cache point after them when `caching`, and after it the
/// forced structured-output tool (the cached prefix stays the one other requests use).
fn wire_tools(request: &ModelRequest, caching: bool) -> Vec<WireTool<'_>> {
    let mut tools: Vec<WireTool<'_>> = request
        .tools
        .iter()
        .map(|t| {
            WireTool::ToolSpec(ToolSpec {
                name: &t.name,
                description: &t.description,
                input_schema: InputSchema {
                    json: &t.parameters,
                },
            })
        })
        .collect();
    if caching && !tools.is_empty() {
        tools.push(WireTool::CachePoint(CACHE_POINT));
    }
    if let Some(output) = request.output.as_ref().filter(|o| o.force) {
        tools.push(WireTool::ToolSpec(ToolSpec {
            name: STRUCTURED_OUTPUT_NAME,
            description: STRUCTURED_OUTPUT_TOOL_DESCRIPTION,
            input_schema: InputSchema {
                json: output.tool_schema.as_ref(),
            },
        }));
    }
    tools
}

fn user_blocks(message: &Message) -> Vec<Block<'_>> {
    let parts = user_parts(message, |text| !text.trim().is_empty());
    let results = parts.results.into_iter().map(|(result, images)| {
        let text = if result.content.trim().is_empty() {
            "(no output)"
        } else {
            &result.content
        };
        let images = images
            .into_iter()
            .map(|image| ResultBlock::Image(image_block(image)));
        Block::ToolResult(ToolResult {
            tool_use_id: &result.call_id,
            content: std::iter::once(ResultBlock::Text(text))
                .chain(images)
                .collect(),
            status: if result.is_error { "error" } else { "success" },
        })
    });
    let rest = parts.rest.into_iter().map(|part| match part {
        Loose::Text(text) => Block::Text(text),
        Loose::Image(image) => Block::Image(image_block(image)),
    });
    results.chain(rest).collect()
}

fn assistant_blocks(message: &Message, thinking: bool) -> Vec<Block<'_>> {
    let parts = assistant_parts(message, thinking.then_some(ORIGIN), |text| {
        !text.trim().is_empty()
    });
    parts
        .into_iter()
        .map(|part| match part {
            Said::Thinking { text, signature } => {
                Block::ReasoningContent(ReasoningContent::ReasoningText { text, signature })
            }
            Said::Redacted(data) => {
                Block::ReasoningContent(ReasoningContent::RedactedContent(data))
            }
            Said::Text(text) => Block::Text(text),
            Said::Call(call) => Block::ToolUse(ToolUse {
                tool_use_id: &call.id,
                name: &call.name,
                input: ObjectArguments::of(&call.arguments),
            }),
        })
        .collect()
}

/// The request body as JSON bytes, serialised straight from the request's messages.
pub fn encode_body(request: &ModelRequest) -> Vec<u8> {
    // Plain data with string keys: serialising into a Vec cannot fail.
    serde_json::to_vec(&body(request)).unwrap_or_default()
}

/// The request body as a JSON value (tests and the prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::from_slice(&encode_body(request)).unwrap_or(Value::Null)
}
