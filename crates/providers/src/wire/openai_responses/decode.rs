//! Decoding the response stream.

use crate::wire::adapter::{parse_arguments, StreamChunk};
use crate::wire::error::ProviderError;
use pith_core::{Reasoning, ToolCall, Usage};
use serde_json::Value;

/// Per-response parsing state.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// Function calls in progress, keyed by item id: (item id, call id, name, arguments,
    /// the call's number).
    pub(super) calls: Vec<(String, String, String, String, usize)>,
    /// Function calls started so far (numbers them).
    pub(super) started: usize,
    pub(super) done: bool,
}

impl Parser {
    pub(super) fn event(&mut self, event: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut out = Vec::new();
        match event["type"].as_str().unwrap_or_default() {
            "response.output_text.delta" => {
                if let Some(delta) = event["delta"].as_str().filter(|d| !d.is_empty()) {
                    out.push(StreamChunk::Text(delta.to_owned()));
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = event["delta"].as_str() {
                    out.push(StreamChunk::Reasoning(delta.to_owned()));
                }
            }
            "response.output_item.added" => {
                let item = &event["item"];
                if item["type"] == "function_call" {
                    let arguments = item["arguments"].as_str().unwrap_or_default().to_owned();
                    self.started += 1;
                    out.push(StreamChunk::ArgumentBytes {
                        call: self.started,
                        bytes: arguments.len(),
                    });
                    self.calls.push((
                        item["id"].as_str().unwrap_or_default().to_owned(),
                        item["call_id"].as_str().unwrap_or_default().to_owned(),
                        item["name"].as_str().unwrap_or_default().to_owned(),
                        arguments,
                        self.started,
                    ));
                }
            }
            "response.function_call_arguments.delta" => {
                let item_id = event["item_id"].as_str().unwrap_or_default();
                if let (Some(call), Some(delta)) = (
                    self.calls.iter_mut().find(|c| c.0 == item_id),
                    event["delta"].as_str(),
                ) {
                    call.3.push_str(delta);
                    out.push(StreamChunk::ArgumentBytes {
                        call: call.4,
                        bytes: delta.len(),
                    });
                }
            }
            "response.output_item.done" => self.item_done(&event["item"], &mut out),
            "response.completed" | "response.incomplete" => {
                self.completed(&event["response"], &mut out);
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                return Err(ProviderError::from_stream_error(
                    None,
                    error["code"].as_str(),
                    error["message"].as_str().unwrap_or("the response failed"),
                ));
            }
            "error" => {
                return Err(ProviderError::from_stream_error(
                    event["error"]["type"].as_str().or(event["type"].as_str()),
                    event["code"].as_str().or(event["error"]["code"].as_str()),
                    event["message"]
                        .as_str()
                        .or(event["error"]["message"].as_str())
                        .unwrap_or("stream error"),
                ));
            }
            _ => {}
        }
        Ok(out)
    }

    /// An output item is done: a reasoning item, or a function call (the done item is
    /// authoritative where it carries the fields).
    fn item_done(&mut self, item: &Value, out: &mut Vec<StreamChunk>) {
        if item["type"] == "reasoning" {
            if let Some(reasoning) = reasoning_item(item) {
                out.push(StreamChunk::ReasoningPart(reasoning));
            }
        }
        if item["type"] == "function_call" {
            let item_id = item["id"].as_str().unwrap_or_default();
            let position = self.calls.iter().position(|c| c.0 == item_id);
            let (_, mut call_id, mut name, mut arguments, _) =
                position.map(|p| self.calls.remove(p)).unwrap_or_default();
            // The done item is authoritative when it carries the fields.
            if let Some(v) = item["call_id"].as_str() {
                call_id = v.to_owned();
            }
            if let Some(v) = item["name"].as_str() {
                name = v.to_owned();
            }
            if let Some(v) = item["arguments"].as_str() {
                arguments = v.to_owned();
            }
            out.push(StreamChunk::ToolCall(ToolCall {
                id: call_id,
                name,
                arguments: parse_arguments(&arguments),
            }));
        }
    }

    /// The response completed (or ended incomplete): the calls still open, the usage, and
    /// the stop reason.
    fn completed(&mut self, response: &Value, out: &mut Vec<StreamChunk>) {
        for (_, id, name, arguments, _) in std::mem::take(&mut self.calls) {
            out.push(StreamChunk::ToolCall(ToolCall {
                id,
                name,
                arguments: parse_arguments(&arguments),
            }));
        }
        let usage = &response["usage"];
        if usage.is_object() {
            out.push(StreamChunk::Usage(Usage {
                input_tokens: usage["input_tokens"].as_u64().unwrap_or(0),
                cached_input_tokens: usage["input_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                cache_write_tokens: 0,
                output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                reasoning_tokens: usage["output_tokens_details"]["reasoning_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                provider_cost_nanousd: 0,
            }));
        }
        let stop = response["incomplete_details"]["reason"]
            .as_str()
            .or(response["status"].as_str())
            .map(str::to_owned);
        out.push(StreamChunk::Done { stop_reason: stop });
        self.done = true;
    }
}

/// A completed reasoning item as pith keeps it: its summary parts joined by blank lines,
/// its encrypted content and id. `None` for an item with neither (nothing to show or
/// send back).
fn reasoning_item(item: &Value) -> Option<Reasoning> {
    let text = item["summary"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .unwrap_or_default();
    let encrypted = item["encrypted_content"].as_str().map(str::to_owned);
    if text.is_empty() && encrypted.is_none() {
        return None;
    }
    Some(Reasoning {
        origin: "openai-responses".to_owned(),
        text,
        id: item["id"].as_str().map(str::to_owned),
        encrypted,
        ..Reasoning::default()
    })
}
