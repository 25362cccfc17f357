//! What a job cost, in US dollars: the provider's own figure when it reported one, else
//! the model's prices (`pith_core::usage_cost`); a turn with its subagents; the part
//! spent on reasoning.

use pith_core::{usage_cost, Pricing, Usage};

use crate::conversation::TurnOutcome;

/// The cost of a turn of `model` (`provider/model`, priced at `pricing`) and its
/// subagents: a child that ran the parent's model is priced like the parent; one that ran
/// another model counts only with a provider-reported cost, else the total is unknown.
pub fn turn_cost(outcome: &TurnOutcome, model: &str, pricing: Option<&Pricing>) -> Option<f64> {
    let mut total = usage_cost(&outcome.summary.usage, pricing)?;
    for child in &outcome.children {
        total += if child.usage.provider_cost_nanousd > 0 {
            child.usage.provider_cost_nanousd as f64 / 1e9
        } else if child.model == model {
            usage_cost(&child.usage, pricing)?
        } else {
            return None;
        };
    }
    Some(total)
}

/// The reasoning part of the cost of `usage`: reasoning tokens at the output price (a
/// provider-reported cost is split in the same proportion); `None` without reasoning
/// tokens or a known cost.
pub fn reasoning_cost(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    if usage.reasoning_tokens == 0 {
        return None;
    }
    if let Some(pricing) = pricing {
        return Some(pricing.reasoning_cost(usage));
    }
    let total = usage_cost(usage, None)?;
    let share = usage.reasoning_tokens.min(usage.output_tokens) as f64
        / (usage.input_tokens + usage.output_tokens).max(1) as f64;
    Some(total * share)
}
