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

pub mod checkpoint;
pub mod delete;
pub mod error;
pub mod event;
pub mod externalize;
pub mod fork;
pub mod items;
pub mod line;
pub mod listing;
pub mod lock;
pub mod paths;
pub mod pin;
pub mod projection;
pub mod read;
pub mod render;
pub mod resume;
pub mod spend;
pub mod store;
pub mod turns;

pub use checkpoint::{Checkpoint, Rewind, RewindMode};
pub use error::{Result, SessionError};
pub use event::{CompactionTrigger, Event, Record, SCHEMA_VERSION};
pub use items::{items_from_messages, TranscriptItem};
pub use line::{current_line, current_line_owned, line_indices, pins_on_line};
pub use listing::{title_of, SessionSummary};
pub use pin::{PinAction, PinChange};
pub use pith_core::ModelUsage;
pub use projection::{project_model, project_model_owned, project_ui, UiEntry};
pub use read::{read_transcript, ReadOptions, ReadReport, Transcript};
pub use resume::Resumed;
pub use spend::SessionSpend;
pub use store::{Durability, NewSession, Quarantine, Session, SessionStore};
pub use turns::{
    changes_after, changes_after_in, last_known_states, states_at, turn_seq, turns, Turn,
};
