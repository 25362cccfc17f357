//! pith-providers: the generic tool-loop driver (with automatic and manual compaction)
//! and one adapter per wire protocol (OpenAI Chat Completions, OpenAI Responses,
//! Anthropic Messages), plus configuration and the model catalog. Providers never print:
//! everything a front-end shows arrives as a [`pith_core::LoopEvent`].

pub mod adapter;
pub mod agent_loop;
pub mod anthropic;
pub mod catalog;
pub mod compaction;
pub mod config;
pub mod error;
pub mod http;
pub mod openai_chat;
pub mod openai_responses;
pub mod overflow;
pub mod probe;
pub mod project;
pub mod request;
pub mod retry;
pub mod setup;

pub use adapter::{ChunkStream, ModelRequest, ProviderAdapter, StreamChunk};
pub use agent_loop::{
    AgentLoop, LoopError, LoopOptions, ManualCompaction, TurnFailure, TurnSummary,
};
pub use error::ProviderError;
