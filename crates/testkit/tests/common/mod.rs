//! Shared test helpers: a plain reqwest client, posting JSON, and reading a streamed answer
//! both as raw reads (to count how the bytes arrived) and as parsed SSE events (through
//! eventsource-stream, the parser pith's adapters use).

#![allow(dead_code)] // each test binary uses a different subset

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;

/// A plain-http client. reqwest built with `rustls-no-provider` panics when a client is
/// built before a rustls crypto provider is installed, even for http:// only, so the ring
/// provider is installed once first.
pub fn client() -> reqwest::Client {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Err means another provider is already installed, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("a reqwest client for plain http builds")
}

/// POSTs `body` as JSON to `url`.
pub async fn post(url: &str, body: &Value) -> reqwest::Response {
    client()
        .post(url)
        .json(body)
        .send()
        .await
        .unwrap_or_else(|error| panic!("POST {url} failed before an answer: {error}"))
}

/// One parsed SSE event.
#[derive(Debug, Clone)]
pub struct Event {
    /// `event:` name (`message` when the stream has none).
    pub name: String,
    /// Raw `data:`.
    pub data: String,
}

impl Event {
    /// `data` as JSON (panics with the raw text when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|error| panic!("event data is not JSON ({error}): {}", self.data))
    }
}

/// A streamed answer as it was read.
#[derive(Debug)]
pub struct Streamed {
    /// Body reads, in order, as they came off the socket.
    pub reads: Vec<Bytes>,
    /// The error that ended the body early, if any.
    pub body_error: Option<String>,
}

impl Streamed {
    /// The whole body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.reads.concat()).expect("the body is UTF-8")
    }

    /// The events an SSE parser sees in the body.
    pub async fn events(&self) -> Vec<Event> {
        futures::stream::iter(self.reads.iter().cloned().map(Ok::<Bytes, Infallible>))
            .eventsource()
            .map(|event| {
                let event = event.expect("the SSE parser accepts the stream");
                Event {
                    name: event.event,
                    data: event.data,
                }
            })
            .collect()
            .await
    }
}

/// Reads the body chunk by chunk until it ends or fails.
pub async fn read_body(mut response: reqwest::Response) -> Streamed {
    let mut reads = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => reads.push(chunk),
            Ok(None) => {
                return Streamed {
                    reads,
                    body_error: None,
                }
            }
            Err(error) => {
                return Streamed {
                    reads,
                    body_error: Some(format!("{error:?}")),
                }
            }
        }
    }
}

/// POSTs a request and reads its whole body as a stream, checking it is a 200 SSE answer.
pub async fn stream(url: &str, body: &Value) -> Streamed {
    let response = post(url, body).await;
    assert_eq!(response.status(), 200, "a streamed answer is a 200");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "a streamed answer is text/event-stream, got {content_type:?}"
    );
    read_body(response).await
}

/// POSTs a request and returns status, headers and JSON body.
pub async fn call_json(url: &str, body: &Value) -> (u16, reqwest::header::HeaderMap, Value) {
    let response = post(url, body).await;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("the body reads completely");
    let json = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("the body is not JSON ({error}): {text}"));
    (status, headers, json)
}
