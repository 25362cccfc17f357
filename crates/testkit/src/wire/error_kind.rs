//! Which error body an answer carries.

use hyper::StatusCode;

/// Which error body to send.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ErrorKind {
    /// 429 rate limit.
    RateLimited,
    /// 500 internal error.
    ServerError,
    /// Anthropic 529 / OpenAI and Gemini 503.
    Overloaded,
    /// 400 context length exceeded.
    ContextLength {
        /// Tokens the prompt is reported to have.
        prompt_tokens: u64,
        /// The model's maximum.
        limit: u64,
    },
    /// A 400 the real API gives for what the client sent (a thinking block missing or
    /// altered, a reasoning item without its encrypted content, an unsupported field),
    /// in the provider's own wording.
    InvalidRequest {
        /// The provider's message.
        message: String,
        /// OpenAI's `param`, when it names one.
        param: Option<String>,
    },
    /// OpenRouter's wrapper of a failed upstream provider (HTTP 502).
    ProviderReturned,
    /// A testkit-level problem (script exhausted, wrong path, bad body), with its status.
    Testkit {
        /// HTTP status to answer with.
        status: StatusCode,
        /// Human-readable explanation, starting with `pith-testkit:`.
        message: String,
    },
}
