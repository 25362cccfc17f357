//! The Bedrock protocol as a plain client sees it: binary event-stream frames (decoded with
//! the AWS SDK's own `aws-smithy-eventstream`), text, tool calls, reasoning with
//! signatures, usage, every fault in Bedrock's shape, and the reasoning check.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::Duration;

use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, Bytes};
use common::{client, read_body};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn url(server: &TestServer) -> String {
    format!(
        "{}/model/{}/converse-stream",
        server.origin(),
        MODEL.replace(':', "%3A")
    )
}

fn request() -> Value {
    json!({"messages": [{"role": "user", "content": [{"text": "hi"}]}], "inferenceConfig": {"maxTokens": 64}})
}

async fn post(url: &str, body: &Value) -> reqwest::Response {
    client().post(url).json(body).send().await.unwrap()
}

fn header(message: &Message, name: &str) -> String {
    message
        .headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(value) => Some(value.as_str().to_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Splits a body into frames by their declared lengths; each is parsed (both CRCs
/// checked) by `aws-smithy-eventstream`.
fn frames(body: &[u8]) -> Vec<Result<Message, String>> {
    let mut rest = Bytes::copy_from_slice(body);
    let mut out = Vec::new();
    while rest.len() >= 4 {
        let length = (&rest[..4]).get_u32() as usize;
        if length > rest.len() {
            out.push(Err(format!(
                "{} bytes of a {length}-byte frame",
                rest.len()
            )));
            break;
        }
        let frame = rest.split_to(length);
        out.push(read_message_from(frame).map_err(|e| e.to_string()));
    }
    out
}

fn event(message: &Message) -> (String, Value) {
    (
        header(message, ":event-type"),
        serde_json::from_slice(message.payload()).unwrap(),
    )
}

#[tokio::test]
async fn a_turn_streams_reasoning_text_a_tool_call_and_usage_after_the_stop() {
    let server = TestServer::start(Script::bedrock([Turn::text("Let me look.")
        .with_reasoning("Read the file first.")
        .with_tool_call("read", json!({"path": "src/lib.rs"}))
        .with_usage(1200, 30)
        .with_cached_input(1000)]))
    .unwrap();
    let response = post(&url(&server), &request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/vnd.amazon.eventstream"
    );
    let body = read_body(response).await;
    let events: Vec<(String, Value)> = frames(&body.reads.concat())
        .iter()
        .map(|m| event(m.as_ref().unwrap()))
        .collect();
    let types: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(types.first(), Some(&"messageStart"));
    assert_eq!(&types[types.len() - 2..], ["messageStop", "metadata"]);
    let reasoning: String = events
        .iter()
        .filter_map(|(_, e)| e.pointer("/delta/reasoningContent/text")?.as_str())
        .collect();
    assert_eq!(reasoning, "Read the file first.");
    let signature = events
        .iter()
        .find_map(|(_, e)| e.pointer("/delta/reasoningContent/signature")?.as_str());
    assert_eq!(signature, Some("testkit-signature-1"));
    let text: String = events
        .iter()
        .filter_map(|(_, e)| e.pointer("/delta/text")?.as_str())
        .collect();
    assert_eq!(text, "Let me look.");
    let start = events
        .iter()
        .find_map(|(_, e)| e.pointer("/start/toolUse"))
        .unwrap();
    assert_eq!(start, &json!({"toolUseId": "tooluse_1", "name": "read"}));
    let arguments: String = events
        .iter()
        .filter_map(|(_, e)| e.pointer("/delta/toolUse/input")?.as_str())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"path": "src/lib.rs"})
    );
    assert_eq!(events[events.len() - 2].1["stopReason"], "tool_use");
    let usage = &events.last().unwrap().1["usage"];
    assert_eq!(usage["inputTokens"], 200);
    assert_eq!(usage["cacheReadInputTokens"], 1000);
    assert_eq!(usage["outputTokens"], 30);
    let recorded = &server.requests()[0];
    assert_eq!(
        recorded.path,
        "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
}

#[tokio::test]
async fn http_faults_carry_bedrocks_error_types() {
    let cases = [
        (
            Fault::Http429,
            429,
            "ThrottlingException",
            "Too many requests",
        ),
        (
            Fault::Http500,
            500,
            "InternalServerException",
            "internal error",
        ),
        (
            Fault::Overloaded,
            503,
            "ServiceUnavailableException",
            "unable to process",
        ),
        (
            Fault::ContextLength,
            400,
            "ValidationException",
            "prompt is too long: 250000 tokens > 200000 maximum",
        ),
    ];
    for (fault, status, error_type, message) in cases {
        let server = TestServer::start(Script::bedrock([Turn::fault(fault)
            .with_usage(250_000, 0)
            .with_retry_after_s(2)]))
        .unwrap();
        let response = post(&url(&server), &request()).await;
        assert_eq!(response.status(), status, "{fault:?}");
        let header = response.headers()["x-amzn-errortype"].to_str().unwrap();
        assert!(header.starts_with(error_type), "{fault:?}: {header}");
        let body: Value = response.json().await.unwrap();
        assert!(
            body["message"].as_str().unwrap().contains(message),
            "{fault:?}: {body}"
        );
    }
    let server = TestServer::start(Script::bedrock([Turn::text("x")])).unwrap();
    let wrong = post(&format!("{}/v1/messages", server.origin()), &request()).await;
    assert_eq!(wrong.status(), 404);
    assert!(wrong.headers()["x-amzn-errortype"]
        .to_str()
        .unwrap()
        .starts_with("ResourceNotFoundException"));
}

#[tokio::test]
async fn a_stream_error_ends_with_an_exception_frame_and_no_stop() {
    let server = TestServer::start(Script::bedrock([Turn::fault(Fault::StreamError)])).unwrap();
    let body = read_body(post(&url(&server), &request()).await).await;
    assert!(body.body_error.is_none());
    let messages: Vec<Message> = frames(&body.reads.concat())
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let last = messages.last().unwrap();
    assert_eq!(header(last, ":message-type"), "exception");
    assert_eq!(
        header(last, ":exception-type"),
        "serviceUnavailableException"
    );
    assert!(!messages
        .iter()
        .any(|m| header(m, ":event-type") == "messageStop"));
}

#[tokio::test]
async fn a_malformed_frame_fails_its_crc_and_the_rest_stays_intact() {
    let server = TestServer::start(Script::bedrock([Turn::fault(Fault::MalformedSse)])).unwrap();
    let body = read_body(post(&url(&server), &request()).await).await;
    let parsed = frames(&body.reads.concat());
    let bad: Vec<&String> = parsed.iter().filter_map(|f| f.as_ref().err()).collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
    assert!(
        bad[0].contains("checksum") || bad[0].contains("crc"),
        "{bad:?}"
    );
    let last = parsed.last().unwrap().as_ref().unwrap();
    assert_eq!(header(last, ":event-type"), "metadata");
}

#[tokio::test]
async fn a_dropped_stream_breaks_the_body_mid_answer() {
    let server = TestServer::start(Script::bedrock([Turn::fault(Fault::DropMidStream)])).unwrap();
    let body = read_body(post(&url(&server), &request()).await).await;
    assert!(body.body_error.is_some(), "the connection is cut");
    assert!(!frames(&body.reads.concat()).is_empty());
}

#[tokio::test]
async fn a_huge_event_is_one_valid_frame_of_the_size_asked() {
    let server = TestServer::start(Script::bedrock([
        Turn::fault(Fault::HugeEvent).with_size_mb(2)
    ]))
    .unwrap();
    let body = read_body(post(&url(&server), &request()).await).await;
    let parsed = frames(&body.reads.concat());
    let huge = parsed
        .iter()
        .map(|f| f.as_ref().unwrap())
        .find(|m| m.payload().len() > 2 * 1024 * 1024)
        .expect("one frame holds the huge text");
    let (kind, payload) = event(huge);
    assert_eq!(kind, "contentBlockDelta");
    assert_eq!(
        payload["delta"]["text"].as_str().unwrap().len(),
        2 * 1024 * 1024
    );
}

#[tokio::test]
async fn a_hang_sends_headers_and_then_nothing() {
    let server = TestServer::start(Script::bedrock([Turn::fault(Fault::Hang)])).unwrap();
    let mut response = post(&url(&server), &request()).await;
    assert_eq!(response.status(), 200);
    let next = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await;
    assert!(next.is_err(), "nothing arrives");
}

#[tokio::test]
async fn reasoning_must_come_back_as_it_was_sent() {
    let script = Script::bedrock([
        Turn::tool_call("read", json!({"path": "a"})).with_reasoning("Plan."),
        Turn::text("Done."),
        Turn::text("Done again."),
    ]);
    let server = TestServer::start(script).unwrap();
    let thinking = |signature: &str| {
        json!({
            "messages": [
                {"role": "user", "content": [{"text": "go"}]},
                {"role": "assistant", "content": [
                    {"reasoningContent": {"reasoningText": {"text": "Plan.", "signature": signature}}},
                    {"toolUse": {"toolUseId": "tooluse_1", "name": "read", "input": {"path": "a"}}}
                ]},
                {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "x"}], "status": "success"}}]}
            ],
            "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
            "inferenceConfig": {"maxTokens": 4096}
        })
    };
    let _ = read_body(post(&url(&server), &request()).await).await;
    let forged = post(&url(&server), &thinking("forged")).await;
    assert_eq!(forged.status(), 400);
    let body: Value = forged.json().await.unwrap();
    assert!(body["message"]
        .as_str()
        .unwrap()
        .contains("Invalid `signature`"));
    let genuine = post(&url(&server), &thinking("testkit-signature-1")).await;
    assert_eq!(genuine.status(), 200);
}
