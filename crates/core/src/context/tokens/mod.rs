//! Token counting and the per-request estimate.
//!
//! - [`counter`] — [`TokenCounter`] turns text into a token count; [`BpeCounter`]
//!   (module `bpe`) implements it exactly as tiktoken's ordinary encoding does
//!   (`o200k_base`, `cl100k_base`), from tables compiled into the binary. It knows no
//!   special tokens, so text that looks like one (`<|endoftext|>`) is counted as the
//!   text it is.
//! - [`image`] — what an image costs, from the providers' published formulas.
//! - [`count`] — the tokens of a message, a tool definition and a whole request
//!   ([`estimate_request`]), framing included.
//! - [`estimator`] — [`RequestEstimator`], the one place that estimates the size of a
//!   model request; the tool loop, `/context`, the status line and the headless report
//!   all use it.
//! - [`bound`] — an upper bound of the estimate for the moments before the counter's
//!   tables are ready.
//!
//! Cost model: the estimator caches the count of every message it has seen, keyed by its
//! position and a cheap shape key (role, part count, byte lengths), so estimating a
//! history that only grew costs O(new content). When the provider reported usage for the
//! previous request, the next estimate is that reported input + output plus the local
//! count of what was added since: exact for the prefix whatever tokenizer the model uses.

pub mod bound;
mod bpe;
pub mod count;
pub mod counter;
pub mod estimator;
pub mod image;

pub use bound::{upper_bound_estimate, UPPER_BOUND_HEADROOM_PERCENT};
pub use bpe::BpeCounter;
pub use count::{
    count_image, count_message, count_reasoning, count_tools, estimate_request, RequestEstimate,
    MESSAGE_FRAMING_TOKENS, REQUEST_FRAMING_TOKENS, TOOL_DEFINITION_FRAMING_TOKENS,
    TOOL_PART_FRAMING_TOKENS,
};
pub use counter::{Encoding, TokenCounter};
pub use estimator::RequestEstimator;
pub use image::{fit_within, ImageFormula};
