//! The context pipeline: deterministic, rule-based, replay-safe reduction of what the
//! model sees.
//!
//! - [`squash`] — per tool result, once, at capture time (the tools layer calls it).
//! - [`dedup`] — superseded results of identical read-only calls become a placeholder.
//! - [`prune`] — old tool outputs beyond a protected window become a placeholder.
//! - [`images`] — images leaving the history become their placeholder text.
//! - [`policy`] — before each model request: nothing, micro-compaction (dedup + prune),
//!   LLM compaction, or the overflow fallback.
//! - [`config`] — the `[context]` section with every threshold's default.
//!
//! This module does no I/O: spilling raw output to disk is the caller's job (see
//! [`squash::with_spill_marker`]).

pub mod config;
pub mod dedup;
pub mod images;
pub mod ledger;
pub mod policy;
pub mod prune;
pub mod squash;

pub use config::{ContextConfig, SquashConfig};
pub use dedup::{collapse, DedupStats, DUPLICATE_PLACEHOLDER};
pub use images::{has_images, replace_images};
pub use policy::{decide, Action, Facts, PolicyMemory};
pub use prune::{prune_old_tool_outputs, PruneConfig, PRUNE_PLACEHOLDER};
pub use squash::{apply as squash_output, SquashStats, Squashed};
