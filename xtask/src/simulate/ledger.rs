//! The prompt-cache cost model: every request the simulated agent sends is entered here,
//! and its cached part is the longest prefix it shares with the previous request.
//!
//! A request is a list of blocks (the system prompt, then one block per message), each
//! with a content identity and a token count. Two blocks are the same when their
//! identities are equal: the replay gives a message a new identity whenever its content
//! changes (dedup, prune, compaction), so the shared prefix is exact at message
//! granularity. Pricing: uncached input is written to the cache (`cache_write` × the
//! input price), cached input is read (`cache_read` × the input price), output tokens
//! are priced at `output` × the input price. Prices are per token, in units of the input
//! price; [`Prices::dollars`] converts with a $/M input price.

use pith_core::tokens::REQUEST_FRAMING_TOKENS;
use serde::Serialize;

/// Multipliers of the input price.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prices {
    /// Input price in dollars per million tokens (only for display).
    pub input_per_million: f64,
    /// Cached input, as a fraction of the input price (default 0.10).
    pub cache_read: f64,
    /// Uncached input written to the cache (default 1.25).
    pub cache_write: f64,
    /// Output tokens (default 5.0: $15/M output for $3/M input).
    pub output: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Self {
            input_per_million: 3.0,
            cache_read: 0.10,
            cache_write: 1.25,
            output: 5.0,
        }
    }
}

impl Prices {
    /// Dollars for `units` input-price token units.
    pub fn dollars(&self, units: f64) -> f64 {
        units * self.input_per_million / 1e6
    }
}

/// One block of a request: content identity and tokens.
pub type Block = (u64, usize);

/// Totals of the requests entered so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LedgerTotals {
    /// Requests sent (agent requests and compaction requests).
    pub requests: u64,
    /// Input tokens over all requests.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cached_tokens: u64,
    /// Output tokens that differ between policies (the summaries).
    pub summary_output_tokens: u64,
    /// Cost in input-price token units (see the module docs).
    pub cost_units: f64,
    /// The largest request, in tokens.
    pub peak_request_tokens: u64,
}

/// The ledger of one simulated session.
#[derive(Debug, Default)]
pub struct Ledger {
    previous: Vec<Block>,
    totals: LedgerTotals,
}

impl Ledger {
    /// Enters a request of `blocks`, returning its (total, cached) tokens.
    pub fn send(&mut self, blocks: Vec<Block>, prices: &Prices) -> (u64, u64) {
        let total: usize = REQUEST_FRAMING_TOKENS + blocks.iter().map(|b| b.1).sum::<usize>();
        let cached: usize = blocks
            .iter()
            .zip(&self.previous)
            .take_while(|(a, b)| a.0 == b.0)
            .map(|(a, _)| a.1)
            .sum();
        let (total, cached) = (total as u64, cached as u64);
        let t = &mut self.totals;
        t.requests += 1;
        t.input_tokens += total;
        t.cached_tokens += cached;
        t.cost_units +=
            cached as f64 * prices.cache_read + (total - cached) as f64 * prices.cache_write;
        t.peak_request_tokens = t.peak_request_tokens.max(total);
        self.previous = blocks;
        (total, cached)
    }

    /// Adds output tokens of a summary.
    pub fn summary_output(&mut self, tokens: u64, prices: &Prices) {
        self.totals.summary_output_tokens += tokens;
        self.totals.cost_units += tokens as f64 * prices.output;
    }

    /// The totals so far.
    pub fn totals(&self) -> LedgerTotals {
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_extending_the_previous_one_reads_the_shared_prefix_from_cache() {
        let prices = Prices::default();
        let mut ledger = Ledger::default();
        let (t1, c1) = ledger.send(vec![(0, 100), (1, 50)], &prices);
        assert_eq!((t1, c1), (153, 0), "first request: nothing cached");
        let (t2, c2) = ledger.send(vec![(0, 100), (1, 50), (2, 10)], &prices);
        assert_eq!((t2, c2), (163, 150));
        let cost = 153.0 * 1.25 + 150.0 * 0.10 + 13.0 * 1.25;
        assert!((ledger.totals().cost_units - cost).abs() < 1e-9);
    }

    #[test]
    fn a_rewritten_message_invalidates_everything_after_it() {
        let prices = Prices::default();
        let mut ledger = Ledger::default();
        ledger.send(vec![(0, 100), (1, 50), (2, 10)], &prices);
        let (_, cached) = ledger.send(vec![(0, 100), (9, 5), (2, 10)], &prices);
        assert_eq!(cached, 100, "only the system block is shared");
        assert_eq!(ledger.totals().peak_request_tokens, 163);
    }
}
