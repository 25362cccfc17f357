//! The bill of one simulated session: every request the simulated agent sends is entered
//! here with the time it is sent, and the provider family's prompt cache
//! ([`pith_testkit::cache::PromptCache`], the model the testkit's server bills with)
//! decides which of its tokens are read from the cache, written to it, or plain input.
//!
//! A request is a list of [`Block`]s: the system prompt (with the tool definitions), then
//! one block per message, each with a content identity, a token count and whether the
//! policy put a cache breakpoint on it. The replay gives a message a new identity whenever
//! its content changes (masking, prune, compaction), so a rewrite ends the cached prefix
//! exactly where the provider's would end.
//!
//! What is billed as the policy's cost: all input, the summaries the policy asks for and
//! the re-reads it causes. The agent's own answers are the same under every policy; they
//! are counted apart ([`LedgerTotals::answer_dollars`]).

use pith_core::tokens::REQUEST_FRAMING_TOKENS;
use pith_testkit::cache::{CacheBill, PromptCache, Segment};
use serde::Serialize;

use super::prices::{CostParts, PriceModel};

/// Identity of the per-request framing block (never cached: it is last).
const FRAMING_ID: u64 = u64::MAX;

/// Anthropic's long cache lifetime, seconds.
const HOUR_S: f64 = 3_600.0;

/// One block of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// Content identity.
    pub id: u64,
    /// Tokens.
    pub tokens: usize,
    /// A cache breakpoint ends at this block (Anthropic's `cache_control`).
    pub breakpoint: bool,
    /// That breakpoint asks for Anthropic's 1-hour cache (`"ttl": "1h"`).
    pub hour: bool,
}

/// Totals of the requests entered so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LedgerTotals {
    /// Requests sent (agent requests, compaction requests and re-reads).
    pub requests: u64,
    /// Input tokens over all requests.
    pub input_tokens: u64,
    /// Input tokens read from the cache.
    pub cached_tokens: u64,
    /// Input tokens written to the cache.
    pub written_tokens: u64,
    /// Output tokens of the summaries the policy asked for.
    pub summary_output_tokens: u64,
    /// Dollars of input, summaries and re-reads: what the policy decides.
    pub cost_dollars: f64,
    /// `cost_dollars` by what it paid for.
    pub parts: CostParts,
    /// Dollars of the agent's own answers (the same text under every policy; only the
    /// long-context rate can differ).
    pub answer_dollars: f64,
    /// The largest request, in tokens.
    pub peak_request_tokens: u64,
}

/// The bill of one simulated session.
#[derive(Debug)]
pub struct Ledger {
    cache: PromptCache,
    model: PriceModel,
    totals: LedgerTotals,
}

impl Ledger {
    /// An empty bill with `model`'s prices and cache.
    pub fn new(model: PriceModel) -> Self {
        Self {
            cache: PromptCache::new(model.rules),
            model,
            totals: LedgerTotals::default(),
        }
    }

    /// Enters a request of `blocks` sent at `now` (seconds), returning its bill.
    pub fn send(&mut self, now: f64, blocks: &[Block]) -> CacheBill {
        let mut segments: Vec<Segment> = blocks
            .iter()
            .map(|b| Segment {
                id: b.id,
                tokens: b.tokens as u64,
                breakpoint: b.breakpoint,
            })
            .collect();
        let ttls: Vec<Option<f64>> = blocks
            .iter()
            .map(|b| (b.breakpoint && b.hour).then_some(HOUR_S))
            .collect();
        segments.push(Segment {
            id: FRAMING_ID,
            tokens: REQUEST_FRAMING_TOKENS as u64,
            breakpoint: false,
        });
        let bill = self.cache.request_with_ttls(now, &segments, &ttls);
        let t = &mut self.totals;
        t.requests += 1;
        t.input_tokens += bill.input_tokens;
        t.cached_tokens += bill.cache_read_tokens;
        t.written_tokens += bill.cache_write_tokens;
        let parts = self.model.input_parts(&bill);
        t.cost_dollars += parts.total();
        t.parts.add(parts);
        t.peak_request_tokens = t.peak_request_tokens.max(bill.input_tokens);
        bill
    }

    /// Enters a request of `blocks` sent to another model whose prices are `ratio` times
    /// these (a compaction model, `pith:summary=R`): its cache holds nothing of this
    /// session, so every token is plain input, and this model's cache is not touched.
    /// Returns its input tokens.
    pub fn send_elsewhere(&mut self, blocks: &[Block], ratio: f64) -> u64 {
        let input_tokens =
            blocks.iter().map(|b| b.tokens as u64).sum::<u64>() + REQUEST_FRAMING_TOKENS as u64;
        let bill = CacheBill {
            input_tokens,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
            cache_write_long_tokens: 0,
        };
        let t = &mut self.totals;
        t.requests += 1;
        t.input_tokens += input_tokens;
        let parts = self.model.input_parts(&bill).scaled(ratio);
        t.cost_dollars += parts.total();
        t.parts.add(parts);
        t.peak_request_tokens = t.peak_request_tokens.max(input_tokens);
        input_tokens
    }

    /// Adds the `tokens` of a summary answering a request of `input_tokens`.
    pub fn summary_output(&mut self, input_tokens: u64, tokens: u64) {
        self.summary_output_at(input_tokens, tokens, 1.0);
    }

    /// [`Ledger::summary_output`] of a model whose prices are `ratio` times these.
    pub fn summary_output_at(&mut self, input_tokens: u64, tokens: u64, ratio: f64) {
        self.add_output(ratio * self.model.output_dollars(input_tokens, tokens));
        self.totals.summary_output_tokens += tokens;
    }

    /// Adds the `tokens` of the agent's own answer to a request of `input_tokens`.
    pub fn answer_output(&mut self, input_tokens: u64, tokens: u64) {
        self.totals.answer_dollars += self.model.output_dollars(input_tokens, tokens);
    }

    /// Adds the output of a re-read call (a small tool call the policy made necessary).
    pub fn reread_output(&mut self, input_tokens: u64, tokens: u64) {
        self.add_output(self.model.output_dollars(input_tokens, tokens));
    }

    /// Bills `dollars` of output the policy caused.
    fn add_output(&mut self, dollars: f64) {
        self.totals.cost_dollars += dollars;
        self.totals.parts.output += dollars;
    }

    /// The totals so far.
    pub fn totals(&self) -> LedgerTotals {
        self.totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(id: u64, tokens: usize, breakpoint: bool) -> Block {
        Block {
            id,
            tokens,
            breakpoint,
            hour: false,
        }
    }

    #[test]
    fn a_request_extending_the_previous_one_reads_the_shared_prefix_from_cache() {
        let mut ledger = Ledger::new(PriceModel::anthropic());
        let first = ledger.send(0.0, &[block(1, 2_000, true), block(2, 500, true)]);
        assert_eq!(first.cache_read_tokens, 0);
        assert_eq!(first.cache_write_tokens, 2_500);
        let second = ledger.send(
            10.0,
            &[
                block(1, 2_000, true),
                block(2, 500, false),
                block(3, 100, true),
            ],
        );
        assert_eq!(second.cache_read_tokens, 2_500);
        assert_eq!(second.cache_write_tokens, 100);
        let t = ledger.totals();
        assert_eq!(t.requests, 2);
        let framing = REQUEST_FRAMING_TOKENS as f64;
        let expected = (2_500.0 * 3.75 + framing * 3.0) / 1e6
            + (2_500.0 * 0.30 + 100.0 * 3.75 + framing * 3.0) / 1e6;
        assert!(
            (t.cost_dollars - expected).abs() < 1e-12,
            "{}",
            t.cost_dollars
        );
    }

    #[test]
    fn the_bill_splits_into_plain_input_cache_reads_cache_writes_and_output() {
        let mut ledger = Ledger::new(PriceModel::anthropic());
        ledger.send(0.0, &[block(1, 2_000, true), block(2, 500, true)]);
        let input = ledger.send(10.0, &[block(1, 2_000, true), block(2, 500, true)]);
        ledger.summary_output(input.input_tokens, 1_000);
        ledger.reread_output(input.input_tokens, 30);
        ledger.send_elsewhere(&[block(3, 1_000, false)], 0.5);
        let framing = REQUEST_FRAMING_TOKENS as f64;
        let t = ledger.totals();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(
            close(t.parts.cache_write, 2_500.0 * 3.75 / 1e6),
            "{:?}",
            t.parts
        );
        assert!(
            close(t.parts.cache_read, 2_500.0 * 0.30 / 1e6),
            "{:?}",
            t.parts
        );
        let plain = (2.0 * framing * 3.0 + 0.5 * (1_000.0 + framing) * 3.0) / 1e6;
        assert!(close(t.parts.input, plain), "{:?}", t.parts);
        assert!(close(t.parts.output, 1_030.0 * 15.0 / 1e6), "{:?}", t.parts);
        assert!(close(t.parts.total(), t.cost_dollars), "{t:?}");
    }

    #[test]
    fn a_one_hour_breakpoint_is_written_at_twice_the_input_price_and_outlives_a_pause() {
        let mut ledger = Ledger::new(PriceModel::anthropic());
        let hour = Block {
            hour: true,
            ..block(1, 2_000, true)
        };
        let first = ledger.send(0.0, &[hour, block(2, 500, true)]);
        assert_eq!(first.cache_write_tokens, 2_500);
        assert_eq!(first.cache_write_long_tokens, 2_000);
        let framing = REQUEST_FRAMING_TOKENS as f64;
        let expected = (2_000.0 * 6.0 + 500.0 * 3.75 + framing * 3.0) / 1e6;
        let cost = ledger.totals().cost_dollars;
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
        // Twenty minutes later the hour's prefix is still read; the rest is written again.
        let later = ledger.send(1_200.0, &[hour, block(2, 500, true)]);
        assert_eq!(later.cache_read_tokens, 2_000);
        assert_eq!(
            (later.cache_write_tokens, later.cache_write_long_tokens),
            (500, 0)
        );
    }

    #[test]
    fn a_request_to_another_model_reads_nothing_from_the_cache_and_leaves_it_alone() {
        let mut ledger = Ledger::new(PriceModel::anthropic());
        let blocks = [block(1, 2_000, true), block(2, 500, true)];
        ledger.send(0.0, &blocks);
        let before = ledger.totals().cost_dollars;
        let input = ledger.send_elsewhere(&blocks, 0.1);
        let framing = REQUEST_FRAMING_TOKENS as f64;
        assert_eq!(input, 2_500 + REQUEST_FRAMING_TOKENS as u64);
        let billed = ledger.totals().cost_dollars - before;
        let expected = 0.1 * (2_500.0 + framing) * 3.0 / 1e6;
        assert!((billed - expected).abs() < 1e-12, "{billed} vs {expected}");
        ledger.summary_output_at(input, 1_000, 0.1);
        let output = ledger.totals().cost_dollars - before - billed;
        assert!((output - 0.1 * 15.0 / 1e3).abs() < 1e-12, "{output}");
        // The main model's cache still holds the prefix.
        let warm = ledger.send(10.0, &blocks);
        assert_eq!(warm.cache_read_tokens, 2_500);
    }

    #[test]
    fn a_pause_longer_than_the_ttl_rewrites_everything() {
        let mut ledger = Ledger::new(PriceModel::anthropic());
        let blocks = [block(1, 2_000, true), block(2, 500, true)];
        ledger.send(0.0, &blocks);
        let warm = ledger.send(299.0, &blocks);
        assert_eq!(warm.cache_read_tokens, 2_500);
        let cold = ledger.send(299.0 + 301.0, &blocks);
        assert_eq!(
            (cold.cache_read_tokens, cold.cache_write_tokens),
            (0, 2_500)
        );
    }

    #[test]
    fn a_rewritten_message_invalidates_everything_after_it() {
        let mut ledger = Ledger::new(PriceModel::openai());
        ledger.send(0.0, &[block(1, 2_000, false), block(2, 3_000, false)]);
        let bill = ledger.send(1.0, &[block(1, 2_000, false), block(9, 3_000, false)]);
        assert!(bill.cache_read_tokens <= 2_000, "{bill:?}");
        assert_eq!(bill.cache_write_tokens, 0, "OpenAI bills no writes");
    }
}
