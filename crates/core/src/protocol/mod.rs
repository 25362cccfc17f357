//! The protocol: the data that crosses from the tool loop to tools, hooks, front-ends and
//! the transcript, and the seams (traits) through which it crosses. Pure vocabulary: no
//! rule about the context lives here (that is [`crate::context`]).
//!
//! - [`message`] — the provider-neutral message model every history is made of.
//! - [`image_limits`] — what images a provider accepts.
//! - [`effect`] — what a tool call did to files (the ledger's facts).
//! - [`checkpoint`] — file states before and after a change (checkpoints and rewind), and
//!   the change-tracker seam.
//! - [`usage`] — token usage a provider reported.
//! - [`subagent`] — a child conversation a tool call ran.
//! - [`rewrite`] — history rewrites: summary compactions and micro-compactions.
//! - [`hooks`] — hook events, runs and the [`hooks::LoopHooks`] seam.
//! - [`notice`] — what the compaction governor tells the user.
//! - [`plan`] — the agent's plan (`update_plan`): its steps and the checks on them.
//! - [`events`] — everything the loop reports while a turn runs.
//! - [`sink`] — where events, persisted rewrites and a tool's progress go.
//! - [`tool`] — the tool trait and what a call gets and gives back.

pub mod checkpoint;
pub mod effect;
pub mod events;
pub mod hooks;
pub mod image_limits;
pub mod message;
pub mod notice;
pub mod plan;
pub mod rewrite;
pub mod sink;
pub mod subagent;
pub mod tool;
pub mod usage;
