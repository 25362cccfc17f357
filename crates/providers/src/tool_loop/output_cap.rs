//! The output cap pith enforces on an answer, apart from the options and the spend guard
//! that both use it.

/// The cap pith enforces for a model whose output cap is `max_output` tokens: a margin
/// of 5% (at least 256 tokens) on top, so a server that honours the cap is never cut.
pub fn enforced_output_cap(max_output: u32) -> u64 {
    let max_output = u64::from(max_output);
    max_output + (max_output / 20).max(256)
}
