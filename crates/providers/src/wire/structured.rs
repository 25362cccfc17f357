//! Structured final output (`--output-schema`) as each protocol asks for it.
//!
//! A request may carry a [`StructuredOutput`]: the JSON Schema the final answer must
//! match. Two modes:
//!
//! - **guide** (`force: false`, every request of a structured job): where the protocol
//!   constrains the answer natively alongside tools it is asked to — OpenAI Responses
//!   `text.format` and Chat `response_format` (`json_schema`, strict when the schema is
//!   in OpenAI's strict subset; only for an object schema, which OpenAI requires). Gemini,
//!   Anthropic and Bedrock get nothing on the wire (the prompt carries the schema).
//! - **force** (`force: true`, the one correction request): the answer must be the JSON
//!   now, without tool calls — OpenAI kinds add `tool_choice: "none"`; Gemini
//!   `responseMimeType: application/json` + `responseJsonSchema` with function calling
//!   off; Anthropic and Bedrock advertise one more tool, [`StructuredOutput::name`], whose
//!   input schema is the schema (wrapped as `{"value": …}` when it is not an object), and
//!   force it (`tool_choice`), thinking off (Anthropic refuses thinking with a forced
//!   tool). Their adapters turn that tool call back into the answer's text
//!   ([`forced_call_as_text`]), so the loop sees a JSON answer like any other.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::wire::chunk::{ChunkStream, StreamChunk};

/// The name of the schema (OpenAI) and of the forced tool (Anthropic, Bedrock).
pub const STRUCTURED_OUTPUT_NAME: &str = "structured_output";

/// The forced tool's description.
pub const STRUCTURED_OUTPUT_TOOL_DESCRIPTION: &str =
    "Give your final answer: its input is the answer, which must match the required schema.";

/// What the final answer must match; see the module docs.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput {
    /// The JSON Schema (draft 2020-12).
    pub schema: Arc<Value>,
    /// The forced tool's input schema: the schema, or `{"value": schema}` when the schema
    /// is not an object's.
    pub tool_schema: Arc<Value>,
    /// OpenAI's strict mode applies (the schema is in its strict subset).
    pub strict: bool,
    /// Answer with the JSON now, without tools (the correction request).
    pub force: bool,
}

impl StructuredOutput {
    /// `schema` in guide mode; `strict` says whether OpenAI's strict mode applies.
    pub fn new(schema: Arc<Value>, strict: bool) -> Self {
        let tool_schema = if is_object_schema(&schema) {
            Arc::clone(&schema)
        } else {
            Arc::new(json!({
                "type": "object",
                "properties": {"value": schema.as_ref()},
                "required": ["value"],
                "additionalProperties": false,
            }))
        };
        Self {
            schema,
            tool_schema,
            strict,
            force: false,
        }
    }

    /// The same schema in force mode (or back in guide mode).
    pub fn forced(&self, force: bool) -> Self {
        Self {
            force,
            ..self.clone()
        }
    }

    /// True when the schema describes an object: OpenAI's `json_schema` formats require
    /// one at the root.
    pub fn object_root(&self) -> bool {
        is_object_schema(&self.schema)
    }

    /// The answer text of a forced tool call's `arguments`.
    pub fn answer_text(&self, arguments: &Value) -> String {
        let value = if Arc::ptr_eq(&self.schema, &self.tool_schema) {
            arguments
        } else {
            arguments.get("value").unwrap_or(arguments)
        };
        value.to_string()
    }

    /// OpenAI's `json_schema` object (`text.format` of Responses carries its fields
    /// flat with `type`; Chat's `response_format.json_schema` nests them).
    pub fn openai_schema(&self) -> Value {
        json!({"name": STRUCTURED_OUTPUT_NAME, "schema": self.schema.as_ref(), "strict": self.strict})
    }
}

fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// `stream` with the forced tool's call turned into answer text (Anthropic, Bedrock).
pub fn forced_call_as_text(stream: ChunkStream, output: &StructuredOutput) -> ChunkStream {
    let output = output.clone();
    Box::pin(stream.map(move |chunk| match chunk {
        Ok(StreamChunk::ToolCall(call)) if call.name == STRUCTURED_OUTPUT_NAME => {
            Ok(StreamChunk::Text(output.answer_text(&call.arguments)))
        }
        other => other,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::ToolCall;

    #[test]
    fn an_object_schema_is_the_tool_schema_and_others_are_wrapped() {
        let object = StructuredOutput::new(Arc::new(json!({"type": "object"})), true);
        assert!(object.object_root());
        assert!(Arc::ptr_eq(&object.schema, &object.tool_schema));
        assert_eq!(object.answer_text(&json!({"a": 1})), r#"{"a":1}"#);
        let list = StructuredOutput::new(Arc::new(json!({"type": "array"})), false);
        assert!(!list.object_root());
        assert_eq!(
            list.tool_schema["properties"]["value"],
            json!({"type": "array"})
        );
        assert_eq!(list.answer_text(&json!({"value": [1, 2]})), "[1,2]");
        assert!(list.forced(true).force);
        assert_eq!(
            object.openai_schema()["name"],
            json!(STRUCTURED_OUTPUT_NAME)
        );
    }

    #[tokio::test]
    async fn the_forced_call_becomes_the_answer_and_other_chunks_pass() {
        let output = StructuredOutput::new(Arc::new(json!({"type": "object"})), false);
        let chunks = vec![
            Ok(StreamChunk::Text("x".into())),
            Ok(StreamChunk::ToolCall(ToolCall {
                id: "t".into(),
                name: STRUCTURED_OUTPUT_NAME.into(),
                arguments: json!({"ok": true}),
            })),
            Ok(StreamChunk::ToolCall(ToolCall {
                id: "u".into(),
                name: "read".into(),
                arguments: json!({}),
            })),
        ];
        let stream: ChunkStream = Box::pin(futures::stream::iter(chunks));
        let out: Vec<_> = forced_call_as_text(stream, &output)
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(out[1], StreamChunk::Text(r#"{"ok":true}"#.into()));
        assert!(matches!(&out[2], StreamChunk::ToolCall(c) if c.name == "read"));
    }
}
