//! How many tokens a request body holds, counted with pith's own tokenizer (o200k) the
//! way pith's estimate counts a request, but from the wire body alone: what a test uses to
//! check that no request exceeds a budget, and what [`crate::UsageMode::Counted`] reports.
//!
//! The rules mirror `pith_core::tokens` on every protocol's body at once (their field names
//! do not collide):
//! - every string is counted as text, except ids, roles, types and model names;
//! - a tool's JSON schema (`parameters`, `input_schema`, `inputSchema`,
//!   `parametersJsonSchema`, Bedrock's `json`) and a tool call's object arguments
//!   (Anthropic and Bedrock `input`, Gemini `args`) are counted as their JSON text;
//! - an image (a `data:` URL, or base64 under `data` / `bytes`) costs what the larger of
//!   Anthropic's and OpenAI's published formulas says for its size;
//! - opaque reasoning payloads (signatures, encrypted content) cost a token per 4 bytes;
//! - framing: 3 per request, 4 per message (an element of `messages`, `input` or
//!   `contents`) and for a system prompt, 8 per tool definition.

use std::io::Cursor;
use std::sync::OnceLock;

use pith_core::tokens::{BpeCounter, Encoding, TokenCounter};
use serde_json::{Map, Value};

/// Keys whose strings are metadata, not content.
const METADATA_KEYS: [&str; 14] = [
    "model",
    "role",
    "type",
    "id",
    "call_id",
    "tool_call_id",
    "tool_use_id",
    "toolUseId",
    "media_type",
    "mimeType",
    "format",
    "status",
    "detail",
    "tool_choice",
];

/// Keys whose object value is counted as its JSON text (schemas, call arguments).
const JSON_TEXT_KEYS: [&str; 7] = [
    "parameters",
    "input_schema",
    "inputSchema",
    "parametersJsonSchema",
    "json",
    "input",
    "args",
];

/// Keys of opaque payloads: a token per 4 bytes.
const OPAQUE_KEYS: [&str; 5] = [
    "signature",
    "thoughtSignature",
    "encrypted_content",
    "redacted_content",
    "redactedContent",
];

/// Keys whose array elements are messages (4 tokens of framing each).
const MESSAGE_LISTS: [&str; 3] = ["messages", "input", "contents"];

/// Keys that hold the system prompt (4 tokens of framing).
const SYSTEM_KEYS: [&str; 3] = ["system", "instructions", "systemInstruction"];

/// Framing of a whole request.
const REQUEST_FRAMING: u64 = 3;
/// Framing of one message (an element of `messages`, `input` or `contents`).
pub(crate) const MESSAGE_FRAMING: u64 = 4;
/// Framing of the system prompt.
pub(crate) const SYSTEM_FRAMING: u64 = 4;
/// Framing of one tool definition.
pub(crate) const TOOL_FRAMING: u64 = 8;

fn counter() -> &'static BpeCounter {
    static COUNTER: OnceLock<BpeCounter> = OnceLock::new();
    COUNTER.get_or_init(|| BpeCounter::new(Encoding::O200kBase))
}

/// The last message of a request body: the last element of `messages` (Chat, Anthropic,
/// Bedrock), `input` (Responses) or `contents` (Gemini).
pub fn last_message(body: &Value) -> Option<&Value> {
    MESSAGE_LISTS
        .iter()
        .find_map(|key| body.get(*key).and_then(Value::as_array))
        .and_then(|items| items.last())
}

/// The tokens of a request body, by the rules of the module docs.
pub fn request_tokens(body: &Value) -> u64 {
    let mut total = REQUEST_FRAMING;
    if let Value::Object(map) = body {
        total += framing(map);
    }
    total + walk(body, None)
}

/// Message, system and tool-definition framing of a top-level body.
fn framing(map: &Map<String, Value>) -> u64 {
    let mut total = 0;
    for key in MESSAGE_LISTS {
        if let Some(Value::Array(items)) = map.get(key) {
            total += MESSAGE_FRAMING * items.len() as u64;
        }
    }
    if SYSTEM_KEYS.iter().any(|key| map.contains_key(*key)) {
        total += SYSTEM_FRAMING;
    }
    total + TOOL_FRAMING * tool_definitions(map)
}

/// How many tools the body defines (Chat / Responses / Anthropic `tools`, Gemini
/// `tools[].functionDeclarations`, Bedrock `toolConfig.tools`).
fn tool_definitions(map: &Map<String, Value>) -> u64 {
    let mut count = 0;
    if let Some(Value::Array(tools)) = map.get("tools") {
        for tool in tools {
            match tool.get("functionDeclarations") {
                Some(Value::Array(declarations)) => count += declarations.len() as u64,
                _ => count += 1,
            }
        }
    }
    if let Some(Value::Array(tools)) = map.get("toolConfig").and_then(|c| c.get("tools")) {
        count += tools.len() as u64;
    }
    count
}

/// The tokens of one part of a body (a block, a message, a tool definition), framing
/// excluded: the same walk as [`request_tokens`] makes over it.
pub(crate) fn value_tokens(value: &Value) -> u64 {
    walk(value, None)
}

fn walk(value: &Value, key: Option<&str>) -> u64 {
    match value {
        Value::String(text) => string_tokens(text, key),
        Value::Array(items) => items.iter().map(|item| walk(item, key)).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(key, value)| {
                let key = key.as_str();
                if METADATA_KEYS.contains(&key) {
                    0
                } else if JSON_TEXT_KEYS.contains(&key) && value.is_object() {
                    count(&value.to_string())
                } else {
                    walk(value, Some(key))
                }
            })
            .sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}

fn string_tokens(text: &str, key: Option<&str>) -> u64 {
    if key.is_some_and(|key| OPAQUE_KEYS.contains(&key)) {
        return (text.len() as u64).div_ceil(4);
    }
    if let Some((width, height)) = image_size(text, key) {
        return 8 + counter().image_tokens(width, height) as u64;
    }
    count(text)
}

fn count(text: &str) -> u64 {
    counter().count(text) as u64
}

/// The size of the image `text` carries: a `data:image/…;base64,` URL anywhere, or base64
/// under `data` / `bytes`. `None` when it is not an image.
fn image_size(text: &str, key: Option<&str>) -> Option<(u32, u32)> {
    let encoded = match text.strip_prefix("data:image/") {
        Some(rest) => rest.split_once(";base64,")?.1,
        None if matches!(key, Some("data" | "bytes")) && text.len() >= 32 => text,
        None => return None,
    };
    let bytes = decode_base64(encoded)?;
    image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

/// Standard base64 (padding optional); `None` on any other character.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut buffer = 0u32;
    let mut bits = 0;
    for byte in text.bytes().take_while(|b| *b != b'=') {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_counted_and_metadata_is_not() {
        let body = json!({"model": "gpt-4o", "messages": [
            {"role": "user", "content": "hello world"}
        ]});
        // 3 request + 4 message + 2 ("hello world")
        assert_eq!(request_tokens(&body), 9);
    }

    #[test]
    fn schemas_and_object_arguments_count_as_their_json_text() {
        let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
        let body = json!({"tools": [{"name": "read", "description": "Read a file",
                                      "input_schema": schema.clone()}]});
        let expected = 3 + 8 + count("read") + count("Read a file") + count(&schema.to_string());
        assert_eq!(request_tokens(&body), expected);
        let call = json!({"messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.rs"}}
        ]}]});
        let expected = 3 + 4 + count("read") + count(r#"{"path":"a.rs"}"#);
        assert_eq!(request_tokens(&call), expected);
    }

    #[test]
    fn an_image_costs_its_formula_not_its_base64() {
        let mut png = Vec::new();
        image::RgbImage::new(1024, 1024)
            .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        let encoded = pith_tools_like_base64(&png);
        let formula = 8 + counter().image_tokens(1024, 1024) as u64;
        let anthropic = json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": encoded}}
        ]}]});
        assert_eq!(request_tokens(&anthropic), 3 + 4 + formula);
        let chat = json!({"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{encoded}")}}
        ]}]});
        assert_eq!(request_tokens(&chat), 3 + 4 + formula);
    }

    #[test]
    fn opaque_payloads_cost_a_token_per_four_bytes() {
        let body = json!({"signature": "x".repeat(400)});
        assert_eq!(request_tokens(&body), 3 + 100);
    }

    fn pith_tools_like_base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8; 64] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }
}
