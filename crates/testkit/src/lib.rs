//! pith-testkit: a scripted provider server on 127.0.0.1 that speaks the real OpenAI Chat
//! Completions, OpenAI Responses, Anthropic Messages and Google Gemini wire formats
//! (streamed SSE and plain JSON) and AWS Bedrock's Converse (binary event stream), plays
//! faults (rate limits, overload, dropped or corrupt streams, context-length
//! errors, hangs) and records every request, for pith's integration and end-to-end tests.
//!
//! One scripted [`Turn`] answers one incoming request, in order, whatever the request is
//! (compaction requests included); a request beyond the script gets an HTTP 500 saying so.
//!
//! ```no_run
//! use pith_testkit::{Fault, Script, TestServer, Turn};
//! use serde_json::json;
//!
//! let server = TestServer::start(Script::openai_chat([
//!     Turn::text("Let me look.")
//!         .with_tool_call("read", json!({"path": "src/lib.rs"}))
//!         .with_usage(120_000, 40),
//!     Turn::fault(Fault::Http429).with_retry_after_s(1),
//!     Turn::text("## Goal\n...").with_chunk_delay_ms(50),
//! ]))?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # Ok::<(), pith_testkit::TestkitError>(())
//! ```
//!
//! The script format, faults and the `pith-testkit` binary are documented in
//! `docs/testkit.md`. [`cache`] models the providers' prompt caches (pure, no HTTP: the
//! simulator prices sessions with it too); [`UsageMode::Cached`] reports usage with it.
//! [`OtlpReceiver`] ([`otlp`]) receives what pith exports over OpenTelemetry's OTLP/HTTP.

#![warn(missing_docs)]
#![forbid(unsafe_code)]
// A test server: what it cannot do (listen, accept, record) goes to the test's stderr.
#![allow(clippy::print_stderr)]

mod answer;
pub mod cache;
mod checks;
mod count;
mod error;
mod hostile;
pub mod otlp;
mod protocol;
mod record;
mod script;
mod segments;
mod server;
mod turn;
mod wire;

pub use cache::{CacheBill, CacheRules, PromptCache, Segment};
pub use count::{last_message, request_tokens};
pub use error::TestkitError;
pub use otlp::{OtlpReceiver, ReceivedMetric, ReceivedSpan};
pub use protocol::Protocol;
pub use record::{RecordedRequest, REDACTED};
pub use script::{Responder, Script, UsageMode};
pub use server::{TestServer, TestServerBuilder};
pub use turn::{Fault, ToolCall, Turn, Usage};
