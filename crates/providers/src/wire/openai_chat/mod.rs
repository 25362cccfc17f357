//! OpenAI Chat Completions (`POST {base}/chat/completions`), for OpenAI and every
//! OpenAI-compatible server (OpenRouter, vLLM, Ollama, llama.cpp).
//!
//! pith's own transport and lenient serde types, because compatible servers deviate from
//! the documentation in practice:
//! tool-call deltas without `index`, unknown `finish_reason`s, `reasoning_content` /
//! `reasoning` fields, error objects inside a 200 stream, usage in the last choice chunk
//! or not at all. Conversion from the generic history is deterministic, so identical
//! history prefixes serialise to identical bytes (prompt-cache parity).

use async_trait::async_trait;

use crate::wire::adapter::{ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::client::{base_without, parse_event, sse_constructors, Auth, SseClient};
use crate::wire::error::ProviderError;
use crate::wire::sse::SseEvent;

mod decode;
pub mod encode;

use self::decode::*;
pub use self::encode::*;

/// The Chat Completions adapter.
pub struct OpenAiChat {
    client: SseClient,
    url: String,
    options: ChatOptions,
}

/// What differs between Chat Completions servers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatOptions {
    /// The request field that carries the output cap.
    pub max_tokens_field: MaxTokensField,
    /// Headers sent with every request besides the key (OpenRouter's attribution
    /// headers `HTTP-Referer` and `X-Title`).
    pub headers: Vec<(String, String)>,
    /// The penalties against repetition sent with every request (local models).
    pub penalties: Penalties,
}

/// Not derived: the configured headers may carry credentials.
impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat").finish_non_exhaustive()
    }
}

impl OpenAiChat {
    sse_constructors! {
        /// An adapter for the server at `base_url` (which ends in `/v1` for OpenAI).
        auth: |api_key| Auth::Bearer(api_key),
        adapter: |client, base_url| Self {
            client,
            url: format!("{}/chat/completions", base_without(base_url, "")),
            options: ChatOptions::default(),
        },
    }

    /// The same adapter with server-specific options.
    pub fn with_chat_options(mut self, options: ChatOptions) -> Self {
        self.options = options;
        self
    }
}

#[async_trait]
impl ProviderAdapter for OpenAiChat {
    fn protocol_name(&self) -> &'static str {
        "openai-chat"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let headers: Vec<(&str, &str)> = self
            .options
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let body = encode_body_with_penalties(
            request,
            self.options.max_tokens_field,
            self.options.penalties,
        );
        let mut assembler = Assembler::default();
        let decode = move |event: Option<SseEvent>| {
            match event {
                // `[DONE]` ends the answer; keep-alive events carry nothing.
                Some(event) if event.data.trim() == "[DONE]" => {
                    Ok(Decoded::last(assembler.finish()))
                }
                Some(event) if event.event == "keepalive" || event.data.trim().is_empty() => {
                    Ok(Decoded::more(Vec::new()))
                }
                Some(event) => {
                    let chunk: Chunk = parse_event(&event.data)?;
                    absorb(chunk, &mut assembler).map(Decoded::more)
                }
                // A stream that ends without `[DONE]` is complete only if something said so.
                None if assembler.finish_reason.is_none()
                    && assembler.calls.is_empty()
                    && assembler.usage.is_none() =>
                {
                    Err(ProviderError::Stream(
                        "the stream ended without a finish reason".to_owned(),
                    ))
                }
                None => Ok(Decoded::last(assembler.finish())),
            }
        };
        self.client.stream(&self.url, &headers, body, decode).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::adapter::StreamChunk;
    use pith_core::{Message, ToolDefinition};
    use pith_core::{ToolCall, Usage};
    use serde_json::json;

    fn parse_all_with_progress(lines: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut assembler = Assembler::default();
        let mut out = Vec::new();
        for line in lines {
            let chunk: Chunk = serde_json::from_str(line).unwrap();
            out.extend(absorb(chunk, &mut assembler)?);
        }
        out.extend(assembler.finish());
        Ok(out)
    }

    /// The chunks without the [`StreamChunk::ArgumentBytes`] progress reports.
    fn parse_all(lines: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        Ok(parse_all_with_progress(lines)?
            .into_iter()
            .filter(|c| !matches!(c, StreamChunk::ArgumentBytes { .. }))
            .collect())
    }

    mod reference {
        use crate::wire::adapter::{arguments_text, ModelRequest};
        use pith_core::{Message, Part, Role};
        use serde_json::{json, Value};

        /// The previous `Value`-tree builder, kept as the reference the typed encoder must match.
        pub fn reference_body(request: &ModelRequest) -> Value {
            let mut messages = Vec::with_capacity(request.messages.len() + 1);
            if !request.system.is_empty() {
                messages.push(json!({"role": "system", "content": request.system}));
            }
            for message in request.messages.iter() {
                push_message(&mut messages, message);
            }
            let mut body = json!({
                "model": request.model,
                "messages": messages,
                "stream": true,
                "stream_options": {"include_usage": true},
            });
            if !request.tools.is_empty() {
                body["tools"] = Value::Array(
                    request
                        .tools
                        .iter()
                        .map(|t| {
                            json!({"type": "function", "function": {
                                "name": t.name, "description": t.description, "parameters": t.parameters
                            }})
                        })
                        .collect(),
                );
            }
            if let Some(max) = request.max_output_tokens {
                body["max_tokens"] = json!(max);
            }
            if let Some(temperature) = request.temperature {
                body["temperature"] = json!(temperature);
            }
            body
        }

        fn push_message(out: &mut Vec<Value>, message: &Message) {
            match message.role {
                Role::System => {
                    out.push(json!({"role": "system", "content": message.text_content()}))
                }
                Role::User => out.push(json!({"role": "user", "content": message.text_content()})),
                Role::Assistant => {
                    let calls: Vec<Value> = message
                        .tool_calls()
                        .map(|c| {
                            json!({"id": c.id, "type": "function", "function": {
                                "name": c.name, "arguments": arguments_text(&c.arguments)
                            }})
                        })
                        .collect();
                    let text = message.text_content();
                    let mut value = json!({"role": "assistant", "content": text});
                    if !calls.is_empty() {
                        value["tool_calls"] = Value::Array(calls);
                    }
                    out.push(value);
                }
                Role::Tool => {
                    for part in &message.parts {
                        match part {
                            Part::ToolResult(result) => out.push(json!({
                                "role": "tool", "tool_call_id": result.call_id, "content": result.content
                            })),
                            Part::Text { text } => out.push(json!({"role": "user", "content": text})),
                            _ => {}
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_session_key_routes_requests_to_one_prompt_cache() {
        crate::wire::adapter::tests::assert_the_session_key_routes_to_one_prompt_cache(
            request_body,
        );
    }

    #[test]
    fn penalties_are_sent_only_when_set() {
        let request = crate::wire::adapter::ModelRequest {
            model: "smollm2".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![pith_core::Message::user("hi")]),
            tools: Vec::new(),
            max_output_tokens: Some(256),
            temperature: Some(0.0),
            reasoning: None,
            output: None,
            cache: Default::default(),
        };
        let encode = |penalties| -> serde_json::Value {
            serde_json::from_slice(&encode_body_with_penalties(
                &request,
                MaxTokensField::MaxTokens,
                penalties,
            ))
            .unwrap()
        };
        let with = encode(Penalties {
            repeat: Some(1.5),
            frequency: Some(0.5),
        });
        assert_eq!(with["repeat_penalty"], json!(1.5));
        assert_eq!(with["frequency_penalty"], json!(0.5));
        let without = encode(Penalties::default());
        assert!(without.get("repeat_penalty").is_none());
        assert!(without.get("frequency_penalty").is_none());
        let plain: serde_json::Value =
            serde_json::from_slice(&encode_body(&request, MaxTokensField::MaxTokens)).unwrap();
        assert_eq!(without, plain);
    }

    #[test]
    fn typed_encoder_matches_the_value_tree_reference() {
        crate::wire::adapter::tests::assert_encoder_matches_reference(
            request_body,
            reference::reference_body,
        );
    }

    #[test]
    fn request_body_has_the_documented_shape() {
        let request = ModelRequest {
            model: "gpt-4o".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![
                Message::user("hi"),
                Message::assistant_with_calls(
                    "",
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    }],
                ),
                Message::tool_result("c1", "text", false),
            ]),
            tools: vec![ToolDefinition {
                name: "read".into(),
                description: "Read".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: None,
            temperature: None,
            reasoning: None,
            output: None,
            cache: Default::default(),
        };
        let body = request_body(&request);
        assert_eq!(body["stream"], json!(true));
        assert_eq!(body["stream_options"]["include_usage"], json!(true));
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        // An empty string, not null: llama-cpp-python rejects `content: null` (HTTP 500,
        // validation error), and every OpenAI-compatible server accepts "".
        assert_eq!(body["messages"][2]["content"], json!(""));
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            json!(r#"{"path":"a"}"#)
        );
        assert_eq!(
            body["messages"][3],
            json!({"role": "tool", "tool_call_id": "c1", "content": "text"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], json!("read"));
    }

    /// The streaming example from OpenAI's Chat Completions documentation (function
    /// calling, streamed), plus the usage chunk sent with `include_usage`.
    #[test]
    fn parses_the_documented_tool_call_stream() {
        let lines = [
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"location\":"}}]},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}"#,
            r#"{"id":"chatcmpl-123","object":"chat.completion.chunk","created":1694268190,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99,"prompt_tokens_details":{"cached_tokens":64}}}"#,
        ];
        let chunks = parse_all(&lines).unwrap();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::ToolCall(ToolCall {
                    id: "call_abc".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris"})
                }),
                StreamChunk::Usage(Usage {
                    input_tokens: 82,
                    cached_input_tokens: 64,
                    output_tokens: 17,
                    ..Default::default()
                }),
                StreamChunk::Done {
                    stop_reason: Some("tool_calls".into())
                },
            ]
        );
    }

    #[test]
    fn text_deltas_and_reasoning_pass_through() {
        let lines = [
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"thinking"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hello"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}"#,
        ];
        let chunks = parse_all(&lines).unwrap();
        assert_eq!(chunks[0], StreamChunk::Reasoning("thinking".into()));
        // The reasoning is kept whole, for the transcript, once the answer begins.
        assert_eq!(
            chunks[1],
            StreamChunk::ReasoningPart(pith_core::Reasoning {
                origin: "openai-chat".into(),
                text: "thinking".into(),
                ..pith_core::Reasoning::default()
            })
        );
        assert_eq!(chunks[2], StreamChunk::Text("Hello".into()));
        assert_eq!(chunks[3], StreamChunk::Text(" there".into()));
        assert_eq!(
            chunks[4],
            StreamChunk::Done {
                stop_reason: Some("stop".into())
            }
        );
    }

    #[test]
    fn tool_call_deltas_without_index_are_assembled_by_id_then_order() {
        let lines = [
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"read","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"th\":\"x\"}"}}]},"finish_reason":"tool_calls"}]}"#,
        ];
        let chunks = parse_all(&lines).unwrap();
        assert_eq!(
            chunks[0],
            StreamChunk::ToolCall(ToolCall {
                id: "a".into(),
                name: "ls".into(),
                arguments: json!({})
            })
        );
        assert_eq!(
            chunks[1],
            StreamChunk::ToolCall(ToolCall {
                id: "b".into(),
                name: "read".into(),
                arguments: json!({"path": "x"})
            })
        );
    }

    /// Recorded from llama-cpp-python 0.3.36 (`tool_choice` forcing a function): every
    /// delta repeats the call id and the whole function name, plus a legacy
    /// `function_call` field, and no usage chunk comes despite `include_usage`.
    #[test]
    fn llama_cpp_python_tool_call_stream_is_assembled_once() {
        let lines = [
            r#"{"id": "chatcmpl-cb65", "object": "chat.completion.chunk", "created": 1795962682, "model": "smollm2", "choices": [{"index": 0, "finish_reason": null, "logprobs": null, "delta": {"role": "assistant", "content": null, "function_call": null, "tool_calls": null}}]}"#,
            r#"{"id": "chatcmpl-cb65", "object": "chat.completion.chunk", "created": 1795962682, "model": "smollm2", "choices": [{"index": 0, "finish_reason": null, "logprobs": null, "delta": {"role": null, "content": null, "function_call": {"name": "read", "arguments": "{"}, "tool_calls": [{"index": 0, "id": "call__0_read_cmpl-cb65", "type": "function", "function": {"name": "read", "arguments": "{"}}]}}]}"#,
            r#"{"id": "chatcmpl-cb65", "object": "chat.completion.chunk", "created": 1795962682, "model": "smollm2", "choices": [{"index": 0, "finish_reason": null, "logprobs": null, "delta": {"role": null, "content": null, "function_call": {"name": "read", "arguments": " \"path\": \"a.txt\""}, "tool_calls": [{"index": 0, "id": "call__0_read_cmpl-cb65", "type": "function", "function": {"name": "read", "arguments": " \"path\": \"a.txt\""}}]}}]}"#,
            r#"{"id": "chatcmpl-cb65", "object": "chat.completion.chunk", "created": 1795962682, "model": "smollm2", "choices": [{"index": 0, "finish_reason": null, "logprobs": null, "delta": {"role": null, "content": null, "function_call": {"name": "read", "arguments": " }"}, "tool_calls": [{"index": 0, "id": "call__0_read_cmpl-cb65", "type": "function", "function": {"name": "read", "arguments": " }"}}]}}]}"#,
            r#"{"id": "chatcmpl-cb65", "object": "chat.completion.chunk", "created": 1795962682, "model": "smollm2", "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "delta": {"role": null, "content": null, "function_call": null, "tool_calls": null}}]}"#,
        ];
        let chunks = parse_all(&lines).unwrap();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::ToolCall(ToolCall {
                    id: "call__0_read_cmpl-cb65".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.txt"})
                }),
                StreamChunk::Done {
                    stop_reason: Some("tool_calls".into())
                },
            ],
            "no usage chunk: the loop falls back to its local estimate"
        );
    }

    #[test]
    fn a_name_split_across_deltas_is_joined() {
        let lines = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"gr","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"ep","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        ];
        assert_eq!(
            parse_all(&lines).unwrap()[0],
            StreamChunk::ToolCall(ToolCall {
                id: "a".into(),
                name: "grep".into(),
                arguments: json!({})
            })
        );
    }

    #[test]
    fn an_error_object_inside_a_stream_is_an_error() {
        let lines = [
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
        ];
        assert!(matches!(
            parse_all(&lines),
            Err(ProviderError::ContextLengthExceeded { .. })
        ));
    }

    #[test]
    fn unknown_finish_reasons_and_extra_fields_are_tolerated() {
        let lines = [
            r#"{"choices":[{"delta":{"content":"x","extra":1},"finish_reason":"eos_token","weird":true}],"system_fingerprint":"y"}"#,
        ];
        let chunks = parse_all(&lines).unwrap();
        assert_eq!(
            chunks.last(),
            Some(&StreamChunk::Done {
                stop_reason: Some("eos_token".into())
            })
        );
    }
}
