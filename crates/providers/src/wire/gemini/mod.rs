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

use crate::wire::adapter::{ChunkStream, Decoded, ModelRequest, ProviderAdapter};
use crate::wire::client::{base_without, sse_constructors, Auth, SseClient};
use crate::wire::error::ProviderError;

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
    client: SseClient,
    base: String,
}

pith_core::debug_fields!(Gemini { base });

impl Gemini {
    sse_constructors! {
        /// An adapter for `base_url` (e.g. `https://generativelanguage.googleapis.com`; a
        /// trailing `/v1beta` is accepted too) with the default HTTP options.
        auth: |api_key| Auth::Header("x-goog-api-key", api_key),
        adapter: |client, base_url| Self {
            client,
            base: base_without(base_url, &format!("/{API_VERSION}")).to_owned(),
        },
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
        let mut parser = Parser::default();
        let decode = move |event: Option<crate::wire::sse::SseEvent>| match event {
            Some(event) => parser.event(&event.data).map(Decoded::more),
            None => parser.finish().map(Decoded::last),
        };
        self.client
            .stream(&url, &[], encode_body(request), decode)
            .await
    }
}

#[cfg(test)]
mod tests;
