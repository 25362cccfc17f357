//! OpenAI Responses API (`POST {base}/responses`), stateless (`store: false`): the whole
//! input is sent with every request, converted deterministically from the generic
//! history (prompt-cache parity).
//!
//! pith's own transport; events are parsed leniently from their `type` field, so new
//! event types are ignored rather than fatal.

use async_trait::async_trait;
use serde_json::Value;

use crate::wire::adapter::{ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::client::{base_without, parse_event, sse_constructors, Auth, SseClient};
use crate::wire::error::ProviderError;
use crate::wire::sse::SseEvent;

mod decode;
pub mod encode;

use self::decode::*;
pub use self::encode::*;

/// The Responses adapter (its client's `Debug` never shows the key).
#[derive(Debug)]
pub struct OpenAiResponses {
    client: SseClient,
    url: String,
    reasoning_model: bool,
}

impl OpenAiResponses {
    sse_constructors! {
        /// An adapter for the server at `base_url` (e.g. `https://api.openai.com/v1`).
        auth: |api_key| Auth::Bearer(api_key),
        adapter: |client, base_url| Self {
            client,
            url: format!("{}/responses", base_without(base_url, "")),
            reasoning_model: false,
        },
    }

    /// The same adapter for a reasoning model: every request asks for the reasoning
    /// items' encrypted content (`include: ["reasoning.encrypted_content"]`), which pith
    /// sends back in the next request, even without a reasoning setting.
    pub fn for_reasoning_model(mut self, reasoning_model: bool) -> Self {
        self.reasoning_model = reasoning_model;
        self
    }
}

#[async_trait]
impl ProviderAdapter for OpenAiResponses {
    fn protocol_name(&self) -> &'static str {
        "openai-responses"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let mut parser = Parser::default();
        let decode = move |event: Option<SseEvent>| match event {
            Some(event) if event.data.trim() == "[DONE]" || event.data.trim().is_empty() => {
                Ok(Decoded::more(Vec::new()))
            }
            Some(event) => {
                let value: Value = parse_event(&event.data)?;
                parser.event(&value).map(|chunks| Decoded {
                    chunks,
                    done: parser.done,
                })
            }
            None => Err(ProviderError::Stream(
                "the stream ended before response.completed".to_owned(),
            )),
        };
        let body = encode_body(request, self.reasoning_model);
        self.client.stream(&self.url, &[], body, decode).await
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
            out.extend(parser.event(&serde_json::from_str(event).unwrap())?);
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

    /// Event sequence as documented in OpenAI's Responses streaming reference (function
    /// call example), abridged to the fields pith reads.
    mod reference {
        use crate::wire::adapter::{arguments_text, ModelRequest};
        use pith_core::{Part, Role};
        use serde_json::{json, Value};

        /// The previous `Value`-tree builder, kept as the reference the typed encoder must match.
        pub fn reference_body(request: &ModelRequest) -> Value {
            let mut input = Vec::new();
            for message in request.messages.iter() {
                match message.role {
                    Role::System => input.push(json!({"type": "message", "role": "system", "content": [{"type": "input_text", "text": message.text_content()}]})),
                    Role::User => input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": message.text_content()}]})),
                    Role::Assistant => {
                        let text = message.text_content();
                        if !text.is_empty() {
                            input.push(json!({"type": "message", "role": "assistant", "content": text}));
                        }
                        for call in message.tool_calls() {
                            input.push(json!({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments_text(&call.arguments)}));
                        }
                    }
                    Role::Tool => {
                        for part in &message.parts {
                            match part {
                                Part::ToolResult(result) => {
                                    input.push(json!({"type": "function_call_output", "call_id": result.call_id, "output": result.content}))
                                }
                                Part::Text { text } => input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})),
                                _ => {}
                            }
                        }
                    }
                }
            }
            let mut body = json!({
                "model": request.model,
                "input": input,
                "stream": true,
                "store": false,
            });
            if !request.system.is_empty() {
                body["instructions"] = json!(request.system);
            }
            if !request.tools.is_empty() {
                body["tools"] = Value::Array(
                    request
                        .tools
                        .iter()
                        .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": false}))
                        .collect(),
                );
            }
            if let Some(max) = request.max_output_tokens {
                body["max_output_tokens"] = json!(max);
            }
            if let Some(temperature) = request.temperature {
                body["temperature"] = json!(temperature);
            }
            body
        }
    }

    #[test]
    fn the_session_key_routes_requests_to_one_prompt_cache() {
        crate::wire::adapter::tests::assert_the_session_key_routes_to_one_prompt_cache(
            request_body,
        );
    }

    #[test]
    fn typed_encoder_matches_the_value_tree_reference() {
        crate::wire::adapter::tests::assert_encoder_matches_reference(
            request_body,
            reference::reference_body,
        );
    }

    #[test]
    fn parses_the_documented_function_call_stream() {
        let events = [
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress"}}"#,
            r#"{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_1","status":"in_progress","role":"assistant","content":[]}}"#,
            r#"{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}"#,
            r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Checking"}"#,
            r#"{"type":"response.output_text.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Checking"}"#,
            r#"{"type":"response.output_item.added","sequence_number":6,"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"","status":"in_progress"}}"#,
            r#"{"type":"response.function_call_arguments.delta","sequence_number":7,"item_id":"fc_1","output_index":1,"delta":"{\"location\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","sequence_number":8,"item_id":"fc_1","output_index":1,"delta":"\"Paris\"}"}"#,
            r#"{"type":"response.function_call_arguments.done","sequence_number":9,"item_id":"fc_1","output_index":1,"arguments":"{\"location\":\"Paris\"}"}"#,
            r#"{"type":"response.output_item.done","sequence_number":10,"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"location\":\"Paris\"}","status":"completed"}}"#,
            r#"{"type":"response.completed","sequence_number":11,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":36,"input_tokens_details":{"cached_tokens":0},"output_tokens":87,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":123}}}"#,
        ];
        let chunks = parse(&events).unwrap();
        assert_eq!(
            chunks,
            vec![
                StreamChunk::Text("Checking".into()),
                StreamChunk::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: json!({"location": "Paris"})
                }),
                StreamChunk::Usage(Usage {
                    input_tokens: 36,
                    cached_input_tokens: 0,
                    output_tokens: 87,
                    ..Default::default()
                }),
                StreamChunk::Done {
                    stop_reason: Some("completed".into())
                },
            ]
        );
    }

    #[test]
    fn a_failed_response_is_an_error() {
        let events = [
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model."}}}"#,
        ];
        assert!(matches!(
            parse(&events),
            Err(ProviderError::ContextLengthExceeded { .. })
        ));
    }

    #[test]
    fn request_body_uses_instructions_and_typed_items() {
        let request = ModelRequest {
            model: "gpt-5".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![
                Message::user("hi"),
                Message::assistant_with_calls(
                    "",
                    vec![ToolCall {
                        id: "call_1".into(),
                        name: "ls".into(),
                        arguments: json!({}),
                    }],
                ),
                Message::tool_result("call_1", "a.rs", false),
            ]),
            tools: vec![ToolDefinition {
                name: "ls".into(),
                description: "List".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: Some(100),
            temperature: None,
            reasoning: None,
            output: None,
            cache: Default::default(),
        };
        let body = request_body(&request);
        assert_eq!(body["instructions"], json!("sys"));
        assert_eq!(body["store"], json!(false));
        assert_eq!(
            body["input"][1],
            json!({"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"})
        );
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "a.rs"})
        );
        assert_eq!(body["tools"][0]["type"], json!("function"));
        assert_eq!(body["max_output_tokens"], json!(100));
    }
}
