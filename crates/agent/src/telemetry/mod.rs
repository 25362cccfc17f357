//! OpenTelemetry: a conversation's requests, tool calls, compactions, hooks and subagents
//! as spans, with metrics for tokens, cost and compactions, exported over OTLP/HTTP
//! (protobuf) to a collector. Off unless configured (docs/configuration.md#telemetry).
//!
//! - [`config`]: `[telemetry]` and the `OTEL_*` variables → [`TelemetrySettings`];
//! - [`export`]: the SDK pipeline ([`Telemetry`]), never blocking, flushed at the end
//!   within a bound;
//! - [`trace`]: [`TurnTrace`], the event sink that turns a turn's events into spans.
//!
//! Only a top-level conversation exports: a subagent's events reach its parent's
//! front-end (wrapped as `LoopEvent::Subagent`) and become spans there, under the `task`
//! call that ran it.

pub mod config;
pub mod export;
pub mod trace;

pub use config::resolve;
pub use export::Telemetry;
pub use trace::{TracedModel, TurnFacts, TurnTrace};
