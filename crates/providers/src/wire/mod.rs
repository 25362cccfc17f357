//! The wire: how a [`ModelRequest`] becomes bytes on a provider's API and how the
//! response stream becomes [`StreamChunk`]s.
//!
//! - [`adapter`]: the [`ProviderAdapter`] contract and the one streaming state machine.
//! - [`chunk`]: what a response stream yields ([`StreamChunk`], [`ChunkStream`]).
//! - `client`: the outer layer of the SSE adapters (transport, auth header, event
//!   stream, the error of an unparseable event).
//! - [`http`]: the one HTTP layer every adapter sends through (client, failures).
//! - [`error`]: [`ProviderError`] and its classification of HTTP failures.
//! - [`limits`]: how much pith accepts from a server (events, arguments, calls, bodies).
//! - [`sse`]: server-sent events decoded in one pass, each event bounded.
//! - [`eventstream`]: AWS's binary event-stream framing, each message bounded.
//! - [`bodies`]: the one driver of those two decoders over a response body.
//! - [`reasoning`]: the reasoning setting and how each protocol reads it.
//! - `turns`: the history in alternating turns, as Anthropic, Gemini and Bedrock take it.
//! - one module per protocol, each with the same shape: the adapter struct with `new` and
//!   `start` in its `mod.rs`, the request body in `encode`, the stream parser in `decode`.

pub mod adapter;
pub mod anthropic;
pub(crate) mod arguments;
pub mod bedrock;
pub mod bodies;
pub mod chunk;
pub(crate) mod client;
pub mod error;
pub mod eventstream;
pub mod gemini;
pub mod http;
pub mod limits;
pub mod openai_chat;
pub(crate) mod openai_controls;
pub mod openai_responses;
pub mod reasoning;
pub mod sse;
pub mod structured;
pub(crate) mod turns;

pub use adapter::{ModelRequest, ProviderAdapter};
pub use chunk::{ChunkStream, StreamChunk};
pub use error::ProviderError;
pub use reasoning::ReasoningEffort;
pub use structured::{StructuredOutput, STRUCTURED_OUTPUT_NAME};
