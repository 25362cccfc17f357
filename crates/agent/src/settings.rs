//! Settings resolution: the command line's [`Overrides`], then the configuration files,
//! then the defaults, resolved once into the [`Settings`] a conversation runs with.
//!
//! This is the one place where a model choice is resolved (flag, then the resumed
//! session's model, then configuration and keys), the context window decided
//! (`--context-window`, else what the model resolution found: config, the server's own
//! report, the catalog, the loud default), and the loop's options assembled. `pith run`
//! and the REPL both open their conversations through it, so they can never disagree
//! about which model, window or compaction settings a session gets.

use std::path::Path;
use std::sync::Arc;

use pith_core::context::ContextConfig;
use pith_core::{
    BpeCounter, Ceilings, ContextBudget, Encoding, RequestEstimator, TokenCounter, ToolRegistry,
};
use pith_providers::enforced_output_cap;
use pith_providers::models::builtin::default_model_spec;
use pith_providers::models::project::{system_prompt_for, CutInstructions, InstructionBudget};
use pith_providers::models::resolve::{resolve_model, ResolvedModel, WindowSource};
use pith_providers::models::window::apply_server_window_blocking;
use pith_providers::{AgentLoop, LedgerOptions, LoopOptions, LoopSetup, RepeatedCallLimits};
use pith_tools::{PermissionMode, SandboxConfig, SandboxMode, UserDirs};

use crate::compaction_model::CompactionModel;
use crate::config::{Config, ConfigError};
use crate::overrides::Overrides;

/// The doom-loop guard's counts: `[doom_loop]`, else the defaults.
fn repeated_call_limits(config: &Config) -> RepeatedCallLimits {
    let defaults = RepeatedCallLimits::default();
    RepeatedCallLimits {
        note_after: config.doom_loop.note_after.unwrap_or(defaults.note_after),
        stop_after: config.doom_loop.stop_after.unwrap_or(defaults.stop_after),
    }
}

/// Everything a conversation runs with, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The model: provider, id, protocol, key, caps, prices.
    pub model: ResolvedModel,
    /// The context window in force.
    pub window: u64,
    /// Where it came from.
    pub window_source: WindowSource,
    /// The budget of that window (with `[context] micro_percent`).
    pub budget: ContextBudget,
    /// The `[context]` section.
    pub context: ContextConfig,
    /// The tool loop's options.
    pub loop_options: LoopOptions,
    /// Tool permissions.
    pub approval: PermissionMode,
    /// The `bash` sandbox.
    pub sandbox: SandboxConfig,
    /// Adds the concise-output section to the system prompt.
    pub concise_output: bool,
    /// Largest transcript record written (`[limits] max_record_bytes`).
    pub max_record_bytes: usize,
    /// The ceilings on dollars and wall time (`--max-cost`, `--max-duration`, `[limits]`).
    pub ceilings: Ceilings,
    /// Warnings for the user (an unknown model's window, …).
    pub notices: Vec<String>,
    /// The model summaries are requested from (`--compaction-model`, `[context]
    /// compaction_model`), when not the conversation's.
    pub compaction_model: Option<CompactionModel>,
}

/// The approval mode: `--approval`, else `approval` in the config, else ask.
fn approval(overrides: &Overrides, config: &Config) -> Result<PermissionMode, ConfigError> {
    match (overrides.approval, &config.approval) {
        (Some(mode), _) => Ok(mode),
        (None, Some(name)) => name.parse().map_err(|error| ConfigError::Invalid {
            path: "approval".into(),
            message: format!("{error}"),
        }),
        (None, None) => Ok(PermissionMode::Ask),
    }
}

/// The sandbox: `--sandbox` or the config's mode, the user's directories, the network
/// and the config's extra paths.
fn sandbox(
    overrides: &Overrides,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<SandboxConfig, ConfigError> {
    let mode = match (overrides.sandbox, &config.sandbox) {
        (Some(mode), _) => Some(mode),
        (None, Some(name)) => {
            Some(
                name.parse::<SandboxMode>()
                    .map_err(|error| ConfigError::Invalid {
                        path: "sandbox".into(),
                        message: error.to_string(),
                    })?,
            )
        }
        (None, None) => None,
    };
    Ok(SandboxConfig::default()
        .with_user_dirs(UserDirs::from_vars(|name| env(name).map(Into::into)))
        .with_mode(mode)
        .with_network(overrides.allow_network || config.allow_network.unwrap_or(false))
        .with_extra_deny(config.sandbox_deny.clone())
        .with_extra_writable(config.sandbox_writable.clone()))
}

impl Settings {
    /// Resolves `overrides` against `config` and `env`. `recorded_model` is the
    /// `provider/model` a resumed session was recorded with: used when no model was asked
    /// for.
    pub fn resolve(
        overrides: &Overrides,
        recorded_model: Option<&str>,
        config: &Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let tables = config.model_tables();
        let spec = overrides
            .model
            .clone()
            .or_else(|| recorded_model.map(str::to_owned))
            .unwrap_or_else(|| default_model_spec(&tables, env));
        let mut model = resolve_model(&spec, &tables, env)?;
        // Always asked when worth it: it also checks that a local server answers.
        apply_server_window_blocking(&mut model)?;
        let (window, window_source) = match overrides.context_window {
            Some(window) => (window, WindowSource::CommandLine),
            None => (model.context_window, model.window_source),
        };
        let mut notices = Vec::new();
        if overrides.context_window.is_none() {
            notices.extend(model.window_warning.clone());
        }
        let context = config.context_config()?;
        let budget = context.budget(window);
        let approval = approval(overrides, config)?;
        let sandbox = sandbox(overrides, config, env)?;
        let reasoning = overrides
            .reasoning
            .or(model.reasoning)
            .and_then(|r| r.enabled());
        if reasoning.is_some() {
            notices.extend(model.capabilities().reasoning_not_sent);
        }
        let output_cap = model.output_cap_with(reasoning);
        let mut loop_options = LoopOptions {
            auto_compaction: !overrides.no_auto_compact && config.auto_compact.unwrap_or(true),
            max_requests_per_turn: overrides.max_turns,
            max_output_tokens: model.max_output_tokens,
            temperature: model.temperature,
            reasoning,
            prune: context.prune(),
            output_cap: enforced_output_cap(output_cap),
            ledger: LedgerOptions::from_context(&context),
            max_auto_compactions_per_turn: context.max_auto_compactions_per_turn,
            prepare_summary_percent: if overrides.no_auto_compact {
                0
            } else {
                context.prepare_summary_percent_for(&model.provider)
            },
            usage_band: context.usage_band(),
            repeated_calls: repeated_call_limits(config),
            prompt_cache: pith_providers::PromptCacheOptions {
                ttl: model.prompt_cache_ttl(),
                key: None,
            },
            ..LoopOptions::default()
        };
        let ceilings = ceilings(overrides, config, &model)?;
        let compaction_model = compaction_model(overrides, &model, &tables, &context, env)?;
        if let Some(summaries) = &compaction_model {
            if ceilings.max_cost.is_some() && summaries.model.pricing.is_none() {
                return Err(ConfigError::Model(summaries.missing_prices()));
            }
            notices.extend(summaries.model.window_warning.clone());
        }
        if let Some(seconds) = config.limits.no_content_timeout_s {
            loop_options.timeouts.no_content = std::time::Duration::from_secs(seconds.max(1));
        }
        Ok(Self {
            model,
            window,
            window_source,
            budget,
            context,
            loop_options,
            approval,
            sandbox,
            concise_output: config.concise_output,
            max_record_bytes: config
                .limits
                .max_record_bytes
                .unwrap_or(pith_session::DEFAULT_MAX_RECORD_BYTES),
            ceilings,
            notices,
            compaction_model,
        })
    }

    /// The system prompt for a session rooted at `cwd`, as of now (project instruction
    /// files are read afresh, within their `[context] instructions_percent` share of the
    /// input budget), and the files cut to fit it.
    pub fn system_prompt(&self, cwd: &Path) -> (String, Vec<CutInstructions>) {
        let counter = self.counter();
        system_prompt_for(
            cwd,
            self.concise_output,
            Some(self.instruction_budget(&counter)),
        )
    }

    /// The share of the input budget the project's instruction files may take.
    pub fn instruction_budget<'a>(&self, counter: &'a dyn TokenCounter) -> InstructionBudget<'a> {
        InstructionBudget {
            max_tokens: usize::try_from(self.context.instruction_tokens(self.budget.input_budget))
                .unwrap_or(usize::MAX),
            counter,
        }
    }

    /// A warning for each instruction file cut to fit, for the user.
    pub fn instruction_warnings(&self, cut: &[CutInstructions]) -> Vec<String> {
        cut.iter()
            .map(|c| c.warning(self.budget.input_budget, self.window))
            .collect()
    }

    /// The token counter of this model: o200k for text, the provider's published
    /// formula for images. Its pre-tokenizer starts building on a background thread
    /// (once per process), off the way to the first request.
    pub fn counter(&self) -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
            .load_in_background()
            .with_image_formula(self.model.capabilities().image_formula)
    }

    /// What images `read` may return to this model: its provider's limits, or `None`
    /// when the model accepts no images (the catalog's `images`, or `[models."p/m"]
    /// images`).
    pub fn image_limits(&self) -> Option<pith_core::ImageLimits> {
        self.model.capabilities().image_limits
    }

    /// The tool loop for these settings in workspace `cwd` with `tools`.
    pub fn build_loop(&self, cwd: &Path, tools: ToolRegistry) -> Result<AgentLoop, ConfigError> {
        Ok(AgentLoop::new(LoopSetup {
            adapter: self
                .model
                .adapter()
                .map_err(pith_providers::models::error::ModelError::Provider)?,
            model: self.model.model.clone(),
            budget: self.budget,
            system_prompt: self.system_prompt(cwd).0,
            tools,
            // Far below the micro threshold (the lowest the decision uses), a request may
            // be estimated by an upper bound while the counter is still being built.
            estimator: RequestEstimator::new(Arc::new(self.counter()))
                .with_upper_bounds_below(self.budget.micro_threshold),
            options: self.loop_options.clone(),
        }))
    }
}

/// The compaction model: `--compaction-model` over `[context] compaction_model`; none
/// when neither names one, or when it is the conversation's `model`.
fn compaction_model(
    overrides: &Overrides,
    model: &ResolvedModel,
    tables: &pith_providers::models::tables::ModelTables,
    context: &ContextConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<CompactionModel>, ConfigError> {
    let (spec, origin) = match (&overrides.compaction_model, &context.compaction_model) {
        (Some(spec), _) => (spec, "--compaction-model"),
        (None, Some(spec)) => (spec, "[context] compaction_model"),
        (None, None) => return Ok(None),
    };
    CompactionModel::resolve(spec, origin, &model.spec(), tables, context, env)
}

/// The ceilings: the flags over `[limits]`. A cost ceiling must be a positive amount,
/// and needs the model's prices (else pith could not tell what a request costs: an
/// error now rather than a ceiling that never applies); a time ceiling must be positive.
fn ceilings(
    overrides: &Overrides,
    config: &Config,
    model: &ResolvedModel,
) -> Result<Ceilings, ConfigError> {
    let max_cost = overrides.max_cost.or(config.limits.max_cost);
    if let Some(dollars) = max_cost {
        if !(dollars.is_finite() && dollars > 0.0) {
            return Err(ConfigError::Invalid {
                path: "max_cost".into(),
                message: format!(
                    "the cost ceiling must be a positive number of dollars, not {dollars}"
                ),
            });
        }
        if model.pricing.is_none() {
            return Err(ConfigError::Model(format!(
                "--max-cost needs the prices of `{spec}`, and pith knows none: set [models.\"{spec}\"] pricing = {{ input = …, cached_input = …, output = … }} (dollars per million tokens) in config.toml",
                spec = model.spec()
            )));
        }
    }
    let max_duration = overrides.max_duration.or(config
        .limits
        .max_duration_s
        .map(std::time::Duration::from_secs));
    if max_duration.is_some_and(|d| d.is_zero()) {
        return Err(ConfigError::Invalid {
            path: "max_duration_s".into(),
            message: "the time ceiling must be at least one second".into(),
        });
    }
    Ok(Ceilings {
        max_cost,
        max_duration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_requested_model_wins_over_the_recorded_one_and_the_window_flag_applies() {
        let lookup = env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "k")]);
        let overrides = Overrides {
            model: Some("openai/gpt-4o".into()),
            context_window: Some(50_000),
            ..Overrides::default()
        };
        let recorded = Some("anthropic/claude-sonnet-4-5");
        let settings =
            Settings::resolve(&overrides, recorded, &Config::default(), &lookup).unwrap();
        assert_eq!(settings.model.spec(), "openai/gpt-4o");
        assert_eq!(settings.window, 50_000);
        assert_eq!(settings.window_source, WindowSource::CommandLine);
        assert_eq!(
            settings.budget,
            pith_core::context::ContextConfig::default().budget(50_000),
            "the window flag sizes the budget, the default working set included"
        );
        let without = Overrides {
            model: None,
            ..overrides
        };
        let settings = Settings::resolve(&without, recorded, &Config::default(), &lookup).unwrap();
        assert_eq!(settings.model.spec(), "anthropic/claude-sonnet-4-5");
    }

    #[test]
    fn flags_and_config_make_the_loop_options_and_the_approval() {
        let lookup = env(&[("OPENAI_API_KEY", "k")]);
        let overrides = Overrides {
            model: Some("openai/gpt-4o".into()),
            no_auto_compact: true,
            max_turns: Some(3),
            ..Overrides::default()
        };
        let config = Config {
            approval: Some("auto-edit".into()),
            ..Config::default()
        };
        let settings = Settings::resolve(&overrides, None, &config, &lookup).unwrap();
        assert!(!settings.loop_options.auto_compaction);
        assert_eq!(settings.loop_options.max_requests_per_turn, Some(3));
        assert_eq!(settings.approval, PermissionMode::AutoEdit);
        // The window's budget, kept within the default working set.
        assert_eq!(
            settings.budget,
            ContextBudget::for_window(128_000)
                .with_working_set(pith_core::context::config::DEFAULT_WORKING_SET_TOKENS)
        );
        assert_eq!(settings.budget.input_budget, 121_600);
        let flagged = Overrides {
            approval: Some(PermissionMode::Full),
            ..overrides
        };
        let settings = Settings::resolve(&flagged, None, &config, &lookup).unwrap();
        assert_eq!(settings.approval, PermissionMode::Full);
    }

    #[test]
    fn reasoning_comes_from_the_flag_then_the_model_config_and_makes_room_for_thinking() {
        let lookup = env(&[("ANTHROPIC_API_KEY", "k")]);
        let mut config = Config::default();
        config.models.insert(
            "anthropic/claude-3-5-haiku-latest".into(),
            pith_providers::models::tables::ModelConfig {
                reasoning: Some(pith_providers::wire::ReasoningEffort::High),
                ..Default::default()
            },
        );
        let overrides = Overrides {
            model: Some("anthropic/claude-3-5-haiku-latest".into()),
            ..Overrides::default()
        };
        let settings = Settings::resolve(&overrides, None, &config, &lookup).unwrap();
        assert_eq!(
            settings.loop_options.reasoning,
            Some(pith_providers::wire::ReasoningEffort::High)
        );
        // 8,192 output tokens could never hold 32,000 tokens of thinking.
        assert!(settings.loop_options.output_cap >= 32_000 + 8_192);
        let flagged = Overrides {
            reasoning: Some(pith_providers::wire::ReasoningEffort::Off),
            ..overrides
        };
        let settings = Settings::resolve(&flagged, None, &config, &lookup).unwrap();
        assert_eq!(
            settings.loop_options.reasoning, None,
            "--reasoning off wins"
        );
    }

    #[test]
    fn ceilings_come_from_the_flags_then_limits_and_a_cost_ceiling_needs_prices() {
        let lookup = env(&[("ANTHROPIC_API_KEY", "k")]);
        let mut config = Config::default();
        config.limits.max_cost = Some(2.0);
        config.limits.max_duration_s = Some(600);
        let overrides = Overrides {
            model: Some("anthropic/claude-sonnet-4-5".into()),
            ..Overrides::default()
        };
        let settings = Settings::resolve(&overrides, None, &config, &lookup).unwrap();
        assert_eq!(settings.ceilings.max_cost, Some(2.0));
        assert_eq!(
            settings.ceilings.max_duration,
            Some(std::time::Duration::from_secs(600))
        );
        let flagged = Overrides {
            max_cost: Some(0.5),
            max_duration: Some(std::time::Duration::from_secs(30)),
            ..overrides.clone()
        };
        let settings = Settings::resolve(&flagged, None, &config, &lookup).unwrap();
        assert_eq!(settings.ceilings.max_cost, Some(0.5));
        assert_eq!(
            settings.ceilings.max_duration,
            Some(std::time::Duration::from_secs(30))
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let bad = Overrides {
                max_cost: Some(bad),
                ..overrides.clone()
            };
            assert!(Settings::resolve(&bad, None, &config, &lookup).is_err());
        }
        config.limits.max_duration_s = Some(0);
        assert!(Settings::resolve(&overrides, None, &config, &lookup).is_err());
        // A model without prices: a cost ceiling is an error at start, not a no-op.
        let lookup = env(&[
            ("OPENROUTER_API_KEY", "k"),
            ("OPENROUTER_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        let unpriced = Overrides {
            model: Some("openrouter/some/new-model".into()),
            context_window: Some(64_000),
            max_cost: Some(1.0),
            ..Overrides::default()
        };
        let error = Settings::resolve(&unpriced, None, &Config::default(), &lookup)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("--max-cost") && error.contains("pricing"),
            "{error}"
        );
    }

    #[test]
    fn the_window_flag_silences_the_unknown_model_warning() {
        // An unknown model is probed for its window: a closed local port, never the
        // network.
        let lookup = env(&[
            ("OPENROUTER_API_KEY", "k"),
            ("OPENROUTER_BASE_URL", "http://127.0.0.1:9/v1"),
        ]);
        let unknown = Overrides {
            model: Some("openrouter/some/new-model".into()),
            ..Overrides::default()
        };
        let settings = Settings::resolve(&unknown, None, &Config::default(), &lookup).unwrap();
        assert!(settings.notices[0].contains("unknown model"));
        let given = Overrides {
            context_window: Some(64_000),
            ..unknown
        };
        let settings = Settings::resolve(&given, None, &Config::default(), &lookup).unwrap();
        assert!(settings.notices.is_empty(), "{:?}", settings.notices);
        assert_eq!(settings.window, 64_000);
    }
}
