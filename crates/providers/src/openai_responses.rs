//! OpenAI Responses API (`POST {base}/responses`), stateless (`store: false`): the whole
//! input is sent with every request, converted deterministically from the generic
//! history (prompt-cache parity).
//!
//! Transport is async-openai's client in bring-your-own-types mode; events are parsed
//! leniently from their `type` field, so new event types are ignored rather than fatal.

use async_trait::async_trait;
use futures::StreamExt;
use pith_core::{ToolCall, Usage};
use serde_json::Value;

use crate::adapter::{
    decode_stream, parse_arguments, ChunkStream, Decoded, ModelRequest, ProviderAdapter,
    StreamChunk,
};
use crate::error::ProviderError;
use crate::http::{map_openai_error, openai_client};

/// The Responses adapter.
pub struct OpenAiResponses {
    client: async_openai::Client<async_openai::config::OpenAIConfig>,
}

impl std::fmt::Debug for OpenAiResponses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiResponses").finish_non_exhaustive()
    }
}

impl OpenAiResponses {
    /// An adapter for the server at `base_url` (e.g. `https://api.openai.com/v1`).
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

/// The borrowed wire types of a Responses request and the conversion that fills them:
/// the system prompt as `instructions`; user and system messages as `input_text`
/// messages; assistant text (when not empty) as an `output_text` message followed by one
/// `function_call` item per call; each tool result as a `function_call_output` item, any
/// text of a tool message as a user message. `store: false`: pith sends the whole history.
pub mod wire {
    use std::borrow::Cow;

    use pith_core::{Part, Role};
    use serde::Serialize;
    use serde_json::Value;

    use crate::adapter::{arguments_text, text_of, ModelRequest};

    /// The request body.
    #[derive(Debug, Serialize)]
    pub struct Body<'a> {
        model: &'a str,
        input: Vec<Item<'a>>,
        stream: bool,
        store: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        instructions: Option<&'a str>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tools: Vec<WireTool<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max_output_tokens: Option<u32>,
        #[serde(skip_serializing_if = "Option::is_none")]
        temperature: Option<f64>,
    }

    #[derive(Debug, Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Item<'a> {
        Message {
            role: &'static str,
            content: [Content<'a>; 1],
        },
        FunctionCall {
            call_id: &'a str,
            name: &'a str,
            arguments: String,
        },
        FunctionCallOutput {
            call_id: &'a str,
            output: &'a str,
        },
    }

    #[derive(Debug, Serialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    enum Content<'a> {
        InputText { text: Cow<'a, str> },
        OutputText { text: Cow<'a, str> },
    }

    #[derive(Debug, Serialize)]
    struct WireTool<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        description: &'a str,
        parameters: &'a Value,
        strict: bool,
    }

    fn input_message<'a>(role: &'static str, text: Cow<'a, str>) -> Item<'a> {
        Item::Message {
            role,
            content: [Content::InputText { text }],
        }
    }

    pub(super) fn body(request: &ModelRequest) -> Body<'_> {
        let mut input = Vec::with_capacity(request.messages.len());
        for message in request.messages.iter() {
            match message.role {
                Role::System => input.push(input_message("system", text_of(message))),
                Role::User => input.push(input_message("user", text_of(message))),
                Role::Assistant => {
                    let text = text_of(message);
                    if !text.is_empty() {
                        input.push(Item::Message {
                            role: "assistant",
                            content: [Content::OutputText { text }],
                        });
                    }
                    for call in message.tool_calls() {
                        input.push(Item::FunctionCall {
                            call_id: &call.id,
                            name: &call.name,
                            arguments: arguments_text(&call.arguments),
                        });
                    }
                }
                Role::Tool => {
                    for part in &message.parts {
                        match part {
                            Part::ToolResult(result) => input.push(Item::FunctionCallOutput {
                                call_id: &result.call_id,
                                output: &result.content,
                            }),
                            Part::Text { text } => {
                                input.push(input_message("user", Cow::Borrowed(text)))
                            }
                            Part::ToolCall(_) => {}
                        }
                    }
                }
            }
        }
        Body {
            model: &request.model,
            input,
            stream: true,
            store: false,
            instructions: (!request.system.is_empty()).then_some(request.system.as_str()),
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    name: &t.name,
                    description: &t.description,
                    parameters: &t.parameters,
                    strict: false,
                })
                .collect(),
            max_output_tokens: request.max_output_tokens,
            temperature: request.temperature.map(f64::from),
        }
    }
}

/// Per-response parsing state.
#[derive(Debug, Default)]
struct Parser {
    /// Function calls in progress, keyed by item id: (item id, call id, name, arguments).
    calls: Vec<(String, String, String, String)>,
    done: bool,
}

impl Parser {
    fn event(&mut self, event: &Value) -> Result<Vec<StreamChunk>, ProviderError> {
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
                    self.calls.push((
                        item["id"].as_str().unwrap_or_default().to_owned(),
                        item["call_id"].as_str().unwrap_or_default().to_owned(),
                        item["name"].as_str().unwrap_or_default().to_owned(),
                        item["arguments"].as_str().unwrap_or_default().to_owned(),
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
                }
            }
            "response.output_item.done" => {
                let item = &event["item"];
                if item["type"] == "function_call" {
                    let item_id = item["id"].as_str().unwrap_or_default();
                    let position = self.calls.iter().position(|c| c.0 == item_id);
                    let (_, mut call_id, mut name, mut arguments) =
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
            "response.completed" | "response.incomplete" => {
                let response = &event["response"];
                for (_, id, name, arguments) in std::mem::take(&mut self.calls) {
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
                        output_tokens: usage["output_tokens"].as_u64().unwrap_or(0),
                    }));
                }
                let stop = response["incomplete_details"]["reason"]
                    .as_str()
                    .or(response["status"].as_str())
                    .map(str::to_owned);
                out.push(StreamChunk::Done { stop_reason: stop });
                self.done = true;
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
}

#[async_trait]
impl ProviderAdapter for OpenAiResponses {
    fn protocol_name(&self) -> &'static str {
        "openai-responses"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let upstream = self
            .client
            .responses()
            .create_stream_byot::<wire::Body<'_>, Value>(wire_body(request))
            .await
            .map_err(map_openai_error)?;
        let upstream = upstream.map(|event| event.map_err(map_openai_error));
        let mut parser = Parser::default();
        Ok(decode_stream(upstream, move |event| match event {
            Some(event) => parser.event(&event).map(|chunks| Decoded {
                chunks,
                done: parser.done,
            }),
            None => Err(ProviderError::Stream(
                "the stream ended before response.completed".to_owned(),
            )),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{Message, ToolDefinition};
    use serde_json::json;

    fn parse(events: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for event in events {
            out.extend(parser.event(&serde_json::from_str(event).unwrap())?);
        }
        Ok(out)
    }

    /// Event sequence as documented in OpenAI's Responses streaming reference (function
    /// call example), abridged to the fields pith reads.
    mod reference {
        use crate::adapter::{arguments_text, ModelRequest};
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
                            input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
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
                                Part::ToolCall(_) => {}
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
    fn typed_encoder_matches_the_value_tree_reference() {
        crate::adapter::tests::assert_encoder_matches_reference(
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
                    output_tokens: 87
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
