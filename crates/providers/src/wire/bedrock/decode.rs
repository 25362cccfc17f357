//! Decoding a `ConverseStream` response: event-stream messages to [`StreamChunk`]s.
//!
//! Each message has `:message-type` `event` (and an `:event-type`: `messageStart`,
//! `contentBlockStart`, `contentBlockDelta`, `contentBlockStop`, `messageStop`,
//! `metadata`), `exception` (an `:exception-type` and a JSON `{"message"}` payload) or
//! `error` (`:error-code`, `:error-message`). Usage arrives in `metadata`, after
//! `messageStop`: the response is complete there (or when the stream ends after
//! `messageStop` without one).

use aws_smithy_types::event_stream::Message;
use pith_core::{Reasoning, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

use crate::wire::adapter::{parse_arguments, StreamChunk};
use crate::wire::client::unparseable;
use crate::wire::error::ProviderError;
use crate::wire::eventstream::header_str;

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct EventBody {
    content_block_index: Option<usize>,
    start: Value,
    delta: Value,
    stop_reason: Option<String>,
    usage: Option<UsageBody>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct UsageBody {
    input_tokens: u64,
    output_tokens: u64,
    cache_read_input_tokens: u64,
    cache_write_input_tokens: u64,
}

/// A tool call being streamed: its block index, id, name and argument text so far.
#[derive(Debug)]
struct OpenCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// Per-response parsing state.
#[derive(Debug, Default)]
pub(super) struct Parser {
    calls: Vec<OpenCall>,
    /// Reasoning blocks in progress: index, the block so far.
    reasoning: Vec<(usize, Reasoning)>,
    stop_reason: Option<String>,
    stopped: bool,
    pub(super) done: bool,
}

impl Parser {
    /// Decodes one message.
    pub(super) fn message(&mut self, message: &Message) -> Result<Vec<StreamChunk>, ProviderError> {
        match header_str(message, ":message-type") {
            Some("event") => {}
            Some("exception") => {
                let kind = header_str(message, ":exception-type").unwrap_or("exception");
                let text = exception_message(message.payload());
                return Err(classify_exception(kind, &text));
            }
            Some("error") => {
                let code = header_str(message, ":error-code").unwrap_or("error");
                let text = header_str(message, ":error-message").unwrap_or("");
                return Err(classify_exception(code, text));
            }
            other => {
                return Err(ProviderError::Stream(format!(
                    "an event-stream message of unknown type {other:?}"
                )))
            }
        }
        let event_type = header_str(message, ":event-type").unwrap_or_default();
        let payload = message.payload();
        let body: EventBody = if payload.is_empty() {
            EventBody::default()
        } else {
            serde_json::from_slice(payload).map_err(|err| {
                let data = String::from_utf8_lossy(payload);
                unparseable(&format!("{event_type} event"), &err, &data)
            })?
        };
        let index = body.content_block_index.unwrap_or(0);
        let mut out = Vec::new();
        match event_type {
            "contentBlockStart" => {
                if let Some(start) = body.start.get("toolUse") {
                    let id = start["toolUseId"].as_str().unwrap_or_default().to_owned();
                    let name = start["name"].as_str().unwrap_or_default().to_owned();
                    out.push(StreamChunk::ArgumentBytes {
                        call: index,
                        bytes: 0,
                    });
                    self.calls.push(OpenCall {
                        index,
                        id,
                        name,
                        arguments: String::new(),
                    });
                }
            }
            "contentBlockDelta" => self.delta(index, &body.delta, &mut out),
            "contentBlockStop" => self.stop_block(index, &mut out),
            "messageStop" => {
                for position in (0..self.reasoning.len()).rev() {
                    let index = self.reasoning[position].0;
                    self.stop_block(index, &mut out);
                }
                for call in std::mem::take(&mut self.calls) {
                    out.push(finished_call(call));
                }
                self.stop_reason = body.stop_reason;
                self.stopped = true;
            }
            "metadata" => {
                if let Some(usage) = body.usage {
                    out.push(StreamChunk::Usage(usage_of(usage)));
                }
                if self.stopped {
                    out.push(self.finish());
                }
            }
            // messageStart and any event a newer API adds carry nothing pith uses.
            _ => {}
        }
        Ok(out)
    }

    /// The chunks when the stream ends without a `metadata` event: complete after
    /// `messageStop`, an error before it.
    pub(super) fn end(&mut self) -> Result<Vec<StreamChunk>, ProviderError> {
        if self.stopped {
            Ok(vec![self.finish()])
        } else {
            Err(ProviderError::Stream(
                "the stream ended before messageStop".to_owned(),
            ))
        }
    }

    fn finish(&mut self) -> StreamChunk {
        self.done = true;
        StreamChunk::Done {
            stop_reason: self.stop_reason.clone(),
        }
    }

    fn delta(&mut self, index: usize, delta: &Value, out: &mut Vec<StreamChunk>) {
        if let Some(text) = delta.get("text").and_then(Value::as_str) {
            out.push(StreamChunk::Text(text.to_owned()));
        }
        if let Some(input) = delta.pointer("/toolUse/input").and_then(Value::as_str) {
            if let Some(call) = self.calls.iter_mut().find(|c| c.index == index) {
                call.arguments.push_str(input);
                out.push(StreamChunk::ArgumentBytes {
                    call: index,
                    bytes: input.len(),
                });
            }
        }
        if let Some(reasoning) = delta.get("reasoningContent") {
            let block = match self.reasoning.iter_mut().find(|b| b.0 == index) {
                Some((_, block)) => block,
                None => {
                    self.reasoning.push((
                        index,
                        Reasoning {
                            origin: super::encode::ORIGIN.to_owned(),
                            ..Reasoning::default()
                        },
                    ));
                    let last = self.reasoning.len() - 1;
                    &mut self.reasoning[last].1
                }
            };
            if let Some(text) = reasoning.get("text").and_then(Value::as_str) {
                block.text.push_str(text);
                out.push(StreamChunk::Reasoning(text.to_owned()));
            }
            if let Some(signature) = reasoning.get("signature").and_then(Value::as_str) {
                block
                    .signature
                    .get_or_insert_with(String::new)
                    .push_str(signature);
            }
            if let Some(data) = reasoning.get("redactedContent").and_then(Value::as_str) {
                block
                    .encrypted
                    .get_or_insert_with(String::new)
                    .push_str(data);
            }
        }
    }

    fn stop_block(&mut self, index: usize, out: &mut Vec<StreamChunk>) {
        // A reasoning block is complete only with its signature (or redacted content):
        // one the API could not verify is never sent back.
        if let Some(position) = self.reasoning.iter().position(|b| b.0 == index) {
            let (_, block) = self.reasoning.remove(position);
            if block.is_replayable() {
                out.push(StreamChunk::ReasoningPart(block));
            }
        }
        if let Some(position) = self.calls.iter().position(|c| c.index == index) {
            out.push(finished_call(self.calls.remove(position)));
        }
    }
}

fn finished_call(call: OpenCall) -> StreamChunk {
    StreamChunk::ToolCall(ToolCall {
        id: call.id,
        name: call.name,
        arguments: parse_arguments(&call.arguments),
    })
}

/// Bedrock reports uncached input, cache reads and cache writes separately; pith's
/// `input_tokens` is their sum (what the prompt really occupies).
fn usage_of(usage: UsageBody) -> Usage {
    Usage {
        input_tokens: usage.input_tokens
            + usage.cache_read_input_tokens
            + usage.cache_write_input_tokens,
        cached_input_tokens: usage.cache_read_input_tokens,
        cache_write_tokens: usage.cache_write_input_tokens,
        output_tokens: usage.output_tokens,
        ..Usage::default()
    }
}

/// The `message` of an exception payload (`{"message": …}`, sometimes `Message`), or the
/// payload itself.
pub(super) fn exception_message(payload: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<Value>(payload) {
        for key in ["message", "Message"] {
            if let Some(text) = value.get(key).and_then(Value::as_str) {
                return text.to_owned();
            }
        }
    }
    let text: String = String::from_utf8_lossy(payload).chars().take(500).collect();
    if text.trim().is_empty() {
        "(no message)".to_owned()
    } else {
        text
    }
}

/// Bedrock's exception type (`throttlingException`, `ThrottlingException`, or the
/// `x-amzn-errortype` value `ThrottlingException:http://…`) and message, classified:
/// throttling is a rate limit, unavailability an overload, internal and stream failures
/// and timeouts are retried, a validation error saying the input is too long is a
/// context-length error, access errors are authentication failures.
pub fn classify_exception(kind: &str, message: &str) -> ProviderError {
    let name = kind.split(':').next().unwrap_or(kind).to_ascii_lowercase();
    let name = name.trim_end_matches("exception");
    let message = message.to_owned();
    let typed = format!("{kind}: {message}");
    match name {
        "throttling" | "toomanyrequests" => ProviderError::RateLimited {
            message: typed,
            retry_after: None,
        },
        "serviceunavailable" => ProviderError::Overloaded {
            status: 503,
            message: typed,
            retry_after: None,
        },
        "internalserver" | "internalfailure" => ProviderError::Http {
            status: 500,
            message: typed,
        },
        "modeltimeout" => ProviderError::Http {
            status: 408,
            message: typed,
        },
        "modelstreamerror" => ProviderError::Stream(typed),
        "validation" if is_too_long(&message) => ProviderError::ContextLengthExceeded { message },
        "validation" | "modelerror" | "resourcenotfound" | "modelnotready" => ProviderError::Http {
            status: 400,
            message: typed,
        },
        "accessdenied" | "unrecognizedclient" | "invalidsignature" | "expiredtoken"
        | "unauthorized" => ProviderError::Auth {
            status: 403,
            message: typed,
        },
        _ if is_too_long(&message) => ProviderError::ContextLengthExceeded { message },
        _ => ProviderError::Provider(typed),
    }
}

/// Bedrock's wordings for a prompt that does not fit: its own "Input is too long for
/// requested model", Claude's "prompt is too long" passed through, and the "exceed context
/// limit" / "too many input tokens" variants.
pub(super) fn is_too_long(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    [
        "too long",
        "exceed context limit",
        "exceeds the context",
        "context window",
        "too many input tokens",
        "maximum context length",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// An HTTP failure of a Bedrock request: its `x-amzn-errortype` header (when present) or
/// the body's `__type`, and the body's `message`, classified like an in-stream exception;
/// without a type, by status.
pub fn classify_http(
    status: u16,
    error_type: Option<&str>,
    retry_after: Option<std::time::Duration>,
    body: &str,
) -> ProviderError {
    let parsed = serde_json::from_str::<Value>(body).ok();
    let error_type = error_type.map(str::to_owned).or_else(|| {
        parsed
            .as_ref()
            .and_then(|v| v.get("__type"))
            .and_then(Value::as_str)
            .map(|t| t.rsplit('#').next().unwrap_or(t).to_owned())
    });
    let message = exception_message(body.as_bytes());
    match error_type {
        Some(kind) => match classify_exception(&kind, &message) {
            ProviderError::RateLimited { message, .. } => ProviderError::RateLimited {
                message,
                retry_after,
            },
            ProviderError::Overloaded {
                status, message, ..
            } => ProviderError::Overloaded {
                status,
                message,
                retry_after,
            },
            ProviderError::Http { message, .. } => ProviderError::Http { status, message },
            ProviderError::Auth { message, .. } => ProviderError::Auth { status, message },
            ProviderError::Provider(message) => ProviderError::Http { status, message },
            other => other,
        },
        None if status == 400 && is_too_long(&message) => {
            ProviderError::ContextLengthExceeded { message }
        }
        None => ProviderError::from_http(status, retry_after, body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_smithy_types::event_stream::{Header, HeaderValue};
    use bytes::Bytes;
    use serde_json::json;

    fn event(event_type: &str, payload: Value) -> Message {
        Message::new(Bytes::from(payload.to_string()))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".into()),
            ))
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String(event_type.to_owned().into()),
            ))
    }

    fn exception(kind: &str, message: &str) -> Message {
        Message::new(Bytes::from(json!({ "message": message }).to_string()))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("exception".into()),
            ))
            .add_header(Header::new(
                ":exception-type",
                HeaderValue::String(kind.to_owned().into()),
            ))
    }

    fn parse(messages: &[Message]) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for message in messages {
            out.extend(parser.message(message)?);
        }
        if !parser.done {
            out.extend(parser.end()?);
        }
        Ok(out
            .into_iter()
            .filter(|c| !matches!(c, StreamChunk::ArgumentBytes { .. }))
            .collect())
    }

    /// The shape of the ConverseStream example in the Bedrock documentation: text, a tool
    /// call streamed in pieces, the stop, then usage with cache reads and writes.
    #[test]
    fn a_tool_use_stream_decodes_in_order_with_usage_after_the_stop() {
        let chunks = parse(&[
            event("messageStart", json!({"role": "assistant"})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "look."}})),
            event("contentBlockStop", json!({"contentBlockIndex": 0})),
            event("contentBlockStart", json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "read"}}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"path\":"}}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": " \"a.rs\"}"}}})),
            event("contentBlockStop", json!({"contentBlockIndex": 1})),
            event("messageStop", json!({"stopReason": "tool_use"})),
            event("metadata", json!({"usage": {"inputTokens": 10, "outputTokens": 7, "totalTokens": 1077, "cacheReadInputTokens": 1000, "cacheWriteInputTokens": 60}, "metrics": {"latencyMs": 300}})),
        ])
        .unwrap();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::Text("Let me ".into()),
                StreamChunk::Text("look.".into()),
                StreamChunk::ToolCall(ToolCall {
                    id: "tooluse_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                }),
                StreamChunk::Usage(Usage {
                    input_tokens: 1070,
                    cached_input_tokens: 1000,
                    cache_write_tokens: 60,
                    output_tokens: 7,
                    ..Usage::default()
                }),
                StreamChunk::Done {
                    stop_reason: Some("tool_use".into())
                },
            ]
        );
    }

    #[test]
    fn reasoning_keeps_its_signature_and_redacted_content_is_kept_opaque() {
        let chunks = parse(&[
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Think"}}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "ing."}}})),
            event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig-1"}}})),
            event("contentBlockStop", json!({"contentBlockIndex": 0})),
            event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"reasoningContent": {"redactedContent": "b3BhcXVl"}}})),
            event("contentBlockStop", json!({"contentBlockIndex": 1})),
            event("contentBlockDelta", json!({"contentBlockIndex": 2, "delta": {"reasoningContent": {"text": "unsigned"}}})),
            event("contentBlockStop", json!({"contentBlockIndex": 2})),
            event("messageStop", json!({"stopReason": "end_turn"})),
        ])
        .unwrap();
        let parts: Vec<&Reasoning> = chunks
            .iter()
            .filter_map(|c| match c {
                StreamChunk::ReasoningPart(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(
            parts.len(),
            2,
            "an unsigned block is never replayed: {chunks:?}"
        );
        assert_eq!(parts[0].text, "Thinking.");
        assert_eq!(parts[0].signature.as_deref(), Some("sig-1"));
        assert_eq!(parts[0].origin, "bedrock");
        assert_eq!(parts[1].encrypted.as_deref(), Some("b3BhcXVl"));
        assert_eq!(
            chunks.last(),
            Some(&StreamChunk::Done {
                stop_reason: Some("end_turn".into())
            }),
            "complete without metadata once messageStop came"
        );
    }

    #[test]
    fn exceptions_in_the_stream_are_classified() {
        let throttled =
            parse(&[exception("throttlingException", "Too many requests")]).unwrap_err();
        assert!(
            matches!(throttled, ProviderError::RateLimited { .. }),
            "{throttled:?}"
        );
        assert!(throttled.is_retryable());
        let stream = parse(&[
            event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": "a"}}),
            ),
            exception("modelStreamErrorException", "The model stream broke"),
        ])
        .unwrap_err();
        assert!(stream.is_retryable(), "{stream:?}");
        let long = parse(&[exception(
            "validationException",
            "Input is too long for requested model.",
        )])
        .unwrap_err();
        assert!(
            matches!(long, ProviderError::ContextLengthExceeded { .. }),
            "{long:?}"
        );
        let invalid = parse(&[exception("validationException", "bad field")]).unwrap_err();
        assert!(!invalid.is_retryable(), "{invalid:?}");
        let unavailable = parse(&[exception("serviceUnavailableException", "later")]).unwrap_err();
        assert!(matches!(
            unavailable,
            ProviderError::Overloaded { status: 503, .. }
        ));
        let early = parse(&[event("messageStart", json!({"role": "assistant"}))]).unwrap_err();
        assert!(early.to_string().contains("before messageStop"), "{early}");
    }

    #[test]
    fn http_error_bodies_are_classified_by_type_then_status() {
        let long = classify_http(
            400,
            Some("ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/"),
            None,
            r#"{"message":"prompt is too long: 250000 tokens > 200000 maximum"}"#,
        );
        assert!(
            matches!(long, ProviderError::ContextLengthExceeded { .. }),
            "{long:?}"
        );
        let throttled = classify_http(
            429,
            None,
            Some(std::time::Duration::from_secs(2)),
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        );
        assert_eq!(
            throttled.retry_after(),
            Some(std::time::Duration::from_secs(2))
        );
        let denied = classify_http(
            403,
            Some("AccessDeniedException"),
            None,
            r#"{"message":"You don't have access to the model with the specified model ID."}"#,
        );
        assert!(
            matches!(denied, ProviderError::Auth { status: 403, .. }),
            "{denied:?}"
        );
        let typed_in_body = classify_http(
            400,
            None,
            None,
            r#"{"__type":"com.amazon.coral.validate#ValidationException","message":"Input is too long for requested model."}"#,
        );
        assert!(matches!(
            typed_in_body,
            ProviderError::ContextLengthExceeded { .. }
        ));
        let internal = classify_http(500, Some("InternalServerException"), None, "{}");
        assert!(internal.is_retryable());
        let unknown = classify_http(400, None, None, r#"{"message":"bad field"}"#);
        assert!(!unknown.is_retryable(), "{unknown:?}");
    }
}
