//! The contract between the generic tool loop and a wire protocol.
//!
//! Execution model: for every model request the loop builds one [`ModelRequest`] from its
//! generic history and calls [`ProviderAdapter::start`]. The adapter converts the request
//! to its native form — deterministically, so the same history always produces the same
//! bytes and provider prompt caches can reuse the prefix — sends it, and returns a
//! stream of [`StreamChunk`]s. Text and reasoning arrive as deltas; tool calls arrive
//! complete (the adapter reassembles argument fragments); usage arrives once; every wire
//! event that carries none of these is reported as [`StreamChunk::Progress`] (the idle
//! timeout measures silence on the wire, not between pieces of content); the stream
//! ends after [`StreamChunk::Done`]. Errors are [`ProviderError`]s. The loop owns
//! timeouts, retries and cancellation: dropping the stream must abort the request.

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;
use pith_core::{Message, ToolCall, ToolDefinition, Usage};

use crate::error::ProviderError;

/// One model request in generic form.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The provider's model id (without the `provider/` prefix).
    pub model: String,
    /// The system prompt; empty for none.
    pub system: String,
    /// The conversation, oldest first. System messages inside it (rare) are sent as
    /// system content where the protocol allows it.
    pub messages: Vec<Message>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Cap on output tokens, when the model needs one (Anthropic requires it).
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, when configured.
    pub temperature: Option<f32>,
}

/// One piece of a streamed response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChunk {
    /// Visible assistant text.
    Text(String),
    /// Reasoning text (never part of the answer).
    Reasoning(String),
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Usage of this request.
    Usage(Usage),
    /// The provider sent an event without content (a `ping`, a lifecycle event, a
    /// usage-free metadata chunk): the stream is alive. The loop's idle timeout measures
    /// silence on the wire, so adapters report every such event.
    Progress,
    /// The response is complete.
    Done {
        /// The provider's stop reason (`stop`, `tool_calls`, `end_turn`, …).
        stop_reason: Option<String>,
    },
}

/// The stream an adapter returns.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ProviderError>> + Send>>;

/// A wire protocol implementation. See the module docs for the execution model.
#[async_trait]
pub trait ProviderAdapter: Send + Sync {
    /// A short name for messages and logs (`openai-chat`, `anthropic`, …).
    fn protocol_name(&self) -> &'static str;

    /// Sends `request` and returns its response stream. Returns once response headers
    /// arrived (HTTP errors are reported here, not in the stream).
    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError>;
}

/// Parses tool-call arguments text; invalid JSON is kept as a JSON string so nothing the
/// model wrote is lost and the tool reports a clear argument error.
pub fn parse_arguments(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

/// Serialises tool-call arguments for a wire format that carries them as a string.
pub fn arguments_text(arguments: &serde_json::Value) -> String {
    match arguments {
        serde_json::Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_round_trip_and_invalid_json_is_kept() {
        assert_eq!(
            parse_arguments(r#"{"path":"a.rs"}"#),
            json!({"path": "a.rs"})
        );
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments("{oops"), json!("{oops"));
        assert_eq!(arguments_text(&json!("{oops")), "{oops");
        assert_eq!(arguments_text(&json!({"a": 1})), r#"{"a":1}"#);
    }
}
