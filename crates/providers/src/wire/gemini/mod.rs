//! Google Gemini API, native (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`),
//! stateless: the whole conversation is sent with every request, converted
//! deterministically from the generic history (prompt-cache parity; Gemini caches
//! repeated prefixes implicitly and reports the hits as `cachedContentTokenCount`).
//!
//! The key travels in the `x-goog-api-key` header, never in the URL: a URL ends up in
//! logs and error messages, a header does not (and the transport drops it on any
//! redirect to another origin).
//!
//! Thought signatures are kept as reasoning parts and sent back unchanged on the part
//! they came with (see [`encode`]); Gemini 3 refuses a tool loop without them.

use async_trait::async_trait;

use crate::wire::adapter::{decode_stream, ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::error::ProviderError;
use crate::wire::http::{HttpOptions, Transport};

mod decode;
pub mod encode;

use self::decode::Parser;
pub use self::encode::*;

/// The public endpoint's base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// The API version pith speaks (thought signatures, `parametersJsonSchema`).
pub const API_VERSION: &str = "v1beta";

/// The Gemini adapter.
#[derive(Clone)]
pub struct Gemini {
    transport: Transport,
    base: String,
    api_key: Option<String>,
}

impl std::fmt::Debug for Gemini {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemini")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Gemini {
    /// An adapter for `base_url` (e.g. `https://generativelanguage.googleapis.com`; a
    /// trailing `/v1beta` is accepted too) with the default HTTP options.
    pub fn new(base_url: &str, api_key: Option<&str>) -> Result<Self, ProviderError> {
        Self::with_options(base_url, api_key, HttpOptions::default())
    }

    /// An adapter with explicit HTTP options (limits, redirects).
    pub fn with_options(
        base_url: &str,
        api_key: Option<&str>,
        options: HttpOptions,
    ) -> Result<Self, ProviderError> {
        let base = base_url.trim_end_matches('/');
        let base = base
            .strip_suffix(&format!("/{API_VERSION}"))
            .unwrap_or(base);
        Ok(Self {
            transport: Transport::new(options)?,
            base: base.to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()).map(str::to_owned),
        })
    }

    /// The streaming URL for `model`: `models/ID` for a bare id, the name as given for a
    /// resource name (`tunedModels/…`, `models/…`). The key is never part of it.
    pub fn stream_url(&self, model: &str) -> Result<String, ProviderError> {
        let name = if model.contains('/') {
            model.to_owned()
        } else {
            format!("models/{model}")
        };
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'/'));
        if !valid || name.ends_with('/') || name.contains("//") || name.contains("..") {
            return Err(ProviderError::InvalidRequest(format!(
                "`{model}` is not a Gemini model id (letters, digits, `-`, `.`, `_`; e.g. gemini-2.5-pro)"
            )));
        }
        Ok(format!(
            "{}/{API_VERSION}/{name}:streamGenerateContent?alt=sse",
            self.base
        ))
    }
}

#[async_trait]
impl ProviderAdapter for Gemini {
    fn protocol_name(&self) -> &'static str {
        "gemini"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let url = self.stream_url(&request.model)?;
        let mut headers = Vec::new();
        if let Some(key) = &self.api_key {
            headers.push(("x-goog-api-key", key.as_str()));
        }
        let events = self
            .transport
            .post_events(&url, &headers, encode_body(request))
            .await?;
        let mut parser = Parser::default();
        Ok(decode_stream(
            events,
            *self.transport.limits(),
            move |event| match event {
                Some(event) => parser.event(&event.data).map(|chunks| Decoded {
                    chunks,
                    done: false,
                }),
                None => parser.finish().map(|chunks| Decoded { chunks, done: true }),
            },
        ))
    }
}

#[cfg(test)]
mod tests;
