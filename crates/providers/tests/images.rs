//! Images through the loop, once per protocol against the testkit: a tool's image travels
//! in the protocol's own form (inside the Anthropic `tool_result`, inside the Responses
//! `function_call_output`, in a user message after the Chat tool messages, which take text
//! only — the testkit refuses an image there; inside the Bedrock `toolResult`), and a
//! compaction's summary request carries the placeholder instead of the image.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use pith_core::{
    BpeCounter, ContextBudget, Encoding, Image, ImageFormula, RequestEstimator, Tool, ToolContext,
    ToolError, ToolOutput, ToolRegistry,
};
use pith_providers::AgentLoop;
use pith_testkit::{Protocol, Script, TestServer, Turn};
use serde_json::{json, Value};

for_each_protocol!(
    a_tool_image_travels_in_the_protocols_own_form,
    the_summary_request_carries_the_image_placeholder,
);

const DATA: &str = "iVBORw0KGgoAAAANSUhEUg==";

/// `read` that returns a screenshot.
struct Screenshot;

#[async_trait]
impl Tool for Screenshot {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Read a file"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn run(&self, _arguments: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(
            ToolOutput::ok("image shot.png (PNG, 800×600 as sent)").with_image(Image {
                path: "shot.png".into(),
                media_type: "image/png".into(),
                width: 800,
                height: 600,
                data: DATA.into(),
            }),
        )
    }
}

fn agent(protocol: Protocol, turns: Vec<Turn>) -> (AgentLoop, TestServer) {
    let server = TestServer::start(Script::new(protocol, turns)).unwrap();
    let agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: adapter(protocol, &server),
        model: model_id(protocol).into(),
        budget: ContextBudget::for_window(WINDOW),
        system_prompt: SYSTEM.into(),
        tools: ToolRegistry::new(vec![Arc::new(Screenshot)]),
        estimator: RequestEstimator::new(Arc::new(
            BpeCounter::new(Encoding::O200kBase).with_image_formula(ImageFormula::Anthropic),
        )),
        options: fast_options(),
    });
    (agent, server)
}

async fn run(agent: &mut AgentLoop, text: &str) -> Vec<pith_core::LoopEvent> {
    let mut sink = pith_core::InMemory::new(Vec::new());
    agent
        .run_turn(
            pith_core::Message::user(text),
            &mut sink,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("every request was accepted");
    sink.events
}

async fn a_tool_image_travels_in_the_protocols_own_form(protocol: Protocol) {
    let (mut agent, server) = agent(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "shot.png"})),
            Turn::text("A login form."),
        ],
    );
    run(&mut agent, "what is on shot.png?").await;
    assert_eq!(
        agent.history()[2].images().count(),
        1,
        "kept in the history"
    );
    let body = &server.requests()[1].body;
    match protocol {
        Protocol::Anthropic => {
            let result = &body["messages"][2]["content"][0];
            assert_eq!(result["type"], "tool_result");
            assert_eq!(
                result["content"][1],
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": DATA}})
            );
            assert_eq!(result["content"][0]["type"], "text");
        }
        Protocol::OpenAiResponses => {
            let output = body["input"]
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["type"] == "function_call_output")
                .unwrap();
            assert_eq!(output["output"][1]["type"], "input_image");
            assert_eq!(
                output["output"][1]["image_url"],
                format!("data:image/png;base64,{DATA}")
            );
        }
        Protocol::OpenAiChat => {
            let messages = body["messages"].as_array().unwrap();
            let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
            assert!(messages[tool]["content"].is_string());
            let next = &messages[tool + 1];
            assert_eq!(next["role"], "user");
            assert_eq!(next["content"][1]["type"], "image_url");
        }
        Protocol::Gemini => {
            // After the function response, in the same user content.
            let parts = &body["contents"][2]["parts"];
            assert_eq!(parts[0]["functionResponse"]["name"], "read");
            assert_eq!(
                parts[1],
                json!({"inlineData": {"mimeType": "image/png", "data": DATA}})
            );
        }
        Protocol::Bedrock => {
            let result = &body["messages"][2]["content"][0]["toolResult"];
            assert_eq!(result["toolUseId"], "tooluse_1");
            assert_eq!(
                result["content"][1],
                json!({"image": {"format": "png", "source": {"bytes": DATA}}})
            );
            assert!(result["content"][0]["text"].is_string());
        }
    }
}

async fn the_summary_request_carries_the_image_placeholder(protocol: Protocol) {
    let (mut agent, server) = agent(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "shot.png"})).with_usage(OVER_THRESHOLD, 10),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
    );
    run(&mut agent, "look").await;
    let summary_request = server.requests()[1].body.to_string();
    assert!(
        !summary_request.contains(DATA),
        "no image data in the summary request"
    );
    assert!(
        summary_request
            .contains("[image: shot.png, 800×600, ~640 tokens — read it again to see it]"),
        "{summary_request}"
    );
}
