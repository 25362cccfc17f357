//! Assembling a conversation loop from configuration and command-line choices.
//!
//! The one place where a front-end's model choice is resolved (flag, then the resumed
//! session's model, then configuration and keys), the context window override applied,
//! and the [`AgentLoop`] built with its budget, estimator and options. The headless
//! runner and the REPL both call it, so `pith run` and `pith` can never disagree about
//! which model, window or compaction settings a session gets.

use std::path::Path;
use std::sync::Arc;

use pith_core::context::ContextConfig;
use pith_core::{BpeCounter, ContextBudget, Encoding, RequestEstimator, ToolRegistry};

use crate::agent_loop::{AgentLoop, LoopOptions};
use crate::config::{
    apply_server_window_blocking, default_model_spec, resolve_model, Config, ConfigError,
    ResolvedModel, WindowSource,
};
use crate::project::system_prompt_for;

/// What the user asked for on the command line (or a slash command).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelChoice {
    /// `--model provider/model`, when given.
    pub requested: Option<String>,
    /// The `provider/model` a resumed session was recorded with.
    pub recorded: Option<String>,
    /// `--context-window`, when given.
    pub context_window: Option<u64>,
}

/// Resolves the model of a session: the requested one, else the recorded one, else the
/// configuration's default (then the first provider with a key, then the local model).
pub fn resolve_choice(
    choice: &ModelChoice,
    config: &Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, ConfigError> {
    let spec = choice
        .requested
        .clone()
        .or_else(|| choice.recorded.clone())
        .unwrap_or_else(|| default_model_spec(config, env));
    let mut resolved = resolve_model(&spec, config, env)?;
    if let Some(window) = choice.context_window {
        resolved.set_context_window(window, WindowSource::CommandLine);
    }
    apply_server_window_blocking(&mut resolved)?;
    Ok(resolved)
}

/// Loop settings that come from flags rather than configuration files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoopFlags {
    /// `--no-auto-compact`.
    pub no_auto_compact: bool,
    /// `--max-turns`.
    pub max_requests_per_turn: Option<u32>,
}

/// The token estimator every loop uses (o200k BPE: the estimate's single encoding).
pub fn default_estimator() -> RequestEstimator {
    RequestEstimator::new(Arc::new(BpeCounter::new(Encoding::O200kBase)))
}

/// Builds the loop for `resolved` in workspace `cwd` with `tools`: budget from the
/// window and `[context] micro_percent`, automatic compaction unless disabled by flag or
/// configuration, the model's output cap and temperature, and the project's system prompt.
pub fn build_agent_loop(
    resolved: &ResolvedModel,
    config: &Config,
    context: &ContextConfig,
    cwd: &Path,
    tools: ToolRegistry,
    flags: LoopFlags,
) -> Result<AgentLoop, ConfigError> {
    let adapter = resolved.adapter()?;
    let budget = ContextBudget::with_micro_percent(resolved.context_window, context.micro_percent);
    let options = LoopOptions {
        auto_compaction: !flags.no_auto_compact && config.auto_compact.unwrap_or(true),
        max_requests_per_turn: flags.max_requests_per_turn,
        max_output_tokens: resolved.max_output_tokens,
        temperature: resolved.temperature,
        prune: context.prune(),
        ..LoopOptions::default()
    };
    Ok(AgentLoop::new(
        adapter,
        resolved.model.clone(),
        budget,
        system_prompt_for(cwd, config.concise_output),
        tools,
        default_estimator(),
        options,
    ))
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
        let choice = ModelChoice {
            requested: Some("openai/gpt-4o".into()),
            recorded: Some("anthropic/claude-sonnet-4-5".into()),
            context_window: Some(50_000),
        };
        let resolved = resolve_choice(&choice, &Config::default(), &lookup).unwrap();
        assert_eq!(resolved.spec(), "openai/gpt-4o");
        assert_eq!(resolved.context_window, 50_000);
        let recorded = ModelChoice {
            requested: None,
            ..choice
        };
        let resolved = resolve_choice(&recorded, &Config::default(), &lookup).unwrap();
        assert_eq!(resolved.spec(), "anthropic/claude-sonnet-4-5");
    }

    #[test]
    fn the_loop_gets_the_budget_of_the_window_and_the_flags() {
        let lookup = env(&[("OPENAI_API_KEY", "k")]);
        let choice = ModelChoice {
            requested: Some("openai/gpt-4o".into()),
            recorded: None,
            context_window: Some(32_768),
        };
        let resolved = resolve_choice(&choice, &Config::default(), &lookup).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut agent = build_agent_loop(
            &resolved,
            &Config::default(),
            &ContextConfig::default(),
            dir.path(),
            ToolRegistry::new(Vec::new()),
            LoopFlags {
                no_auto_compact: true,
                max_requests_per_turn: Some(3),
            },
        )
        .unwrap();
        assert_eq!(agent.budget(), ContextBudget::for_window(32_768));
        assert!(!agent.options_mut().auto_compaction);
        assert_eq!(agent.options_mut().max_requests_per_turn, Some(3));
    }
}
