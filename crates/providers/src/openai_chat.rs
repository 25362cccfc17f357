//! OpenAI Chat Completions (`POST {base}/chat/completions`), for OpenAI and every
//! OpenAI-compatible server (OpenRouter, vLLM, Ollama, llama.cpp).
//!
//! Transport is async-openai's client (bring-your-own-types mode) with pith's own lenient
//! serde types, because compatible servers deviate from the documentation in practice:
//! tool-call deltas without `index`, unknown `finish_reason`s, `reasoning_content` /
//! `reasoning` fields, error objects inside a 200 stream, usage in the last choice chunk
//! or not at all. Conversion from the generic history is deterministic, so identical
//! history prefixes serialise to identical bytes (prompt-cache parity).

use async_trait::async_trait;
use futures::StreamExt;
use pith_core::{ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::adapter::{
    decode_stream, parse_arguments, ChunkStream, Decoded, ModelRequest, ProviderAdapter,
    StreamChunk,
};
use crate::error::ProviderError;
use crate::http::{map_openai_error, openai_client};

/// The Chat Completions adapter.
pub struct OpenAiChat {
    client: async_openai::Client<async_openai::config::OpenAIConfig>,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiChat").finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// An adapter for the server at `base_url` (which ends in `/v1` for OpenAI).
    pub fn new(base_url: &str, api_key: Option<&str>) -> Result<Self, ProviderError> {
        Ok(Self {
            client: openai_client(base_url, api_key)?,
        })
    }
}

/// The request body, borrowed from the request (no intermediate `serde_json::Value`
/// tree): every request carries the whole history, so this runs once per tool turn over
/// everything said so far. Serialised by async-openai's client.
pub fn wire_body(request: &ModelRequest) -> wire::Body<'_> {
    wire::body(request)
}

/// The request body as a JSON value (tests and the prompt-cache parity checks).
pub fn request_body(request: &ModelRequest) -> Value {
    serde_json::to_value(wire::body(request)).unwrap_or(Value::Null)
}

/// The borrowed wire types of a Chat Completions request and the conversion that fills
/// them: the system prompt first; user and system messages as text; assistant messages
/// with their tool calls (content `""`, never null: llama-cpp-python rejects null); each
/// tool result as its own `tool` message, any text of a tool message as a user message.
pub mod wire {
    use std::borrow::Cow;

    use pith_core::{Message, Part, Role};
    use serde::Serialize;
    use serde_json::Value;

    use crate::adapter::{arguments_text, text_of, ModelRequest};

    /// The request body.
    #[derive(Debug, Serialize)]
    pub struct Body<'a> {
        model: &'a str,
        messages: Vec<WireMessage<'a>>,
        stream: bool,
        stream_options: StreamOptions,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<WireTool<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<f64>,
    }

    #[derive(Debug, Serialize)]
    struct StreamOptions {
        include_usage: bool,
    }

    #[derive(Debug, Serialize)]
    #[serde(tag = "role", rename_all = "lowercase")]
    enum WireMessage<'a> {
        System {
            content: Cow<'a, str>,
        },
        User {
            content: Cow<'a, str>,
        },
        Assistant {
            content: Cow<'a, str>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            tool_calls: Vec<WireCall<'a>>,
        },
        Tool {
            tool_call_id: &'a str,
            content: &'a str,
        },
    }

    #[derive(Debug, Serialize)]
    struct WireCall<'a> {
        id: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        function: WireFunctionCall<'a>,
    }

    #[derive(Debug, Serialize)]
    struct WireFunctionCall<'a> {
        name: &'a str,
        arguments: String,
    }

    #[derive(Debug, Serialize)]
    struct WireTool<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        function: WireFunction<'a>,
    }

    #[derive(Debug, Serialize)]
    struct WireFunction<'a> {
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
    }

    pub(super) fn body(request: &ModelRequest) -> Body<'_> {
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if !request.system.is_empty() {
            messages.push(WireMessage::System {
                content: Cow::Borrowed(&request.system),
            });
        }
        for message in request.messages.iter() {
            push_message(&mut messages, message);
        }
        Body {
            model: &request.model,
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    function: WireFunction {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                    },
                })
                .collect(),
            max_tokens: request.max_output_tokens,
            temperature: request.temperature.map(f64::from),
        }
    }

    fn push_message<'a>(out: &mut Vec<WireMessage<'a>>, message: &'a Message) {
        match message.role {
            Role::System => out.push(WireMessage::System {
                content: text_of(message),
            }),
            Role::User => out.push(WireMessage::User {
                content: text_of(message),
            }),
            Role::Assistant => out.push(WireMessage::Assistant {
                content: text_of(message),
                tool_calls: message
                    .tool_calls()
                    .map(|c| WireCall {
                        id: &c.id,
                        kind: "function",
                        function: WireFunctionCall {
                            name: &c.name,
                            arguments: arguments_text(&c.arguments),
                        },
                    })
                    .collect(),
            }),
            Role::Tool => {
                for part in &message.parts {
                    match part {
                        Part::ToolResult(result) => out.push(WireMessage::Tool {
                            tool_call_id: &result.call_id,
                            content: &result.content,
                        }),
                        Part::Text { text } => out.push(WireMessage::User {
                            content: Cow::Borrowed(text),
                        }),
                        Part::ToolCall(_) => {}
                    }
                }
            }
        }
    }
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize, Serialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
struct ErrorObject {
    #[serde(default)]
    message: String,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

/// Reassembles streamed tool calls (by `index`, falling back to `id`, then to the last
/// call) and tracks the end of the response.
#[derive(Debug, Default)]
struct Assembler {
    calls: Vec<(Option<usize>, String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    generated_ids: usize,
}

impl Assembler {
    fn tool_delta(&mut self, delta: ToolCallDelta) {
        let slot = match (delta.index, &delta.id) {
            (Some(index), _) => self.calls.iter().position(|c| c.0 == Some(index)),
            (None, Some(id)) => self.calls.iter().position(|c| &c.1 == id),
            (None, None) => self.calls.len().checked_sub(1),
        };
        let slot = match slot {
            Some(slot) => slot,
            None => {
                self.calls
                    .push((delta.index, String::new(), String::new(), String::new()));
                self.calls.len() - 1
            }
        };
        let entry = &mut self.calls[slot];
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            entry.1 = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                // Most servers send the name once; llama-cpp-python repeats the whole
                // name in every delta. Append only what is genuinely new.
                if entry.2.is_empty() || (name != entry.2 && !entry.2.ends_with(&name)) {
                    entry.2.push_str(&name);
                }
            }
            if let Some(arguments) = function.arguments {
                entry.3.push_str(&arguments);
            }
        }
    }

    fn finish(&mut self) -> Vec<StreamChunk> {
        let mut out = Vec::new();
        for (_, id, name, arguments) in std::mem::take(&mut self.calls) {
            let id = if id.is_empty() {
                self.generated_ids += 1;
                format!("call_pith_{}", self.generated_ids)
            } else {
                id
            };
            out.push(StreamChunk::ToolCall(ToolCall {
                id,
                name,
                arguments: parse_arguments(&arguments),
            }));
        }
        if let Some(usage) = self.usage {
            out.push(StreamChunk::Usage(usage));
        }
        out.push(StreamChunk::Done {
            stop_reason: self.finish_reason.clone(),
        });
        out
    }
}

fn usage_of(usage: ChunkUsage) -> Usage {
    Usage {
        input_tokens: usage.prompt_tokens,
        cached_input_tokens: usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        output_tokens: usage.completion_tokens,
    }
}

/// Turns one parsed chunk into stream chunks (text and reasoning deltas immediately; tool
/// calls and usage are held until the end).
fn absorb(chunk: Chunk, assembler: &mut Assembler) -> Result<Vec<StreamChunk>, ProviderError> {
    if let Some(error) = chunk.error {
        let code = error.code.as_ref().map(|c| {
            c.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| c.to_string())
        });
        return Err(ProviderError::from_stream_error(
            error.kind.as_deref(),
            code.as_deref(),
            &error.message,
        ));
    }
    let mut out = Vec::new();
    if let Some(usage) = chunk.usage {
        assembler.usage = Some(usage_of(usage));
    }
    for choice in chunk.choices {
        if let Some(usage) = choice.usage {
            assembler.usage = Some(usage_of(usage));
        }
        if let Some(delta) = choice.delta.or(choice.message) {
            if let Some(reasoning) = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|r| !r.is_empty())
            {
                out.push(StreamChunk::Reasoning(reasoning));
            }
            if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
                out.push(StreamChunk::Text(content));
            }
            for call in delta.tool_calls.unwrap_or_default() {
                assembler.tool_delta(call);
            }
        }
        if let Some(reason) = choice.finish_reason {
            assembler.finish_reason = Some(reason);
        }
    }
    Ok(out)
}

#[async_trait]
impl ProviderAdapter for OpenAiChat {
    fn protocol_name(&self) -> &'static str {
        "openai-chat"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let body = wire_body(request);
        let upstream = self
            .client
            .chat()
            .create_stream_byot::<wire::Body<'_>, Chunk>(body)
            .await
            .map_err(map_openai_error)?;
        let upstream = upstream.map(|chunk| chunk.map_err(map_openai_error));
        let mut assembler = Assembler::default();
        Ok(decode_stream(upstream, move |chunk| match chunk {
            Some(chunk) => absorb(chunk, &mut assembler).map(|chunks| Decoded {
                chunks,
                done: false,
            }),
            // OpenAI-compatible streams end with `[DONE]`, which async-openai consumes: the
            // end of the upstream is the end of the response, unless nothing said so.
            None if assembler.finish_reason.is_none()
                && assembler.calls.is_empty()
                && assembler.usage.is_none() =>
            {
                Err(ProviderError::Stream(
                    "the stream ended without a finish reason".to_owned(),
                ))
            }
            None => Ok(Decoded {
                chunks: assembler.finish(),
                done: true,
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{Message, ToolDefinition};
    use serde_json::json;

    fn parse_all(lines: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut assembler = Assembler::default();
        let mut out = Vec::new();
        for line in lines {
            let chunk: Chunk = serde_json::from_str(line).unwrap();
            out.extend(absorb(chunk, &mut assembler)?);
        }
        out.extend(assembler.finish());
        Ok(out)
    }

    mod reference {
        use crate::adapter::{arguments_text, ModelRequest};
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
                            Part::ToolCall(_) => {}
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn typed_encoder_matches_the_value_tree_reference() {
        crate::adapter::tests::assert_encoder_matches_reference(
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
                    output_tokens: 17
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
        assert_eq!(chunks[1], StreamChunk::Text("Hello".into()));
        assert_eq!(chunks[2], StreamChunk::Text(" there".into()));
        assert_eq!(
            chunks[3],
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
