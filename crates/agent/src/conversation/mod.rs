//! The [`Conversation`]: the one object the three front-ends (the REPL, `pith run`, `pith
//! acp`) drive.
//!
//! It owns the session store, the open session, the settings it was opened with, the
//! tool loop and the system prompt. A front-end opens one with [`Conversation::open`],
//! then calls [`Conversation::run_turn`], [`Conversation::compact`],
//! [`Conversation::switch_model`], [`Conversation::clear`] or [`Conversation::resume`],
//! and renders the [`pith_core::LoopEvent`]s its [`pith_core::EventSink`] receives. It
//! never builds a loop, resolves a model or writes the transcript itself.
//!
//! Persistence: the user message is recorded before a turn starts; the loop's events go
//! through the turn's [`crate::recording::TurnRecorder`] before they reach the
//! front-end; every history rewrite (automatic, manual or micro compaction) is written
//! before the loop applies it; the turn's final checkpoint is written when it ends, also
//! after an error or a cancellation.
//!
//! Cancellation (docs/repl.md, "Keys"): the turn's token stops the whole turn; the child token
//! carried by [`pith_core::AutoCompaction::Started`] stops only a running automatic
//! compaction, and front-ends cancel it through that token.
//!
//! - [`state`]: the value, what it holds and the figures it shows;
//! - [`open`]: opening (new, resumed, a subagent's child);
//! - [`turn`]: running a turn (hooks, MCP tools, output schema) and `/compact`;
//! - [`switch`]: `/model`, `/clear`, `/resume`;
//! - [`rewind`]: `/rewind`, the turns and the checkpoint store's size;
//! - [`pins`]: `/pin`, `/unpin`, `--pin` and the pins `/context` lists;
//! - [`factory`]: building the loop of a session;
//! - [`outcome`]: what a turn did and why it stopped.

pub mod factory;
pub mod open;
pub mod outcome;
pub mod pins;
pub mod rewind;
pub mod state;
pub mod switch;
pub mod turn;

pub use open::Opened;
pub use outcome::{TurnError, TurnOutcome};
pub use pins::{pin_of_argument, PinRow, PinsView};
pub use state::Conversation;
