//! Anthropic Messages API (`POST {base}/v1/messages`) over pith's transport + SSE.
//!
//! There is no official Anthropic Rust SDK; like other mature Rust agents pith uses its
//! own serde types and eventsource-stream. Conversion is deterministic (prompt-cache
//! parity) and marks up to three cache breakpoints — the system prompt, the tool
//! definitions and the last message — so the conversation prefix is cached incrementally.
//! Consecutive messages of the same role are merged (the API expects alternation), and
//! tool results travel as `tool_result` blocks of a user message, before any text.

use async_trait::async_trait;

use crate::wire::adapter::{ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::client::{base_without, sse_constructors, Auth, SseClient};
use crate::wire::error::ProviderError;

mod decode;
pub mod encode;

use self::decode::*;
pub use self::encode::*;

/// The API version header pith speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The Anthropic Messages adapter.
#[derive(Debug, Clone)]
pub struct Anthropic {
    client: SseClient,
    url: String,
}

impl Anthropic {
    sse_constructors! {
        /// An adapter for `base_url` (e.g. `https://api.anthropic.com`; a trailing `/v1` is
        /// accepted too) with the default HTTP options.
        auth: |api_key| Auth::Header("x-api-key", api_key),
        adapter: |client, base_url| Self {
            client,
            url: format!("{}/v1/messages", base_without(base_url, "/v1")),
        },
    }
}

#[async_trait]
impl ProviderAdapter for Anthropic {
    fn protocol_name(&self) -> &'static str {
        "anthropic"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let headers = [("anthropic-version", ANTHROPIC_VERSION)];
        let mut parser = Parser::default();
        let decode = move |event: Option<crate::wire::sse::SseEvent>| match event {
            Some(event) => parser.event(&event.data).map(|chunks| Decoded {
                chunks,
                done: parser.done,
            }),
            None => Err(ProviderError::Stream(
                "the stream ended before message_stop".to_owned(),
            )),
        };
        let stream = self
            .client
            .stream(&self.url, &headers, encode_body(request), decode)
            .await?;
        Ok(match request.output.as_ref().filter(|o| o.force) {
            Some(output) => crate::wire::structured::forced_call_as_text(stream, output),
            None => stream,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::adapter::StreamChunk;
    use pith_core::{Message, ToolDefinition};
    use pith_core::{ToolCall, Usage};
    use serde_json::json;

    fn parse_with_progress(events: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(parser.event(event)?);
        }
        Ok(out)
    }

    /// The chunks without the [`StreamChunk::ArgumentBytes`] progress reports.
    fn parse(events: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        Ok(parse_with_progress(events)?
            .into_iter()
            .filter(|c| !matches!(c, StreamChunk::ArgumentBytes { .. }))
            .collect())
    }

    #[test]
    fn breakpoints_mark_the_system_the_tools_the_stable_prefix_and_the_last_message() {
        let request = |anchor| crate::wire::adapter::ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![
                Message::user("<compacted_context>summary</compacted_context>"),
                Message::assistant("looking"),
                Message::user("more"),
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
            cache: crate::wire::adapter::CacheHints {
                anchor,
                key: None,
                no_message_breakpoints: false,
            },
        };
        let marks = |body: &serde_json::Value| body.to_string().matches("cache_control").count();
        let plain = request_body(&request(None));
        assert_eq!(marks(&plain), 3, "{plain}");
        let anchored = request_body(&request(Some(1)));
        assert_eq!(marks(&anchored), 4, "{anchored}");
        assert_eq!(
            anchored["messages"][0]["content"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert!(anchored["messages"][1]["content"][0]
            .get("cache_control")
            .is_none());
        // An anchor at the last message adds nothing: it is marked already.
        assert_eq!(marks(&request_body(&request(Some(3)))), 3);
    }

    #[test]
    fn argument_progress_adds_up_to_the_arguments_of_each_call() {
        let events = [
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"Paris\"}"}}"#,
        ];
        let reported: usize = parse_with_progress(&events)
            .unwrap()
            .iter()
            .map(|c| match c {
                StreamChunk::ArgumentBytes { call: 1, bytes } => *bytes,
                _ => 0,
            })
            .sum();
        assert_eq!(reported, r#"{"location": "Paris"}"#.len());
    }

    /// The tool-use streaming example from Anthropic's Messages streaming documentation.
    #[test]
    fn parses_the_documented_tool_use_stream() {
        let events = [
            r#"{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-opus-4-6","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", let's check the weather."}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San Francisco, CA\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let chunks = parse(&events).unwrap();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::Text("Okay".into()),
                StreamChunk::Text(", let's check the weather.".into()),
                StreamChunk::ToolCall(ToolCall {
                    id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "San Francisco, CA"}),
                }),
                StreamChunk::Usage(Usage {
                    input_tokens: 472,
                    cached_input_tokens: 0,
                    output_tokens: 89,
                    ..Default::default()
                }),
                StreamChunk::Done {
                    stop_reason: Some("tool_use".into())
                },
            ]
        );
    }

    #[test]
    fn cache_reads_and_writes_count_as_input() {
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":1000,"cache_creation_input_tokens":50,"output_tokens":1}}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let chunks = parse(&events).unwrap();
        assert_eq!(
            chunks[0],
            StreamChunk::Usage(Usage {
                input_tokens: 1060,
                cached_input_tokens: 1000,
                cache_write_tokens: 50,
                output_tokens: 5,
                ..Default::default()
            })
        );
    }

    #[test]
    fn an_error_event_inside_the_stream_is_classified() {
        let events =
            [r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#];
        let err = parse(&events).unwrap_err();
        assert!(
            matches!(err, ProviderError::Overloaded { status: 529, .. }),
            "{err:?}"
        );
        assert!(err.is_retryable());
    }

    mod reference {
        use super::super::DEFAULT_MAX_TOKENS;
        use crate::wire::adapter::ModelRequest;
        use pith_core::{Message, Part, Role};
        use serde_json::{json, Value};

        /// The previous `Value`-tree builder, kept as the reference the typed encoder must match.
        pub fn reference_body(request: &ModelRequest) -> Value {
            let mut system_text = request.system.clone();
            let mut messages: Vec<Value> = Vec::new();
            for message in request.messages.iter() {
                let (role, blocks) = match message.role {
                    Role::System => {
                        if !system_text.is_empty() {
                            system_text.push_str("\n\n");
                        }
                        system_text.push_str(&message.text_content());
                        continue;
                    }
                    Role::User => ("user", user_blocks(message)),
                    Role::Tool => ("user", user_blocks(message)),
                    Role::Assistant => ("assistant", assistant_blocks(message)),
                };
                if blocks.is_empty() {
                    continue;
                }
                match messages.last_mut() {
                    Some(last) if last["role"] == role => {
                        if let Some(content) = last["content"].as_array_mut() {
                            content.extend(blocks);
                        }
                    }
                    _ => messages.push(json!({"role": role, "content": blocks})),
                }
            }
            if messages.first().is_some_and(|m| m["role"] != "user") {
                messages.insert(0, json!({"role": "user", "content": [{"type": "text", "text": "(conversation continues)"}]}));
            }
            // Cache breakpoint on the last block of the last message.
            if let Some(block) = messages
                .last_mut()
                .and_then(|m| m["content"].as_array_mut())
                .and_then(|blocks| blocks.last_mut())
            {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            let mut body = json!({
                "model": request.model,
                "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
                "messages": messages,
                "stream": true,
            });
            if !system_text.is_empty() {
                body["system"] = json!([{"type": "text", "text": system_text, "cache_control": {"type": "ephemeral"}}]);
            }
            if !request.tools.is_empty() {
                let count = request.tools.len();
                body["tools"] = Value::Array(
                    request
                        .tools
                        .iter()
                        .enumerate()
                        .map(|(i, t)| {
                            let mut tool = json!({"name": t.name, "description": t.description, "input_schema": t.parameters});
                            if i + 1 == count {
                                tool["cache_control"] = json!({"type": "ephemeral"});
                            }
                            tool
                        })
                        .collect(),
                );
            }
            if let Some(temperature) = request.temperature {
                body["temperature"] = json!(temperature);
            }
            body
        }

        fn user_blocks(message: &Message) -> Vec<Value> {
            let mut results = Vec::new();
            let mut texts = Vec::new();
            for part in &message.parts {
                match part {
                    Part::Text { text } if !text.is_empty() => texts.push(json!({"type": "text", "text": text})),
                    Part::ToolResult(result) => results.push(json!({
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": if result.content.is_empty() { "(no output)" } else { result.content.as_str() },
                        "is_error": result.is_error,
                    })),
                    _ => {}
                }
            }
            results.extend(texts);
            results
        }

        fn assistant_blocks(message: &Message) -> Vec<Value> {
            let mut blocks = Vec::new();
            for part in &message.parts {
                match part {
                    Part::Text { text } if !text.is_empty() => {
                        blocks.push(json!({"type": "text", "text": text}))
                    }
                    Part::ToolCall(call) => {
                        let input = match &call.arguments {
                            Value::Object(_) => call.arguments.clone(),
                            other => json!({"raw_arguments": other}),
                        };
                        blocks.push(
                            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                        );
                    }
                    _ => {}
                }
            }
            blocks
        }
    }

    #[test]
    fn typed_encoder_matches_the_value_tree_reference() {
        crate::wire::adapter::tests::assert_encoder_matches_reference(
            request_body,
            reference::reference_body,
        );
    }

    #[test]
    fn request_body_merges_roles_and_puts_tool_results_first() {
        let request = ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![
                Message::user("read it"),
                Message::assistant_with_calls(
                    "ok",
                    vec![ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a"}),
                    }],
                ),
                Message::tool_result("t1", "content", false),
                Message::user("and summarise"),
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
        assert_eq!(body["max_tokens"], json!(DEFAULT_MAX_TOKENS));
        assert_eq!(body["system"][0]["text"], json!("sys"));
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"][1]["type"], json!("tool_use"));
        assert_eq!(messages[2]["content"][0]["type"], json!("tool_result"));
        assert_eq!(messages[2]["content"][1]["text"], json!("and summarise"));
        assert_eq!(
            messages[2]["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    }
}
