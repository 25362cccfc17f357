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

#[cfg(test)]
mod tests {
    use pith_core::ChildRun;

    use super::*;

    const PARENT: &str = "openai/gpt-5";

    fn pricing() -> Pricing {
        // Dollars per million tokens.
        Pricing {
            input: 1.0,
            cached_input: 0.1,
            output: 10.0,
        }
    }

    fn usage(input: u64, output: u64, provider_cost_nanousd: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            provider_cost_nanousd,
            ..Usage::default()
        }
    }

    fn child(model: &str, usage: Usage) -> ChildRun {
        ChildRun {
            session_id: "child".into(),
            agent: "explore".into(),
            model: model.into(),
            usage,
            requests: 1,
            tool_calls: 0,
        }
    }

    fn outcome(children: Vec<ChildRun>) -> TurnOutcome {
        let mut outcome = TurnOutcome {
            children,
            ..TurnOutcome::default()
        };
        outcome.summary.usage = usage(1_000_000, 0, 0);
        outcome
    }

    fn close(actual: Option<f64>, expected: f64) -> bool {
        actual.is_some_and(|a| (a - expected).abs() < 1e-9)
    }

    #[test]
    fn a_child_on_the_parents_model_is_priced_like_the_parent() {
        let turn = outcome(vec![child(PARENT, usage(0, 100_000, 0))]);
        // 1M input at $1 + 100k output at $10/M.
        assert!(close(turn_cost(&turn, PARENT, Some(&pricing())), 2.0));
    }

    #[test]
    fn a_child_on_another_model_counts_only_with_a_reported_cost() {
        let reported = outcome(vec![child("anthropic/x", usage(5, 5, 250_000_000))]);
        assert!(close(turn_cost(&reported, PARENT, Some(&pricing())), 1.25));
        let unpriced = outcome(vec![child("anthropic/x", usage(5, 5, 0))]);
        assert_eq!(turn_cost(&unpriced, PARENT, Some(&pricing())), None);
    }

    #[test]
    fn without_prices_or_a_reported_cost_the_total_is_unknown() {
        assert_eq!(turn_cost(&outcome(Vec::new()), PARENT, None), None);
    }

    #[test]
    fn the_reasoning_part_is_reasoning_tokens_at_the_output_price() {
        let mut spent = usage(0, 1_000_000, 0);
        spent.reasoning_tokens = 400_000;
        assert!(close(reasoning_cost(&spent, Some(&pricing())), 4.0));
        assert_eq!(reasoning_cost(&usage(0, 10, 0), Some(&pricing())), None);
        // A reported cost is split in the reasoning tokens' share of all tokens.
        let mut reported = usage(500_000, 500_000, 2_000_000_000);
        reported.reasoning_tokens = 250_000;
        assert!(close(reasoning_cost(&reported, None), 0.5));
    }
}
