//! The testkit refuses what the real APIs refuse in what a client sends back: a thinking
//! block stripped from a tool loop or altered, a reasoning item with an id or foreign
//! encrypted content or missing between tool calls, the wrong output-cap field, an image in
//! a Chat `tool` message. Refusals use no turn. And it plays what clients read: encrypted
//! reasoning, redacted thinking, reasoning tokens, OpenRouter's cost and error wrapper.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{call_json, stream};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

fn anthropic_loop(first_block: Value) -> Value {
    json!({
        "model": "claude", "max_tokens": 20_000, "stream": false,
        "thinking": {"type": "enabled", "budget_tokens": 10_000},
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [first_block,
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}]}
        ]
    })
}

fn thinking_script() -> Script {
    Script::anthropic(vec![
        Turn::tool_call("read", json!({})).with_reasoning("Plan."),
        Turn::text("done"),
    ])
}

#[tokio::test]
async fn anthropic_refuses_a_tool_loop_without_its_thinking_block_and_a_forged_one() {
    let server = TestServer::start(thinking_script()).unwrap();
    let url = server.endpoint_url();
    let stripped = anthropic_loop(json!({"type": "text", "text": "Looking."}));
    let (status, _, body) = call_json(&url, &stripped).await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`"),
        "{message}"
    );
    let forged = anthropic_loop(
        json!({"type": "thinking", "thinking": "Plan, edited.", "signature": "testkit-signature-1"}),
    );
    let (status, _, body) = call_json(&url, &forged).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    );
    let mut hot = anthropic_loop(
        json!({"type": "thinking", "thinking": "Plan.", "signature": "testkit-signature-1"}),
    );
    hot["temperature"] = json!(0.5);
    let (status, _, _) = call_json(&url, &hot).await;
    assert_eq!(status, 400, "temperature with thinking");
    assert_eq!(server.turns_served(), 0, "refusals use no turn");
    hot["temperature"] = Value::Null;
    let (status, _, body) = call_json(&url, &hot).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn anthropic_plays_redacted_thinking_whole_in_its_start_event() {
    let server = TestServer::start(Script::anthropic(vec![
        Turn::text("ok").with_redacted_thinking()
    ]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "m", "max_tokens": 10, "stream": true, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await
    .events()
    .await;
    let start = events
        .iter()
        .find(|e| e.name == "content_block_start")
        .unwrap()
        .json();
    assert_eq!(
        start["content_block"],
        json!({"type": "redacted_thinking", "data": "testkit-redacted-1"})
    );
}

#[tokio::test]
async fn responses_plays_encrypted_reasoning_and_refuses_it_missing_or_with_an_id() {
    let server = TestServer::start(Script::openai_responses(vec![
        Turn::tool_call("read", json!({}))
            .with_reasoning("Plan.")
            .with_reasoning_tokens(7),
        Turn::text("done"),
        Turn::text("again"),
    ]))
    .unwrap();
    let url = server.endpoint_url();
    let first = json!({"model": "o3", "stream": false, "store": false,
        "include": ["reasoning.encrypted_content"], "input": "go"});
    let (status, _, body) = call_json(&url, &first).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["output"][0]["encrypted_content"],
        "testkit-encrypted-1"
    );
    assert_eq!(
        body["usage"]["output_tokens_details"]["reasoning_tokens"],
        7
    );
    serde_json::from_value::<async_openai::types::responses::Response>(body.clone())
        .expect("async-openai reads it");
    let call =
        json!({"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "x"});
    let reasoning =
        json!({"type": "reasoning", "summary": [], "encrypted_content": "testkit-encrypted-1"});
    let request = |items: Vec<Value>| {
        let mut input = vec![json!({"type": "message", "role": "user", "content": "go"})];
        input.extend(items);
        json!({"model": "o3", "stream": false, "store": false,
            "include": ["reasoning.encrypted_content"], "input": input})
    };
    let (status, _, body) = call_json(&url, &request(vec![call.clone(), output.clone()])).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("without the reasoning item"));
    let mut with_id = reasoning.clone();
    with_id["id"] = json!("rs_testkit_1");
    let (status, _, body) =
        call_json(&url, &request(vec![with_id, call.clone(), output.clone()])).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Items are not persisted when `store` is set to false"));
    let (status, _, _) = call_json(&url, &request(vec![reasoning, call, output])).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn chat_accepts_only_its_cap_field_honours_it_and_refuses_images_in_tool_messages() {
    let server = TestServer::start(
        Script::openai_chat(vec![Turn::text(
            "one two three four five six seven eight nine ten",
        )
        .with_reasoning_tokens(3)
        .with_cost(0.00042)])
        .accepting_only("max_completion_tokens"),
    )
    .unwrap();
    let url = server.endpoint_url();
    let base = |field: &str| {
        json!({"model": "o4-mini", "stream": false, field: 2,
            "messages": [{"role": "user", "content": "count"}]})
    };
    let (status, _, body) = call_json(&url, &base("max_tokens")).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["param"], "max_tokens");
    let mut image_in_tool = base("max_completion_tokens");
    image_in_tool["messages"] = json!([
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
    ]);
    let (status, _, _) = call_json(&url, &image_in_tool).await;
    assert_eq!(status, 400);
    let (status, _, body) = call_json(&url, &base("max_completion_tokens")).await;
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    assert_eq!(body["choices"][0]["message"]["content"], "one two ");
    assert_eq!(
        body["usage"]["completion_tokens"], 2,
        "billed up to the cap"
    );
    assert_eq!(
        body["usage"]["completion_tokens_details"]["reasoning_tokens"],
        3
    );
    assert_eq!(body["usage"]["cost"], 0.00042);
}

#[tokio::test]
async fn openrouter_wraps_an_upstream_failure_in_its_own_error() {
    let server = TestServer::start(Script::openai_chat(vec![Turn::fault(
        Fault::ProviderReturnedError,
    )]))
    .unwrap();
    let (status, _, body) = call_json(
        &server.endpoint_url(),
        &json!({"model": "m", "stream": false, "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 502);
    assert_eq!(body["error"]["code"], 502);
    assert_eq!(
        body["error"]["metadata"]["provider_name"],
        "Testkit Upstream"
    );
}
