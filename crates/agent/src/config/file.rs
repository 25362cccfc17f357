//! pith's configuration files, read and merged: the user's
//! `$XDG_CONFIG_HOME/pith/config.toml` (default `~/.config/pith/…`), then the project's
//! `.pith/config.toml`, merged table by table (the project wins). The project's hooks are
//! kept apart (they run once trusted) and its `[telemetry]` is dropped. See
//! docs/configuration.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pith_core::context::ContextConfig;
use pith_providers::models::tables::{ModelConfig, ModelTables, ProviderConfig};
use serde::Deserialize;

use crate::config::error::ConfigError;
use crate::config::sections::{context_section, CheckpointsConfig, DoomLoopConfig, LimitsConfig};

/// The whole configuration, after merging user and project files.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Default model, `provider/model`.
    pub model: Option<String>,
    /// Default approval mode of the REPL (`read-only | ask | auto-edit | full`).
    pub approval: Option<String>,
    /// Automatic compaction (default true).
    pub auto_compact: Option<bool>,
    /// Adds the concise-output section to the system prompt (default false).
    #[serde(default)]
    pub concise_output: bool,
    /// Window for unknown models (default 128,000).
    pub default_context_window: Option<u64>,
    /// The `[limits]` section.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// The `[doom_loop]` section.
    #[serde(default)]
    pub doom_loop: DoomLoopConfig,
    /// The `[checkpoints]` section (docs/rewind.md).
    #[serde(default)]
    pub checkpoints: CheckpointsConfig,
    /// The `bash` sandbox: `read-only`, `workspace-write` or `off` (default: follows the
    /// approval mode). See docs/sandbox.md.
    pub sandbox: Option<String>,
    /// Lets sandboxed commands reach the network (default false).
    pub allow_network: Option<bool>,
    /// More paths sandboxed commands may not read (`~/` is the home directory, relative
    /// paths are the workspace's).
    #[serde(default)]
    pub sandbox_deny: Vec<std::path::PathBuf>,
    /// More paths sandboxed commands may write (e.g. `~/.cargo`).
    #[serde(default)]
    pub sandbox_writable: Vec<std::path::PathBuf>,
    /// The `[context]` section: squash and prune thresholds, read by the context
    /// pipeline (see docs/context-pipeline.md).
    #[serde(default)]
    pub context: toml::Table,
    /// Custom or overridden providers.
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Per-model overrides, keyed `provider/model`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelConfig>,
    /// The `[mcp_servers.NAME]` tables, kept raw: parsed and checked by pith-mcp (see
    /// docs/mcp.md).
    #[serde(default)]
    pub mcp_servers: toml::Table,
    /// The `[agents]` table (subagent limits), kept raw: parsed by `subagents::child`
    /// (see docs/agents.md).
    #[serde(default)]
    pub agents: toml::Table,
    /// The `[hooks]` tables of the user's config file, kept raw: parsed by pith-hooks
    /// (see docs/hooks.md).
    #[serde(default)]
    pub hooks: toml::Table,
    /// The `[hooks]` tables of the project's `.pith/config.toml`, kept apart: they run
    /// only once the user trusts the project (`crate::trust`).
    #[serde(skip)]
    pub project_hooks: toml::Table,
    /// The `[telemetry]` table of the user's config file, kept raw: parsed by
    /// `telemetry::config` (see docs/configuration.md). A project's own is never used: it could send the
    /// session to any address.
    #[serde(default)]
    pub telemetry: toml::Table,
    /// The project's `.pith/config.toml` had a `[telemetry]` table, which was ignored.
    #[serde(skip)]
    pub project_telemetry_ignored: bool,
}

impl Config {
    /// The typed `[context]` section (squash, prune and micro thresholds), with the
    /// documented defaults for every key not given; misspelt keys are errors.
    pub fn context_config(&self) -> Result<ContextConfig, ConfigError> {
        context_section(&self.context)
    }

    /// What model resolution reads: the default model and window, the `[providers]`
    /// and `[models]` tables, and the `[limits]` bounds on a server's responses.
    pub fn model_tables(&self) -> ModelTables {
        ModelTables {
            model: self.model.clone(),
            default_context_window: self.default_context_window,
            providers: self.providers.clone(),
            models: self.models.clone(),
            wire_limits: self.limits.wire(),
        }
    }

    /// The user's config file path.
    pub fn user_path(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        if let Some(dir) = lookup("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(dir).join("pith").join("config.toml"));
        }
        lookup("HOME").map(|home| {
            PathBuf::from(home)
                .join(".config")
                .join("pith")
                .join("config.toml")
        })
    }

    /// Loads and merges the user file and `<project>/.pith/config.toml`; missing files
    /// are fine, unreadable or invalid ones are errors.
    pub fn load(
        project: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConfigError> {
        let mut merged = toml::Table::new();
        let paths = Self::user_path(lookup)
            .into_iter()
            .chain([project.join(".pith").join("config.toml")]);
        let project_path = project.join(".pith").join("config.toml");
        let mut last_path = PathBuf::new();
        let mut project_hooks = toml::Table::new();
        let mut project_telemetry_ignored = false;
        for path in paths {
            match std::fs::read_to_string(&path) {
                Ok(text) => {
                    let mut table: toml::Table =
                        toml::from_str(&text).map_err(|err| ConfigError::Invalid {
                            path: path.clone(),
                            message: err.to_string(),
                        })?;
                    if path == project_path {
                        project_telemetry_ignored = table.remove("telemetry").is_some();
                        match table.remove("hooks") {
                            Some(toml::Value::Table(hooks)) => project_hooks = hooks,
                            Some(_) => {
                                return Err(ConfigError::Invalid {
                                    path,
                                    message: "`hooks` must be a table ([[hooks.EVENT]])".into(),
                                })
                            }
                            None => {}
                        }
                    }
                    merge(&mut merged, table);
                    last_path = path;
                }
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(ConfigError::Read { path, source }),
            }
        }
        let mut config: Self =
            toml::Value::Table(merged)
                .try_into()
                .map_err(|err: toml::de::Error| ConfigError::Invalid {
                    path: last_path,
                    message: err.to_string(),
                })?;
        config.project_hooks = project_hooks;
        config.project_telemetry_ignored = project_telemetry_ignored;
        Ok(config)
    }
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(incoming)) => {
                merge(existing, incoming)
            }
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_hooks_are_kept_apart_from_the_users() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("pith")).unwrap();
        std::fs::write(
            home.path().join("pith/config.toml"),
            "[[hooks.Stop]]\ncommand = \"user.sh\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(project.path().join(".pith")).unwrap();
        std::fs::write(
            project.path().join(".pith/config.toml"),
            "[[hooks.Stop]]\ncommand = \"project.sh\"\n",
        )
        .unwrap();
        let home_dir = home.path().to_string_lossy().into_owned();
        let lookup = move |name: &str| (name == "XDG_CONFIG_HOME").then(|| home_dir.clone());
        let config = Config::load(project.path(), &lookup).unwrap();
        assert_eq!(config.hooks["Stop"][0]["command"].as_str(), Some("user.sh"));
        assert_eq!(
            config.project_hooks["Stop"][0]["command"].as_str(),
            Some("project.sh")
        );
        std::fs::write(project.path().join(".pith/config.toml"), "hooks = 1\n").unwrap();
        let error = Config::load(project.path(), &lookup)
            .unwrap_err()
            .to_string();
        assert!(error.contains("`hooks` must be a table"), "{error}");
    }

    #[test]
    fn project_config_overrides_user_config_table_by_table() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("pith")).unwrap();
        std::fs::write(home.path().join("pith/config.toml"), "model = \"anthropic/claude-haiku-4-5\"\nconcise_output = true\n[context]\nfloor_bytes = 100\nfile_view_cap_bytes = 9\n").unwrap();
        std::fs::create_dir_all(project.path().join(".pith")).unwrap();
        std::fs::write(
            project.path().join(".pith/config.toml"),
            "model = \"openai/gpt-5\"\n[context]\nfloor_bytes = 200\n",
        )
        .unwrap();
        let home_dir = home.path().to_string_lossy().into_owned();
        let lookup = move |name: &str| (name == "XDG_CONFIG_HOME").then(|| home_dir.clone());
        let config = Config::load(project.path(), &lookup).unwrap();
        assert_eq!(config.model.as_deref(), Some("openai/gpt-5"));
        assert!(config.concise_output);
        assert_eq!(config.context["floor_bytes"].as_integer(), Some(200));
        assert_eq!(config.context["file_view_cap_bytes"].as_integer(), Some(9));
        let typed = config.context_config().unwrap();
        let mut typo = config.clone();
        typo.context
            .insert("flor_bytes".into(), toml::Value::Integer(1));
        let err = typo.context_config().unwrap_err().to_string();
        assert!(
            err.contains("unknown key `flor_bytes`") && err.contains("floor_bytes"),
            "{err}"
        );
        assert_eq!(typed.squash.floor_bytes, 200);
        assert_eq!(typed.prune_protect_tokens, 40_000);
    }

    #[test]
    fn invalid_config_names_the_file() {
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(project.path().join(".pith")).unwrap();
        std::fs::write(
            project.path().join(".pith/config.toml"),
            "model = [unclosed",
        )
        .unwrap();
        let err = Config::load(project.path(), &|_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(".pith/config.toml"), "{err}");
        std::fs::write(project.path().join(".pith/config.toml"), "modle = \"typo\"").unwrap();
        let err = Config::load(project.path(), &|_| None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("modle"), "{err}");
    }
}
