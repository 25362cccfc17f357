//! A scripted in-memory [`ProviderAdapter`] for loop tests: each request takes the next
//! scripted reply and is recorded.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pith_core::{ToolCall, Usage};
use pith_providers::{ChunkStream, ModelRequest, ProviderAdapter, ProviderError, StreamChunk};

/// One scripted reply.
#[derive(Clone)]
pub enum Reply {
    /// Stream these chunks, sleeping `delay` before each.
    Chunks {
        chunks: Vec<StreamChunk>,
        delay: Duration,
    },
    /// Fail before streaming.
    Error(ProviderError),
}

impl Reply {
    pub fn text(text: &str) -> Self {
        Self::Chunks {
            chunks: vec![
                StreamChunk::Text(text.into()),
                StreamChunk::Done {
                    stop_reason: Some("stop".into()),
                },
            ],
            delay: Duration::ZERO,
        }
    }

    pub fn tool_call(
        id: &str,
        name: &str,
        arguments: serde_json::Value,
        input: u64,
        output: u64,
    ) -> Self {
        Self::Chunks {
            chunks: vec![
                StreamChunk::Text("Let me look.".into()),
                StreamChunk::ToolCall(ToolCall {
                    id: id.into(),
                    name: name.into(),
                    arguments,
                }),
                StreamChunk::Usage(Usage {
                    input_tokens: input,
                    cached_input_tokens: 0,
                    output_tokens: output,
                    ..Default::default()
                }),
                StreamChunk::Done {
                    stop_reason: Some("tool_calls".into()),
                },
            ],
            delay: Duration::ZERO,
        }
    }

    pub fn slow_text(pieces: &[&str], delay: Duration) -> Self {
        let mut chunks: Vec<StreamChunk> = pieces
            .iter()
            .map(|p| StreamChunk::Text((*p).into()))
            .collect();
        chunks.push(StreamChunk::Done {
            stop_reason: Some("stop".into()),
        });
        Self::Chunks { chunks, delay }
    }
}

#[derive(Default)]
struct State {
    replies: VecDeque<Reply>,
    requests: Vec<ModelRequest>,
    /// When set, requests are not kept (a kept request would hold the history), only
    /// the address of each request's message list.
    addresses_only: bool,
    addresses: Vec<usize>,
}

/// The scripted adapter. Clone it to keep a handle on the recorded requests.
#[derive(Clone, Default)]
pub struct MockAdapter {
    state: Arc<Mutex<State>>,
}

impl MockAdapter {
    pub fn new(replies: Vec<Reply>) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                replies: replies.into(),
                ..State::default()
            })),
        }
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// An adapter that records only where each request's message list lives.
    #[allow(dead_code)]
    pub fn recording_addresses(replies: Vec<Reply>) -> Self {
        let adapter = Self::new(replies);
        adapter.state.lock().unwrap().addresses_only = true;
        adapter
    }

    /// The addresses recorded by [`MockAdapter::recording_addresses`].
    #[allow(dead_code)]
    pub fn addresses(&self) -> Vec<usize> {
        self.state.lock().unwrap().addresses.clone()
    }
}

#[async_trait]
impl ProviderAdapter for MockAdapter {
    fn protocol_name(&self) -> &'static str {
        "mock"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let reply = {
            let mut state = self.state.lock().unwrap();
            if state.addresses_only {
                let address = Arc::as_ptr(&request.messages) as usize;
                state.addresses.push(address);
            } else {
                state.requests.push(request.clone());
            }
            state.replies.pop_front()
        };
        match reply {
            None => Err(ProviderError::Http {
                status: 500,
                message: "request beyond the script".into(),
            }),
            Some(Reply::Error(error)) => Err(error),
            Some(Reply::Chunks { chunks, delay }) => {
                let stream =
                    futures::stream::unfold(chunks.into_iter(), move |mut rest| async move {
                        let chunk = rest.next()?;
                        if !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        Some((Ok(chunk), rest))
                    });
                Ok(Box::pin(stream))
            }
        }
    }
}
