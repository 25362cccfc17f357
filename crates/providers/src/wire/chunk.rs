//! What an adapter's response stream yields: [`StreamChunk`]s, in a [`ChunkStream`]. The
//! contract that produces them is in `adapter`.

use std::pin::Pin;

use futures::Stream;
use pith_core::{Reasoning, ToolCall, Usage};

use crate::wire::error::ProviderError;

/// One piece of a streamed response.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamChunk {
    /// Visible assistant text.
    Text(String),
    /// Reasoning text (never part of the answer).
    Reasoning(String),
    /// A reasoning block or item is complete: its whole text (already streamed as
    /// [`StreamChunk::Reasoning`] deltas) and what the provider needs to take it back
    /// (signature, encrypted content). It joins the assistant message in its place.
    ReasoningPart(Reasoning),
    /// A piece of a tool call's arguments arrived: `bytes` more for the call numbered
    /// `call` (the adapter's own numbering, unique within the response; a call's first
    /// report may carry 0 bytes, when the call starts). The arguments themselves arrive
    /// with the complete [`StreamChunk::ToolCall`]; this lets the stream be bounded and
    /// the output counted as it grows.
    ArgumentBytes {
        /// The call's number within the response.
        call: usize,
        /// Bytes of argument text received.
        bytes: usize,
    },
    /// A complete tool call.
    ToolCall(ToolCall),
    /// Usage of this request.
    Usage(Usage),
    /// The provider sent an event without content (a `ping`, a lifecycle event, a
    /// usage-free metadata chunk): the stream is alive. The loop's idle timeout measures
    /// silence on the wire, so adapters report every such event.
    Progress,
    /// The response is complete.
    Done {
        /// The provider's stop reason (`stop`, `tool_calls`, `end_turn`, …).
        stop_reason: Option<String>,
    },
}

/// The stream an adapter returns.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<StreamChunk, ProviderError>> + Send>>;
