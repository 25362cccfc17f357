//! pith's checkpoints: the session's change tracker, the content-addressed store, the
//! shadow index of the workspace and rewind (docs/rewind.md).
#![forbid(unsafe_code)]

mod checkpointer;
mod disk;
mod error;
mod git;
mod index;
mod journal;
mod pack;
mod paths;
mod restore;
mod rules;
mod shadow;
mod store;
mod tracker;
mod walk;

pub use checkpointer::{CheckpointConfig, Checkpointer, Rewound};
pub use error::{CheckpointError, Refusal, Result};
pub use restore::{apply, plan, rewind_targets, verify, PlannedWrite, RestorePlan, Target};
pub use shadow::{Observation, SnapshotReport};
pub use store::{hash_bytes, project_key, GcReport, Store, StoreConfig, Stored};
pub use tracker::{Tracker, TrackerConfig, TrackerMode};
