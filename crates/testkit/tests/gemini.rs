//! The Gemini protocol as a real client sees it: the model in the path, `alt=sse`,
//! data-only chunks ending with a `finishReason`, thought signatures (issued and checked
//! when they come back), Google's error bodies for every fault, and the hostile answers.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::Duration;

use common::{call_json, client, post, read_body, stream};
use pith_testkit::{Fault, Protocol, Script, TestServer, Turn, REDACTED};
use serde_json::{json, Value};

fn server(turns: Vec<Turn>) -> TestServer {
    TestServer::start(Script::gemini(turns)).unwrap()
}

/// The non-streaming URL of `model`.
fn json_url(server: &TestServer, model: &str) -> String {
    format!("{}/v1beta/models/{model}:generateContent", server.origin())
}

/// The streaming URL of `model`.
fn sse_url(server: &TestServer, model: &str) -> String {
    format!(
        "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
        server.origin()
    )
}

fn hello() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

/// Every part of every chunk of a streamed answer, and the chunks.
async fn chunks(url: &str, body: &Value) -> Vec<Value> {
    let streamed = stream(url, body).await;
    assert!(streamed.body_error.is_none(), "{streamed:?}");
    streamed
        .events()
        .await
        .iter()
        .map(|event| {
            assert_eq!(event.name, "message", "data-only events");
            event.json()
        })
        .collect()
}

fn parts_of(chunks: &[Value]) -> Vec<Value> {
    chunks
        .iter()
        .flat_map(|c| {
            c["candidates"][0]["content"]["parts"]
                .as_array()
                .cloned()
                .unwrap()
        })
        .collect()
}

#[tokio::test]
async fn a_thinking_tool_turn_streams_thoughts_calls_with_the_signature_and_usage() {
    let server = server(vec![Turn::text("Reading.")
        .with_reasoning("I should read both files.")
        .with_tool_call("read", json!({"path": "a"}))
        .with_tool_call("read", json!({"path": "b"}))
        .with_usage(1000, 50)
        .with_cached_input(600)
        .with_reasoning_tokens(30)]);
    let chunks = chunks(&sse_url(&server, "gemini-2.5-pro"), &hello()).await;
    let last = chunks.last().unwrap();
    assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    assert_eq!(
        last["usageMetadata"],
        json!({"promptTokenCount": 1000, "cachedContentTokenCount": 600,
               "candidatesTokenCount": 20, "thoughtsTokenCount": 30, "totalTokenCount": 1050})
    );
    assert!(chunks.iter().all(|c| c["modelVersion"] == "gemini-2.5-pro"));
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c["candidates"][0].get("finishReason").is_none()),
        "only the last chunk ends the answer"
    );
    let parts = parts_of(&chunks);
    let thought: String = parts
        .iter()
        .filter(|p| p["thought"] == true)
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "I should read both files.");
    let calls: Vec<&Value> = parts
        .iter()
        .filter(|p| p.get("functionCall").is_some())
        .collect();
    assert_eq!(
        *calls[0],
        json!({"functionCall": {"id": "fc_1", "name": "read", "args": {"path": "a"}},
               "thoughtSignature": "testkit-signature-1"})
    );
    assert!(
        calls[1].get("thoughtSignature").is_none(),
        "the first call only"
    );
    let request = server.requests().pop().unwrap();
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    );
    assert_eq!(request.query, "alt=sse");
}

#[tokio::test]
async fn a_text_answer_signs_an_empty_last_part_and_json_answers_are_whole() {
    let server = server(vec![
        Turn::text("Done.").with_reasoning("Easy."),
        Turn::text("Plain."),
    ]);
    let parts = parts_of(&chunks(&sse_url(&server, "m"), &hello()).await);
    assert_eq!(
        parts.last().unwrap(),
        &json!({"text": "", "thoughtSignature": "testkit-signature-1"})
    );
    let (status, _, body) = call_json(&json_url(&server, "m"), &hello()).await;
    assert_eq!(status, 200);
    assert_eq!(
        body["candidates"][0]["content"]["parts"],
        json!([{"text": "Plain."}])
    );
    assert_eq!(body["candidates"][0]["finishReason"], "STOP");
}

/// What the client sends back: a signature the testkit never issued, and a reasoning
/// turn's call in the current turn without its signature, are refused as Gemini does.
#[tokio::test]
async fn thought_signatures_must_come_back_unchanged() {
    let script = || {
        vec![
            Turn::tool_call("read", json!({"path": "a"})).with_reasoning("think"),
            Turn::text("ok"),
        ]
    };
    let history = |signature: Option<&str>| {
        let mut call =
            json!({"functionCall": {"id": "fc_1", "name": "read", "args": {"path": "a"}}});
        if let Some(signature) = signature {
            call["thoughtSignature"] = json!(signature);
        }
        json!({"contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [call]},
            {"role": "user", "parts": [{"functionResponse": {"id": "fc_1", "name": "read", "response": {"output": "A"}}}]},
        ]})
    };
    for (signature, refusal) in [
        (None, Some("missing a thought_signature")),
        (Some("forged"), Some("Corrupted thought signature")),
        (Some("testkit-signature-1"), None),
    ] {
        let server = server(script());
        let (first, _, _) = call_json(&json_url(&server, "m"), &hello()).await;
        assert_eq!(first, 200);
        let (status, _, body) = call_json(&json_url(&server, "m"), &history(signature)).await;
        match refusal {
            Some(wording) => {
                assert_eq!(status, 400, "{signature:?}");
                assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
                let message = body["error"]["message"].as_str().unwrap();
                assert!(message.contains(wording), "{message}");
                assert_eq!(server.turns_served(), 1, "a refusal uses no turn");
            }
            None => assert_eq!(status, 200, "{body}"),
        }
    }
    // A call of an earlier turn (before the last user text) is not checked, as Gemini 3
    // checks only the current turn.
    let server = server(script());
    let mut earlier = history(None);
    earlier["contents"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "parts": [{"text": "next"}]}));
    let (status, _, _) = call_json(&json_url(&server, "m"), &earlier).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn paths_queries_and_keys_are_checked_and_the_key_is_never_recorded() {
    let server = server(vec![Turn::text("a"), Turn::text("b")]);
    let response = client()
        .post(sse_url(&server, "m"))
        .header("x-goog-api-key", "AIza-secret")
        .json(&hello())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let recorded = server.requests().pop().unwrap();
    assert_eq!(recorded.header("x-goog-api-key"), Some(REDACTED));
    let without_sse = format!("{}/v1beta/models/m:streamGenerateContent", server.origin());
    let (status, _, body) = call_json(&without_sse, &hello()).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("alt=sse"));
    let (status, _, body) =
        call_json(&format!("{}&key=AIza", sse_url(&server, "m")), &hello()).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("x-goog-api-key"));
    let (status, _, body) = call_json(&format!("{}/v1/messages", server.origin()), &hello()).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["status"], "NOT_FOUND");
    assert_eq!(server.turns_served(), 1, "rejections use no turn");
}

fn fault(fault: Fault) -> TestServer {
    server(vec![Turn::fault(fault).with_retry_after_s(2)])
}

#[tokio::test]
async fn http_faults_send_googles_error_bodies() {
    for (kind, status, name) in [
        (Fault::Http429, 429, "RESOURCE_EXHAUSTED"),
        (Fault::Http500, 500, "INTERNAL"),
        (Fault::Overloaded, 503, "UNAVAILABLE"),
    ] {
        let server = fault(kind);
        let (got, headers, body) = call_json(&server.endpoint_url(), &hello()).await;
        assert_eq!(got, status, "{kind:?}");
        assert_eq!(body["error"]["code"], status, "{kind:?}");
        assert_eq!(body["error"]["status"], name, "{kind:?}");
        assert_eq!(headers["retry-after"], "2");
    }
    let server = server(vec![
        Turn::fault(Fault::ContextLength).with_usage(2_000_000, 0)
    ]);
    let (status, _, body) = call_json(&server.endpoint_url(), &hello()).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        "The input token count (2000000) exceeds the maximum number of tokens allowed (1048576)."
    );
}

#[tokio::test]
async fn broken_streams_end_without_a_finish_reason() {
    let text = || Turn::text("Some text streamed in several pieces here.");
    let dropped = server(vec![text().with_fault(Fault::DropMidStream)]);
    let streamed = stream(&dropped.endpoint_url(), &hello()).await;
    assert!(streamed.body_error.is_some(), "the connection breaks");
    assert!(!streamed.text().contains("finishReason"));

    let malformed = server(vec![text().with_fault(Fault::MalformedSse)]);
    let streamed = stream(&malformed.endpoint_url(), &hello()).await;
    let events = streamed.events().await;
    let corrupt = events
        .iter()
        .filter(|e| serde_json::from_str::<Value>(&e.data).is_err())
        .count();
    assert_eq!(corrupt, 1, "exactly one corrupt chunk");
    assert!(streamed.text().contains("finishReason"), "the rest follows");

    let failed = server(vec![text().with_fault(Fault::StreamError)]);
    let events = stream(&failed.endpoint_url(), &hello())
        .await
        .events()
        .await;
    let last = events.last().unwrap().json();
    assert_eq!(last["error"]["code"], 503);
    assert_eq!(last["error"]["status"], "UNAVAILABLE");
    assert!(events.len() >= 2, "some chunks come before the error");

    let hung = fault(Fault::Hang);
    let mut response = post(&hung.endpoint_url(), &hello()).await;
    assert_eq!(response.status(), 200);
    let first = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await;
    assert!(first.is_err(), "no byte arrives");
}

/// The first `count` bytes of a hostile answer, cut at a chunk boundary.
async fn head(turn: Turn, count: usize) -> (u16, String) {
    let server = server(vec![turn]);
    let mut response = post(&server.endpoint_url(), &hello()).await;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while body.len() < count {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn hostile_answers_speak_gemini_until_they_stop_making_sense() {
    for kind in [
        Fault::EndlessText,
        Fault::RepeatedLine,
        Fault::HeartbeatsOnly,
    ] {
        let (status, text) = head(Turn::fault(kind), 2_000).await;
        assert_eq!(status, 200);
        let first = text.split("\n\n").next().unwrap();
        let chunk: Value = serde_json::from_str(first.strip_prefix("data: ").unwrap())
            .unwrap_or_else(|e| panic!("{kind:?}: {e}: {first}"));
        assert!(chunk["candidates"][0]["content"]["parts"][0]["text"].is_string());
    }
    let server = server(vec![Turn::fault(Fault::ManyToolCalls).with_count(3)]);
    let streamed = read_body(post(&server.endpoint_url(), &hello()).await).await;
    let events = streamed.events().await;
    let calls = events
        .iter()
        .filter(|e| {
            e.json()["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]
                == json!({"path": "f.txt"})
        })
        .count();
    assert_eq!(calls, 3, "{events:?}");
    assert_eq!(
        events.last().unwrap().json()["candidates"][0]["finishReason"],
        "STOP"
    );
    let (_, text) = head(Turn::fault(Fault::HugeToolArguments).with_size_mb(1), 100).await;
    // The start of a huge call (key order is serde_json's: sorted, or as written).
    assert!(
        text.starts_with("data: {\"candidates\":[{\"content\":{")
            && text.contains("\"parts\":[{\"functionCall\":{"),
        "{text:.200}"
    );
    let (status, _) = head(Turn::fault(Fault::HugeErrorBody), 10).await;
    assert_eq!(status, 500);
}

#[test]
fn the_script_format_names_gemini() {
    let script = Script::from_json(r#"{"protocol": "gemini", "turns": [{"text": "hi"}]}"#).unwrap();
    assert_eq!(script.protocol, Protocol::Gemini);
    assert_eq!(Protocol::Gemini.tool_call_id_prefix(), "fc_");
}
