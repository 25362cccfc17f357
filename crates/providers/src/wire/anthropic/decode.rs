//! Decoding the response stream.

use crate::wire::adapter::{parse_arguments, StreamChunk};
use crate::wire::client::parse_event;
use crate::wire::error::ProviderError;
use pith_core::{Reasoning, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
pub(super) enum Event {
    #[serde(rename = "message_start")]
    MessageStart { message: StartMessage },
    #[serde(rename = "content_block_start")]
    ContentBlockStart { index: usize, content_block: Value },
    #[serde(rename = "content_block_delta")]
    ContentBlockDelta { index: usize, delta: Value },
    #[serde(rename = "content_block_stop")]
    ContentBlockStop { index: usize },
    #[serde(rename = "message_delta")]
    MessageDelta {
        #[serde(default)]
        delta: Value,
        #[serde(default)]
        usage: Option<UsageBody>,
    },
    #[serde(rename = "message_stop")]
    MessageStop,
    #[serde(rename = "ping")]
    Ping,
    #[serde(rename = "error")]
    Error { error: ErrorBody },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct StartMessage {
    pub(super) usage: Option<UsageBody>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default)]
pub(super) struct UsageBody {
    pub(super) input_tokens: Option<u64>,
    pub(super) output_tokens: Option<u64>,
    pub(super) cache_read_input_tokens: Option<u64>,
    pub(super) cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct ErrorBody {
    #[serde(rename = "type")]
    pub(super) kind: Option<String>,
    pub(super) message: String,
}

/// Per-response parsing state.
#[derive(Debug, Default)]
pub(super) struct Parser {
    pub(super) blocks: Vec<(usize, String, String, String)>, // index, id, name, partial json
    /// Thinking blocks in progress: index, the block so far.
    pub(super) thinking: Vec<(usize, Reasoning)>,
    pub(super) usage: Usage,
    pub(super) usage_seen: bool,
    pub(super) stop_reason: Option<String>,
    pub(super) done: bool,
}

impl Parser {
    /// A content block starts: a tool call (its JSON seeded by a non-streaming server's
    /// `input`), text, thinking (kept until its signature) or redacted thinking.
    fn block_start(&mut self, index: usize, content_block: &Value, out: &mut Vec<StreamChunk>) {
        match content_block["type"].as_str() {
            Some("tool_use") => {
                let id = content_block["id"].as_str().unwrap_or_default().to_owned();
                let name = content_block["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                // Non-empty `input` here (non-streaming servers) seeds the JSON.
                let seed = match &content_block["input"] {
                    Value::Object(map) if !map.is_empty() => content_block["input"].to_string(),
                    _ => String::new(),
                };
                out.push(StreamChunk::ArgumentBytes {
                    call: index,
                    bytes: seed.len(),
                });
                self.blocks.push((index, id, name, seed));
            }
            Some("text") => {
                if let Some(text) = content_block["text"].as_str().filter(|t| !t.is_empty()) {
                    out.push(StreamChunk::Text(text.to_owned()));
                }
            }
            Some("thinking") => {
                let text = content_block["thinking"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    out.push(StreamChunk::Reasoning(text.to_owned()));
                }
                let signature = content_block["signature"]
                    .as_str()
                    .filter(|s| !s.is_empty());
                self.thinking.push((
                    index,
                    Reasoning {
                        origin: "anthropic".to_owned(),
                        text: text.to_owned(),
                        signature: signature.map(str::to_owned),
                        ..Reasoning::default()
                    },
                ));
            }
            Some("redacted_thinking") => {
                self.thinking.push((
                    index,
                    Reasoning {
                        origin: "anthropic".to_owned(),
                        encrypted: content_block["data"].as_str().map(str::to_owned),
                        ..Reasoning::default()
                    },
                ));
            }
            _ => {}
        }
    }

    /// A content block grows: text, thinking, its signature, or a tool call's JSON.
    fn block_delta(&mut self, index: usize, delta: &Value, out: &mut Vec<StreamChunk>) {
        match delta["type"].as_str() {
            Some("text_delta") => {
                if let Some(text) = delta["text"].as_str() {
                    out.push(StreamChunk::Text(text.to_owned()));
                }
            }
            Some("thinking_delta") => {
                if let Some(text) = delta["thinking"].as_str() {
                    if let Some((_, block)) = self.thinking.iter_mut().find(|b| b.0 == index) {
                        block.text.push_str(text);
                    }
                    out.push(StreamChunk::Reasoning(text.to_owned()));
                }
            }
            Some("signature_delta") => {
                if let (Some(signature), Some((_, block))) = (
                    delta["signature"].as_str(),
                    self.thinking.iter_mut().find(|b| b.0 == index),
                ) {
                    block
                        .signature
                        .get_or_insert_with(String::new)
                        .push_str(signature);
                }
            }
            Some("input_json_delta") => {
                if let Some(partial) = delta["partial_json"].as_str() {
                    if let Some(block) = self.blocks.iter_mut().find(|b| b.0 == index) {
                        block.3.push_str(partial);
                        out.push(StreamChunk::ArgumentBytes {
                            call: index,
                            bytes: partial.len(),
                        });
                    }
                }
            }
            _ => {}
        }
    }

    pub(super) fn event(&mut self, data: &str) -> Result<Vec<StreamChunk>, ProviderError> {
        let event: Event = parse_event(data)?;
        let mut out = Vec::new();
        match event {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.absorb_usage(usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, &content_block, &mut out),
            Event::ContentBlockDelta { index, delta } => self.block_delta(index, &delta, &mut out),
            Event::ContentBlockStop { index } => {
                // A thinking block is complete only with its signature (or, redacted, its
                // data): one the API could not verify is never sent back.
                if let Some(position) = self.thinking.iter().position(|b| b.0 == index) {
                    let (_, block) = self.thinking.remove(position);
                    if block.is_replayable() {
                        out.push(StreamChunk::ReasoningPart(block));
                    }
                }
                if let Some(position) = self.blocks.iter().position(|b| b.0 == index) {
                    let (_, id, name, json) = self.blocks.remove(position);
                    out.push(StreamChunk::ToolCall(ToolCall {
                        id,
                        name,
                        arguments: parse_arguments(&json),
                    }));
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta["stop_reason"].as_str() {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = usage {
                    self.absorb_usage(usage);
                }
            }
            Event::MessageStop => {
                for (_, id, name, json) in std::mem::take(&mut self.blocks) {
                    out.push(StreamChunk::ToolCall(ToolCall {
                        id,
                        name,
                        arguments: parse_arguments(&json),
                    }));
                }
                if self.usage_seen {
                    out.push(StreamChunk::Usage(self.usage));
                }
                out.push(StreamChunk::Done {
                    stop_reason: self.stop_reason.clone(),
                });
                self.done = true;
            }
            Event::Error { error } => {
                return Err(ProviderError::from_stream_error(
                    error.kind.as_deref(),
                    None,
                    &error.message,
                ));
            }
            Event::Ping | Event::Unknown => {}
        }
        Ok(out)
    }

    /// Anthropic reports uncached input, cache reads and cache writes separately; pith's
    /// `input_tokens` is their sum (what the prompt really occupies).
    pub(super) fn absorb_usage(&mut self, usage: UsageBody) {
        self.usage_seen = true;
        if let Some(input) = usage.input_tokens {
            let read = usage.cache_read_input_tokens.unwrap_or(0);
            let write = usage.cache_creation_input_tokens.unwrap_or(0);
            self.usage.input_tokens = input + read + write;
            self.usage.cached_input_tokens = read;
            self.usage.cache_write_tokens = write;
        }
        if let Some(output) = usage.output_tokens {
            self.usage.output_tokens = output;
        }
    }
}
