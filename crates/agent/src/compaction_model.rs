//! The model for summaries (`[context] compaction_model = "provider/model"`,
//! `--compaction-model`): resolved like the conversation's model (its provider, key,
//! window, caps and prices), and turned into the loop's [`SummaryModel`] with a spend
//! guard at its own prices on the conversation's meter (docs/context-pipeline.md, "A
//! model for summaries").

use std::sync::Arc;

use pith_core::context::ContextConfig;
use pith_core::{SpendMeter, TokenCounter};
use pith_providers::enforced_output_cap;
use pith_providers::models::resolve::{resolve_model, ResolvedModel};
use pith_providers::models::tables::ModelTables;
use pith_providers::models::window::apply_server_window_blocking;
use pith_providers::wire::ReasoningEffort;
use pith_providers::SpendGuard;
use pith_providers::SummaryModel;

use crate::config::ConfigError;

/// The compaction model, resolved.
#[derive(Debug, Clone)]
pub struct CompactionModel {
    /// The model: provider, id, protocol, key, caps, prices.
    pub model: ResolvedModel,
    /// The input budget of its window (with the `[context]` margins): a summary request
    /// larger than this goes to the conversation's model.
    pub input_budget: u64,
    /// Its reasoning setting (`[models."p/m"] reasoning`; `--reasoning` is the
    /// conversation's model's).
    pub reasoning: Option<ReasoningEffort>,
    /// Output tokens at which pith cuts its answer itself.
    pub output_cap: u64,
}

impl CompactionModel {
    /// The compaction model `spec` names, for a conversation on `main` (`provider/model`):
    /// `None` when `spec` is `main` itself. A spec that does not resolve is an error that
    /// names it and where it came from (`origin`: the flag or the key).
    pub fn resolve(
        spec: &str,
        origin: &str,
        main: &str,
        tables: &ModelTables,
        context: &ContextConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        if spec == main {
            return Ok(None);
        }
        let invalid = |error: &dyn std::fmt::Display| {
            ConfigError::Model(format!("{origin} `{spec}` cannot be used: {error}"))
        };
        if !spec.contains('/') {
            return Err(invalid(&"expected `provider/model`"));
        }
        let mut model = resolve_model(spec, tables, env).map_err(|error| invalid(&error))?;
        apply_server_window_blocking(&mut model).map_err(|error| invalid(&error))?;
        let reasoning = model.reasoning.and_then(ReasoningEffort::enabled);
        let output_cap = model.output_cap_with(reasoning);
        Ok(Some(Self {
            input_budget: context.budget(model.context_window).input_budget,
            reasoning,
            output_cap: enforced_output_cap(output_cap),
            model,
        }))
    }

    /// `provider/model`.
    pub fn spec(&self) -> String {
        self.model.spec()
    }

    /// The loop's [`SummaryModel`]: its adapter, and a spend guard at its prices on
    /// `meter` when the conversation has ceilings (a cost ceiling needs its prices).
    pub fn summary_model(
        &self,
        meter: &Arc<SpendMeter>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<SummaryModel, String> {
        let spend = if meter.ceilings().is_empty() {
            None
        } else {
            let guard = SpendGuard::new(Arc::clone(meter), self.model.pricing, counter)
                .map_err(|_| self.missing_prices())?;
            Some(Arc::new(guard))
        };
        Ok(SummaryModel {
            adapter: self
                .model
                .adapter()
                .map_err(|error| format!("compaction model `{}`: {error}", self.spec()))?,
            model: self.model.model.clone(),
            spec: self.spec(),
            input_budget: self.input_budget,
            max_output_tokens: self.model.max_output_tokens,
            output_cap: self.output_cap,
            reasoning: self.reasoning,
            spend,
        })
    }

    /// The error of a cost ceiling when pith knows no prices for this model.
    pub fn missing_prices(&self) -> String {
        format!(
            "--max-cost needs the prices of the compaction model `{spec}`, and pith knows none: set [models.\"{spec}\"] pricing = {{ input = …, cached_input = …, output = … }} (dollars per million tokens) in config.toml",
            spec = self.spec()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "ANTHROPIC_API_KEY" || name == "OPENAI_API_KEY").then(|| "test-key".to_owned())
    }

    fn resolve(spec: &str) -> Result<Option<CompactionModel>, ConfigError> {
        CompactionModel::resolve(
            spec,
            "[context] compaction_model",
            "anthropic/claude-sonnet-4-5",
            &ModelTables::default(),
            &ContextConfig::default(),
            &env,
        )
    }

    #[test]
    fn a_compaction_model_has_its_own_window_and_prices() {
        let model = resolve("anthropic/claude-haiku-4-5").unwrap().unwrap();
        assert_eq!(model.spec(), "anthropic/claude-haiku-4-5");
        let budget = ContextConfig::default().budget(model.model.context_window);
        assert_eq!(model.input_budget, budget.input_budget);
        assert!(model.model.pricing.is_some());
    }

    #[test]
    fn the_conversations_own_model_is_no_compaction_model() {
        assert!(resolve("anthropic/claude-sonnet-4-5").unwrap().is_none());
    }

    #[test]
    fn settings_take_the_flag_over_the_key_and_a_cost_ceiling_needs_its_prices() {
        use crate::config::Config;
        use crate::overrides::Overrides;
        use crate::settings::Settings;
        let mut config = Config::default();
        config.context.insert(
            "compaction_model".into(),
            toml::Value::String("anthropic/claude-haiku-4-5".into()),
        );
        let main = Overrides {
            model: Some("anthropic/claude-sonnet-4-5".into()),
            ..Overrides::default()
        };
        let settings = Settings::resolve(&main, None, &config, &env).unwrap();
        let spec = settings
            .compaction_model
            .as_ref()
            .map(CompactionModel::spec);
        assert_eq!(spec.as_deref(), Some("anthropic/claude-haiku-4-5"));
        // The flag wins; naming the conversation's own model is naming none.
        let flagged = Overrides {
            compaction_model: Some("anthropic/claude-sonnet-4-5".into()),
            ..main.clone()
        };
        let settings = Settings::resolve(&flagged, None, &config, &env).unwrap();
        assert!(settings.compaction_model.is_none());
        // A cost ceiling must price the compaction model's requests too.
        let lookup = |name: &str| match name {
            "ANTHROPIC_API_KEY" | "OPENROUTER_API_KEY" => Some("k".to_owned()),
            // An unknown model is probed for its window: a closed local port.
            "OPENROUTER_BASE_URL" => Some("http://127.0.0.1:9/v1".to_owned()),
            _ => None,
        };
        let unpriced = Overrides {
            compaction_model: Some("openrouter/some/new-model".into()),
            max_cost: Some(1.0),
            ..main
        };
        let error = Settings::resolve(&unpriced, None, &Config::default(), &lookup)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("compaction model `openrouter/some/new-model`")
                && error.contains("pricing"),
            "{error}"
        );
    }

    #[test]
    fn a_bad_compaction_model_is_an_error_naming_it_and_its_origin() {
        for spec in ["nonsense", "nowhere/model-x"] {
            let error = resolve(spec).unwrap_err().to_string();
            assert!(
                error.contains(&format!("[context] compaction_model `{spec}`")),
                "{error}"
            );
        }
    }
}
