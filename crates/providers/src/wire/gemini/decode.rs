//! Decoding the `streamGenerateContent?alt=sse` stream: every event is a whole
//! `GenerateContentResponse` chunk (`candidates[0].content.parts`, `finishReason`,
//! `usageMetadata`), or an `{"error": {code, message, status}}` object. There is no
//! final event: the answer is complete when the stream ends after a chunk carried a
//! `finishReason`.
//!
//! Parts: `thought: true` text is reasoning; a `functionCall` arrives whole (its id is
//! Gemini's, or one pith makes up, [`super::encode::GENERATED_ID_PREFIX`]); a
//! `thoughtSignature` on any part becomes a [`StreamChunk::ReasoningPart`] (origin
//! `gemini`, the thought text since the previous signature) right before that part's
//! own chunks, so the assistant message keeps it where the encoder puts it back.
//!
//! Usage: `promptTokenCount` (cached tokens included) plus `toolUsePromptTokenCount` is
//! the input, `cachedContentTokenCount` its cached part, `candidatesTokenCount` plus
//! `thoughtsTokenCount` the output, `thoughtsTokenCount` its reasoning part. Each chunk
//! carries the usage so far; the last one counts.

use std::sync::atomic::{AtomicU64, Ordering};

use pith_core::{Reasoning, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use super::encode::{GENERATED_ID_PREFIX, ORIGIN};
use crate::wire::adapter::StreamChunk;
use crate::wire::client::parse_event;
use crate::wire::error::ProviderError;

/// One event of the stream.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct Chunk {
    candidates: Vec<Candidate>,
    usage_metadata: Option<UsageMetadata>,
    prompt_feedback: Option<PromptFeedback>,
    error: Option<GoogleError>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Candidate {
    content: Option<CandidateContent>,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct CandidateContent {
    parts: Vec<WirePart>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WirePart {
    text: Option<String>,
    thought: bool,
    thought_signature: Option<String>,
    function_call: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionCall {
    id: Option<String>,
    name: String,
    args: Option<Value>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UsageMetadata {
    prompt_token_count: u64,
    cached_content_token_count: u64,
    candidates_token_count: u64,
    thoughts_token_count: u64,
    tool_use_prompt_token_count: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PromptFeedback {
    block_reason: Option<String>,
}

/// Google's error object: `{"code": 429, "message": "…", "status": "RESOURCE_EXHAUSTED"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct GoogleError {
    code: Option<u16>,
    message: String,
    status: Option<String>,
}

impl GoogleError {
    /// The classified error: context length, rate limit, overload and server errors by
    /// their HTTP code.
    fn classify(&self) -> ProviderError {
        let code = self.code.map(|c| c.to_string());
        let error = ProviderError::from_stream_error(
            self.status.as_deref(),
            code.as_deref(),
            &self.message,
        );
        match (&error, self.code) {
            (ProviderError::Http { status: 503, .. }, _) => ProviderError::Overloaded {
                status: 503,
                message: self.message.clone(),
                retry_after: None,
            },
            _ => error,
        }
    }
}

/// A call id for a call Gemini sent without one: unique in the process and across runs
/// (the clock's nanoseconds and a counter), never sent back to Gemini.
fn fresh_call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{GENERATED_ID_PREFIX}{nanos:x}-{n}")
}

/// Per-response parsing state.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// Thought text since the last signature.
    thought: String,
    /// Function calls so far (numbers [`StreamChunk::ArgumentBytes`]).
    calls: usize,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// Answer text or a call arrived (an empty answer that Gemini stopped is an error).
    answered: bool,
}

/// The `finishReason`s with which Gemini withholds an answer (its safety and policy
/// filters).
const WITHHELD: &[&str] = &[
    "safety",
    "recitation",
    "blocklist",
    "prohibited_content",
    "spii",
    "image_safety",
    "language",
];

impl Parser {
    /// Decodes one event's data.
    pub(super) fn event(&mut self, data: &str) -> Result<Vec<StreamChunk>, ProviderError> {
        let chunk: Chunk = parse_event(data)?;
        if let Some(error) = chunk.error {
            return Err(error.classify());
        }
        let mut out = Vec::new();
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_token_count + usage.tool_use_prompt_token_count,
                cached_input_tokens: usage.cached_content_token_count,
                output_tokens: usage.candidates_token_count + usage.thoughts_token_count,
                reasoning_tokens: usage.thoughts_token_count,
                ..Usage::default()
            });
        }
        if chunk.candidates.is_empty() {
            if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
                return Err(ProviderError::Provider(format!(
                    "Gemini blocked the prompt (blockReason {reason})"
                )));
            }
        }
        // pith asks for one candidate.
        if let Some(candidate) = chunk.candidates.into_iter().next() {
            for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
                self.part(part, &mut out);
            }
            if let Some(reason) = candidate.finish_reason {
                self.finish_reason = Some(reason.to_ascii_lowercase());
            }
        }
        Ok(out)
    }

    fn part(&mut self, part: WirePart, out: &mut Vec<StreamChunk>) {
        if part.thought {
            if let Some(text) = part.text.filter(|t| !t.is_empty()) {
                self.thought.push_str(&text);
                out.push(StreamChunk::Reasoning(text));
            }
            // A signature on a thought travels with the part that follows it.
            if let Some(signature) = part.thought_signature {
                self.signed(signature, out);
            }
            return;
        }
        if let Some(signature) = part.thought_signature {
            self.signed(signature, out);
        }
        if let Some(call) = part.function_call {
            let arguments = match call.args {
                Some(Value::Null) | None => Value::Object(serde_json::Map::new()),
                Some(args) => args,
            };
            self.answered = true;
            out.push(StreamChunk::ArgumentBytes {
                call: self.calls,
                bytes: arguments.to_string().len(),
            });
            self.calls += 1;
            out.push(StreamChunk::ToolCall(ToolCall {
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(fresh_call_id),
                name: call.name,
                arguments,
            }));
        } else if let Some(text) = part.text.filter(|t| !t.is_empty()) {
            self.answered = true;
            out.push(StreamChunk::Text(text));
        }
    }

    fn signed(&mut self, signature: String, out: &mut Vec<StreamChunk>) {
        out.push(StreamChunk::ReasoningPart(Reasoning {
            origin: ORIGIN.to_owned(),
            text: std::mem::take(&mut self.thought),
            signature: Some(signature),
            ..Reasoning::default()
        }));
    }

    /// The stream ended: the usage and the end, or the error of an answer cut short.
    /// An answer Gemini withheld entirely is an error naming the reason (not retried); an
    /// empty one it could not form (`MALFORMED_FUNCTION_CALL`) a broken stream (retried).
    pub(super) fn finish(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        let Some(reason) = self.finish_reason.take() else {
            return Err(ProviderError::Stream(
                "the stream ended before a chunk with a finishReason".to_owned(),
            ));
        };
        if !self.answered {
            if WITHHELD.contains(&reason.as_str()) {
                return Err(ProviderError::Provider(format!(
                    "Gemini withheld the answer (finishReason {})",
                    reason.to_ascii_uppercase()
                )));
            }
            if reason == "malformed_function_call" {
                return Err(ProviderError::Stream(
                    "Gemini could not form the model's function call (finishReason MALFORMED_FUNCTION_CALL)"
                        .to_owned(),
                ));
            }
        }
        let mut out = Vec::new();
        if let Some(usage) = self.usage {
            out.push(StreamChunk::Usage(usage));
        }
        out.push(StreamChunk::Done {
            stop_reason: Some(reason),
        });
        Ok(out)
    }
}
