//! The outer layer the server-sent-event adapters share (OpenAI Chat, OpenAI Responses,
//! Anthropic, Gemini): the transport built from the HTTP options, the key sent in the
//! protocol's auth header, the `POST` whose events become the chunk stream, and the one
//! error for an event that does not parse. Bedrock signs each request instead of sending
//! a key; it shares the error ([`unparseable`]).

use serde::de::DeserializeOwned;

use crate::wire::adapter::{decode_stream, Decoded};
use crate::wire::chunk::ChunkStream;
use crate::wire::error::ProviderError;
use crate::wire::http::{HttpOptions, Transport};
use crate::wire::limits::WireLimits;
use crate::wire::sse::SseEvent;

/// Most characters of an unparseable event quoted in its error.
const EVENT_EXCERPT_CHARS: usize = 200;

/// How a protocol sends its key. An absent or empty key sends no header.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Auth<'a> {
    /// `authorization: Bearer KEY` (both OpenAI protocols).
    Bearer(Option<&'a str>),
    /// The key as the value of the named header (`x-api-key`, `x-goog-api-key`).
    Header(&'static str, Option<&'a str>),
}

impl Auth<'_> {
    /// The header to send, when there is a key.
    fn header(self) -> Option<(&'static str, String)> {
        match self {
            Auth::Bearer(key) => {
                non_empty(key).map(|key| ("authorization", format!("Bearer {key}")))
            }
            Auth::Header(name, key) => non_empty(key).map(|key| (name, key.to_owned())),
        }
    }
}

fn non_empty(key: Option<&str>) -> Option<&str> {
    key.filter(|key| !key.is_empty())
}

/// A transport with the protocol's auth header: what an SSE adapter sends through.
#[derive(Clone)]
pub(crate) struct SseClient {
    transport: Transport,
    auth: Option<(&'static str, String)>,
}

// The key never reaches a debug print: only the name of its header.
pith_core::debug_fields!(SseClient |this| {
    auth_header: this.auth.as_ref().map(|(name, _)| name),
});

impl SseClient {
    /// A client with `options` that authenticates with `auth`.
    pub(crate) fn new(options: HttpOptions, auth: Auth<'_>) -> Result<Self, ProviderError> {
        Ok(Self {
            transport: Transport::new(options)?,
            auth: auth.header(),
        })
    }

    /// The bounds the transport holds responses to.
    pub(crate) fn limits(&self) -> &WireLimits {
        self.transport.limits()
    }

    /// `POST url` with `body`, the auth header and `headers`; the response's events,
    /// each passed to `decode` (and `None` once if the events end before a decoded one
    /// said `done`), become the chunk stream (see [`decode_stream`]).
    pub(crate) async fn stream<D>(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
        decode: D,
    ) -> Result<ChunkStream, ProviderError>
    where
        D: FnMut(Option<SseEvent>) -> Result<Decoded, ProviderError> + Send + 'static,
    {
        let mut all: Vec<(&str, &str)> = Vec::with_capacity(headers.len() + 1);
        if let Some((name, value)) = &self.auth {
            all.push((name, value));
        }
        all.extend_from_slice(headers);
        let events = self.transport.post_events(url, &all, body).await?;
        Ok(decode_stream(events, *self.limits(), decode))
    }
}

/// The two public constructors every SSE adapter has, written once: `new` (the default
/// HTTP options) and `with_options`, which builds the [`SseClient`] that sends the key as
/// `auth` says and hands it, with the base URL, to `adapter` (the struct literal).
macro_rules! sse_constructors {
    (
        $(#[$new_doc:meta])*
        auth: |$key:ident| $auth:expr,
        adapter: |$client:ident, $base_url:ident| $adapter:expr $(,)?
    ) => {
        $(#[$new_doc])*
        pub fn new(
            base_url: &str,
            api_key: Option<&str>,
        ) -> Result<Self, $crate::wire::error::ProviderError> {
            Self::with_options(base_url, api_key, $crate::wire::http::HttpOptions::default())
        }

        /// An adapter with explicit HTTP options (limits, redirects).
        pub fn with_options(
            $base_url: &str,
            $key: Option<&str>,
            options: $crate::wire::http::HttpOptions,
        ) -> Result<Self, $crate::wire::error::ProviderError> {
            let $client = $crate::wire::client::SseClient::new(options, $auth)?;
            Ok($adapter)
        }
    };
}
pub(crate) use sse_constructors;

/// `base_url` without trailing slashes, nor a trailing `suffix` (the version path a
/// user may include, `/v1`, `/v1beta`).
pub(crate) fn base_without<'a>(base_url: &'a str, suffix: &str) -> &'a str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix(suffix).unwrap_or(base)
}

/// Parses one event's JSON `data`; one that does not parse is [`unparseable`].
pub(crate) fn parse_event<T: DeserializeOwned>(data: &str) -> Result<T, ProviderError> {
    serde_json::from_str(data).map_err(|error| unparseable("event", &error, data))
}

/// The stream error of a `what` (`event`, `contentBlockDelta event`) whose `data` did not
/// parse: the parser's reason and the data's first 200 characters.
pub(crate) fn unparseable(what: &str, error: &serde_json::Error, data: &str) -> ProviderError {
    let excerpt: String = data.chars().take(EVENT_EXCERPT_CHARS).collect();
    ProviderError::Stream(format!("unparseable {what} ({error}): {excerpt}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_or_absent_key_sends_no_header() {
        assert_eq!(Auth::Bearer(None).header(), None);
        assert_eq!(Auth::Bearer(Some("")).header(), None);
        assert_eq!(Auth::Header("x-api-key", Some("")).header(), None);
        assert_eq!(
            Auth::Bearer(Some("k")).header(),
            Some(("authorization", "Bearer k".to_owned()))
        );
        assert_eq!(
            Auth::Header("x-goog-api-key", Some("k")).header(),
            Some(("x-goog-api-key", "k".to_owned()))
        );
    }

    #[test]
    fn the_key_is_not_in_the_debug_print() {
        let client = SseClient::new(HttpOptions::default(), Auth::Bearer(Some("sk-secret")))
            .expect("a default transport builds");
        let printed = format!("{client:?}");
        assert!(!printed.contains("sk-secret"), "{printed}");
        assert!(printed.contains("authorization"), "{printed}");
    }

    #[test]
    fn an_unparseable_event_quotes_its_start() {
        let data = format!("{{\"type\": {}", "x".repeat(500));
        let error = parse_event::<serde_json::Value>(&data).unwrap_err();
        let ProviderError::Stream(message) = error else {
            panic!("{error:?}");
        };
        assert!(message.starts_with("unparseable event ("), "{message}");
        assert!(message.ends_with(&data[..EVENT_EXCERPT_CHARS]), "{message}");
    }

    #[test]
    fn a_version_suffix_and_trailing_slashes_are_dropped() {
        assert_eq!(base_without("https://a.b/v1/", "/v1"), "https://a.b");
        assert_eq!(base_without("https://a.b", "/v1"), "https://a.b");
        assert_eq!(base_without("https://a.b/v1beta", "/v1beta"), "https://a.b");
    }
}
