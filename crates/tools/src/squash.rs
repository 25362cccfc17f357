//! The seam to core's squash (`pith_core::context::squash`): the only place pith-tools
//! names it. Everything that squashes, marks a gap, shortens a line or names a spill file
//! goes through these items, so the rules and the marker format exist once, in core.

pub use pith_core::context::squash::marker::chars_omitted_suffix;
pub use pith_core::context::squash::{
    apply, omitted_marker, with_spill_marker, SquashStats, Squashed,
};

/// Core's squash settings (`[context]` section).
pub type Config = pith_core::context::SquashConfig;
