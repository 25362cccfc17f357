//! The cached usage mode over real HTTP: each request billed by its provider's prompt cache
//! and reported in that provider's usage fields (Anthropic and Bedrock reads and writes at
//! breakpoints, OpenAI's automatic 128-token steps per `prompt_cache_key`, Gemini's
//! implicit cache), aged by the scripted pauses.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::{call_json, stream};
use pith_testkit::{request_tokens, CacheBill, Protocol, Script, TestServer, Turn, UsageMode};
use serde_json::{json, Value};

/// About 1,600 tokens: over every family's minimum on its own.
fn long_text() -> String {
    "the quick brown fox jumps over the lazy dog. ".repeat(160)
}

fn cached() -> serde_json::Value {
    json!({"type": "ephemeral"})
}

/// An Anthropic body: a long system prompt with a breakpoint, then `turns` user/assistant
/// exchanges, the last user message marked as pith marks it.
fn anthropic_body(system: &str, user_messages: &[&str]) -> Value {
    let mut messages = Vec::new();
    for (index, text) in user_messages.iter().enumerate() {
        let last = index + 1 == user_messages.len();
        let mut block = json!({"type": "text", "text": text});
        if last {
            block["cache_control"] = cached();
        }
        messages.push(json!({"role": "user", "content": [block]}));
        if !last {
            messages.push(json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("Answer {index}.")}]}));
        }
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1000,
        "system": [{"type": "text", "text": system, "cache_control": cached()}],
        "messages": messages})
}

async fn ask(server: &TestServer, body: &Value) -> Value {
    let url = match server.protocol() {
        Protocol::Gemini => format!(
            "{}/v1beta/models/gemini-2.5-flash:generateContent",
            server.origin()
        ),
        Protocol::Bedrock => format!("{}/model/claude/converse", server.origin()),
        _ => server.endpoint_url(),
    };
    let (status, _, answer) = call_json(&url, body).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// Anthropic's three input figures: uncached, cache read, cache write.
fn anthropic_usage(answer: &Value) -> (u64, u64, u64) {
    let usage = &answer["usage"];
    (
        usage["input_tokens"].as_u64().unwrap(),
        usage["cache_read_input_tokens"].as_u64().unwrap(),
        usage["cache_creation_input_tokens"].as_u64().unwrap(),
    )
}

fn turns(n: usize) -> Vec<Turn> {
    (0..n).map(|i| Turn::text(format!("ok {i}"))).collect()
}

#[tokio::test]
async fn anthropic_reads_the_previous_prefix_and_writes_only_the_new_turn() {
    let server = TestServer::start(Script::anthropic(turns(2)).with_prompt_cache()).unwrap();
    let system = long_text();
    let first = anthropic_body(&system, &["What does main do?"]);
    let second = anthropic_body(&system, &["What does main do?", "And the tests?"]);

    let (uncached, read, written) = anthropic_usage(&ask(&server, &first).await);
    let first_total = request_tokens(&first);
    assert_eq!((uncached, read, written), (0, 0, first_total));

    let (uncached, read, written) = anthropic_usage(&ask(&server, &second).await);
    let second_total = request_tokens(&second);
    assert_eq!(
        read, first_total,
        "the first request's whole prefix is read"
    );
    assert_eq!(
        written,
        second_total - first_total,
        "only the new turn is written"
    );
    assert_eq!(uncached, 0, "nothing follows the last breakpoint");

    let requests = server.requests();
    assert_eq!(
        requests[1].cache,
        Some(CacheBill {
            input_tokens: second_total,
            cache_read_tokens: first_total,
            cache_write_tokens: second_total - first_total,
            cache_write_long_tokens: 0,
        })
    );
}

#[tokio::test]
async fn anthropic_input_after_the_last_breakpoint_is_plain_input() {
    let server = TestServer::start(Script::anthropic(turns(1)).with_prompt_cache()).unwrap();
    let mut body = anthropic_body(&long_text(), &["Q1", "Q2"]);
    // Only the system prompt is marked: the messages are plain input.
    body["messages"][2]["content"][0]
        .as_object_mut()
        .unwrap()
        .remove("cache_control");
    let (uncached, read, written) = anthropic_usage(&ask(&server, &body).await);
    let bill = server.requests()[0].cache.unwrap();
    assert_eq!(read, 0);
    assert!(written > 1_024 && uncached > 0, "{written} {uncached}");
    assert_eq!(uncached + written, request_tokens(&body));
    assert_eq!(bill.cache_write_tokens, written);
}

#[tokio::test]
async fn a_changed_early_message_misses_the_cache() {
    let server = TestServer::start(Script::anthropic(turns(2)).with_prompt_cache()).unwrap();
    // Everything in the messages: a changed first message changes every prefix.
    let history = long_text();
    let first = anthropic_body("Be terse.", &[&history, "Q2"]);
    let edited_history = format!("{history} (edited)");
    let edited = anthropic_body("Be terse.", &[&edited_history, "Q2", "Q3"]);
    ask(&server, &first).await;
    let (uncached, read, written) = anthropic_usage(&ask(&server, &edited).await);
    assert_eq!(read, 0, "nothing after the edit can be read");
    assert_eq!((uncached, written), (0, request_tokens(&edited)));
}

#[tokio::test]
async fn a_pause_longer_than_the_ttl_expires_the_cache_and_a_shorter_one_does_not() {
    let script = Script::anthropic([
        Turn::text("one"),
        Turn::text("two").after_pause_s(200),
        Turn::text("three").after_pause_s(301),
        Turn::text("four").after_pause_s(299),
    ])
    .with_prompt_cache();
    let server = TestServer::start(script).unwrap();
    let body = anthropic_body(&long_text(), &["Q"]);
    let total = request_tokens(&body);
    let mut reads = Vec::new();
    for _ in 0..4 {
        reads.push(anthropic_usage(&ask(&server, &body).await));
    }
    assert_eq!(
        reads,
        vec![
            (0, 0, total),
            (0, total, 0),
            (0, 0, total), // 301 s after the last use: expired, written again
            (0, total, 0),
        ]
    );
}

#[tokio::test]
async fn a_one_hour_breakpoint_survives_a_ten_minute_pause() {
    let script = Script::anthropic([Turn::text("one"), Turn::text("two").after_pause_s(600)])
        .with_prompt_cache();
    let server = TestServer::start(script).unwrap();
    let mut body = anthropic_body(&long_text(), &["Q"]);
    body["system"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    body["messages"][0]["content"][0]["cache_control"] = json!({"type": "ephemeral", "ttl": "1h"});
    ask(&server, &body).await;
    let (_, read, written) = anthropic_usage(&ask(&server, &body).await);
    assert_eq!((read, written), (request_tokens(&body), 0));
}

#[tokio::test]
async fn an_anthropic_stream_reports_the_bill_in_message_start_and_message_delta() {
    let server = TestServer::start(Script::anthropic(turns(2)).with_prompt_cache()).unwrap();
    let mut body = anthropic_body(&long_text(), &["Q"]);
    body["stream"] = json!(true);
    let total = request_tokens(&body);
    for expected in [(0, 0, total), (0, total, 0)] {
        let events = stream(&server.endpoint_url(), &body).await.events().await;
        let start = events.iter().find(|e| e.name == "message_start").unwrap();
        let delta = events.iter().find(|e| e.name == "message_delta").unwrap();
        assert_eq!(anthropic_usage(&start.json()["message"]), expected);
        assert_eq!(anthropic_usage(&delta.json()), expected);
    }
}

#[tokio::test]
async fn bedrock_cache_points_are_read_and_written() {
    let server = TestServer::start(Script::bedrock(turns(2)).with_prompt_cache()).unwrap();
    let first = json!({
        "system": [{"text": long_text()}, {"cachePoint": {"type": "default"}}],
        "messages": [{"role": "user", "content": [{"text": "Q1"}]}]});
    let mut second = first.clone();
    second["messages"] = json!([
        {"role": "user", "content": [{"text": "Q1"}]},
        {"role": "assistant", "content": [{"text": "A1"}]},
        {"role": "user", "content": [{"text": "Q2"}, {"cachePoint": {"type": "default"}}]}]);
    let usage = ask(&server, &first).await["usage"].clone();
    let written = usage["cacheWriteInputTokens"].as_u64().unwrap();
    assert!(written > 1_024, "{usage}");
    assert_eq!(usage["cacheReadInputTokens"], 0);
    assert_eq!(
        usage["inputTokens"].as_u64().unwrap() + written,
        request_tokens(&first),
        "the message after the cache point is plain input"
    );
    let usage = ask(&server, &second).await["usage"].clone();
    assert_eq!(usage["cacheReadInputTokens"].as_u64(), Some(written));
    assert_eq!(usage["inputTokens"], 0, "{usage}");
    assert_eq!(
        usage["cacheWriteInputTokens"].as_u64().unwrap() + written,
        request_tokens(&second)
    );
}

fn chat_body(key: Option<&str>) -> Value {
    let mut body = json!({"model": "gpt-5", "messages": [
        {"role": "system", "content": long_text()},
        {"role": "user", "content": "What does main do?"}]});
    if let Some(key) = key {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

#[tokio::test]
async fn openai_chat_reports_cached_tokens_in_128_token_steps_per_prompt_cache_key() {
    let server = TestServer::start(Script::openai_chat(turns(4)).with_prompt_cache()).unwrap();
    let body = chat_body(Some("session-1"));
    let total = request_tokens(&body);
    assert!(total > 1_500, "{total}");
    let cached_of = |answer: &Value, body: &Value| {
        assert_eq!(
            answer["usage"]["prompt_tokens"].as_u64(),
            Some(request_tokens(body))
        );
        answer["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(cached_of(&ask(&server, &body).await, &body), 0);
    let cached = cached_of(&ask(&server, &body).await, &body);
    assert_eq!(cached, total / 128 * 128);
    assert!(cached > 1_024 && cached % 128 == 0);
    // Another key is another cache; requests without one share theirs.
    for other in [chat_body(Some("session-2")), chat_body(None)] {
        assert_eq!(cached_of(&ask(&server, &other).await, &other), 0);
    }
    let bills: Vec<CacheBill> = server.requests().iter().map(|r| r.cache.unwrap()).collect();
    assert!(bills.iter().all(|bill| bill.cache_write_tokens == 0));
}

#[tokio::test]
async fn openai_responses_reports_cached_input_tokens() {
    let server = TestServer::start(Script::openai_responses(turns(2)).with_prompt_cache()).unwrap();
    let body = json!({"model": "gpt-5", "instructions": long_text(), "prompt_cache_key": "s",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]});
    let total = request_tokens(&body);
    ask(&server, &body).await;
    let usage = ask(&server, &body).await["usage"].clone();
    assert_eq!(usage["input_tokens"].as_u64(), Some(total));
    assert_eq!(
        usage["input_tokens_details"]["cached_tokens"].as_u64(),
        Some(total / 128 * 128)
    );
}

#[tokio::test]
async fn gemini_reports_the_cached_content_token_count() {
    let server = TestServer::start(Script::gemini(turns(2)).with_prompt_cache()).unwrap();
    let body = json!({"systemInstruction": {"parts": [{"text": long_text()}]},
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}]});
    let total = request_tokens(&body);
    let first = ask(&server, &body).await["usageMetadata"].clone();
    assert_eq!(first["promptTokenCount"].as_u64(), Some(total));
    assert!(first.get("cachedContentTokenCount").is_none(), "{first}");
    let second = ask(&server, &body).await["usageMetadata"].clone();
    assert_eq!(second["promptTokenCount"].as_u64(), Some(total));
    assert_eq!(second["cachedContentTokenCount"].as_u64(), Some(total));
}

#[tokio::test]
async fn a_scripted_usage_wins_but_the_request_is_still_billed() {
    let script = Script::anthropic([Turn::text("one").with_usage(50, 5), Turn::text("two")])
        .with_prompt_cache();
    let server = TestServer::start(script).unwrap();
    let body = anthropic_body(&long_text(), &["Q"]);
    let total = request_tokens(&body);
    assert_eq!(anthropic_usage(&ask(&server, &body).await), (50, 0, 0));
    assert_eq!(
        server.requests()[0].cache.unwrap().cache_write_tokens,
        total
    );
    assert_eq!(anthropic_usage(&ask(&server, &body).await), (0, total, 0));
}

#[tokio::test]
async fn an_error_answer_is_not_billed_and_other_modes_keep_no_bill() {
    let script = Script::anthropic([Turn::fault(pith_testkit::Fault::Http429), Turn::text("ok")])
        .with_prompt_cache();
    let server = TestServer::start(script).unwrap();
    let body = anthropic_body(&long_text(), &["Q"]);
    let (status, _, _) = call_json(&server.endpoint_url(), &body).await;
    assert_eq!(status, 429);
    assert_eq!(server.requests()[0].cache, None);
    let (_, read, _) = anthropic_usage(&ask(&server, &body).await);
    assert_eq!(read, 0, "the refused request wrote nothing");

    let honest = TestServer::start(Script::anthropic(turns(1))).unwrap();
    ask(&honest, &body).await;
    assert_eq!(honest.requests()[0].cache, None);
}

#[tokio::test]
async fn a_scripted_cache_write_is_reported_by_anthropic_and_bedrock() {
    let turn = Turn::text("ok")
        .with_usage(100, 5)
        .with_cached_input(60)
        .with_cache_write(30);
    let server = TestServer::start(Script::anthropic([turn.clone()])).unwrap();
    let body = anthropic_body("S", &["Q"]);
    assert_eq!(anthropic_usage(&ask(&server, &body).await), (10, 60, 30));
    let server = TestServer::start(Script::bedrock([turn])).unwrap();
    let body = json!({"messages": [{"role": "user", "content": [{"text": "Q"}]}]});
    let usage = ask(&server, &body).await["usage"].clone();
    assert_eq!(
        (
            &usage["inputTokens"],
            &usage["cacheReadInputTokens"],
            &usage["cacheWriteInputTokens"],
            &usage["totalTokens"]
        ),
        (&json!(10), &json!(60), &json!(30), &json!(105))
    );
    let parsed = Script::from_json(
        r#"{"protocol": "anthropic", "turns": [{"text": "ok", "usage":
            {"input_tokens": 100, "output_tokens": 5, "cached_input_tokens": 60, "cache_write_tokens": 30}}]}"#,
    )
    .unwrap();
    assert_eq!(
        parsed.turns[0].usage,
        Script::anthropic([Turn::text("ok")
            .with_usage(100, 5)
            .with_cached_input(60)
            .with_cache_write(30)])
        .turns[0]
            .usage
    );
}

#[test]
fn the_json_script_names_the_mode_and_the_pause() {
    let script = Script::from_json(
        r#"{"protocol": "anthropic", "usage_mode": "cached",
            "turns": [{"text": "one"}, {"text": "two", "pause_s": 400}]}"#,
    )
    .unwrap();
    let built = Script::anthropic([Turn::text("one"), Turn::text("two").after_pause_s(400)])
        .with_prompt_cache();
    assert_eq!(script, built);
    assert_eq!(script.usage_mode, UsageMode::Cached);
    assert_eq!(Script::from_json(&built.to_json_pretty()).unwrap(), built);
}
