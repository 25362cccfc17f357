//! The model catalog: context windows, output caps and prices of current hosted models.
//!
//! Figures are the providers' published ones (checked 2026-11); prices are US dollars per
//! million tokens. A model missing here still works: pith warns loudly and uses the
//! configured default window (`default_context_window`, 128,000 unless configured),
//! because a wrong window is how compaction ends up never firing.

use serde::{Deserialize, Serialize};

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
    pub fn cost(&self, usage: &pith_core::Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let uncached = usage.input_tokens - cached;
        (uncached as f64 * self.input
            + cached as f64 * self.cached_input
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// One catalog entry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Model id as the provider names it.
    pub id: &'static str,
    /// Context window in tokens.
    pub context_window: u64,
    /// Maximum output tokens.
    pub max_output: u32,
    /// Prices, when published.
    pub pricing: Option<Pricing>,
}

const fn model(
    id: &'static str,
    context_window: u64,
    max_output: u32,
    input: f64,
    cached_input: f64,
    output: f64,
) -> ModelInfo {
    ModelInfo {
        id,
        context_window,
        max_output,
        pricing: Some(Pricing {
            input,
            cached_input,
            output,
        }),
    }
}

/// OpenAI models (Responses and Chat Completions).
pub const OPENAI_MODELS: &[ModelInfo] = &[
    model("gpt-5.1", 400_000, 128_000, 1.25, 0.125, 10.0),
    model("gpt-5", 400_000, 128_000, 1.25, 0.125, 10.0),
    model("gpt-5-mini", 400_000, 128_000, 0.25, 0.025, 2.0),
    model("gpt-5-nano", 400_000, 128_000, 0.05, 0.005, 0.4),
    model("gpt-5-codex", 400_000, 128_000, 1.25, 0.125, 10.0),
    model("gpt-4.1", 1_047_576, 32_768, 2.0, 0.5, 8.0),
    model("gpt-4.1-mini", 1_047_576, 32_768, 0.4, 0.1, 1.6),
    model("gpt-4.1-nano", 1_047_576, 32_768, 0.1, 0.025, 0.4),
    model("gpt-4o", 128_000, 16_384, 2.5, 1.25, 10.0),
    model("gpt-4o-mini", 128_000, 16_384, 0.15, 0.075, 0.6),
    model("o3", 200_000, 100_000, 2.0, 0.5, 8.0),
    model("o4-mini", 200_000, 100_000, 1.1, 0.275, 4.4),
];

/// Anthropic models (Messages API). Cached input is the cache-read price.
pub const ANTHROPIC_MODELS: &[ModelInfo] = &[
    model("claude-opus-4-5", 200_000, 64_000, 5.0, 0.5, 25.0),
    model("claude-opus-4-1", 200_000, 32_000, 15.0, 1.5, 75.0),
    model("claude-sonnet-4-5", 200_000, 64_000, 3.0, 0.3, 15.0),
    model("claude-sonnet-4-0", 200_000, 64_000, 3.0, 0.3, 15.0),
    model("claude-haiku-4-5", 200_000, 64_000, 1.0, 0.1, 5.0),
    model("claude-3-5-haiku-latest", 200_000, 8_192, 0.8, 0.08, 4.0),
];

/// Looks a model up by id. Dated snapshots (`claude-sonnet-4-5-20250929`,
/// `gpt-4o-2024-08-06`) resolve to their family entry; OpenRouter-style ids
/// (`anthropic/claude-sonnet-4-5`) are looked up by their last segment.
pub fn lookup(model_id: &str) -> Option<ModelInfo> {
    let id = model_id.rsplit('/').next().unwrap_or(model_id);
    let all = OPENAI_MODELS.iter().chain(ANTHROPIC_MODELS);
    if let Some(exact) = all.clone().find(|m| m.id == id) {
        return Some(*exact);
    }
    // Longest catalog id that prefixes the given id followed by a date or tag suffix.
    all.filter(|m| id.starts_with(m.id) && id[m.id.len()..].starts_with('-'))
        .max_by_key(|m| m.id.len())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::Usage;

    #[test]
    fn exact_dated_and_routed_ids_resolve() {
        assert_eq!(lookup("gpt-4o").unwrap().context_window, 128_000);
        assert_eq!(
            lookup("claude-sonnet-4-5-20250929").unwrap().id,
            "claude-sonnet-4-5"
        );
        assert_eq!(
            lookup("anthropic/claude-haiku-4-5").unwrap().id,
            "claude-haiku-4-5"
        );
        assert_eq!(lookup("gpt-4o-mini-2024-07-18").unwrap().id, "gpt-4o-mini");
        assert!(lookup("my-finetune").is_none());
    }

    #[test]
    fn cost_separates_cached_input() {
        let pricing = Pricing {
            input: 3.0,
            cached_input: 0.3,
            output: 15.0,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            output_tokens: 100_000,
        };
        let cost = pricing.cost(&usage);
        assert!((cost - (1.5 + 0.15 + 1.5)).abs() < 1e-9, "{cost}");
    }
}
