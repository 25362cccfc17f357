//! The price and cache models of the provider families the simulator bills with
//! (`--prices anthropic|openai|gemini`). Sources (docs/benchmarks.md cites them in full):
//!
//! - `anthropic`: Claude Sonnet 4.5 — $3/M input, 5-minute cache writes 1.25× ($3.75/M),
//!   reads 0.1× ($0.30/M), $15/M output; explicit breakpoints, 5-minute TTL refreshed on
//!   use, 1,024-token minimum (Anthropic's prompt-caching page). Requests over 200,000
//!   input tokens (the 1M-context beta) are billed at 2× input and 1.5× output.
//! - `anthropic-1h`: the same model with the 1-hour cache on every breakpoint — writes 2×
//!   ($6/M), a 1-hour TTL refreshed on use.
//! - `openai`: GPT-5 — $1.25/M input, $0.125/M cached, $10/M output, no write fee;
//!   automatic prefix caching from 1,024 tokens in 128-token steps (OpenAI's
//!   prompt-caching guide).
//! - `gemini`: Gemini 2.5 Pro — $1.25/M input, cached at a 90% discount, $10/M output;
//!   implicit caching; requests over 200,000 input tokens at $2.50/M input, $15/M output.
//!
//! The time figures (time to first token, output speed) are the medians docs/benchmarks.md
//! cites; they decide when a cache entry expires, not what a token costs.

use anyhow::{bail, Result};
use pith_testkit::cache::{CacheBill, CacheRules};
use serde::Serialize;

/// Requests above this many input tokens are billed at the long-context rates.
const LONG_CONTEXT_TOKENS: u64 = 200_000;

/// One provider family's prices, cache rules and speed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PriceModel {
    /// `anthropic`, `openai` or `gemini`.
    pub name: &'static str,
    /// The model the prices are of.
    pub model: &'static str,
    /// Uncached input, $ per million tokens.
    pub input: f64,
    /// Input read from the cache, $/M.
    pub cache_read: f64,
    /// Input written to the cache, $/M (the input price where writing costs nothing extra).
    pub cache_write: f64,
    /// $/M of cache writes at a breakpoint asking for the 1-hour cache (Anthropic: 2× the
    /// input price; elsewhere the same as `cache_write`).
    pub cache_write_long: f64,
    /// Output, $/M.
    pub output: f64,
    /// Multipliers of input and output prices for a request over 200,000 input tokens
    /// (`None`: one rate at every size).
    pub long_context: Option<(f64, f64)>,
    /// The model's largest answer, tokens (what the peers' thresholds reserve).
    #[serde(skip)]
    pub max_output: u64,
    /// Time to the first token, seconds.
    pub first_token_s: f64,
    /// Output speed, tokens per second.
    pub tokens_per_s: f64,
    /// How the provider caches prompts.
    #[serde(skip)]
    pub rules: CacheRules,
}

impl PriceModel {
    /// Claude Sonnet 4.5 on Anthropic's API, 5-minute cache.
    pub fn anthropic() -> Self {
        Self {
            name: "anthropic",
            model: "claude-sonnet-4.5",
            input: 3.0,
            cache_read: 0.30,
            cache_write: 3.75,
            cache_write_long: 6.0,
            output: 15.0,
            long_context: Some((2.0, 1.5)),
            max_output: 64_000,
            first_token_s: 1.8,
            tokens_per_s: 63.0,
            rules: CacheRules::anthropic(),
        }
    }

    /// Claude Sonnet 4.5 with Anthropic's 1-hour cache on every breakpoint
    /// (`"ttl": "1h"`): writes at 2× the input price ($6/M), entries living an hour from
    /// their last use. What a session pays when it keeps its cache through the user's
    /// pauses instead of rewriting it.
    pub fn anthropic_1h() -> Self {
        Self {
            name: "anthropic-1h",
            cache_write: 6.0,
            cache_write_long: 6.0,
            rules: CacheRules::anthropic_1h(),
            ..Self::anthropic()
        }
    }

    /// GPT-5 on OpenAI's API.
    pub fn openai() -> Self {
        Self {
            name: "openai",
            model: "gpt-5",
            input: 1.25,
            cache_read: 0.125,
            cache_write: 1.25,
            cache_write_long: 1.25,
            output: 10.0,
            long_context: None,
            max_output: 128_000,
            first_token_s: 2.0,
            tokens_per_s: 50.0,
            rules: CacheRules::openai(),
        }
    }

    /// Gemini 2.5 Pro on the Gemini API, implicit caching.
    pub fn gemini() -> Self {
        Self {
            name: "gemini",
            model: "gemini-2.5-pro",
            input: 1.25,
            cache_read: 0.125,
            cache_write: 1.25,
            cache_write_long: 1.25,
            output: 10.0,
            long_context: Some((2.0, 1.5)),
            max_output: 65_536,
            first_token_s: 2.0,
            tokens_per_s: 80.0,
            rules: CacheRules::gemini(),
        }
    }

    /// The model named `anthropic`, `anthropic-1h`, `openai` or `gemini`.
    pub fn parse(name: &str) -> Result<Self> {
        match name {
            "anthropic" => Ok(Self::anthropic()),
            "anthropic-1h" => Ok(Self::anthropic_1h()),
            "openai" => Ok(Self::openai()),
            "gemini" => Ok(Self::gemini()),
            other => {
                bail!("unknown price model `{other}` (anthropic, anthropic-1h, openai, gemini)")
            }
        }
    }

    /// The (input, output) multipliers of a request of `input_tokens`.
    fn rate(&self, input_tokens: u64) -> (f64, f64) {
        match self.long_context {
            Some(rate) if input_tokens > LONG_CONTEXT_TOKENS => rate,
            _ => (1.0, 1.0),
        }
    }

    /// Dollars of one request's input as the cache billed it, split by how it billed
    /// each token.
    pub fn input_parts(&self, bill: &CacheBill) -> CostParts {
        let (input_rate, _) = self.rate(bill.input_tokens);
        let plain = bill
            .input_tokens
            .saturating_sub(bill.cache_read_tokens + bill.cache_write_tokens);
        let long = bill.cache_write_long_tokens.min(bill.cache_write_tokens);
        let short = bill.cache_write_tokens - long;
        CostParts {
            input: input_rate * plain as f64 * self.input / 1e6,
            cache_read: input_rate * bill.cache_read_tokens as f64 * self.cache_read / 1e6,
            cache_write: input_rate
                * (short as f64 * self.cache_write + long as f64 * self.cache_write_long)
                / 1e6,
            output: 0.0,
        }
    }

    /// Dollars of `tokens` of output answering a request of `input_tokens`.
    pub fn output_dollars(&self, input_tokens: u64, tokens: u64) -> f64 {
        let (_, output_rate) = self.rate(input_tokens);
        output_rate * tokens as f64 * self.output / 1e6
    }

    /// Seconds the model takes to write `tokens` of output.
    pub fn latency_s(&self, tokens: u64) -> f64 {
        self.first_token_s + tokens as f64 / self.tokens_per_s
    }

    /// Seconds a cache entry lives after its last use.
    pub fn ttl_s(&self) -> f64 {
        self.rules.ttl_seconds()
    }
}

/// A policy's dollars by what they paid for: plain input, cache reads, cache writes
/// (either lifetime) and the output it caused (summaries and re-read calls). Why a policy
/// costs what it does: a rewrite shows in `cache_write`, carrying in `cache_read`, a
/// cold or uncached request in `input`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct CostParts {
    /// Input billed at the plain input price.
    pub input: f64,
    /// Input read from the cache.
    pub cache_read: f64,
    /// Input written to the cache.
    pub cache_write: f64,
    /// Output the policy asked for: summaries and re-read calls (not the agent's answers).
    pub output: f64,
}

impl CostParts {
    /// All four.
    pub fn total(&self) -> f64 {
        self.input + self.cache_read + self.cache_write + self.output
    }

    /// These parts `ratio` times as dear (a model at another price).
    pub fn scaled(self, ratio: f64) -> Self {
        Self {
            input: self.input * ratio,
            cache_read: self.cache_read * ratio,
            cache_write: self.cache_write * ratio,
            output: self.output * ratio,
        }
    }

    /// Adds `other` to these.
    pub fn add(&mut self, other: Self) {
        self.input += other.input;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.output += other.output;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bill(input: u64, read: u64, write: u64) -> CacheBill {
        CacheBill {
            input_tokens: input,
            cache_read_tokens: read,
            cache_write_tokens: write,
            cache_write_long_tokens: 0,
        }
    }

    #[test]
    fn reads_writes_and_plain_input_are_priced_apart() {
        let m = PriceModel::anthropic();
        let dollars = m.input_parts(&bill(100_000, 50_000, 40_000)).total();
        let expected = (0.1 * 3.0 + 0.5 * 0.30 + 0.4 * 3.75) / 10.0;
        assert!((dollars - expected).abs() < 1e-9, "{dollars} vs {expected}");
        let o = PriceModel::openai();
        assert!((o.input_parts(&bill(100_000, 100_000, 0)).total() - 0.0125).abs() < 1e-9);
    }

    #[test]
    fn a_request_over_200k_pays_the_long_context_rate() {
        let m = PriceModel::anthropic();
        let small = m.input_parts(&bill(200_000, 0, 0)).total();
        let large = m.input_parts(&bill(200_001, 0, 0)).total();
        assert!(large > 1.99 * small, "{small} {large}");
        assert!((m.output_dollars(300_000, 1_000_000) - 22.5).abs() < 1e-9);
        let o = PriceModel::openai();
        assert!((o.output_dollars(300_000, 1_000_000) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused() {
        assert_eq!(PriceModel::parse("gemini").unwrap().name, "gemini");
        assert!(PriceModel::parse("cheap").is_err());
        assert_eq!(PriceModel::anthropic().ttl_s(), 300.0);
    }

    #[test]
    fn the_one_hour_cache_writes_at_twice_the_input_price_and_lives_an_hour() {
        let hour = PriceModel::parse("anthropic-1h").unwrap();
        let five = PriceModel::anthropic();
        assert_eq!(hour.name, "anthropic-1h");
        assert_eq!(hour.ttl_s(), 3600.0);
        assert!((hour.cache_write - 2.0 * hour.input).abs() < 1e-9);
        // Everything else is Sonnet's.
        assert_eq!(
            (hour.input, hour.cache_read, hour.output, hour.max_output),
            (five.input, five.cache_read, five.output, five.max_output)
        );
        let written = bill(100_000, 0, 100_000);
        assert!((hour.input_parts(&written).total() - 0.6).abs() < 1e-9);
        assert!((five.input_parts(&written).total() - 0.375).abs() < 1e-9);
    }
}
