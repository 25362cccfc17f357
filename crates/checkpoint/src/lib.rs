//! pith's checkpoints: the session's change tracker, the content-addressed store, the
//! shadow index of the workspace and rewind (docs/rewind.md).
#![forbid(unsafe_code)]

mod error;
mod paths;
mod rules;
pub mod tracker;
mod walk;

pub use error::{CheckpointError, Refusal, Result};
pub use tracker::{Tracker, TrackerConfig, TrackerMode};
