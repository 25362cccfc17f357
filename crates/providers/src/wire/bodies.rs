//! The one driver of the incremental decoders ([`crate::wire::sse::SseDecoder`],
//! [`crate::wire::eventstream::FrameDecoder`]): a response body's byte stream in, the
//! stream of what they decode out, ended by the first failure.

use std::collections::VecDeque;

use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::wire::error::ProviderError;

/// A decoder fed a response body piece by piece.
pub trait Incremental: Send + 'static {
    /// What it decodes (an event, a message).
    type Item: Send + 'static;

    /// What `bytes` completes; an error (a bound passed, a frame refused) ends the stream.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Self::Item>, ProviderError>;

    /// What the end of the body completes; an error when the body may not end there.
    fn finish(&mut self) -> Result<Vec<Self::Item>, ProviderError>;
}

/// The items `decoder` decodes from `bytes`. A transport error is a retryable
/// [`ProviderError::Stream`]; a decoder's error is passed on; either ends the stream.
pub fn decoded<S, E, D>(
    bytes: S,
    decoder: D,
) -> impl Stream<Item = Result<D::Item, ProviderError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: std::fmt::Display,
    D: Incremental,
{
    let state = (bytes, decoder, VecDeque::<D::Item>::new(), false);
    futures::stream::unfold(
        state,
        |(mut bytes, mut decoder, mut ready, mut ended)| async move {
            loop {
                if let Some(item) = ready.pop_front() {
                    return Some((Ok(item), (bytes, decoder, ready, ended)));
                }
                if ended {
                    return None;
                }
                let decoded = match bytes.next().await {
                    Some(Ok(chunk)) => decoder.push(&chunk),
                    Some(Err(error)) => Err(ProviderError::Stream(format!(
                        "the response stream broke: {error}"
                    ))),
                    None => {
                        ended = true;
                        decoder.finish()
                    }
                };
                match decoded {
                    Ok(items) => ready.extend(items),
                    Err(error) => {
                        ended = true;
                        return Some((Err(error), (bytes, decoder, ready, ended)));
                    }
                }
            }
        },
    )
}
