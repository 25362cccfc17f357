//! The one HTTP layer every adapter sends through: [`Transport`].
//!
//! - **TLS** is rustls with the `ring` provider (installed once per process): it builds
//!   much faster than the default aws-lc-rs and needs no C toolchain beyond what ring
//!   ships.
//! - **Redirects**: the client follows none. An API endpoint has no reason to redirect a
//!   POST, and reqwest would send `x-api-key` (Anthropic's key header, which it does not
//!   know to be a credential) to wherever the redirect points. A 3xx is a
//!   [`ProviderError::Redirect`] naming the target. With `follow_redirects` (a per-provider
//!   opt-in), [`Transport::send`] follows 307 and 308 itself, at most
//!   [`MAX_REDIRECTS`] times, and on a hop to another origin keeps only the headers in
//!   [`HEADERS_KEPT_ACROSS_ORIGINS`]: every credential-bearing header is dropped, whatever
//!   its name.
//! - **Bounded reading**: events are decoded by `wire::sse` in one pass, so a single
//!   server-sent event can never grow past `max_event_bytes` in memory; an error body is
//!   read up to `max_error_body_bytes` and the rest is dropped unread; a JSON body is read
//!   up to `max_body_bytes` ([`Transport::get_json`], [`Transport::post_json`]).
//! - **Binary framing**: AWS event streams (`application/vnd.amazon.eventstream`, Bedrock)
//!   come through [`Transport::post_messages`], each message bounded by the same
//!   `max_event_bytes` (`wire::eventstream`).
//! - **One path**: every adapter posts its body through [`Transport::post_events`] (or,
//!   for binary framing, [`Transport::post_messages`]) and reads the events it returns;
//!   retries belong to the loop.

use std::pin::Pin;
use std::sync::Once;
use std::time::Duration;

use futures::{Stream, StreamExt};
use reqwest::header::{HeaderName, LOCATION};

use crate::wire::bodies::decoded;
use crate::wire::error::{parse_retry_after, ProviderError};
use crate::wire::eventstream::FrameDecoder;
use crate::wire::limits::{human_bytes, WireLimits};
use crate::wire::sse::{SseDecoder, SseEvent};
use aws_smithy_types::event_stream::Message;

/// Connect timeout of every provider connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Most redirects followed when a provider opted in.
pub const MAX_REDIRECTS: usize = 5;

/// The only headers sent on after a redirect to another origin: none of them can carry a
/// credential. Everything else (`authorization`, `x-api-key`, `api-key`, cookies, custom
/// headers) is dropped.
pub const HEADERS_KEPT_ACROSS_ORIGINS: [&str; 6] = [
    "accept",
    "content-type",
    "content-length",
    "user-agent",
    "anthropic-version",
    "openai-beta",
];

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Fails only when another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// How one provider's HTTP traffic is handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HttpOptions {
    /// Bounds on what the server may send.
    pub limits: WireLimits,
    /// Follow 307/308 redirects (credentials never cross to another origin). Off by
    /// default.
    pub follow_redirects: bool,
}

/// A non-success HTTP response, its body read up to the error-body bound.
#[derive(Debug, Clone)]
pub struct HttpFailure {
    /// HTTP status code.
    pub status: u16,
    /// Parsed `retry-after` header.
    pub retry_after: Option<Duration>,
    /// Response body (lossy UTF-8), at most `max_error_body_bytes` of it.
    pub body: String,
    /// AWS's `x-amzn-errortype` header (`ThrottlingException:http://…`), when present.
    pub error_type: Option<String>,
}

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpFailure {}

impl HttpFailure {
    /// Reads a failed response, at most `max_bytes` of its body.
    pub async fn read(response: reqwest::Response, max_bytes: usize) -> Self {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let error_type = response
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (bytes, cut) = read_prefix(response, max_bytes).await;
        let mut body = String::from_utf8_lossy(&bytes).into_owned();
        if cut {
            body.push_str(&format!("… [body cut at {}]", human_bytes(max_bytes)));
        }
        Self {
            status,
            retry_after,
            body,
            error_type,
        }
    }

    /// The classified provider error.
    pub fn into_provider_error(self) -> ProviderError {
        ProviderError::from_http(self.status, self.retry_after, &self.body)
    }
}

/// Why [`Transport::send`] returned no successful response.
#[derive(Debug)]
pub enum SendError {
    /// The request never got a response (connection, TLS, timeout).
    Transport(reqwest::Error),
    /// The server answered with a non-success status.
    Status(HttpFailure),
    /// A redirect that is not followed.
    Redirect {
        /// The 3xx status.
        status: u16,
        /// Where it pointed.
        location: String,
    },
    /// The request could not be repeated for a redirect, or the redirect is unusable.
    Invalid(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Transport(error) => write!(f, "connection error: {error}"),
            SendError::Status(failure) => write!(f, "{failure}"),
            SendError::Redirect { status, location } => {
                write!(f, "HTTP {status} redirecting to {location}")
            }
            SendError::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SendError {}

impl SendError {
    /// The classified provider error.
    pub fn into_provider_error(self) -> ProviderError {
        match self {
            SendError::Transport(error) => ProviderError::Connection(error.to_string()),
            SendError::Status(failure) => failure.into_provider_error(),
            SendError::Redirect { status, location } => {
                ProviderError::Redirect { status, location }
            }
            SendError::Invalid(message) => ProviderError::InvalidRequest(message),
        }
    }
}

/// A provider's HTTP client with pith's TLS setup, connect timeout, redirect rule and
/// response bounds. Cheap to clone. Request and idle timeouts are enforced by the loop.
#[derive(Debug, Clone)]
pub struct Transport {
    client: reqwest::Client,
    options: HttpOptions,
}

impl Transport {
    /// A transport with `options`.
    pub fn new(options: HttpOptions) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("pith/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|err| {
                ProviderError::InvalidRequest(format!("cannot build the HTTP client: {err}"))
            })?;
        Ok(Self { client, options })
    }

    /// The bounds in force.
    pub fn limits(&self) -> &WireLimits {
        &self.options.limits
    }

    /// The underlying client, to build requests with.
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `request` and returns its response when the status is a success, its body
    /// bounded (see the module docs); any other status is read into an [`HttpFailure`];
    /// a redirect is refused or, when the provider opted in, followed.
    pub async fn send(
        &self,
        mut request: reqwest::Request,
    ) -> Result<reqwest::Response, SendError> {
        for _ in 0..=MAX_REDIRECTS {
            let retry = if self.options.follow_redirects {
                request.try_clone()
            } else {
                None
            };
            let response = self
                .client
                .execute(request)
                .await
                .map_err(SendError::Transport)?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            if !status.is_redirection() {
                return Err(SendError::Status(
                    HttpFailure::read(response, self.options.limits.max_error_body_bytes).await,
                ));
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("(no location)")
                .to_owned();
            let refused = SendError::Redirect {
                status: status.as_u16(),
                location: location.clone(),
            };
            let method_kept = matches!(status.as_u16(), 307 | 308);
            let Some(mut next) = retry.filter(|_| method_kept) else {
                tracing::warn!(status = status.as_u16(), %location, "redirect not followed");
                return Err(refused);
            };
            let target = response.url().join(&location).map_err(|e| {
                SendError::Invalid(format!("bad redirect location {location}: {e}"))
            })?;
            if target.origin() != next.url().origin() {
                strip_to_safe_headers(next.headers_mut());
            }
            tracing::debug!(status = status.as_u16(), %target, "following a redirect");
            *next.url_mut() = target;
            request = next;
        }
        Err(SendError::Invalid(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    /// `GET url` and its JSON body (at most `max_body_bytes`).
    pub async fn get_json(
        &self,
        url: &str,
        timeout: Duration,
    ) -> Result<serde_json::Value, ProviderError> {
        self.json_of(url, self.client.get(url).timeout(timeout))
            .await
    }

    /// `POST url` with a JSON `body` and its JSON answer (at most `max_body_bytes`).
    pub async fn post_json(
        &self,
        url: &str,
        body: &serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, ProviderError> {
        self.json_of(url, self.client.post(url).timeout(timeout).json(body))
            .await
    }

    /// Builds and sends `request`; its JSON answer, read to at most `max_body_bytes`.
    async fn json_of(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<serde_json::Value, ProviderError> {
        let request = request
            .build()
            .map_err(|e| ProviderError::InvalidRequest(format!("{url}: {e}")))?;
        let response = self
            .send(request)
            .await
            .map_err(SendError::into_provider_error)?;
        let limit = self.options.limits.max_body_bytes;
        let (bytes, cut) = read_prefix(response, limit).await;
        if cut {
            return Err(ProviderError::LimitExceeded(format!(
                "a response body exceeded {} (max_body_bytes)",
                human_bytes(limit)
            )));
        }
        serde_json::from_slice(&bytes).map_err(|e| ProviderError::Stream(format!("{url}: {e}")))
    }
}

/// Keeps only [`HEADERS_KEPT_ACROSS_ORIGINS`].
fn strip_to_safe_headers(headers: &mut reqwest::header::HeaderMap) {
    let names: Vec<HeaderName> = headers.keys().cloned().collect();
    for name in names {
        if !HEADERS_KEPT_ACROSS_ORIGINS.contains(&name.as_str()) {
            headers.remove(&name);
        }
    }
}

/// Up to `max` bytes of `response`'s body, and whether more was left unread.
async fn read_prefix(response: reqwest::Response, max: usize) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let Ok(chunk) = chunk else { break };
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return (body, true);
        }
        body.extend_from_slice(&chunk);
    }
    (body, false)
}

/// Server-sent events of one response, errors classified.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<SseEvent, ProviderError>> + Send>>;

/// Binary event-stream messages of one response (`application/vnd.amazon.eventstream`),
/// errors classified.
pub type MessageStream = Pin<Box<dyn Stream<Item = Result<Message, ProviderError>> + Send>>;

/// The `accept` of an AWS event stream.
pub const EVENTSTREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

impl Transport {
    /// `POST url` with a JSON `body` and `headers`, expecting a stream of server-sent
    /// events: the path of every SSE protocol's request. Events come bounded
    /// (`wire::sse`); an error status, a redirect or a broken stream is a classified
    /// [`ProviderError`].
    pub async fn post_events(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<EventStream, ProviderError> {
        let response = self
            .post_streaming(url, "text/event-stream", headers, body)
            .await
            .map_err(SendError::into_provider_error)?;
        Ok(Box::pin(decoded(
            response.bytes_stream(),
            SseDecoder::new(self.options.limits.max_event_bytes),
        )))
    }

    /// `POST url` with a JSON `body` and `headers`, expecting binary event-stream messages
    /// (AWS): the same path as [`Transport::post_events`] with the framing of
    /// `wire::eventstream`, each message bounded by `max_event_bytes`. The request carries
    /// `content-type: application/json` and `accept: application/vnd.amazon.eventstream`
    /// besides `headers` (a signer signs the `content-type` it will get). An error status
    /// is classified by `classify` (the protocol's own error types).
    pub async fn post_messages(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        classify: fn(HttpFailure) -> ProviderError,
    ) -> Result<MessageStream, ProviderError> {
        let response = self
            .post_streaming(url, EVENTSTREAM_CONTENT_TYPE, headers, body)
            .await
            .map_err(|error| match error {
                SendError::Status(failure) => classify(failure),
                other => other.into_provider_error(),
            })?;
        Ok(Box::pin(decoded(
            response.bytes_stream(),
            FrameDecoder::new(self.options.limits.max_event_bytes),
        )))
    }

    /// The one streaming POST: JSON in, a successful response out (see [`Transport::send`]).
    async fn post_streaming(
        &self,
        url: &str,
        accept: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> Result<reqwest::Response, SendError> {
        let mut builder = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, accept)
            .body(body);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .build()
            .map_err(|err| SendError::Invalid(format!("{url}: {err}")))?;
        self.send(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_credential_free_headers_cross_origins() {
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer sk"),
            ("x-api-key", "sk-ant"),
            ("api-key", "azure"),
            ("x-custom-token", "t"),
            ("content-type", "application/json"),
            ("anthropic-version", "2023-06-01"),
        ] {
            headers.insert(
                HeaderName::from_static(name),
                reqwest::header::HeaderValue::from_static(value),
            );
        }
        strip_to_safe_headers(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(|k| k.as_str()).collect();
        left.sort();
        assert_eq!(left, ["anthropic-version", "content-type"]);
    }
}
