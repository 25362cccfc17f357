//! pith-session: the JSONL transcript store (append, atomic `append_batch`, writer lock,
//! crash recovery), projection of a transcript into the model history and the UI view,
//! session listing, and the text/JSON rendering `pith replay` and the REPL share.
//!
//! The file format is documented in `docs/session-format.md`. Front-ends use it like
//! this (all calls are synchronous std I/O; async callers wrap them in
//! `spawn_blocking`):
//!
//! ```no_run
//! use pith_session::{Event, NewSession, SessionStore, ReadOptions, project_model};
//! # fn main() -> Result<(), pith_session::SessionError> {
//! let store = SessionStore::from_env()?;
//! let mut session = store.create(NewSession {
//!     cwd: ".".into(), provider: "openai".into(), model: "gpt-4o".into(),
//! })?;
//! session.append(Event::user_text("fix the failing test"))?;
//! // ... later, resume:
//! let history = project_model(&session.read(ReadOptions::default())?.records);
//! # let _ = history; Ok(()) }
//! ```

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod checkpoint;
mod delete;
mod error;
mod event;
mod externalize;
mod fork;
mod items;
mod line;
mod listing;
mod lock;
mod paths;
mod pin;
mod projection;
mod read;
mod render;
mod resume;
mod spend;
mod store;
mod turns;

pub use checkpoint::{Checkpoint, Rewind, RewindMode};
pub use error::{Result, SessionError};
pub use event::{
    encode_line, now_ts, CompactionTrigger, Event, Record, KNOWN_KINDS, SCHEMA_VERSION,
};
pub use externalize::DEFAULT_MAX_RECORD_BYTES;
pub use items::{items_from_messages, TranscriptItem};
pub use line::{current_line, current_line_owned, line_indices, pins_on_line};
pub use listing::{title_of, SessionSummary};
pub use paths::data_dir;
pub use pin::{PinAction, PinChange};
pub use pith_core::ModelUsage;
pub use projection::{project_model, project_model_owned, project_ui, UiEntry};
pub use read::{
    parse_transcript, read_transcript, ReadOptions, ReadReport, Transcript, MAX_LINE_BYTES,
};
pub use render::{
    model_json, model_text, sessions_json, sessions_table, ui_json, ui_text, ui_text_nested,
};
pub use resume::Resumed;
pub use spend::SessionSpend;
pub use store::{Durability, NewSession, Quarantine, Session, SessionStore};
pub use turns::{
    changes_after, changes_after_in, last_code_rewind, last_known_states, states_at, turn_seq,
    turns, Turn,
};
