//! What requests cost, and the job's ceilings on dollars and wall time.
//!
//! [`Pricing`] turns usage into dollars. [`SpendMeter`] is the one account a job's
//! requests are charged to — the turn's, the compactions' and the subagents' alike (a
//! child conversation shares its parent's meter).
//!
//! `--max-cost` is a guarantee, not a forecast: before a request is sent,
//! [`plan_request`] prices its input (see [`Pricing::input_cost`]) and caps its answer at
//! what the rest of the budget pays for — `min(the model's cap, ⌊(remaining − input) /
//! output price⌋)` tokens — so that even an answer that runs to its cap keeps the job
//! within the ceiling. A request is refused only when its input plus the smallest useful
//! answer ([`MIN_USEFUL_OUTPUT_TOKENS`], or the model's own cap when that is smaller)
//! does not fit. The meter holds each admitted request's most-it-may-cost
//! ([`SpendMeter::reserve_with`]) until the request is charged what it really cost
//! ([`Reservation::settle`]), so requests running side by side (subagents) cannot
//! together cross the ceiling either. The time ceiling (`max_duration`) is checked at the
//! same place: no request starts after the turn's deadline.

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
    /// Input written to the prompt cache (Anthropic's 5-minute cache: 1.25× input);
    /// `None`: the input price (providers that do not bill writes apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Pricing {
    /// Cost in dollars of `usage` at these prices.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - cached);
        let uncached = usage.input_tokens - cached - written;
        (uncached as f64 * self.input
            + written as f64 * self.cache_write.unwrap_or(self.input)
            + cached as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }

    /// The most a prompt of `input` may cost: its likely-cached part at the cached price,
    /// the rest at the input price — or at the cache-write price when that is set and
    /// higher, since a provider that bills writes apart writes the new part of a prompt
    /// to its cache.
    pub fn input_cost(&self, input: InputEstimate) -> f64 {
        let cached = input.likely_cached.min(input.tokens);
        let rest = input.tokens - cached;
        let rest_price = self
            .cache_write
            .map_or(self.input, |write| write.max(self.input));
        (cached as f64 * self.cached_input + rest as f64 * rest_price) / 1_000_000.0
    }

    /// What `tokens` output tokens cost.
    pub fn output_cost(&self, tokens: u64) -> f64 {
        tokens as f64 * self.output / 1_000_000.0
    }

    /// The most output tokens `dollars` pays for: `⌊dollars / price per token⌋` (none for
    /// nothing or less, [`u64::MAX`] when output is free).
    pub fn output_tokens_for(&self, dollars: f64) -> u64 {
        if dollars.is_nan() || dollars <= 0.0 {
            return 0;
        }
        if self.output <= 0.0 || dollars.is_infinite() {
            return u64::MAX;
        }
        let tokens = (dollars * 1_000_000.0 / self.output).floor();
        // `as` saturates at u64::MAX.
        let mut tokens = tokens as u64;
        // Rounding may leave the quotient a token off what the dollars pay, either way.
        for _ in 0..4 {
            if tokens == 0 || self.output_cost(tokens) <= dollars {
                break;
            }
            tokens -= 1.max(tokens >> 40);
        }
        for _ in 0..4 {
            if tokens == u64::MAX || self.output_cost(tokens + 1) > dollars {
                break;
            }
            tokens += 1;
        }
        tokens
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

/// The smallest answer worth paying for, in output tokens: a request whose input plus
/// this much output (or the model's own cap, when that is smaller) does not fit in what
/// is left of the budget is refused. Enough for a paragraph of text or a tool call with
/// modest arguments.
pub const MIN_USEFUL_OUTPUT_TOKENS: u64 = 1_024;

/// pith's estimate of a request's prompt, for pricing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InputEstimate {
    /// Input tokens: the whole prompt.
    pub tokens: u64,
    /// The part of them likely served from the provider's prompt cache (at most
    /// `tokens`).
    pub likely_cached: u64,
}

/// What the budget lets a request do; see [`plan_request`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RequestPlan {
    /// Send it, its answer capped at `output_cap` tokens.
    Send {
        /// The output cap to send: the model's, or less when the budget pays for less.
        output_cap: u64,
        /// True when the budget lowered the cap below the model's.
        clamped: bool,
        /// The most it may cost: its input plus `output_cap` tokens of output.
        estimate: f64,
    },
    /// Refuse it: its input plus the smallest useful answer would cost `estimate`, more
    /// than is left.
    Refuse {
        /// The cost of the input and the smallest useful answer.
        estimate: f64,
    },
}

impl RequestPlan {
    /// The plan's dollars: what a sent request may cost at most, or what a refused one
    /// would have cost at least.
    pub fn estimate(&self) -> f64 {
        match *self {
            RequestPlan::Send { estimate, .. } | RequestPlan::Refuse { estimate } => estimate,
        }
    }
}

/// The plan for a request whose prompt is `input` and whose model may answer up to
/// `model_cap` tokens, with `remaining` dollars left of the budget (`None`: no cost
/// ceiling, the model's cap stands).
///
/// The request is refused when its input plus `min(MIN_USEFUL_OUTPUT_TOKENS, model_cap)`
/// output tokens cost more than `remaining`; otherwise it is sent with the output cap
/// `min(model_cap, ⌊(remaining − input cost) / output price⌋)`, and its estimate — input
/// plus that cap — is at most `remaining`.
pub fn plan_request(
    pricing: &Pricing,
    input: InputEstimate,
    model_cap: u64,
    remaining: Option<f64>,
) -> RequestPlan {
    let model_cap = model_cap.max(1);
    let input_cost = pricing.input_cost(input);
    let Some(remaining) = remaining else {
        return RequestPlan::Send {
            output_cap: model_cap,
            clamped: false,
            estimate: input_cost + pricing.output_cost(model_cap),
        };
    };
    let minimum = MIN_USEFUL_OUTPUT_TOKENS.min(model_cap);
    let affordable = pricing.output_tokens_for(remaining - input_cost);
    if affordable < minimum {
        return RequestPlan::Refuse {
            estimate: input_cost + pricing.output_cost(minimum),
        };
    }
    let output_cap = affordable.min(model_cap);
    RequestPlan::Send {
        output_cap,
        clamped: output_cap < model_cap,
        estimate: input_cost + pricing.output_cost(output_cap),
    }
}

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
    /// The request's input and the smallest useful answer would take the spend past
    /// `max`.
    #[error("{}", cost_message(*spent, *in_flight, *estimate, *max))]
    Cost {
        /// Dollars spent so far.
        spent: f64,
        /// Dollars held for requests still running (subagents side by side): the most
        /// they may cost.
        in_flight: f64,
        /// The refused request's estimated cost: its input and the smallest useful
        /// answer.
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

fn cost_message(spent: f64, in_flight: f64, estimate: f64, max: f64) -> String {
    let held = if in_flight > 0.0 {
        format!(" (and ${in_flight:.4} held for requests still running)")
    } else {
        String::new()
    };
    // Whole cents as such ($2.50), a finer ceiling to the hundredth of a cent.
    let cents = max * 100.0;
    let max = if (cents - cents.round()).abs() < 1e-9 {
        format!("{max:.2}")
    } else {
        format!("{max:.4}")
    };
    format!(
        "cost ceiling reached: the next request (about ${estimate:.4} for its input and the smallest useful answer) would take the job from ${spent:.4}{held} past its ceiling of ${max} (--max-cost); it was not sent"
    )
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
    /// Held for admitted requests not charged yet.
    reserved: f64,
    /// How many reservations are held.
    reservations: usize,
    deadline: Option<Instant>,
}

impl MeterState {
    fn release(&mut self, dollars: f64) {
        self.reservations = self.reservations.saturating_sub(1);
        self.reserved = if self.reservations == 0 {
            // No rounding residue outlives the last reservation.
            0.0
        } else {
            (self.reserved - dollars).max(0.0)
        };
    }

    fn add(&mut self, dollars: f64) {
        if dollars.is_finite() && dollars > 0.0 {
            self.spent += dollars;
        }
    }
}

/// The most an admitted request may cost, held on its [`SpendMeter`] until it is
/// charged ([`Reservation::settle`]); dropping it unsettled releases it, charging
/// nothing.
#[derive(Debug)]
pub struct Reservation<'a> {
    meter: &'a SpendMeter,
    dollars: f64,
    settled: bool,
}

impl Reservation<'_> {
    /// The dollars held.
    pub fn dollars(&self) -> f64 {
        self.dollars
    }

    /// Releases the hold and charges `cost`, what the request really cost.
    pub fn settle(mut self, cost: f64) {
        let mut state = self.meter.state();
        state.release(self.dollars);
        state.add(cost);
        self.settled = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.meter.state().release(self.dollars);
        }
    }
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

    /// Dollars left under the cost ceiling, what running requests may still cost set
    /// aside (never below 0); `None` without a cost ceiling.
    pub fn remaining(&self) -> Option<f64> {
        let state = self.state();
        self.remaining_in(&state)
    }

    fn remaining_in(&self, state: &MeterState) -> Option<f64> {
        self.ceilings
            .max_cost
            .map(|max| (max - state.spent - state.reserved).max(0.0))
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

    fn check_deadline(&self, state: &MeterState, now: Instant) -> Result<(), CeilingReached> {
        if let (Some(deadline), Some(max)) = (state.deadline, self.ceilings.max_duration) {
            if now >= deadline {
                return Err(CeilingReached::Duration { max });
            }
        }
        Ok(())
    }

    fn over_budget(&self, state: &MeterState, estimate: f64, max: f64) -> CeilingReached {
        CeilingReached::Cost {
            spent: state.spent,
            in_flight: state.reserved,
            estimate,
            max,
        }
    }

    /// May a request estimated at `estimate` dollars be sent at `now`? (A check only:
    /// nothing is held; see [`SpendMeter::reserve_with`].)
    pub fn admit(&self, estimate: f64, now: Instant) -> Result<(), CeilingReached> {
        let state = self.state();
        self.check_deadline(&state, now)?;
        if let Some(max) = self.ceilings.max_cost {
            if state.spent + state.reserved + estimate > max {
                return Err(self.over_budget(&state, estimate, max));
            }
        }
        Ok(())
    }

    /// Admits a request at `now` as `plan` decides, atomically: `plan` is given the
    /// dollars left ([`SpendMeter::remaining`]; `None` without a cost ceiling) and
    /// answers `Ok((most it may cost, what else it decided))` to send the request, or
    /// `Err(its estimate)` to refuse it (which only makes sense under a cost ceiling). A
    /// sent request's most-it-may-cost is held until it is settled. A refusal, a plan
    /// that does not fit what is left, and any request after the turn's deadline are
    /// [`CeilingReached`].
    pub fn reserve_with<T>(
        &self,
        now: Instant,
        plan: impl FnOnce(Option<f64>) -> Result<(f64, T), f64>,
    ) -> Result<(Reservation<'_>, T), CeilingReached> {
        let mut state = self.state();
        self.check_deadline(&state, now)?;
        let remaining = self.remaining_in(&state);
        let max = self.ceilings.max_cost.unwrap_or(0.0);
        let (estimate, decided) = plan(remaining).map_err(|e| self.over_budget(&state, e, max))?;
        let estimate = if estimate.is_finite() && estimate > 0.0 {
            estimate
        } else {
            0.0
        };
        if remaining.is_some_and(|remaining| estimate > remaining) {
            return Err(self.over_budget(&state, estimate, max));
        }
        state.reserved += estimate;
        state.reservations += 1;
        Ok((
            Reservation {
                meter: self,
                dollars: estimate,
                settled: false,
            },
            decided,
        ))
    }

    /// Charges `dollars` for a request that held no reservation.
    pub fn charge(&self, dollars: f64) {
        self.state().add(dollars);
    }
}

#[cfg(test)]
mod tests;
