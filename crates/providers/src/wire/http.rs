//! The HTTP client every adapter uses, and the async-openai client built on it.
//!
//! TLS is rustls with the `ring` provider (installed once per process): it builds much
//! faster than the default aws-lc-rs and needs no C toolchain beyond what ring ships.
//! The loop owns retries, so the async-openai client gets a plain service without its
//! built-in retry layer; that service also turns every non-success HTTP response into an
//! [`HttpFailure`] that keeps the status, the `retry-after` header and the body, so the
//! adapters can classify failures exactly like the Anthropic adapter does.

use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;

use crate::wire::error::{parse_retry_after, ProviderError};

/// Connect timeout of every provider connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Fails only when another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client with pith's TLS setup and connect timeout. Request and idle timeouts
/// are enforced by the loop, per request.
pub fn http_client() -> Result<reqwest::Client, ProviderError> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("pith/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|err| {
            ProviderError::InvalidRequest(format!("cannot build the HTTP client: {err}"))
        })
}

/// A non-success HTTP response, kept whole for classification.
#[derive(Debug, Clone)]
pub struct HttpFailure {
    /// HTTP status code.
    pub status: u16,
    /// Parsed `retry-after` header.
    pub retry_after: Option<Duration>,
    /// Response body (lossy UTF-8).
    pub body: String,
}

impl std::fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HTTP {}: {}", self.status, self.body)
    }
}

impl std::error::Error for HttpFailure {}

impl HttpFailure {
    /// Reads a failed response.
    pub async fn read(response: reqwest::Response) -> Self {
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = response.text().await.unwrap_or_default();
        Self {
            status,
            retry_after,
            body,
        }
    }

    /// The classified provider error.
    pub fn into_provider_error(self) -> ProviderError {
        ProviderError::from_http(self.status, self.retry_after, &self.body)
    }
}

/// Why [`send`] returned no successful response.
#[derive(Debug)]
pub enum SendError {
    /// The request never got a response (connection, TLS, timeout).
    Transport(reqwest::Error),
    /// The server answered with a non-success status.
    Status(HttpFailure),
}

impl SendError {
    /// The classified provider error.
    pub fn into_provider_error(self) -> ProviderError {
        match self {
            SendError::Transport(error) => ProviderError::Connection(error.to_string()),
            SendError::Status(failure) => failure.into_provider_error(),
        }
    }
}

/// Sends one request and returns its response when the status is a success; any other
/// status is read into an [`HttpFailure`]. Every adapter's bytes take this path: the
/// Anthropic adapter calls it directly, the OpenAI adapters through [`PlainService`].
pub async fn send(
    client: &reqwest::Client,
    request: reqwest::Request,
) -> Result<reqwest::Response, SendError> {
    let response = client
        .execute(request)
        .await
        .map_err(SendError::Transport)?;
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(SendError::Status(HttpFailure::read(response).await))
    }
}

/// The tower service async-openai sends requests through: no retries, failures kept whole.
#[derive(Clone, Debug)]
pub struct PlainService {
    client: reqwest::Client,
}

impl tower::Service<HttpRequestFactory> for PlainService {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let client = self.client.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            send(&client, request).await.map_err(|error| match error {
                SendError::Transport(error) => OpenAIError::Reqwest(error),
                SendError::Status(failure) => OpenAIError::Boxed(Box::new(failure)),
            })
        })
    }
}

/// An async-openai client for `base_url` (e.g. `https://api.openai.com/v1`).
pub fn openai_client(
    base_url: &str,
    api_key: Option<&str>,
) -> Result<async_openai::Client<OpenAIConfig>, ProviderError> {
    // `http_client` installs the crypto provider, and `Client::with_config` builds a
    // default reqwest client of its own (replaced just after): the provider must be in
    // place first or that build panics.
    let client = http_client()?;
    let config = OpenAIConfig::new()
        .with_api_base(base_url.trim_end_matches('/'))
        .with_api_key(api_key.unwrap_or_default());
    Ok(async_openai::Client::with_config(config).with_http_service(PlainService { client }))
}

/// Maps an async-openai error onto [`ProviderError`].
pub fn map_openai_error(error: OpenAIError) -> ProviderError {
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
            Ok(failure) => failure.into_provider_error(),
            Err(other) => ProviderError::Connection(other.to_string()),
        },
        OpenAIError::ApiError(api) => {
            ProviderError::from_http(api.status_code.as_u16(), None, &api.api_error.message)
        }
        OpenAIError::Reqwest(err) => {
            if err.is_timeout() {
                ProviderError::Timeout(CONNECT_TIMEOUT)
            } else if err.is_decode() || err.is_body() {
                ProviderError::Stream(format!("the response body broke off: {err}"))
            } else {
                ProviderError::Connection(err.to_string())
            }
        }
        OpenAIError::JSONDeserialize(err, content) => {
            let excerpt: String = content.chars().take(200).collect();
            ProviderError::Stream(format!("unparseable event ({err}): {excerpt}"))
        }
        OpenAIError::StreamError(err) => ProviderError::Stream(err.to_string()),
        OpenAIError::InvalidArgument(message) => ProviderError::InvalidRequest(message),
        other => ProviderError::Connection(other.to_string()),
    }
}
