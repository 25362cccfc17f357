//! The borrowed wire types of a request and the conversion that fills them.
//!
//! Conversion rules: system messages inside the conversation join the system prompt;
//! tool results travel first in a user message, then its text; consecutive messages of
//! the same role merge; a conversation that does not start with the user gets a
//! `(conversation continues)` user message; cache breakpoints go on the system prompt,
//! the last tool definition and the last block of the last message.
//!
//! Extended thinking: with a reasoning setting the body carries `thinking` (`enabled`, the
//! setting's budget; `max_tokens` raised above it when needed) and no `temperature` (the
//! API refuses the two together), and every Anthropic thinking block of the history goes
//! back unchanged — `thinking` with its signature, `redacted_thinking` with its data — in
//! its place in its assistant message. Without thinking they are left out (and reasoning
//! from other protocols always is).
//!
//! Images: in a user message as `image` blocks; an image a tool returned goes inside
//! that `tool_result`'s content, after its text.
//!
//! `--output-schema`: the correction request adds the `structured_output` tool (the schema
//! as its `input_schema`) and forces it (`tool_choice`), without thinking; the adapter
//! reads that call back as the answer's text (see `wire::structured`).

use crate::wire::arguments::ObjectArguments;
use std::borrow::Cow;

use pith_core::Message;
use serde::Serialize;
use serde_json::Value;

use crate::wire::adapter::ModelRequest;
use crate::wire::reasoning::{cap_above_budget, thinking_budget};
use crate::wire::structured::{STRUCTURED_OUTPUT_NAME, STRUCTURED_OUTPUT_TOOL_DESCRIPTION};
use crate::wire::turns::{
    alternate, assistant_parts, user_parts, Loose, Said, CONVERSATION_CONTINUES,
};

/// Output cap used when the request does not name one (the API requires `max_tokens`).
pub const DEFAULT_MAX_TOKENS: u32 = 8_192;

/// The request body of the Messages API, typed so the same request always serialises to
/// the same bytes (prompt-cache parity).
#[derive(Serialize)]
pub struct Body<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<[SystemBlock<'a>; 1]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<Thinking>,
    /// The forced structured answer: `{"type": "tool", "name": "structured_output"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

/// `thinking: {"type": "enabled", "budget_tokens": N}`.
#[derive(Serialize)]
struct Thinking {
    #[serde(rename = "type")]
    kind: &'static str,
    budget_tokens: u32,
}

#[derive(Serialize)]
struct SystemBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: Cow<'a, str>,
    cache_control: CacheControl,
}

#[derive(Serialize, Clone, Copy)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

const EPHEMERAL: CacheControl = CacheControl { kind: "ephemeral" };

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: ObjectArguments<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: ResultContent<'a>,
        is_error: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    Image {
        source: ImageSource<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cache_control: Option<CacheControl>,
    },
}

/// A tool result's content: its text, or (when the tool returned images) a list of a
/// text block and image blocks.
#[derive(Serialize)]
#[serde(untagged)]
enum ResultContent<'a> {
    Text(&'a str),
    Blocks(Vec<Block<'a>>),
}

/// `{"type": "base64", "media_type": …, "data": …}`.
#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

fn image_block(image: &pith_core::Image) -> Block<'_> {
    Block::Image {
        source: ImageSource {
            kind: "base64",
            media_type: &image.media_type,
            data: &image.data,
        },
        cache_control: None,
    }
}

impl Block<'_> {
    fn mark_cache_breakpoint(&mut self) {
        match self {
            Block::Text { cache_control, .. }
            | Block::ToolUse { cache_control, .. }
            | Block::ToolResult { cache_control, .. }
            | Block::Image { cache_control, .. } => *cache_control = Some(EPHEMERAL),
            // Thinking blocks take no cache marker.
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
        }
    }
}

/// The typed body of `request`: roles merged, tool results first, cache breakpoints on
/// the system prompt, the tools, the end of the stable prefix (`CacheHints::anchor`) and
/// the last message — four, Anthropic's limit.
pub fn body(request: &ModelRequest) -> Body<'_> {
    let forced = request.output.as_ref().filter(|o| o.force);
    let thinking = thinking_budget(request.reasoning, forced.is_some());
    let alternating = alternate(
        request,
        user_blocks,
        |message| assistant_blocks(message, thinking.is_some()),
        || Block::Text {
            text: CONVERSATION_CONTINUES,
            cache_control: None,
        },
    );
    let mut messages: Vec<WireMessage<'_>> = alternating
        .turns
        .into_iter()
        .map(|(side, content)| WireMessage {
            role: side.role(),
            content,
        })
        .collect();
    // The end of the stable prefix stays a cache hit when what follows is rewritten.
    let anchor = alternating
        .anchor
        .filter(|_| !request.cache.no_message_breakpoints);
    if let Some((turn, block)) = anchor {
        if let Some(block) = messages
            .get_mut(turn)
            .and_then(|m| m.content.get_mut(block))
        {
            block.mark_cache_breakpoint();
        }
    }
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m.content.last_mut())
        .filter(|_| !request.cache.no_message_breakpoints)
    {
        block.mark_cache_breakpoint();
    }
    let count = request.tools.len();
    let max_tokens = cap_above_budget(request.max_output_tokens, thinking, DEFAULT_MAX_TOKENS);
    Body {
        model: &request.model,
        max_tokens,
        messages,
        stream: true,
        system: (!alternating.system.is_empty()).then_some([SystemBlock {
            kind: "text",
            text: alternating.system,
            cache_control: EPHEMERAL,
        }]),
        tools: request
            .tools
            .iter()
            .enumerate()
            .map(|(i, t)| WireTool {
                name: &t.name,
                description: &t.description,
                input_schema: &t.parameters,
                cache_control: (i + 1 == count).then_some(EPHEMERAL),
            })
            // After the cache point: the cached prefix stays the one other requests use.
            .chain(forced.map(|o| WireTool {
                name: STRUCTURED_OUTPUT_NAME,
                description: STRUCTURED_OUTPUT_TOOL_DESCRIPTION,
                input_schema: o.tool_schema.as_ref(),
                cache_control: None,
            }))
            .collect(),
        tool_choice: forced
            .map(|_| serde_json::json!({"type": "tool", "name": STRUCTURED_OUTPUT_NAME})),
        temperature: request
            .temperature
            .filter(|_| thinking.is_none())
            .map(f64::from),
        thinking: thinking.map(|budget_tokens| Thinking {
            kind: "enabled",
            budget_tokens,
        }),
    }
}

fn user_blocks(message: &Message) -> Vec<Block<'_>> {
    let parts = user_parts(message, |text| !text.is_empty());
    let results = parts.results.into_iter().map(|(result, images)| {
        let text = if result.content.is_empty() {
            "(no output)"
        } else {
            &result.content
        };
        let content = if images.is_empty() {
            ResultContent::Text(text)
        } else {
            let text = Block::Text {
                text,
                cache_control: None,
            };
            ResultContent::Blocks(
                std::iter::once(text)
                    .chain(images.into_iter().map(image_block))
                    .collect(),
            )
        };
        Block::ToolResult {
            tool_use_id: &result.call_id,
            content,
            is_error: result.is_error,
            cache_control: None,
        }
    });
    let rest = parts.rest.into_iter().map(|part| match part {
        Loose::Text(text) => Block::Text {
            text,
            cache_control: None,
        },
        Loose::Image(image) => image_block(image),
    });
    results.chain(rest).collect()
}

fn assistant_blocks(message: &Message, thinking: bool) -> Vec<Block<'_>> {
    let parts = assistant_parts(message, thinking.then_some("anthropic"), |text| {
        !text.is_empty()
    });
    parts
        .into_iter()
        .map(|part| match part {
            Said::Thinking { text, signature } => Block::Thinking {
                thinking: text,
                signature,
            },
            Said::Redacted(data) => Block::RedactedThinking { data },
            Said::Text(text) => Block::Text {
                text,
                cache_control: None,
            },
            Said::Call(call) => Block::ToolUse {
                id: &call.id,
                name: &call.name,
                input: ObjectArguments::of(&call.arguments),
                cache_control: None,
            },
        })
        .collect()
}

/// The request body as JSON bytes, serialised straight from the request's messages
/// (borrowed, no intermediate `serde_json::Value` tree): every request carries the whole
/// history, so this runs once per tool turn over everything said so far.
pub fn encode_body(request: &ModelRequest) -> Vec<u8> {
    let body = body(request);
    // Plain data with string keys: serialising into a Vec cannot fail.
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The request body as a JSON value (tests and the prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::from_slice(&encode_body(request)).unwrap_or(Value::Null)
}
