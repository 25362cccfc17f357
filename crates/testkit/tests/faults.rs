//! Every fault, for every protocol, as a real client sees it: status, error body, headers,
//! cut or corrupt streams, hangs — and that a fault consumes its turn like any other.
//! Gemini, whose path (not its body) says whether the answer streams, has its own suite
//! in `tests/gemini.rs`.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::Duration;

use common::{call_json, client, post, read_body, stream};
use pith_testkit::{Fault, Protocol, Script, TestServer, Turn};
use serde_json::{json, Value};

const PROTOCOLS: [Protocol; 3] = [
    Protocol::OpenAiChat,
    Protocol::OpenAiResponses,
    Protocol::Anthropic,
];

/// Gemini is covered by `tests/gemini.rs`.
const ELSEWHERE: &str = "Gemini's faults are checked in tests/gemini.rs";

/// A minimal request body for `protocol`.
fn request(protocol: Protocol, streaming: bool) -> Value {
    match protocol {
        Protocol::OpenAiChat => json!({"model": "m", "stream": streaming, "messages": []}),
        Protocol::OpenAiResponses => json!({"model": "m", "stream": streaming, "input": "hi"}),
        Protocol::Anthropic => {
            json!({"model": "m", "max_tokens": 64, "stream": streaming, "messages": []})
        }
        Protocol::Gemini => unreachable!("{ELSEWHERE}"),
        Protocol::Bedrock => unreachable!("Bedrock's faults are checked in tests/bedrock.rs"),
    }
}

/// The error `type` and `message` of an error body, whatever the provider's shape.
fn error_type_and_message(protocol: Protocol, body: &Value) -> (String, String) {
    match protocol {
        Protocol::Anthropic => {
            assert_eq!(
                body["type"], "error",
                "Anthropic error bodies have type: error"
            );
            (
                body["error"]["type"].as_str().unwrap().to_owned(),
                body["error"]["message"].as_str().unwrap().to_owned(),
            )
        }
        _ => {
            assert!(
                body["error"].get("code").is_some(),
                "OpenAI errors carry code"
            );
            assert!(
                body["error"].get("param").is_some(),
                "OpenAI errors carry param"
            );
            (
                body["error"]["type"].as_str().unwrap().to_owned(),
                body["error"]["message"].as_str().unwrap().to_owned(),
            )
        }
    }
}

/// The event that normally ends a complete stream of `protocol`.
fn terminal_marker(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::OpenAiChat => "data: [DONE]",
        Protocol::OpenAiResponses => "event: response.completed",
        Protocol::Anthropic => "event: message_stop",
        Protocol::Gemini => unreachable!("{ELSEWHERE}"),
        Protocol::Bedrock => unreachable!("Bedrock's faults are checked in tests/bedrock.rs"),
    }
}

fn single_fault(protocol: Protocol, turn: Turn) -> TestServer {
    TestServer::start(Script::new(protocol, [turn])).unwrap()
}

#[tokio::test]
async fn http_429_sends_the_rate_limit_body_and_retry_after() {
    for protocol in PROTOCOLS {
        let server = single_fault(protocol, Turn::fault(Fault::Http429).with_retry_after_s(3));
        let (status, headers, body) =
            call_json(&server.endpoint_url(), &request(protocol, true)).await;
        assert_eq!(status, 429, "{protocol:?}");
        assert_eq!(
            headers["retry-after"], "3",
            "{protocol:?}: retry-after header"
        );
        let (error_type, _) = error_type_and_message(protocol, &body);
        match protocol {
            Protocol::Anthropic => assert_eq!(error_type, "rate_limit_error"),
            _ => assert_eq!(body["error"]["code"], "rate_limit_exceeded"),
        }

        let no_hint = single_fault(protocol, Turn::fault(Fault::Http429));
        let (status, headers, _) =
            call_json(&no_hint.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(status, 429);
        assert!(
            headers.get("retry-after").is_none(),
            "{protocol:?}: no retry-after unless the script gives retry_after_s"
        );
    }
}

#[tokio::test]
async fn http_500_sends_the_server_error_body() {
    for protocol in PROTOCOLS {
        let server = single_fault(protocol, Turn::fault(Fault::Http500));
        let (status, _, body) = call_json(&server.endpoint_url(), &request(protocol, true)).await;
        assert_eq!(status, 500, "{protocol:?}");
        let (error_type, _) = error_type_and_message(protocol, &body);
        let expected = match protocol {
            Protocol::Anthropic => "api_error",
            _ => "server_error",
        };
        assert_eq!(error_type, expected, "{protocol:?}");
    }
}

#[tokio::test]
async fn overloaded_is_anthropic_529_and_openai_503() {
    for protocol in PROTOCOLS {
        let server = single_fault(
            protocol,
            Turn::fault(Fault::Overloaded).with_retry_after_s(2),
        );
        let (status, headers, body) =
            call_json(&server.endpoint_url(), &request(protocol, true)).await;
        let (error_type, message) = error_type_and_message(protocol, &body);
        match protocol {
            Protocol::Anthropic => {
                assert_eq!(status, 529);
                assert_eq!(error_type, "overloaded_error");
                assert_eq!(message, "Overloaded");
            }
            _ => {
                assert_eq!(status, 503, "{protocol:?}");
                assert_eq!(error_type, "server_error");
            }
        }
        assert_eq!(headers["retry-after"], "2");
    }
}

#[tokio::test]
async fn context_length_sends_each_providers_real_error() {
    for protocol in PROTOCOLS {
        let server = single_fault(
            protocol,
            Turn::fault(Fault::ContextLength).with_usage(250_000, 0),
        );
        let (status, _, body) = call_json(&server.endpoint_url(), &request(protocol, true)).await;
        assert_eq!(status, 400, "{protocol:?}");
        let (error_type, message) = error_type_and_message(protocol, &body);
        assert_eq!(error_type, "invalid_request_error", "{protocol:?}");
        match protocol {
            Protocol::Anthropic => {
                assert_eq!(
                    message,
                    "prompt is too long: 250000 tokens > 200000 maximum"
                )
            }
            Protocol::OpenAiChat => {
                assert_eq!(body["error"]["code"], "context_length_exceeded");
                assert!(
                    message.starts_with(
                        "This model's maximum context length is 128000 tokens. However, your \
                         messages resulted in 250000 tokens."
                    ),
                    "{message}"
                );
            }
            Protocol::OpenAiResponses => {
                assert_eq!(body["error"]["code"], "context_length_exceeded");
                assert!(message.contains("context window"), "{message}");
            }
            Protocol::Gemini => unreachable!("{ELSEWHERE}"),
            Protocol::Bedrock => unreachable!("checked in tests/bedrock.rs"),
        }
    }
}

#[tokio::test]
async fn drop_mid_stream_sends_some_events_then_cuts_the_connection() {
    for protocol in PROTOCOLS {
        let server = single_fault(
            protocol,
            Turn::text("A long answer that never arrives whole.").with_fault(Fault::DropMidStream),
        );
        let streamed = stream(&server.endpoint_url(), &request(protocol, true)).await;
        let text = streamed.text();
        assert!(
            streamed.body_error.is_some(),
            "{protocol:?}: the client must see the connection break, got a clean end after {text:?}"
        );
        assert!(
            text.matches("data: ").count() >= 2,
            "{protocol:?}: some events arrive before the cut: {text:?}"
        );
        assert!(
            !text.contains(terminal_marker(protocol)),
            "{protocol:?}: the stream must not complete: {text:?}"
        );

        let plain = single_fault(protocol, Turn::fault(Fault::DropMidStream));
        let response = post(&plain.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(response.status(), 200);
        assert!(
            response.text().await.is_err(),
            "{protocol:?}: a non-streaming body is cut too"
        );
    }
}

#[tokio::test]
async fn malformed_sse_puts_one_corrupt_data_line_mid_stream_and_finishes() {
    for protocol in PROTOCOLS {
        let server = single_fault(
            protocol,
            Turn::text("Some text streamed in pieces.").with_fault(Fault::MalformedSse),
        );
        let streamed = stream(&server.endpoint_url(), &request(protocol, true)).await;
        assert!(streamed.body_error.is_none(), "{protocol:?}");
        let events = streamed.events().await;
        let corrupt: Vec<usize> = events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.data != "[DONE]" && serde_json::from_str::<Value>(&e.data).is_err())
            .map(|(index, _)| index)
            .collect();
        assert_eq!(
            corrupt.len(),
            1,
            "{protocol:?}: exactly one corrupt data line"
        );
        assert!(
            corrupt[0] > 0 && corrupt[0] < events.len() - 1,
            "{protocol:?}: the corrupt line is mid-stream"
        );
        assert!(streamed.text().contains(terminal_marker(protocol)));

        let plain = single_fault(protocol, Turn::fault(Fault::MalformedSse));
        let response = post(&plain.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(response.status(), 200);
        let body = response.text().await.unwrap();
        assert!(
            serde_json::from_str::<Value>(&body).is_err(),
            "{protocol:?}: a non-streaming answer is malformed JSON: {body}"
        );
    }
}

#[tokio::test]
async fn stream_error_ends_a_200_stream_with_the_providers_error_event() {
    for protocol in PROTOCOLS {
        let server = single_fault(
            protocol,
            Turn::text("Some text streamed in pieces.").with_fault(Fault::StreamError),
        );
        let streamed = stream(&server.endpoint_url(), &request(protocol, true)).await;
        assert!(
            streamed.body_error.is_none(),
            "{protocol:?}: the HTTP body ends normally"
        );
        let events = streamed.events().await;
        assert!(
            events.len() >= 3,
            "{protocol:?}: some events come before the error"
        );
        let last = events.last().unwrap();
        let error = last.json();
        match protocol {
            Protocol::Anthropic => {
                assert_eq!(last.name, "error");
                assert_eq!(error["type"], "error");
                assert_eq!(error["error"]["type"], "overloaded_error");
            }
            Protocol::OpenAiResponses => {
                assert_eq!(last.name, "error");
                assert_eq!(error["sequence_number"], events.len() - 1);
                serde_json::from_value::<async_openai::types::responses::ResponseStreamEvent>(
                    error.clone(),
                )
                .unwrap_or_else(|e| panic!("async-openai rejects {error}: {e}"));
            }
            Protocol::OpenAiChat => {
                assert_eq!(error["error"]["type"], "server_error");
            }
            Protocol::Gemini => unreachable!("{ELSEWHERE}"),
            Protocol::Bedrock => unreachable!("checked in tests/bedrock.rs"),
        }
        assert!(
            !streamed.text().contains(terminal_marker(protocol)),
            "{protocol:?}: the stream never completes"
        );

        let plain = single_fault(protocol, Turn::fault(Fault::StreamError));
        let (status, _, _) = call_json(&plain.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(
            status, 500,
            "{protocol:?}: without streaming it is an HTTP 500"
        );
    }
}

#[tokio::test]
async fn hang_sends_headers_then_nothing_when_streaming_and_nothing_at_all_otherwise() {
    for protocol in PROTOCOLS {
        let server = single_fault(protocol, Turn::fault(Fault::Hang));
        let mut response = post(&server.endpoint_url(), &request(protocol, true)).await;
        assert_eq!(response.status(), 200, "{protocol:?}: the headers arrive");
        let first_chunk = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await;
        assert!(
            first_chunk.is_err(),
            "{protocol:?}: no byte of the body may arrive, got {first_chunk:?}"
        );

        let server = single_fault(protocol, Turn::fault(Fault::Hang));
        let outcome = client()
            .post(server.endpoint_url())
            .timeout(Duration::from_millis(300))
            .json(&request(protocol, false))
            .send()
            .await;
        assert!(
            outcome.as_ref().is_err_and(reqwest::Error::is_timeout),
            "{protocol:?}: a non-streaming request gets no answer, got {outcome:?}"
        );
    }
}

#[tokio::test]
async fn a_fault_consumes_its_turn_so_the_retry_gets_the_next_one() {
    for protocol in PROTOCOLS {
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::Http429), Turn::text("after the retry")],
        ))
        .unwrap();
        let (first, _, _) = call_json(&server.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(first, 429);
        let (second, _, body) = call_json(&server.endpoint_url(), &request(protocol, false)).await;
        assert_eq!(second, 200, "{protocol:?}");
        assert!(body.to_string().contains("after the retry"), "{body}");
        assert_eq!(server.turns_served(), 2);
    }
}

#[tokio::test]
async fn an_interrupted_stream_leaves_the_server_serving_the_next_turn() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("cut").with_fault(Fault::DropMidStream),
        Turn::text("whole"),
    ]))
    .unwrap();
    let cut = stream(&server.endpoint_url(), &request(Protocol::Anthropic, true)).await;
    assert!(cut.body_error.is_some());
    let response = post(&server.endpoint_url(), &request(Protocol::Anthropic, true)).await;
    let whole = read_body(response).await;
    assert!(whole.body_error.is_none());
    assert!(whole.text().contains("event: message_stop"));
}
