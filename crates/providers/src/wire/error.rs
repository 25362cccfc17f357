//! Errors of a model request, classified so the loop can decide what to do with them.
//!
//! Every adapter maps its provider's failures onto [`ProviderError`]; the loop only looks
//! at [`ProviderError::is_retryable`] and [`ProviderError::retry_after`], and a
//! context-length rejection is always the typed
//! [`ProviderError::ContextLengthExceeded`] — it never starts a compaction.

use std::time::Duration;

use thiserror::Error;

/// Why a model request failed.
#[derive(Debug, Clone, Error)]
pub enum ProviderError {
    /// The provider rejected the request because the prompt is longer than the window.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded {
        /// The provider's own message.
        message: String,
    },
    /// HTTP 429: rate limited.
    #[error("rate limited by the provider (HTTP 429): {message}")]
    RateLimited {
        /// The provider's message.
        message: String,
        /// The provider's `retry-after`, when given.
        retry_after: Option<Duration>,
    },
    /// The provider is overloaded (Anthropic 529, OpenAI 503).
    #[error("the provider is overloaded (HTTP {status}): {message}")]
    Overloaded {
        /// HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// The provider's `retry-after`, when given.
        retry_after: Option<Duration>,
    },
    /// Any other non-success HTTP status.
    #[error("the provider answered HTTP {status}: {message}")]
    Http {
        /// HTTP status.
        status: u16,
        /// The provider's message (or body excerpt).
        message: String,
    },
    /// The API key was missing or rejected.
    #[error("authentication failed (HTTP {status}): {message}")]
    Auth {
        /// HTTP status (401 or 403).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed or broke.
    #[error("connection error: {0}")]
    Connection(String),
    /// No response headers arrived within the request timeout.
    #[error("the provider did not answer within {0:?}")]
    Timeout(Duration),
    /// The stream went silent for longer than the idle timeout.
    #[error("the response stream was idle for more than {0:?}")]
    IdleTimeout(Duration),
    /// The stream ended early or contained something unparseable.
    #[error("broken response stream: {0}")]
    Stream(String),
    /// The provider reported an error inside an otherwise successful stream.
    #[error("the provider reported an error: {0}")]
    Provider(String),
    /// The server sent more than pith accepts (an event, tool arguments, tool calls or a
    /// body past its [`crate::wire::limits::WireLimits`]). Never retried.
    #[error("the provider's response is too large: {0}")]
    LimitExceeded(String),
    /// The server answered with a redirect, which an API endpoint has no reason to do;
    /// pith does not follow it (credentials must not travel to another address).
    #[error("the provider answered HTTP {status} redirecting to {location}; pith does not follow redirects of an API: set the provider's base URL to that address (or `follow_redirects = true` under [providers.NAME], which still never sends credentials to another origin)")]
    Redirect {
        /// HTTP status (301, 302, 303, 307, 308).
        status: u16,
        /// The `location` the server named.
        location: String,
    },
    /// The stream went on without any content (only pings or empty deltas) for longer
    /// than the no-content timeout.
    #[error("the response stream sent no content for more than {0:?} (only keep-alive events)")]
    NoContentTimeout(Duration),
    /// The request could not be built (bad configuration).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// The turn (or compaction) was cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The request was not sent: it would cross one of the job's ceilings
    /// (`--max-cost`, `--max-duration`). Never retried.
    #[error(transparent)]
    Ceiling(#[from] pith_core::CeilingReached),
}

impl ProviderError {
    /// True for failures worth retrying with backoff: 429, 5xx, overload, broken
    /// connections and streams, timeouts.
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Overloaded { .. }
            | Self::Connection(_)
            | Self::Timeout(_)
            | Self::IdleTimeout(_)
            | Self::Stream(_) => true,
            Self::Http { status, .. } => *status >= 500 || *status == 408 || *status == 409,
            Self::Provider(message) => {
                let lower = message.to_ascii_lowercase();
                lower.contains("overloaded")
                    || lower.contains("server_error")
                    || lower.contains("rate")
            }
            Self::ContextLengthExceeded { .. }
            | Self::Auth { .. }
            | Self::InvalidRequest(_)
            | Self::LimitExceeded(_)
            | Self::Redirect { .. }
            | Self::NoContentTimeout(_)
            | Self::Ceiling(_)
            | Self::Cancelled => false,
        }
    }

    /// The delay the provider asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }

    /// Classifies an HTTP failure from its status, headers and body.
    ///
    /// `body` is the raw error body; the provider's `message` is extracted from the usual
    /// `{"error": {"message": …}}` shape when present. Context-length rejections are
    /// recognised from every provider's documented wording.
    pub fn from_http(status: u16, retry_after: Option<Duration>, body: &str) -> Self {
        let message = error_message(body);
        if looks_like_context_length(status, body) {
            return Self::ContextLengthExceeded { message };
        }
        match status {
            429 => Self::RateLimited {
                message,
                retry_after,
            },
            529 | 503 => Self::Overloaded {
                status,
                message,
                retry_after,
            },
            401 | 403 => Self::Auth { status, message },
            _ => Self::Http { status, message },
        }
    }

    /// Classifies an error object that arrived inside a 200 stream.
    pub fn from_stream_error(kind: Option<&str>, code: Option<&str>, message: &str) -> Self {
        let joined = format!("{} {} {}", kind.unwrap_or(""), code.unwrap_or(""), message);
        if looks_like_context_length(400, &joined) {
            return Self::ContextLengthExceeded {
                message: message.to_owned(),
            };
        }
        if kind == Some("overloaded_error") {
            return Self::Overloaded {
                status: 529,
                message: message.to_owned(),
                retry_after: None,
            };
        }
        if kind == Some("rate_limit_error")
            || code == Some("rate_limit_exceeded")
            || code == Some("429")
        {
            return Self::RateLimited {
                message: message.to_owned(),
                retry_after: None,
            };
        }
        // OpenRouter reports a failure after its 200 with the HTTP status as a numeric
        // `code` (502: the upstream provider failed, 503: none available).
        if let Some(status) = code.and_then(|c| c.parse::<u16>().ok()) {
            if (400..600).contains(&status) {
                return Self::Http {
                    status,
                    message: message.to_owned(),
                };
            }
        }
        Self::Provider(joined.trim().to_owned())
    }
}

/// Extracts `error.message` (OpenAI and Anthropic shapes) or falls back to the body.
fn error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<serde_json::Value>(body) {
        let candidates = [
            value.pointer("/error/message"),
            value.pointer("/message"),
            value.pointer("/error"),
        ];
        for candidate in candidates.into_iter().flatten() {
            if let Some(text) = candidate.as_str() {
                return with_upstream(text, &value);
            }
        }
    }
    let trimmed = body.trim();
    if trimmed.len() > 500 {
        let mut end = 500;
        while !trimmed.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &trimmed[..end])
    } else if trimmed.is_empty() {
        "(empty body)".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// OpenRouter wraps the upstream provider's own error in `error.metadata`
/// (`provider_name`, `raw`): its message alone ("Provider returned error") says nothing,
/// so the upstream's name and an excerpt of its raw error follow it.
fn with_upstream(message: &str, value: &serde_json::Value) -> String {
    let Some(raw) = value.pointer("/error/metadata/raw") else {
        return message.to_owned();
    };
    let raw = match raw.as_str() {
        Some(text) => text.to_owned(),
        None => raw.to_string(),
    };
    let excerpt: String = raw.chars().take(300).collect();
    match value
        .pointer("/error/metadata/provider_name")
        .and_then(|p| p.as_str())
    {
        Some(provider) => format!("{message} ({provider}: {excerpt})"),
        None => format!("{message} ({excerpt})"),
    }
}

/// Every provider's wording for "the prompt does not fit": OpenAI's
/// `context_length_exceeded` code and "maximum context length" message, Anthropic's
/// "prompt is too long", Gemini's "exceeds the maximum number of tokens allowed",
/// llama.cpp's "exceeds the available context size", vLLM's and OpenRouter's variants.
fn looks_like_context_length(status: u16, body: &str) -> bool {
    if !(status == 400 || status == 413 || status == 422) {
        return false;
    }
    let lower = body.to_ascii_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceeds the available context size",
        "context window",
        "too many tokens",
        "exceed_context_size_error",
        "exceeds the maximum number of tokens allowed",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Parses a `retry-after` header value in seconds (fractions allowed). HTTP dates are
/// not supported and read as absent.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    if seconds.is_finite() && seconds >= 0.0 {
        Some(Duration::from_secs_f64(seconds.min(3600.0)))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openrouter_errors_name_the_upstream_and_keep_their_class() {
        let body = r#"{"error":{"code":400,"message":"Provider returned error","metadata":{"provider_name":"Anthropic","raw":"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 210000 tokens > 200000 maximum\"}}"}}}"#;
        let error = ProviderError::from_http(400, None, body);
        assert!(
            matches!(error, ProviderError::ContextLengthExceeded { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("(Anthropic: "), "{error}");
        let credits = ProviderError::from_http(
            402,
            None,
            r#"{"error":{"code":402,"message":"Insufficient credits"}}"#,
        );
        assert!(!credits.is_retryable());
        assert!(credits.to_string().contains("Insufficient credits"));
        let upstream = ProviderError::from_stream_error(None, Some("502"), "Upstream failed");
        assert!(upstream.is_retryable(), "{upstream:?}");
        let limited = ProviderError::from_stream_error(None, Some("429"), "slow down");
        assert!(matches!(limited, ProviderError::RateLimited { .. }));
    }

    #[test]
    fn openai_context_length_body_is_typed() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let err = ProviderError::from_http(400, None, body);
        assert!(
            matches!(err, ProviderError::ContextLengthExceeded { .. }),
            "{err:?}"
        );
        assert!(!err.is_retryable());
    }

    #[test]
    fn anthropic_context_length_body_is_typed() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let err = ProviderError::from_http(400, None, body);
        match err {
            ProviderError::ContextLengthExceeded { message } => {
                assert!(message.starts_with("prompt is too long"))
            }
            other => panic!("not typed: {other:?}"),
        }
    }

    #[test]
    fn rate_limits_and_overload_are_retryable_with_retry_after() {
        let err = ProviderError::from_http(
            429,
            parse_retry_after("2"),
            r#"{"error":{"message":"slow down"}}"#,
        );
        assert!(err.is_retryable());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
        let overloaded = ProviderError::from_http(
            529,
            None,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert!(matches!(
            overloaded,
            ProviderError::Overloaded { status: 529, .. }
        ));
        assert!(overloaded.is_retryable());
        assert!(ProviderError::from_http(500, None, "oops").is_retryable());
    }

    #[test]
    fn client_errors_are_not_retried() {
        assert!(
            !ProviderError::from_http(400, None, r#"{"error":{"message":"bad field"}}"#)
                .is_retryable()
        );
        let auth = ProviderError::from_http(401, None, r#"{"error":{"message":"invalid key"}}"#);
        assert!(matches!(auth, ProviderError::Auth { .. }));
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        assert_eq!(parse_retry_after("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn stream_errors_are_classified() {
        let err = ProviderError::from_stream_error(Some("overloaded_error"), None, "Overloaded");
        assert!(err.is_retryable());
        let ctx =
            ProviderError::from_stream_error(None, Some("context_length_exceeded"), "too long");
        assert!(matches!(ctx, ProviderError::ContextLengthExceeded { .. }));
    }
}
