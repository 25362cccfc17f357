//! pith's OpenAI request bodies read by async-openai's typed request structs (OpenAI's
//! published schema): reasoning items in place, images in user messages and tool outputs,
//! `max_completion_tokens`, `include` and `reasoning`.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::sync::Arc;

use pith_core::{Image, Message, Part, Reasoning, Role, ToolCall, ToolDefinition, ToolResult};
use pith_providers::wire::openai_chat::{self, MaxTokensField};
use pith_providers::wire::openai_responses;
use pith_providers::wire::{ModelRequest, ReasoningEffort};
use serde_json::json;

fn image(path: &str) -> Image {
    Image {
        path: path.into(),
        media_type: "image/png".into(),
        width: 2,
        height: 2,
        data: "iVBORw0KGgo=".into(),
    }
}

/// A history with every part kind: user image, reasoning of two origins, a tool call
/// whose result carries an image.
fn request() -> ModelRequest {
    let mut user = Message::user("What is on this screenshot?");
    user.parts.push(Part::Image(image("shot.png")));
    let mut answer = Message::assistant_with_calls(
        "Let me read the other one.",
        vec![ToolCall {
            id: "call_1".into(),
            name: "read".into(),
            arguments: json!({"path": "b.png"}),
        }],
    );
    answer.parts.insert(
        0,
        Part::Reasoning(Reasoning {
            origin: "openai-responses".into(),
            text: "Compare both.".into(),
            id: Some("rs_1".into()),
            encrypted: Some("gAAAAB".into()),
            ..Reasoning::default()
        }),
    );
    answer.parts.insert(
        1,
        Part::Reasoning(Reasoning {
            origin: "openai-chat".into(),
            text: "never sent".into(),
            ..Reasoning::default()
        }),
    );
    let tool = Message {
        role: Role::Tool,
        parts: vec![
            Part::ToolResult(ToolResult::new("call_1", "image b.png (2×2)", false)),
            Part::Image(image("b.png")),
        ],
    };
    ModelRequest {
        model: "gpt-5".into(),
        system: "sys".into(),
        messages: Arc::new(vec![user, answer, tool, Message::user("and now?")]),
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: Some(2048),
        temperature: None,
        reasoning: Some(ReasoningEffort::High),
        output: None,
        cache: Default::default(),
    }
}

#[test]
fn the_chat_body_matches_the_published_request_schema() {
    let request = request();
    let bytes = openai_chat::encode_body(&request, MaxTokensField::MaxCompletionTokens);
    let typed: async_openai::types::chat::CreateChatCompletionRequest =
        serde_json::from_slice(&bytes).expect("async-openai reads pith's Chat body");
    assert_eq!(typed.max_completion_tokens, Some(2048));
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(body["max_tokens"].is_null());
    let messages = body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    // The tool's image follows its tool message in a user message; the user's own image
    // is a part of its message.
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "user", "user"]
    );
    assert_eq!(messages[1]["content"][1]["type"], "image_url");
    assert_eq!(
        messages[1]["content"][1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    assert!(messages[3]["content"].is_string());
    assert_eq!(messages[4]["content"][1]["type"], "image_url");
    assert!(!body.to_string().contains("never sent"));
    assert!(!body.to_string().contains("Compare both"));
}

#[test]
fn the_responses_body_matches_the_published_request_schema() {
    let request = request();
    let bytes = openai_responses::encode_body(&request, true);
    let typed: async_openai::types::responses::CreateResponse =
        serde_json::from_slice(&bytes).expect("async-openai reads pith's Responses body");
    assert_eq!(typed.max_output_tokens, Some(2048));
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    let input = body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output",
            "message"
        ]
    );
    assert_eq!(
        input[1],
        json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Compare both."}], "encrypted_content": "gAAAAB"})
    );
    assert_eq!(input[0]["content"][1]["type"], "input_image");
    assert_eq!(input[4]["output"][1]["type"], "input_image");
    assert!(!body.to_string().contains("never sent"));
}
