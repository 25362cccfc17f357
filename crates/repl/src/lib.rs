//! pith-repl: the interactive front-end — `pith` with no subcommand.
//!
//! Layout, one job per module:
//! - [`app`]: start-up and the prompt loop; its `jobs` (a turn, `/compact`) and `slash`
//!   (the other commands) submodules. Everything goes through one
//!   `pith_agent::Conversation`, which records and persists; the REPL only renders.
//! - [`busy`]: the `tokio::select!` loop that runs a turn or `/compact` while reading keys
//!   in raw mode, drawing the loader and answering permission questions.
//! - [`keys`] (key → action) and [`state`] (which token a key cancels, loader text,
//!   queued input): the pure Esc / Ctrl+C contract of docs/repl.md.
//! - [`render`] (the screen), [`markdown`], [`cards`], [`status`], [`context_view`]:
//!   what the user sees.
//! - [`commands`]: slash-command parsing; [`input`]: reedline or piped lines;
//!   [`approver`]: `--approval ask` questions; [`terminal`]: raw mode and restoring it.
//!
//! User documentation: `docs/repl.md`.
#![forbid(unsafe_code)]

mod app;
mod approver;
mod busy;
mod cards;
mod child_cards;
mod commands;
mod context_view;
mod input;
mod keys;
mod markdown;
mod render;
mod state;
mod status;
mod terminal;

pub use app::{run, ReplError};
