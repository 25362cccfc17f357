//! What a job and a session cost, in US dollars: the provider's own figure when it
//! reported one, else each model's prices (`pith_core::usage_cost`); a turn with its
//! subagents; a whole session from its records (`pith_session::SessionSpend`, the one
//! definition every front-end shows); the part spent on reasoning.

use std::sync::Arc;

use pith_core::{usage_cost, Pricing, Usage};
use pith_providers::models::resolve::price_of;
use pith_providers::models::tables::ModelTables;
use pith_session::SessionSpend;
use serde::Serialize;

use crate::conversation::TurnOutcome;

/// The prices of every model a conversation may have used (its own, a subagent's, one
/// it switched from): `[models."p/m"] pricing` from the configuration, else the catalog.
#[derive(Clone)]
pub struct Prices {
    lookup: Arc<PriceLookup>,
}

/// `provider/model` → its prices.
type PriceLookup = dyn Fn(&str) -> Option<Pricing> + Send + Sync;

impl std::fmt::Debug for Prices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prices")
    }
}

impl Default for Prices {
    /// The catalog's prices, no configuration.
    fn default() -> Self {
        Self::new(ModelTables::default())
    }
}

impl Prices {
    /// The prices the configuration `tables` and the catalog give.
    pub fn new(tables: ModelTables) -> Self {
        Self {
            lookup: Arc::new(move |spec| price_of(spec, &tables)),
        }
    }

    /// Prices from a table of `provider/model` → prices (tests, and front-ends that
    /// know them otherwise).
    pub fn from_table(table: Vec<(String, Pricing)>) -> Self {
        Self {
            lookup: Arc::new(move |spec| {
                table
                    .iter()
                    .find(|(model, _)| model == spec)
                    .map(|(_, pricing)| *pricing)
            }),
        }
    }

    /// The prices of `spec` (`provider/model`), when known.
    pub fn of(&self, spec: &str) -> Option<Pricing> {
        (self.lookup)(spec)
    }

    /// What `spend` cost (see [`SessionSpend::cost`]).
    pub fn cost(&self, spend: &SessionSpend) -> Option<f64> {
        spend.cost(&|model| self.of(model))
    }
}

/// A session's spending as reports show it: usage, cost and cache hits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpendReport {
    /// Every request's usage, the subagents' included.
    pub usage: Usage,
    /// Its cost in US dollars, when every model's price (or a provider's figure) is
    /// known.
    pub cost: Option<f64>,
    /// The share of input tokens the provider served from its prompt cache.
    pub cache_hit_rate: Option<f64>,
}

impl SpendReport {
    /// The report of `spend` at `prices`.
    pub fn of(spend: &SessionSpend, prices: &Prices) -> Self {
        Self {
            usage: spend.total(),
            cost: prices.cost(spend),
            cache_hit_rate: spend.cache_hit_rate(),
        }
    }
}

impl SpendReport {
    /// One line for `/context` in every front-end: what the session spent and how much of
    /// its input came from the prompt cache.
    pub fn line(&self) -> String {
        let cost = self.cost.map_or_else(
            || "cost unknown (no prices for a model)".to_owned(),
            |c| format!("${c:.4}"),
        );
        let cache = self.cache_hit_rate.map_or_else(String::new, |rate| {
            format!(", {:.0}% of it from the prompt cache", rate * 100.0)
        });
        format!(
            "Session: {cost} so far; {} input tokens{cache}, {} output tokens (subagents included).",
            pith_core::thousands(self.usage.input_tokens),
            pith_core::thousands(self.usage.output_tokens),
        )
    }
}

/// The cost of a turn of `model` (`provider/model`) and its subagents, each priced at
/// the model it ran (`prices`), or at the cost the provider reported.
pub fn turn_cost(outcome: &TurnOutcome, model: &str, prices: &Prices) -> Option<f64> {
    prices.cost(&turn_spend(outcome, model))
}

/// What a turn of `model` spent, by model: its own requests, the summaries it sent to a
/// compaction model (named by its requests' reports), and its subagents'.
pub fn turn_spend(outcome: &TurnOutcome, model: &str) -> SessionSpend {
    let mut spend = SessionSpend::default();
    let summaries = outcome.compaction_model_usage;
    let compaction_model = outcome
        .requests
        .iter()
        .find_map(|report| report.compaction_model.as_deref());
    match compaction_model {
        Some(compaction_model) => {
            spend.add(model, outcome.summary.usage.saturating_sub(summaries));
            spend.add(compaction_model, summaries);
        }
        None => spend.add(model, outcome.summary.usage),
    }
    for child in &outcome.children {
        spend.add(&child.model, child.usage);
    }
    spend
}

/// The cost of summary requests that used `usage`, of which `part` went to
/// `compaction_model` (`provider/model`) and the rest to `model`, each at its prices.
pub fn summary_cost(
    usage: &Usage,
    part: &Usage,
    model: &str,
    compaction_model: Option<&str>,
    prices: &Prices,
) -> Option<f64> {
    let mut spend = SessionSpend::default();
    match compaction_model {
        Some(compaction_model) => {
            spend.add(model, usage.saturating_sub(*part));
            spend.add(compaction_model, *part);
        }
        None => spend.add(model, *usage),
    }
    prices.cost(&spend)
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
            cache_write: None,
        }
    }

    /// The parent's model at `pricing()`, `anthropic/cheap` at a tenth of it, through
    /// the configuration's table.
    fn prices() -> Prices {
        let mut tables = ModelTables::default();
        let cheap = Pricing {
            input: 0.1,
            cached_input: 0.01,
            output: 1.0,
            cache_write: None,
        };
        for (spec, price) in [(PARENT, pricing()), ("anthropic/cheap", cheap)] {
            tables.models.insert(
                spec.to_owned(),
                pith_providers::models::tables::ModelConfig {
                    pricing: Some(price),
                    ..Default::default()
                },
            );
        }
        Prices::new(tables)
    }

    #[test]
    fn the_spend_line_names_cost_and_cache_share() {
        let report = SpendReport {
            usage: usage(1_234_000, 5_000, 0),
            cost: Some(0.0314),
            cache_hit_rate: Some(0.56),
        };
        assert_eq!(
            report.line(),
            "Session: $0.0314 so far; 1,234,000 input tokens, 56% of it from the prompt cache, 5,000 output tokens (subagents included)."
        );
        let unknown = SpendReport {
            cost: None,
            cache_hit_rate: None,
            ..report
        };
        assert!(unknown.line().starts_with("Session: cost unknown"));
    }

    #[test]
    fn the_configuration_wins_over_the_catalog_which_knows_the_rest() {
        let prices = prices();
        assert_eq!(prices.of(PARENT), Some(pricing()));
        let catalog = prices.of("anthropic/claude-sonnet-4-5").unwrap();
        assert_eq!(catalog.input, 3.0);
        assert_eq!(prices.of("local/smol"), None);
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
        assert!(close(turn_cost(&turn, PARENT, &prices()), 2.0));
    }

    #[test]
    fn a_child_on_another_model_is_priced_at_its_own_model() {
        let cheap = outcome(vec![child("anthropic/cheap", usage(0, 100_000, 0))]);
        // 1M input at $1 + 100k output at $1/M.
        assert!(close(turn_cost(&cheap, PARENT, &prices()), 1.1));
        let reported = outcome(vec![child("anthropic/x", usage(5, 5, 250_000_000))]);
        assert!(close(turn_cost(&reported, PARENT, &prices()), 1.25));
        let unpriced = outcome(vec![child("anthropic/x", usage(5, 5, 0))]);
        assert_eq!(turn_cost(&unpriced, PARENT, &prices()), None);
    }

    #[test]
    fn a_turns_summaries_on_the_compaction_model_are_priced_at_its_prices() {
        let mut turn = outcome(Vec::new());
        // 1M tokens in all, of which 500k went to the cheap compaction model.
        turn.compaction_model_usage = usage(500_000, 0, 0);
        turn.requests.push(pith_core::RequestReport {
            id: 1,
            purpose: pith_core::RequestPurpose::Compaction,
            protocol: "anthropic".into(),
            model: "cheap".into(),
            usage: usage(500_000, 0, 0),
            usage_reported: true,
            duration_ms: 1,
            retries: 0,
            error: None,
            compaction_model: Some("anthropic/cheap".into()),
        });
        // 500k at $1/M + 500k at $0.1/M.
        assert!(close(turn_cost(&turn, PARENT, &prices()), 0.55));
        let part = usage(500_000, 0, 0);
        let all = usage(1_000_000, 0, 0);
        let summaries = summary_cost(&all, &part, PARENT, Some("anthropic/cheap"), &prices());
        assert!(close(summaries, 0.55));
        assert!(close(
            summary_cost(&all, &part, PARENT, None, &prices()),
            1.0
        ));
    }

    #[test]
    fn without_prices_or_a_reported_cost_the_total_is_unknown() {
        assert_eq!(
            turn_cost(&outcome(Vec::new()), "local/model", &prices()),
            None
        );
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
