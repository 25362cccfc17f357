//! The server around the wire formats: the over-the-script 500, rejections, request
//! recording and redaction, waiting for requests, the record file, chunk pacing, base URLs
//! and shutdown.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::Duration;

use common::{call_json, client, post, read_body};
use pith_testkit::{Protocol, Script, TestServer, TestkitError, Turn, REDACTED};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn a_request_beyond_the_script_gets_a_500_that_says_so() {
    for protocol in [
        Protocol::OpenAiChat,
        Protocol::OpenAiResponses,
        Protocol::Anthropic,
    ] {
        let server = TestServer::start(Script::new(protocol, [Turn::text("only")])).unwrap();
        let (first, _, _) = call_json(&server.endpoint_url(), &json!({"model": "m"})).await;
        assert_eq!(first, 200);
        let (status, _, body) = call_json(&server.endpoint_url(), &json!({"model": "m"})).await;
        assert_eq!(status, 500, "{protocol:?}");
        let text = body.to_string();
        assert!(
            text.contains("pith-testkit: script exhausted")
                && text.contains("needs turn 2")
                && text.contains("only 1 turn"),
            "{protocol:?}: the 500 must say the script ran out: {text}"
        );
        assert_eq!(
            server.request_count(),
            2,
            "the extra request is recorded too"
        );
    }
}

#[tokio::test]
async fn requests_are_recorded_in_order_with_secrets_redacted() {
    let server =
        TestServer::start(Script::anthropic([Turn::text("one"), Turn::text("two")])).unwrap();
    for (n, secret) in [(1, "sk-ant-very-secret"), (2, "sk-ant-other-secret")] {
        let response = client()
            .post(server.endpoint_url())
            .header("x-api-key", secret)
            .header("Authorization", format!("Bearer {secret}"))
            .header("anthropic-version", "2023-06-01")
            .json(&json!({"model": "m", "max_tokens": 8, "n": n}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].body["n"], 1);
    assert_eq!(requests[1].body["n"], 2);
    assert_eq!(requests[0].header("X-API-KEY"), Some(REDACTED));
    assert_eq!(requests[0].header("authorization"), Some(REDACTED));
    assert_eq!(requests[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    let everything = format!("{requests:?}");
    assert!(
        !everything.contains("secret"),
        "no secret may be recorded anywhere: {everything}"
    );
}

#[tokio::test]
async fn a_wrong_path_is_rejected_naming_the_right_one_and_consumes_no_turn() {
    let server = TestServer::start(Script::anthropic([Turn::text("the first turn")])).unwrap();
    let wrong = format!("{}/v1/chat/completions", server.origin());
    let (status, _, body) = call_json(&wrong, &json!({"model": "m"})).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["type"], "not_found_error");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("POST /v1/messages") && message.contains("/v1/chat/completions"),
        "{message}"
    );
    let (status, _, body) = call_json(&server.endpoint_url(), &json!({"model": "m"})).await;
    assert_eq!(status, 200);
    assert_eq!(body["content"][0]["text"], "the first turn");
    assert_eq!(server.request_count(), 2);
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn a_body_that_is_not_json_is_rejected_and_recorded_as_text() {
    let server = TestServer::start(Script::openai_chat([Turn::text("unused")])).unwrap();
    let response = client()
        .post(server.endpoint_url())
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not JSON"));
    assert_eq!(server.requests()[0].body, json!("{not json"));
    assert_eq!(server.turns_served(), 0, "a rejected request uses no turn");
}

#[tokio::test]
async fn waiting_for_requests_returns_when_the_nth_arrives_and_times_out_with_counts() {
    let server =
        TestServer::start(Script::openai_chat([Turn::text("a"), Turn::text("b")])).unwrap();
    let url = server.endpoint_url();
    let sender = tokio::spawn(async move {
        for _ in 0..2 {
            post(&url, &json!({"model": "m"}))
                .await
                .text()
                .await
                .unwrap();
        }
    });
    let requests = server
        .wait_for_requests(2, Duration::from_secs(20))
        .await
        .unwrap();
    assert_eq!(requests.len(), 2);
    sender.await.unwrap();

    let error = server
        .wait_for_requests(3, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            TestkitError::WaitTimedOut {
                wanted: 3,
                received: 2,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn blocking_wait_sees_requests_sent_from_another_thread() {
    let server = TestServer::start(Script::anthropic([Turn::text("a")])).unwrap();
    let url = server.endpoint_url();
    let sender = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async { post(&url, &json!({"model": "m"})).await.text().await })
    });
    let requests = server
        .wait_for_requests_blocking(1, Duration::from_secs(20))
        .unwrap();
    assert_eq!(requests[0].body["model"], "m");
    assert!(sender.join().unwrap().unwrap().contains("\"a\""));
}

#[tokio::test]
async fn the_record_file_holds_one_body_per_line_while_the_server_runs() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = TestServer::builder(Script::openai_responses([Turn::text("a"), Turn::text("b")]))
        .record_to(&record)
        .start()
        .unwrap();
    for n in 1..=2 {
        let (status, _, _) =
            call_json(&server.endpoint_url(), &json!({"model": "m", "n": n})).await;
        assert_eq!(status, 200);
        let lines: Vec<Value> = std::fs::read_to_string(&record)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), n, "one line per request, written at once");
        assert_eq!(lines[n - 1], json!({"model": "m", "n": n}));
    }
}

/// Reads a raw HTTP/1.1 answer from the socket, returning every read as it came.
async fn raw_reads(server: &TestServer, body: &Value) -> Vec<String> {
    let mut socket = tokio::net::TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .unwrap();
    let body = body.to_string();
    let request = format!(
        "POST {} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        server.protocol().endpoint_path(),
        body.len()
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut reads = Vec::new();
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = socket.read(&mut buffer).await.unwrap();
        if n == 0 {
            return reads;
        }
        reads.push(String::from_utf8_lossy(&buffer[..n]).into_owned());
    }
}

#[tokio::test]
async fn chunk_delay_dribbles_every_event_in_its_own_socket_read() {
    let text = "A summary that streams slowly, piece by piece.";
    let server = TestServer::start(Script::anthropic(
        [Turn::text(text).with_chunk_delay_ms(50)],
    ))
    .unwrap();
    let reads = raw_reads(
        &server,
        &json!({"model": "m", "max_tokens": 64, "stream": true}),
    )
    .await;
    let events_per_read: Vec<usize> = reads
        .iter()
        .map(|r| r.matches("\ndata: ").count())
        .filter(|&n| n > 0)
        .collect();
    let total: usize = events_per_read.iter().sum();
    assert!(total > 5, "the answer has many events: {reads:?}");
    // Without the delay all events arrive in one or two reads. A machine stalled for longer
    // than the delay may merge a pair now and then, so a little slack is allowed.
    assert!(
        events_per_read.len() * 4 >= total * 3,
        "with a chunk delay the events must arrive one by one, got {events_per_read:?} events \
         per read"
    );

    // Through reqwest: each SSE event is its own HTTP chunk, so a client reads it alone.
    let server = TestServer::start(Script::openai_chat([
        Turn::text(text).with_chunk_delay_ms(10)
    ]))
    .unwrap();
    let response = post(
        &server.endpoint_url(),
        &json!({"model": "m", "stream": true}),
    )
    .await;
    let streamed = read_body(response).await;
    let events = streamed.events().await;
    assert_eq!(
        streamed.reads.len(),
        events.len(),
        "each SSE event is sent as its own HTTP chunk"
    );
}

#[tokio::test]
async fn base_urls_follow_each_sdks_convention() {
    let chat = TestServer::start(Script::openai_chat([])).unwrap();
    assert_eq!(chat.base_url(), format!("{}/v1", chat.origin()));
    assert_eq!(
        chat.endpoint_url(),
        format!("{}/chat/completions", chat.base_url())
    );
    let responses = TestServer::start(Script::openai_responses([])).unwrap();
    assert_eq!(
        responses.endpoint_url(),
        format!("{}/responses", responses.base_url())
    );
    let anthropic = TestServer::start(Script::anthropic([])).unwrap();
    assert_eq!(anthropic.base_url(), anthropic.origin());
    assert_eq!(
        anthropic.endpoint_url(),
        format!("{}/v1/messages", anthropic.base_url())
    );
    assert!(anthropic.origin().starts_with("http://127.0.0.1:"));
}

#[tokio::test]
async fn a_given_port_is_used() {
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = TestServer::builder(Script::anthropic([Turn::text("hi")]))
        .port(free_port)
        .start()
        .unwrap();
    assert_eq!(server.port(), free_port);
    assert_eq!(server.origin(), format!("http://127.0.0.1:{free_port}"));
    let (status, _, _) = call_json(&server.endpoint_url(), &json!({"model": "m"})).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_port_in_use_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let error = TestServer::builder(Script::anthropic([]))
        .port(port)
        .start()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains(&format!("bind 127.0.0.1:{port}")),
        "{error}"
    );
}

#[tokio::test]
async fn dropping_the_server_ends_hung_requests_and_frees_the_port() {
    let server = TestServer::start(Script::openai_chat([Turn::fault(
        pith_testkit::Fault::Hang,
    )]))
    .unwrap();
    let url = server.endpoint_url();
    let port = server.port();
    let hung =
        tokio::spawn(async move { client().post(url).json(&json!({"model": "m"})).send().await });
    server
        .wait_for_requests(1, Duration::from_secs(20))
        .await
        .unwrap();
    drop(server);
    let outcome = tokio::time::timeout(Duration::from_secs(10), hung)
        .await
        .expect("a hung request ends when the server is dropped")
        .unwrap();
    assert!(outcome.is_err(), "the hung request fails: {outcome:?}");
    assert!(
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err(),
        "nothing listens on the port any more"
    );
}
