//! What requests cost, and the job's ceilings on dollars and wall time.
//!
//! [`Pricing`] turns usage into dollars. [`SpendMeter`] is the one account a job's
//! requests are charged to — the turn's, the compactions' and the subagents' alike (a
//! child conversation shares its parent's meter) — and the rule that refuses a request
//! before it is sent: [`SpendMeter::admit`] takes the estimated cost of the next request
//! and says no when the spend so far plus that estimate would cross `max_cost`, or when
//! the turn's deadline (`max_duration`) has passed.
//!
//! The estimate of a request ([`SpendMeter::estimate`]) is its input tokens at the input
//! price — the part the previous request of the same loop had in the provider's prompt
//! cache at the cached price — plus an output reservation: the largest answer of the job
//! so far, at least [`OUTPUT_RESERVE_FLOOR_TOKENS`], at most the request's own output cap.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::protocol::usage::Usage;

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Uncached input.
    pub input: f64,
    /// Input read from the prompt cache.
    pub cached_input: f64,
    /// Output.
    pub output: f64,
}

impl Pricing {
    /// Cost in dollars of `usage` at these prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let uncached = usage.input_tokens - cached;
        (uncached as f64 * self.input
            + cached as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// The part of [`Pricing::cost`] spent on reasoning: reasoning tokens are output
    /// tokens, at the output price.
    pub fn reasoning_cost(&self, usage: &Usage) -> f64 {
        usage.reasoning_tokens.min(usage.output_tokens) as f64 * self.output / 1_000_000.0
    }
}

/// What a request cost: the provider's own figure when it reported one (OpenRouter),
/// else `pricing` applied to the usage; `None` when neither is known.
pub fn usage_cost(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    if usage.provider_cost_nanousd > 0 {
        return Some(usage.provider_cost_nanousd as f64 / 1e9);
    }
    pricing.map(|p| p.cost(usage))
}

/// The smallest output reservation of a request's estimate, tokens.
pub const OUTPUT_RESERVE_FLOOR_TOKENS: u64 = 2_048;

/// A job's ceilings (`--max-cost`, `--max-duration`, `[limits]`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Ceilings {
    /// Most US dollars the job may spend.
    pub max_cost: Option<f64>,
    /// Longest a turn (a `pith run` job) may take.
    pub max_duration: Option<Duration>,
}

impl Ceilings {
    /// True when neither ceiling is set.
    pub fn is_empty(&self) -> bool {
        self.max_cost.is_none() && self.max_duration.is_none()
    }
}

/// Why a request was refused: the ceiling it would cross.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CeilingReached {
    /// The request would take the spend past `max`.
    #[error("cost ceiling reached: the next request (about ${estimate:.4}) would take the job from ${spent:.4} past its ceiling of ${max:.2} (--max-cost); it was not sent")]
    Cost {
        /// Dollars spent so far.
        spent: f64,
        /// The request's estimated cost.
        estimate: f64,
        /// The ceiling.
        max: f64,
    },
    /// The turn's time is up.
    #[error("time ceiling reached: the job ran for its {}s (--max-duration); it was stopped", .max.as_secs())]
    Duration {
        /// The ceiling.
        max: Duration,
    },
}

/// The shared account of a job; see the module docs.
#[derive(Debug, Default)]
pub struct SpendMeter {
    ceilings: Ceilings,
    state: Mutex<MeterState>,
}

#[derive(Debug, Default)]
struct MeterState {
    spent: f64,
    largest_output: u64,
    deadline: Option<Instant>,
}

impl SpendMeter {
    /// A meter with nothing spent.
    pub fn new(ceilings: Ceilings) -> Self {
        Self {
            ceilings,
            state: Mutex::default(),
        }
    }

    /// The ceilings it enforces.
    pub fn ceilings(&self) -> Ceilings {
        self.ceilings
    }

    fn state(&self) -> std::sync::MutexGuard<'_, MeterState> {
        // A panic while holding the lock leaves plain numbers behind: keep using them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Dollars charged so far.
    pub fn spent(&self) -> f64 {
        self.state().spent
    }

    /// A turn starts at `now`: its deadline is `now + max_duration`. Returns it.
    pub fn start_turn(&self, now: Instant) -> Option<Instant> {
        let deadline = self.ceilings.max_duration.map(|d| now + d);
        self.state().deadline = deadline;
        deadline
    }

    /// The turn ended: no deadline until the next one starts.
    pub fn end_turn(&self) {
        self.state().deadline = None;
    }

    /// The running turn's deadline.
    pub fn deadline(&self) -> Option<Instant> {
        self.state().deadline
    }

    /// True once the running turn's deadline has passed.
    pub fn past_deadline(&self, now: Instant) -> bool {
        self.deadline().is_some_and(|deadline| now >= deadline)
    }

    /// The estimated cost of a request of `input_tokens`, of which `likely_cached` are
    /// probably in the provider's cache, whose answer may reach `output_cap` tokens.
    pub fn estimate(
        &self,
        pricing: &Pricing,
        input_tokens: u64,
        likely_cached: u64,
        output_cap: u64,
    ) -> f64 {
        let reserve = self
            .state()
            .largest_output
            .max(OUTPUT_RESERVE_FLOOR_TOKENS)
            .min(output_cap.max(1));
        pricing.cost(&Usage {
            input_tokens,
            cached_input_tokens: likely_cached.min(input_tokens),
            output_tokens: reserve,
            ..Usage::default()
        })
    }

    /// May a request estimated at `estimate` dollars be sent at `now`?
    pub fn admit(&self, estimate: f64, now: Instant) -> Result<(), CeilingReached> {
        let state = self.state();
        if let (Some(deadline), Some(max)) = (state.deadline, self.ceilings.max_duration) {
            if now >= deadline {
                return Err(CeilingReached::Duration { max });
            }
        }
        if let Some(max) = self.ceilings.max_cost {
            if state.spent + estimate > max {
                return Err(CeilingReached::Cost {
                    spent: state.spent,
                    estimate,
                    max,
                });
            }
        }
        Ok(())
    }

    /// Charges `dollars` for a request whose answer had `output_tokens`.
    pub fn charge(&self, dollars: f64, output_tokens: u64) {
        let mut state = self.state();
        if dollars.is_finite() && dollars > 0.0 {
            state.spent += dollars;
        }
        state.largest_output = state.largest_output.max(output_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SONNET: Pricing = Pricing {
        input: 3.0,
        cached_input: 0.3,
        output: 15.0,
    };

    #[test]
    fn cost_prices_cached_and_uncached_input_apart() {
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 400_000,
            output_tokens: 100_000,
            ..Usage::default()
        };
        let cost = SONNET.cost(&usage);
        assert!((cost - (1.8 + 0.12 + 1.5)).abs() < 1e-9, "{cost}");
        assert_eq!(usage_cost(&usage, None), None);
        let reported = Usage {
            provider_cost_nanousd: 250_000_000,
            ..usage
        };
        assert_eq!(usage_cost(&reported, Some(&SONNET)), Some(0.25));
    }

    #[test]
    fn the_estimate_reserves_the_largest_answer_so_far_within_the_cap() {
        let meter = SpendMeter::new(Ceilings::default());
        // 100k uncached input + the 2,048-token floor.
        let first = meter.estimate(&SONNET, 100_000, 0, 64_000);
        assert!(
            (first - (0.3 + 2_048.0 * 15.0 / 1e6)).abs() < 1e-9,
            "{first}"
        );
        // A cached prefix is cheaper.
        assert!(meter.estimate(&SONNET, 100_000, 90_000, 64_000) < first / 3.0);
        meter.charge(0.1, 10_000);
        let larger = meter.estimate(&SONNET, 100_000, 0, 64_000);
        assert!((larger - (0.3 + 0.15)).abs() < 1e-9, "{larger}");
        // Never more than the request may answer.
        let capped = meter.estimate(&SONNET, 0, 0, 1_000);
        assert!((capped - 0.015).abs() < 1e-9, "{capped}");
    }

    #[test]
    fn a_request_that_would_cross_the_cost_ceiling_is_refused_before_it_is_sent() {
        let meter = SpendMeter::new(Ceilings {
            max_cost: Some(0.5),
            max_duration: None,
        });
        let now = Instant::now();
        assert_eq!(meter.admit(0.3, now), Ok(()));
        meter.charge(0.3, 100);
        assert!((meter.spent() - 0.3).abs() < 1e-12);
        assert_eq!(
            meter.admit(0.2, now),
            Ok(()),
            "exactly at the ceiling is fine"
        );
        let refused = meter.admit(0.25, now).unwrap_err();
        assert_eq!(
            refused,
            CeilingReached::Cost {
                spent: 0.3,
                estimate: 0.25,
                max: 0.5
            }
        );
        assert!(refused.to_string().contains("$0.50"), "{refused}");
        // Nonsense never lowers the spend.
        meter.charge(f64::NAN, 0);
        meter.charge(-1.0, 0);
        assert!((meter.spent() - 0.3).abs() < 1e-12);
    }

    #[test]
    fn the_time_ceiling_counts_from_the_start_of_the_turn() {
        let meter = SpendMeter::new(Ceilings {
            max_cost: None,
            max_duration: Some(Duration::from_secs(60)),
        });
        let start = Instant::now();
        assert_eq!(meter.admit(1e9, start), Ok(()), "no turn, no deadline");
        assert_eq!(
            meter.start_turn(start),
            Some(start + Duration::from_secs(60))
        );
        assert_eq!(meter.admit(0.0, start + Duration::from_secs(59)), Ok(()));
        assert!(!meter.past_deadline(start + Duration::from_secs(59)));
        assert_eq!(
            meter.admit(0.0, start + Duration::from_secs(60)),
            Err(CeilingReached::Duration {
                max: Duration::from_secs(60)
            })
        );
        assert!(meter.past_deadline(start + Duration::from_secs(61)));
        meter.end_turn();
        assert_eq!(meter.admit(0.0, start + Duration::from_secs(61)), Ok(()));
        assert!(Ceilings::default().is_empty());
    }
}
