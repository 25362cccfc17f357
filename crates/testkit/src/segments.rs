//! A request body as the prompt cache sees it ([`crate::cache`]): the blocks of each
//! protocol in the provider's prompt order (tool definitions, then the system prompt,
//! then the messages), each a [`Segment`] whose id hashes the block's JSON without its
//! `cache_control` and whose tokens are counted as [`crate::request_tokens`] counts them,
//! so the segments of a body add up to its count.
//!
//! - Anthropic: each tool, each system block (a string system prompt is one block), each
//!   element of a message's `content` (a string content is one text block); a block's
//!   `cache_control` sets a breakpoint after it (`"ttl": "1h"` an hour-long one), and a
//!   top-level `cache_control` (automatic caching) one after the last block.
//! - Bedrock: each `toolConfig.tools` tool, each `system` block, each content block of
//!   each message; a `cachePoint` block is a marker, not a segment: it sets a breakpoint
//!   after the segment before it.
//! - Chat: each tool, each message. Responses: each tool, the `instructions`, each `input`
//!   item (a string `input` is one). Gemini: each function declaration (or other tool),
//!   each part of `systemInstruction`, each part of each content.
//!
//! Framing goes to the first block of its message, system prompt or tool; what the
//! blocks leave of the body's count (the request's own framing, parameters such as
//! `stop_sequences`) goes to the first segment.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use serde_json::{json, Value};

use crate::cache::{CacheRules, Segment};
use crate::count::{request_tokens, value_tokens, MESSAGE_FRAMING, SYSTEM_FRAMING, TOOL_FRAMING};
use crate::protocol::Protocol;

/// The field that marks an Anthropic breakpoint, left out of a block's identity.
const CACHE_CONTROL: &str = "cache_control";

/// A request's segments and the lifetime asked for at each breakpoint.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Prompt {
    /// The blocks in prompt order.
    pub segments: Vec<Segment>,
    /// Per segment: the lifetime of the entry its breakpoint writes, when the request
    /// names one (`"ttl": "1h"`).
    pub ttls: Vec<Option<f64>>,
}

impl Prompt {
    fn push(&mut self, id: u64, tokens: u64, breakpoint: Option<Option<f64>>) {
        self.segments.push(Segment {
            id,
            tokens,
            breakpoint: breakpoint.is_some(),
        });
        self.ttls.push(breakpoint.flatten());
    }

    /// Sets a breakpoint after the last segment (a `cachePoint`, a top-level
    /// `cache_control`); nothing when there is none yet.
    fn mark_last(&mut self, ttl: Option<f64>) {
        if let (Some(segment), Some(last_ttl)) = (self.segments.last_mut(), self.ttls.last_mut()) {
            segment.breakpoint = true;
            *last_ttl = last_ttl.or(ttl);
        }
    }
}

/// The cache rules of `protocol`'s provider family.
pub(crate) fn rules(protocol: Protocol) -> CacheRules {
    match protocol {
        Protocol::Anthropic | Protocol::Bedrock => CacheRules::anthropic(),
        Protocol::OpenAiChat | Protocol::OpenAiResponses => CacheRules::openai(),
        Protocol::Gemini => CacheRules::gemini(),
    }
}

/// Which cache a request uses: one per model and, for OpenAI, per `prompt_cache_key`
/// (requests without a key share one).
pub(crate) fn client_key(protocol: Protocol, body: &Value, model: &str) -> String {
    let key = body.get("prompt_cache_key").filter(|key| !key.is_null());
    match (protocol, key) {
        (Protocol::OpenAiChat | Protocol::OpenAiResponses, Some(key)) => {
            let key = key.as_str().map_or_else(|| key.to_string(), str::to_owned);
            format!("{model}\n{key}")
        }
        _ => model.to_owned(),
    }
}

/// The segments of `body`, a request of `protocol`.
pub(crate) fn prompt(protocol: Protocol, body: &Value) -> Prompt {
    let mut prompt = Prompt::default();
    match protocol {
        Protocol::Anthropic => anthropic(body, &mut prompt),
        Protocol::Bedrock => bedrock(body, &mut prompt),
        Protocol::OpenAiChat => {
            tools(body.get("tools"), &mut prompt);
            each(
                body.get("messages"),
                "message",
                MESSAGE_FRAMING,
                &mut prompt,
            );
        }
        Protocol::OpenAiResponses => {
            tools(body.get("tools"), &mut prompt);
            if let Some(instructions) = body.get("instructions") {
                let tokens = value_tokens(instructions) + SYSTEM_FRAMING;
                prompt.push(id("system", instructions), tokens, None);
            }
            match body.get("input") {
                Some(Value::Array(_)) => {
                    each(body.get("input"), "item", MESSAGE_FRAMING, &mut prompt)
                }
                Some(input) => prompt.push(id("item", input), value_tokens(input), None),
                None => {}
            }
        }
        Protocol::Gemini => gemini(body, &mut prompt),
    }
    // What no block holds goes to the first one, so the segments add up to the count.
    let total = request_tokens(body);
    let sum: u64 = prompt.segments.iter().map(|s| s.tokens).sum();
    let rest = total.saturating_sub(sum);
    match prompt.segments.first_mut() {
        Some(first) => first.tokens += rest,
        None => prompt.push(id("request", &Value::Null), rest, None),
    }
    prompt
}

/// Anthropic: tools, system blocks, message content blocks; `cache_control` breakpoints.
fn anthropic(body: &Value, prompt: &mut Prompt) {
    if let Some(Value::Array(tools)) = body.get("tools") {
        for tool in tools {
            prompt.push(
                id("tool", tool),
                value_tokens(tool) + TOOL_FRAMING,
                cache_control(tool),
            );
        }
    }
    match body.get("system") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => {
            blocks_of(blocks, "system", SYSTEM_FRAMING, prompt);
        }
        Some(system @ Value::String(text)) => prompt.push(
            id("system", &text_block(text)),
            value_tokens(system) + SYSTEM_FRAMING,
            None,
        ),
        Some(other) => prompt.push(
            id("system", other),
            value_tokens(other) + SYSTEM_FRAMING,
            None,
        ),
        None => {}
    }
    if let Some(Value::Array(messages)) = body.get("messages") {
        for message in messages {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match message.get("content") {
                Some(Value::Array(blocks)) if !blocks.is_empty() => {
                    blocks_of(blocks, role, MESSAGE_FRAMING, prompt);
                }
                Some(content @ Value::String(text)) => prompt.push(
                    id(role, &text_block(text)),
                    value_tokens(content) + MESSAGE_FRAMING,
                    None,
                ),
                _ => prompt.push(
                    id(role, message),
                    value_tokens(message) + MESSAGE_FRAMING,
                    None,
                ),
            }
        }
    }
    if let Some(control) = body.get(CACHE_CONTROL).filter(|c| !c.is_null()) {
        prompt.mark_last(ttl_of(control));
    }
}

/// Anthropic blocks, each its own segment, the framing on the first.
fn blocks_of(blocks: &[Value], role: &str, framing: u64, prompt: &mut Prompt) {
    for (index, block) in blocks.iter().enumerate() {
        let framing = if index == 0 { framing } else { 0 };
        prompt.push(
            id(role, block),
            value_tokens(block) + framing,
            cache_control(block),
        );
    }
}

/// A string content as the text block it stands for, so both spellings are one block.
fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// `Some(ttl)` when `block` sets a breakpoint (`cache_control`), `ttl` the lifetime it asks
/// for.
fn cache_control(block: &Value) -> Option<Option<f64>> {
    block
        .get(CACHE_CONTROL)
        .filter(|control| !control.is_null())
        .map(ttl_of)
}

/// The lifetime a `cache_control` or `cachePoint` asks for: `"ttl": "1h"` or `"5m"`.
fn ttl_of(control: &Value) -> Option<f64> {
    match control.get("ttl").and_then(Value::as_str) {
        Some("1h") => Some(3_600.0),
        Some("5m") => Some(300.0),
        _ => None,
    }
}

/// Bedrock Converse: tools, system blocks, message content blocks; `cachePoint` markers.
fn bedrock(body: &Value, prompt: &mut Prompt) {
    let tools = body
        .get("toolConfig")
        .and_then(|config| config.get("tools"));
    if let Some(Value::Array(tools)) = tools {
        for tool in tools {
            match tool.get("cachePoint") {
                Some(point) => prompt.mark_last(ttl_of(point)),
                None => prompt.push(id("tool", tool), value_tokens(tool) + TOOL_FRAMING, None),
            }
        }
    }
    if let Some(Value::Array(blocks)) = body.get("system") {
        converse_blocks(blocks, "system", SYSTEM_FRAMING, prompt);
    }
    if let Some(Value::Array(messages)) = body.get("messages") {
        for message in messages {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let pushed = match message.get("content") {
                Some(Value::Array(blocks)) => {
                    converse_blocks(blocks, role, MESSAGE_FRAMING, prompt)
                }
                _ => false,
            };
            if !pushed {
                prompt.push(
                    id(role, message),
                    value_tokens(message) + MESSAGE_FRAMING,
                    None,
                );
            }
        }
    }
}

/// Converse blocks, each its own segment but `cachePoint`s, the framing on the first;
/// whether any segment was pushed.
fn converse_blocks(blocks: &[Value], role: &str, framing: u64, prompt: &mut Prompt) -> bool {
    let mut framing = Some(framing);
    for block in blocks {
        match block.get("cachePoint") {
            Some(point) => prompt.mark_last(ttl_of(point)),
            None => prompt.push(
                id(role, block),
                value_tokens(block) + framing.take().unwrap_or(0),
                None,
            ),
        }
    }
    framing.is_none()
}

/// Chat / Responses / Gemini tools: one segment per definition (Gemini: per function
/// declaration).
fn tools(tools: Option<&Value>, prompt: &mut Prompt) {
    let Some(Value::Array(tools)) = tools else {
        return;
    };
    for tool in tools {
        match tool.get("functionDeclarations") {
            Some(Value::Array(declarations)) => {
                for declaration in declarations {
                    let tokens = value_tokens(declaration) + TOOL_FRAMING;
                    prompt.push(id("tool", declaration), tokens, None);
                }
            }
            _ => prompt.push(id("tool", tool), value_tokens(tool) + TOOL_FRAMING, None),
        }
    }
}

/// Each element of `list` as one segment with `framing`.
fn each(list: Option<&Value>, kind: &str, framing: u64, prompt: &mut Prompt) {
    if let Some(Value::Array(items)) = list {
        for item in items {
            prompt.push(id(kind, item), value_tokens(item) + framing, None);
        }
    }
}

/// Gemini: function declarations, system instruction parts, each part of each content.
fn gemini(body: &Value, prompt: &mut Prompt) {
    tools(body.get("tools"), prompt);
    if let Some(system) = body.get("systemInstruction") {
        parts_of(system, "system", SYSTEM_FRAMING, prompt);
    }
    if let Some(Value::Array(contents)) = body.get("contents") {
        for content in contents {
            let role = content
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("user");
            parts_of(content, role, MESSAGE_FRAMING, prompt);
        }
    }
}

/// A Gemini content's parts, each its own segment, the framing on the first (a content
/// without parts is one segment).
fn parts_of(content: &Value, role: &str, framing: u64, prompt: &mut Prompt) {
    match content.get("parts") {
        Some(Value::Array(parts)) if !parts.is_empty() => {
            for (index, part) in parts.iter().enumerate() {
                let framing = if index == 0 { framing } else { 0 };
                prompt.push(id(role, part), value_tokens(part) + framing, None);
            }
        }
        _ => prompt.push(id(role, content), value_tokens(content) + framing, None),
    }
}

/// A block's identity: its kind (role) and its JSON without `cache_control`.
fn id(kind: &str, block: &Value) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    hash_value(block, &mut hasher);
    hasher.finish()
}

fn hash_value(value: &Value, hasher: &mut DefaultHasher) {
    match value {
        Value::Null => 0u8.hash(hasher),
        Value::Bool(flag) => (1u8, flag).hash(hasher),
        Value::Number(number) => (2u8, number.to_string()).hash(hasher),
        Value::String(text) => (3u8, text).hash(hasher),
        Value::Array(items) => {
            (4u8, items.len()).hash(hasher);
            for item in items {
                hash_value(item, hasher);
            }
        }
        Value::Object(map) => {
            // Key order is the sender's (serde_json's `preserve_order` is on in the
            // workspace); the same object in another order is the same content.
            let mut fields: Vec<(&String, &Value)> = map
                .iter()
                .filter(|(key, _)| key.as_str() != CACHE_CONTROL)
                .collect();
            fields.sort_unstable_by(|a, b| a.0.cmp(b.0));
            (5u8, fields.len()).hash(hasher);
            for (key, value) in fields {
                key.hash(hasher);
                hash_value(value, hasher);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(prompt: &Prompt) -> u64 {
        prompt.segments.iter().map(|s| s.tokens).sum()
    }

    fn breakpoints(prompt: &Prompt) -> Vec<usize> {
        (0..prompt.segments.len())
            .filter(|&i| prompt.segments[i].breakpoint)
            .collect()
    }

    #[test]
    fn anthropic_blocks_come_in_prompt_order_with_their_breakpoints() {
        let body = json!({"model": "m", "max_tokens": 10, "stop_sequences": ["END"],
            "tools": [{"name": "read", "description": "Read a file",
                       "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
            "system": [{"type": "text", "text": "You are terse."},
                       {"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "messages": [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                    "content": "fn main() {}", "cache_control": {"type": "ephemeral"}}]}]});
        let prompt = prompt(Protocol::Anthropic, &body);
        assert_eq!(prompt.segments.len(), 7);
        assert_eq!(breakpoints(&prompt), vec![0, 2, 6]);
        assert_eq!(prompt.ttls[2], Some(3_600.0));
        assert_eq!(prompt.ttls[6], None);
        assert_eq!(sum(&prompt), request_tokens(&body));
    }

    #[test]
    fn a_block_is_the_same_with_or_without_its_cache_control_and_in_either_spelling() {
        let plain = json!({"messages": [{"role": "user", "content": "hello"}]});
        let marked = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}]}]});
        let a = prompt(Protocol::Anthropic, &plain);
        let b = prompt(Protocol::Anthropic, &marked);
        assert_eq!(a.segments[0].id, b.segments[0].id);
        assert!(!a.segments[0].breakpoint && b.segments[0].breakpoint);
        // Key order does not matter.
        let reordered = json!({"messages": [{"role": "user", "content": [
            {"text": "hello", "type": "text"}]}]});
        assert_eq!(
            prompt(Protocol::Anthropic, &reordered).segments[0].id,
            a.segments[0].id
        );
        // The same text from the other role is other content.
        let other = json!({"messages": [{"role": "assistant", "content": "hello"}]});
        assert_ne!(
            prompt(Protocol::Anthropic, &other).segments[0].id,
            a.segments[0].id
        );
    }

    #[test]
    fn top_level_cache_control_marks_the_last_block() {
        let body = json!({"cache_control": {"type": "ephemeral"}, "system": "S",
            "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]});
        assert_eq!(breakpoints(&prompt(Protocol::Anthropic, &body)), vec![2]);
    }

    #[test]
    fn bedrock_cache_points_mark_the_block_before_them_and_are_no_segments() {
        let body = json!({
            "toolConfig": {"tools": [{"toolSpec": {"name": "read", "inputSchema": {"json": {"type": "object"}}}},
                                     {"cachePoint": {"type": "default"}}]},
            "system": [{"text": "You are terse."}, {"cachePoint": {"type": "default", "ttl": "1h"}}],
            "messages": [{"role": "user", "content": [{"text": "hello"}, {"cachePoint": {"type": "default"}}]},
                         {"role": "assistant", "content": [{"text": "hi"}]}]});
        let prompt = prompt(Protocol::Bedrock, &body);
        assert_eq!(prompt.segments.len(), 4);
        assert_eq!(breakpoints(&prompt), vec![0, 1, 2]);
        assert_eq!(prompt.ttls[1], Some(3_600.0));
        assert_eq!(sum(&prompt), request_tokens(&body));
    }

    #[test]
    fn every_protocol_adds_up_to_the_count() {
        let bodies = [
            (
                Protocol::OpenAiChat,
                json!({"model": "m", "tools": [{"type": "function",
                "function": {"name": "read", "parameters": {"type": "object"}}}],
                "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "hello there"}]}),
            ),
            (
                Protocol::OpenAiResponses,
                json!({"model": "m", "instructions": "Be terse.",
                "prompt_cache_key": "session-1",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
                          {"type": "function_call", "call_id": "c", "name": "read", "arguments": "{}"}]}),
            ),
            (
                Protocol::OpenAiResponses,
                json!({"model": "m", "input": "just a string"}),
            ),
            (Protocol::Gemini, gemini_body()),
            (Protocol::Anthropic, json!({"model": "m", "messages": []})),
        ];
        for (protocol, body) in bodies {
            let prompt = prompt(protocol, &body);
            assert_eq!(sum(&prompt), request_tokens(&body), "{protocol:?} {body}");
            assert!(!prompt.segments.is_empty());
        }
        let gemini = prompt(Protocol::Gemini, &gemini_body());
        assert_eq!(
            gemini.segments.len(),
            5,
            "2 declarations, 1 system part, 2 parts"
        );
    }

    fn gemini_body() -> Value {
        json!({"systemInstruction": {"parts": [{"text": "S"}]},
            "tools": [{"functionDeclarations": [{"name": "a"}, {"name": "b"}]}],
            "contents": [{"role": "user", "parts": [{"text": "x"}, {"text": "y"}]}]})
    }

    #[test]
    fn openai_caches_are_per_model_and_prompt_cache_key() {
        let keyed = json!({"prompt_cache_key": "s1"});
        let other = json!({"prompt_cache_key": "s2"});
        let none = json!({});
        let chat = Protocol::OpenAiChat;
        assert_ne!(client_key(chat, &keyed, "m"), client_key(chat, &other, "m"));
        assert_ne!(client_key(chat, &keyed, "m"), client_key(chat, &none, "m"));
        assert_ne!(client_key(chat, &none, "m"), client_key(chat, &none, "n"));
        // Anthropic has no such key.
        assert_eq!(
            client_key(Protocol::Anthropic, &keyed, "m"),
            client_key(Protocol::Anthropic, &other, "m")
        );
    }
}
