//! The spend guard: the job's ceilings (`--max-cost`, `--max-duration`) applied to every
//! model request of one loop — turn requests and compaction requests alike, since both
//! go through `request::send_with_retries`.
//!
//! Before each attempt the guard prices the request's prompt — pith's count anchored on
//! the reported usage, plus a small margin ([`priced_input_tokens`]); the part the previous request of this loop left in the provider's
//! prompt cache at the cached price, the rest at the input price or, where writes are
//! billed apart, the cache-write price (see [`pith_core::Pricing`]) — and plans it on the
//! shared [`SpendMeter`] ([`plan_request`]): the answer is capped at what the rest of the
//! budget pays for, and the request is refused with [`ProviderError::Ceiling`] before
//! anything is sent only when its input and [`MIN_USEFUL_OUTPUT_TOKENS`] of answer do not
//! fit. The capped request is what goes on the wire ([`Admitted::request`]), and pith's own
//! cut of the answer ([`Admitted::answer_cap`], for a server that ignores the cap) follows
//! it, with its usual margin. After it, the
//! guard charges the meter what the request cost: the provider's own figure, else the
//! prices applied to the reported usage, else (no usage reported) its input estimate and
//! the answer as pith counted it.
//!
//! Thinking counts as output and must fit under the cap: a request whose cap leaves less
//! than the thinking budget plus [`MIN_USEFUL_OUTPUT_TOKENS`] is sent with a budget of the
//! cap minus that minimum, or without thinking when that is below the smallest budget
//! Anthropic takes ([`MIN_THINKING_BUDGET`]) — so an encoder never raises `max_tokens`
//! above the budget for it. A changed thinking setting invalidates the provider's cache
//! of the messages, so such a request's prompt is priced as new.
//!
//! A subagent's loop has its own guard on its parent's meter, so its requests count and
//! are capped alike; each admitted request holds its most-it-may-cost on the meter until
//! it is charged, so requests running side by side cannot together cross the ceiling.
//!
//! [`ProviderError::Ceiling`]: crate::wire::ProviderError::Ceiling

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pith_core::{
    plan_request, usage_cost, CeilingReached, InputEstimate, Message, Pricing, RequestEstimator,
    RequestPlan, Reservation, SpendMeter, TokenCounter, Usage, MIN_USEFUL_OUTPUT_TOKENS,
};

use crate::tool_loop::output_cap::enforced_output_cap;
use crate::wire::adapter::ModelRequest;
use crate::wire::reasoning::{ReasoningEffort, MIN_THINKING_BUDGET};

/// One loop's guard on a shared [`SpendMeter`]; see the module docs.
pub struct SpendGuard {
    meter: Arc<SpendMeter>,
    pricing: Option<Pricing>,
    /// Counts the requests this guard sees (anchored on their reported usage, so only
    /// new messages are counted).
    estimator: Mutex<RequestEstimator>,
    /// The last request of this loop that reported usage: its prompt is likely cached
    /// now, for a request that extends it with the same thinking setting.
    last: Mutex<Option<LastSent>>,
}

pith_core::debug_fields!(SpendGuard |this| {
    ceilings: this.meter.ceilings(),
    pricing: this.pricing,
});

/// What the provider's cache may hold of the last request that reported usage.
#[derive(Debug, Clone, Copy)]
struct LastSent {
    usage: Usage,
    prefix: PrefixKey,
    reasoning: Option<ReasoningEffort>,
}

/// A fingerprint of a request's prompt: enough to tell whether a later request starts
/// with it (same system prompt and tools, its messages first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PrefixKey {
    system: u64,
    tools: u64,
    messages: usize,
    first: u64,
    last: u64,
}

fn fingerprint<T: std::fmt::Debug + ?Sized>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    format!("{value:?}").hash(&mut hasher);
    hasher.finish()
}

fn message_fingerprint(message: Option<&Message>) -> u64 {
    message.map_or(0, fingerprint)
}

impl PrefixKey {
    fn of(request: &ModelRequest) -> Self {
        Self {
            system: fingerprint(request.system.as_str()),
            tools: fingerprint(&request.tools),
            messages: request.messages.len(),
            first: message_fingerprint(request.messages.first()),
            last: message_fingerprint(request.messages.last()),
        }
    }

    /// True when `request` starts with the prompt this key was taken of.
    fn is_prefix_of(&self, request: &ModelRequest) -> bool {
        let messages = &request.messages;
        self.messages > 0
            && messages.len() >= self.messages
            && self.system == fingerprint(request.system.as_str())
            && self.tools == fingerprint(&request.tools)
            && self.first == message_fingerprint(messages.first())
            && self.last == message_fingerprint(messages.get(self.messages - 1))
    }
}

/// How much more than pith's count of a prompt the guard prices, percent: what is not
/// anchored on reported usage (the messages added since) is counted with pith's tokenizer
/// and framing, which may fall a little short of the provider's.
pub const INPUT_MARGIN_PERCENT: u64 = 2;

/// The smallest margin on pith's count of a prompt, tokens.
pub const INPUT_MARGIN_MIN_TOKENS: u64 = 32;

/// The input tokens a prompt pith counted at `counted` is priced at: the count and its
/// margin ([`INPUT_MARGIN_PERCENT`], at least [`INPUT_MARGIN_MIN_TOKENS`]).
pub fn priced_input_tokens(counted: u64) -> u64 {
    counted.saturating_add(
        (counted / 100)
            .saturating_mul(INPUT_MARGIN_PERCENT)
            .max(INPUT_MARGIN_MIN_TOKENS),
    )
}

/// The thinking setting a request whose answer is capped at `cap` tokens is sent with:
/// `reasoning` when its budget and [`MIN_USEFUL_OUTPUT_TOKENS`] of answer fit under the
/// cap; else a budget of `cap − MIN_USEFUL_OUTPUT_TOKENS`, or no thinking
/// ([`ReasoningEffort::Off`]) when that is below [`MIN_THINKING_BUDGET`].
pub fn fit_thinking(reasoning: Option<ReasoningEffort>, cap: u64) -> Option<ReasoningEffort> {
    let Some(effort) = reasoning.and_then(ReasoningEffort::enabled) else {
        return reasoning;
    };
    let budget = u64::from(effort.anthropic_budget());
    if cap >= budget.saturating_add(MIN_USEFUL_OUTPUT_TOKENS) {
        return reasoning;
    }
    let room = cap.saturating_sub(MIN_USEFUL_OUTPUT_TOKENS);
    Some(if room >= u64::from(MIN_THINKING_BUDGET) {
        ReasoningEffort::Budget(u32::try_from(room).unwrap_or(u32::MAX))
    } else {
        ReasoningEffort::Off
    })
}

/// What [`SpendGuard::admit`] let through, holding its most-it-may-cost on the meter
/// until [`SpendGuard::charge`] settles it.
#[derive(Debug)]
pub struct Admitted<'a> {
    /// The most the request may cost (0 without a cost ceiling).
    pub estimate: f64,
    /// The output cap it is sent with.
    pub output_cap: u64,
    /// True when the budget lowered the cap below the model's: an answer cut there was
    /// cut by the cost ceiling.
    pub clamped: bool,
    /// The thinking setting it is sent with.
    pub reasoning: Option<ReasoningEffort>,
    /// Output tokens after which pith cuts the answer itself, should the server not
    /// honour the cap: the cap sent and pith's usual margin ([`enforced_output_cap`];
    /// `u64::MAX` without a cost ceiling, the loop's own cut applying alone). An answer
    /// pith cut is charged at most the cap sent.
    pub answer_cap: u64,
    input: InputEstimate,
    cost_ceiling: bool,
    reservation: Reservation<'a>,
}

impl Admitted<'_> {
    /// The request as it must be sent, when it differs from `request`: its output cap
    /// lowered to what the budget pays for, its thinking fitted under that cap.
    pub fn request(&self, request: &ModelRequest) -> Option<ModelRequest> {
        if !self.cost_ceiling {
            return None;
        }
        let max_output_tokens = if self.clamped {
            Some(u32::try_from(self.output_cap).unwrap_or(u32::MAX))
        } else {
            request.max_output_tokens
        };
        (max_output_tokens != request.max_output_tokens || self.reasoning != request.reasoning)
            .then(|| ModelRequest {
                max_output_tokens,
                reasoning: self.reasoning,
                ..request.clone()
            })
    }
}

/// What the plan decided besides its cost.
struct Decided {
    output_cap: u64,
    clamped: bool,
    reasoning: Option<ReasoningEffort>,
    input: InputEstimate,
}

impl SpendGuard {
    /// A guard charging `meter`, estimating with `pricing` and `counter`. A cost ceiling
    /// without prices is an error: the guard could not tell what a request costs.
    pub fn new(
        meter: Arc<SpendMeter>,
        pricing: Option<Pricing>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, String> {
        if meter.ceilings().max_cost.is_some() && pricing.is_none() {
            return Err(
                "--max-cost needs the model's prices, and pith knows none for this model: set [models.\"provider/model\"] pricing = { input = …, cached_input = …, output = … } (dollars per million tokens)"
                    .to_owned(),
            );
        }
        Ok(Self {
            meter,
            pricing,
            // Its estimate predicts the bill, and the provider bills what it reports: every
            // report is believed here (not so for the context decisions).
            estimator: Mutex::new({
                let mut estimator = RequestEstimator::new(counter);
                estimator.set_usage_band(pith_core::context::calibration::Band {
                    min: 0.0,
                    max: f64::MAX,
                });
                estimator
            }),
            last: Mutex::new(None),
        })
    }

    /// The meter it charges.
    pub fn meter(&self) -> &Arc<SpendMeter> {
        &self.meter
    }

    /// The part of `input_tokens` likely in the provider's cache when `request` is sent
    /// with `reasoning`: the last reported prompt, when the provider cached it (it
    /// reported cache reads or writes), `request` starts with it and the thinking setting
    /// is unchanged (Anthropic keys its cache of the messages to it).
    fn likely_cached(
        last: Option<&LastSent>,
        request: &ModelRequest,
        reasoning: Option<ReasoningEffort>,
        input_tokens: u64,
    ) -> u64 {
        last.filter(|last| {
            (last.usage.cached_input_tokens > 0 || last.usage.cache_write_tokens > 0)
                && last.reasoning == reasoning
                && last.prefix.is_prefix_of(request)
        })
        .map_or(0, |last| last.usage.input_tokens.min(input_tokens))
    }

    /// May `request` be sent now, and how? `output_cap` is pith's own cut of the answer
    /// (the model's cap when the request names none). Refused when a ceiling is reached;
    /// see the module docs.
    pub fn admit(
        &self,
        request: &ModelRequest,
        output_cap: u64,
    ) -> Result<Admitted<'_>, CeilingReached> {
        let model_cap = request
            .max_output_tokens
            .map_or(output_cap, u64::from)
            .max(1);
        let (pricing, cost_ceiling) = match (self.pricing, self.meter.ceilings().max_cost) {
            (Some(pricing), Some(_)) => (Some(pricing), true),
            (pricing, None) => (pricing, false),
            // Refused at construction.
            (None, Some(_)) => (None, false),
        };
        let input_tokens = if cost_ceiling {
            priced_input_tokens(
                self.estimator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .estimate(&request.system, &request.messages, &request.tools)
                    .total as u64,
            )
        } else {
            0
        };
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        let input_with = |reasoning| InputEstimate {
            tokens: input_tokens,
            likely_cached: Self::likely_cached(last.as_ref(), request, reasoning, input_tokens),
        };
        let (reservation, decided) = self.meter.reserve_with(Instant::now(), |remaining| {
            let Some(pricing) = pricing.filter(|_| cost_ceiling) else {
                return Ok((
                    0.0,
                    Decided {
                        output_cap: model_cap,
                        clamped: false,
                        reasoning: request.reasoning,
                        input: InputEstimate::default(),
                    },
                ));
            };
            plan_with_thinking(
                &pricing,
                request.reasoning,
                model_cap,
                remaining,
                input_with,
            )
        })?;
        Ok(Admitted {
            estimate: reservation.dollars(),
            output_cap: decided.output_cap,
            clamped: decided.clamped,
            reasoning: decided.reasoning,
            answer_cap: if cost_ceiling {
                enforced_output_cap(u32::try_from(decided.output_cap).unwrap_or(u32::MAX))
            } else {
                u64::MAX
            },
            input: decided.input,
            cost_ceiling,
            reservation,
        })
    }

    /// Charges the meter for `request`, admitted as `admitted` and sent as `sent`: `usage`
    /// when the provider reported it, else — when the provider produced anything
    /// (`answered`) — the input estimate and `counted_output` tokens of answer (pith's
    /// count of what streamed), at most the admitted cap.
    pub fn charge(
        &self,
        sent: &ModelRequest,
        admitted: Admitted<'_>,
        usage: Option<&Usage>,
        answered: bool,
        counted_output: u64,
    ) {
        match usage {
            Some(usage) => {
                let dollars = usage_cost(usage, self.pricing.as_ref()).unwrap_or(0.0);
                admitted.reservation.settle(dollars);
                *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastSent {
                    usage: *usage,
                    prefix: PrefixKey::of(sent),
                    reasoning: sent.reasoning,
                });
                let mut estimator = self.estimator.lock().unwrap_or_else(|e| e.into_inner());
                // The report is weighed against pith's count of the same request (the
                // band of docs/context-pipeline.md): what the provider bills is its count.
                let counted = estimator
                    .estimate(&sent.system, &sent.messages, &sent.tools)
                    .counted as u64;
                estimator.record_usage(
                    usage.input_tokens,
                    usage.output_tokens,
                    sent.messages.len() + 1,
                    counted,
                );
            }
            None if answered => {
                let dollars = self.pricing.map_or(0.0, |pricing| {
                    pricing.input_cost(admitted.input)
                        + pricing.output_cost(counted_output.min(admitted.output_cap))
                });
                admitted.reservation.settle(dollars);
                // What the provider cached of it is unknown.
                *self.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
            None => admitted.reservation.settle(0.0),
        }
    }
}

/// The plan of a request on `remaining` dollars: [`plan_request`] with the prompt as
/// `input_with(thinking setting)` prices it, the thinking setting fitted under the cap
/// ([`fit_thinking`]) and the plan made again with the prompt priced for the fitted
/// setting, until the two agree. `Err` is a refusal and its estimate.
fn plan_with_thinking(
    pricing: &Pricing,
    reasoning: Option<ReasoningEffort>,
    model_cap: u64,
    remaining: Option<f64>,
    input_with: impl Fn(Option<ReasoningEffort>) -> InputEstimate,
) -> Result<(f64, Decided), f64> {
    let mut sent = reasoning;
    let mut round = 0;
    loop {
        // Past a few rounds, the prompt is priced as new: the most it may cost.
        let input = if round < 3 {
            input_with(sent)
        } else {
            InputEstimate {
                likely_cached: 0,
                ..input_with(sent)
            }
        };
        let (output_cap, clamped, estimate) =
            match plan_request(pricing, input, model_cap, remaining) {
                RequestPlan::Send {
                    output_cap,
                    clamped,
                    estimate,
                } => (output_cap, clamped, estimate),
                RequestPlan::Refuse { estimate } => return Err(estimate),
            };
        let fitted = fit_thinking(reasoning, output_cap);
        if fitted == sent || round == 3 {
            return Ok((
                estimate,
                Decided {
                    output_cap,
                    clamped,
                    reasoning: fitted,
                    input,
                },
            ));
        }
        sent = fitted;
        round += 1;
    }
}

#[cfg(test)]
mod tests;
