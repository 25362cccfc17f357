//! The context rules: what the model sees, how much of it, and how it is reduced —
//! deterministic, rule-based and replay-safe.
//!
//! - [`budget`] — the budget math: the input budget and where micro and LLM compaction
//!   start.
//! - [`tokens`] — token counting (the BPE counter, image formulas) and the request
//!   estimate.
//! - [`shell`] — how a shell command line is read (the one lexer), and what a command
//!   prints.
//! - [`squash`] — per tool result, once, at capture time (the tools layer calls it).
//! - [`dedup`] — superseded results of identical read-only calls become a placeholder.
//! - [`prune`] — old tool outputs beyond a protected window become a placeholder.
//! - [`images`] — images leaving the history become their placeholder text.
//! - [`policy`] — before each model request: nothing, micro-compaction (dedup + prune),
//!   LLM compaction, or the overflow fallback.
//! - [`governor`] — what the policy remembers: suppression, the breaker, the per-turn
//!   ceiling, and the notices that tell the user.
//! - [`calibration`] — reported usage weighed against pith's own count.
//! - [`floor`] — what a compaction's replacement holds whatever the summary says.
//! - [`ledger`] — the session's facts every compaction carries.
//! - [`pins`] — what the user pinned, carried whole in every replacement.
//! - [`summary`] — the compaction summary schema, its requests and the replacement
//!   history; [`prompts`] holds every prompt text, [`system_prompt`] assembles the
//!   system prompt.
//! - [`config`] — the `[context]` section with every threshold's default.
//!
//! This module does no I/O: spilling raw output to disk is the caller's job (see
//! [`squash::with_spill_marker`]).

pub mod budget;
pub mod calibration;
pub mod config;
pub mod dedup;
pub mod floor;
pub mod governor;
pub mod images;
pub mod ledger;
pub mod masking;
pub mod pins;
pub mod policy;
pub mod prompts;
pub mod prune;
pub mod shell;
pub mod squash;
pub mod summary;
pub mod system_prompt;
pub mod tokens;

pub use crate::protocol::notice::{GovernorNotice, PauseReason};
pub use calibration::{Calibration, Evidence};
pub use config::ContextConfig;
pub use dedup::{collapse, DedupStats, DUPLICATE_PLACEHOLDER};
pub use governor::Governor;
pub use images::{has_images, replace_images};
pub use masking::PRUNE_PLACEHOLDER;
pub use policy::{decide, held_by_ceiling, prepare_permitted, Action, Facts};
pub use prune::{prune_old_tool_outputs, PruneConfig};
pub use squash::{apply as squash_output, SquashConfig, SquashStats, Squashed};
