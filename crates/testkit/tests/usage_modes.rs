//! Scripted usage (a constant, the request counted with a bias, none at all) and responders
//! (requests matched by their last message), on every protocol's JSON answer.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::{call_json, stream};
use pith_testkit::{request_tokens, Protocol, Script, TestServer, Turn, UsageMode};
use serde_json::{json, Value};

const PROTOCOLS: [Protocol; 5] = [
    Protocol::OpenAiChat,
    Protocol::OpenAiResponses,
    Protocol::Anthropic,
    Protocol::Gemini,
    Protocol::Bedrock,
];

/// A request body of `protocol` whose last (user) message says `text`.
fn body(protocol: Protocol, text: &str) -> Value {
    match protocol {
        Protocol::OpenAiChat => json!({"model": "m", "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": text}]}),
        Protocol::OpenAiResponses => json!({"model": "m", "instructions": "You are terse.",
            "input": [{"role": "user", "content": [{"type": "input_text", "text": text}]}]}),
        Protocol::Anthropic => json!({"model": "m", "max_tokens": 100, "system": "You are terse.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]}),
        Protocol::Gemini => json!({"systemInstruction": {"parts": [{"text": "You are terse."}]},
            "contents": [{"role": "user", "parts": [{"text": text}]}]}),
        Protocol::Bedrock => json!({"system": [{"text": "You are terse."}],
            "messages": [{"role": "user", "content": [{"text": text}]}]}),
    }
}

/// The JSON (non-streaming) endpoint of `server`.
fn json_url(server: &TestServer) -> String {
    match server.protocol() {
        Protocol::Gemini => format!(
            "{}/v1beta/models/testkit-model:generateContent",
            server.origin()
        ),
        Protocol::Bedrock => format!("{}/model/testkit-model/converse", server.origin()),
        _ => server.endpoint_url(),
    }
}

/// The input tokens an answer reports (Anthropic and Bedrock: uncached + cache read), or
/// `None` when it reports no usage.
fn reported_input(protocol: Protocol, answer: &Value) -> Option<u64> {
    let usage = match protocol {
        Protocol::Gemini => answer.get("usageMetadata")?,
        _ => answer.get("usage")?,
    };
    Some(match protocol {
        Protocol::OpenAiChat => usage["prompt_tokens"].as_u64()?,
        Protocol::OpenAiResponses => usage["input_tokens"].as_u64()?,
        Protocol::Anthropic => {
            usage["input_tokens"].as_u64()? + usage["cache_read_input_tokens"].as_u64()?
        }
        Protocol::Gemini => usage["promptTokenCount"].as_u64()?,
        Protocol::Bedrock => {
            usage["inputTokens"].as_u64()? + usage["cacheReadInputTokens"].as_u64()?
        }
    })
}

/// The answer's text.
fn answer_text(protocol: Protocol, answer: &Value) -> String {
    let text = match protocol {
        Protocol::OpenAiChat => &answer["choices"][0]["message"]["content"],
        Protocol::OpenAiResponses => &answer["output"][0]["content"][0]["text"],
        Protocol::Anthropic => &answer["content"][0]["text"],
        Protocol::Gemini => &answer["candidates"][0]["content"]["parts"][0]["text"],
        Protocol::Bedrock => &answer["output"]["message"]["content"][0]["text"],
    };
    text.as_str().unwrap_or_default().to_owned()
}

async fn ask(server: &TestServer, body: &Value) -> Value {
    let (status, _, answer) = call_json(&json_url(server), body).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test]
async fn a_constant_usage_is_reported_for_every_request_whatever_it_holds() {
    for protocol in PROTOCOLS {
        let script = Script::new(protocol, [Turn::text("one"), Turn::text("two")])
            .with_usage_mode(UsageMode::Constant(30_000));
        let server = TestServer::start(script).unwrap();
        for text in ["short", &"long ".repeat(2_000)] {
            let answer = ask(&server, &body(protocol, text)).await;
            assert_eq!(
                reported_input(protocol, &answer),
                Some(30_000),
                "{protocol:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_counted_usage_follows_the_request_with_its_bias() {
    for protocol in PROTOCOLS {
        for bias_percent in [-30, 0, 30] {
            let script = Script::new(protocol, [Turn::text("ok")])
                .with_usage_mode(UsageMode::Counted { bias_percent });
            let server = TestServer::start(script).unwrap();
            let sent = body(protocol, &"the quick brown fox ".repeat(500));
            let answer = ask(&server, &sent).await;
            let counted = request_tokens(&sent);
            assert!(counted > 2_000, "{counted}");
            let expected = counted as i64 * (100 + i64::from(bias_percent)) / 100;
            assert_eq!(
                reported_input(protocol, &answer),
                Some(expected as u64),
                "{protocol:?} {bias_percent}"
            );
        }
    }
}

#[tokio::test]
async fn no_usage_leaves_the_usage_out_of_json_and_streams() {
    for protocol in PROTOCOLS {
        let script =
            Script::new(protocol, [Turn::text("no usage here")]).with_usage_mode(UsageMode::None);
        let server = TestServer::start(script).unwrap();
        let answer = ask(&server, &body(protocol, "hi")).await;
        assert_eq!(reported_input(protocol, &answer), None, "{protocol:?}");
        assert_eq!(answer_text(protocol, &answer), "no usage here");
    }
    // Chat, streamed and asking for usage: no usage chunk, and every chunk's usage is null.
    let script = Script::openai_chat([Turn::text("streamed")]).with_usage_mode(UsageMode::None);
    let server = TestServer::start(script).unwrap();
    let mut sent = body(Protocol::OpenAiChat, "hi");
    sent["stream"] = json!(true);
    sent["stream_options"] = json!({"include_usage": true});
    let events = stream(&server.endpoint_url(), &sent).await.events().await;
    assert!(events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .all(|e| e.json()["usage"].is_null()));
}

#[tokio::test]
async fn by_default_the_server_is_honest_and_a_fixed_one_reports_100() {
    for protocol in PROTOCOLS {
        let server =
            TestServer::start(Script::new(protocol, [Turn::text("ok"), Turn::text("ok")])).unwrap();
        let sent = body(protocol, &"honest counting ".repeat(300));
        let answer = ask(&server, &sent).await;
        assert_eq!(
            reported_input(protocol, &answer),
            Some(request_tokens(&sent)),
            "{protocol:?}"
        );
        let fixed = Script::new(protocol, [Turn::text("ok")]).with_usage_mode(UsageMode::Fixed);
        let server = TestServer::start(fixed).unwrap();
        let answer = ask(&server, &sent).await;
        assert_eq!(reported_input(protocol, &answer), Some(100), "{protocol:?}");
    }
}

#[tokio::test]
async fn a_turn_that_scripts_its_usage_wins_over_the_mode() {
    let script = Script::anthropic([Turn::text("mine").with_usage(7, 1)])
        .with_usage_mode(UsageMode::Constant(30_000));
    let server = TestServer::start(script).unwrap();
    let answer = ask(&server, &body(Protocol::Anthropic, "hi")).await;
    assert_eq!(reported_input(Protocol::Anthropic, &answer), Some(7));
}

#[tokio::test]
async fn a_responder_answers_matching_requests_without_using_a_scripted_turn() {
    for protocol in PROTOCOLS {
        let script = Script::new(protocol, [Turn::text("first"), Turn::text("second")])
            .responding("SUMMARISE NOW", Turn::text("## Goal\nsummary"));
        let server = TestServer::start(script).unwrap();
        let first = ask(&server, &body(protocol, "do the work")).await;
        assert_eq!(answer_text(protocol, &first), "first", "{protocol:?}");
        for _ in 0..3 {
            let summary = ask(&server, &body(protocol, "please SUMMARISE NOW")).await;
            assert_eq!(answer_text(protocol, &summary), "## Goal\nsummary");
        }
        let second = ask(&server, &body(protocol, "go on")).await;
        assert_eq!(answer_text(protocol, &second), "second", "{protocol:?}");
        assert_eq!(server.turns_served(), 2);
    }
}

#[tokio::test]
async fn a_responder_with_times_answers_only_that_many_requests() {
    let script = Script::anthropic([Turn::text("scripted")]).responding_times(
        "AFTER",
        Turn::text("refused"),
        2,
    );
    let server = TestServer::start(script).unwrap();
    for expected in ["refused", "refused", "scripted"] {
        let answer = ask(&server, &body(Protocol::Anthropic, "AFTER the compaction")).await;
        assert_eq!(answer_text(Protocol::Anthropic, &answer), expected);
    }
}

#[test]
fn scripts_with_usage_modes_and_responders_round_trip_through_json() {
    let script = Script::from_json(
        r###"{"protocol": "openai-chat",
            "usage_mode": {"counted": {"bias_percent": -30}},
            "responders": [{"when_last_message_contains": "Write the summary now.",
                            "turn": {"text": "## Goal\nx"}}],
            "turns": [{"text": "hi"}]}"###,
    )
    .unwrap();
    assert_eq!(script.usage_mode, UsageMode::Counted { bias_percent: -30 });
    assert_eq!(Script::from_json(&script.to_json_pretty()).unwrap(), script);
    for mode in [
        r#"{"constant": 30000}"#,
        r#""none""#,
        r#""fixed""#,
        r#""honest""#,
    ] {
        let json = format!(r#"{{"protocol": "anthropic", "usage_mode": {mode}, "turns": []}}"#);
        assert!(Script::from_json(&json).is_ok(), "{mode}");
    }
    let empty = Script::from_json(
        r#"{"protocol": "anthropic", "responders": [{"when_last_message_contains": "", "turn": {}}]}"#,
    );
    assert!(empty.unwrap_err().to_string().contains("empty"));
}
