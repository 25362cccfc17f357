//! The typed sections of the configuration that are the application's own: `[limits]`,
//! `[doom_loop]` and `[context]` (the provider and model tables are pith-providers',
//! `pith_providers::models::tables`).

use std::path::PathBuf;

use pith_core::context::ContextConfig;
use pith_providers::wire::limits::WireLimits;
use serde::Deserialize;

use crate::config::error::ConfigError;

/// The `[doom_loop]` table: the guard against a model that makes the same tool call with
/// the same result over and over (see `pith_core::RepeatTracker`). Every key is optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DoomLoopConfig {
    /// Calls in a row after which the result carries a note to the model (default 3; 0:
    /// never).
    pub note_after: Option<u32>,
    /// Calls in a row after which the REPL asks whether to go on and `pith run` stops
    /// (default 6; 0: never).
    pub stop_after: Option<u32>,
}

/// The `[checkpoints]` table: the copies pith keeps of the files it changes, for rewind
/// (docs/rewind.md). Every key is optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsConfig {
    /// Keep checkpoints at all (default true).
    pub enabled: Option<bool>,
    /// The store's cap per project, MiB (default 1024); the oldest copies go first.
    pub max_store_mib: Option<u64>,
    /// Files larger than this, MiB, are not copied (default 16): a rewind past them
    /// refuses and names them.
    pub max_file_mib: Option<u64>,
}

/// The `[limits]` table: how much pith accepts from a server and writes per record, and
/// the job's ceilings. Every key is optional; see `WireLimits` for the defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest single server-sent event, bytes.
    pub max_event_bytes: Option<usize>,
    /// Largest tool-call argument text, bytes.
    pub max_tool_argument_bytes: Option<usize>,
    /// Most tool calls in one answer.
    pub max_tool_calls: Option<usize>,
    /// Largest non-streaming JSON body, bytes.
    pub max_body_bytes: Option<usize>,
    /// Most bytes of an error body read.
    pub max_error_body_bytes: Option<usize>,
    /// Largest transcript record, bytes (larger payloads are stored beside it).
    pub max_record_bytes: Option<usize>,
    /// Longest a stream may go on sending no content (only keep-alives), seconds.
    pub no_content_timeout_s: Option<u64>,
    /// Most US dollars a job (a conversation, its compactions and subagents) may spend
    /// (`--max-cost`).
    pub max_cost: Option<f64>,
    /// Longest a `pith run` job (a REPL turn) may take, seconds (`--max-duration`).
    pub max_duration_s: Option<u64>,
}

impl LimitsConfig {
    /// The wire limits: the configured values over the defaults.
    pub fn wire(&self) -> WireLimits {
        let default = WireLimits::default();
        WireLimits {
            max_event_bytes: self.max_event_bytes.unwrap_or(default.max_event_bytes),
            max_tool_argument_bytes: self
                .max_tool_argument_bytes
                .unwrap_or(default.max_tool_argument_bytes),
            max_tool_calls: self.max_tool_calls.unwrap_or(default.max_tool_calls),
            max_body_bytes: self.max_body_bytes.unwrap_or(default.max_body_bytes),
            max_error_body_bytes: self
                .max_error_body_bytes
                .unwrap_or(default.max_error_body_bytes),
        }
    }
}

/// The typed `[context]` section (squash, prune and micro thresholds), with the
/// documented defaults for every key not given.
/// Misspelt keys are errors that list the known ones (serde cannot reject unknown keys
/// of the flattened section itself).
pub fn context_section(context: &toml::Table) -> Result<ContextConfig, ConfigError> {
    let mut known =
        toml::Table::try_from(ContextConfig::default()).map_err(|err| ConfigError::Invalid {
            path: PathBuf::from("[context]"),
            message: err.to_string(),
        })?;
    // Keys unset by default are not in the serialised default.
    for key in ContextConfig::OPTIONAL_KEYS {
        known.insert((*key).to_owned(), toml::Value::Boolean(true));
    }
    if let Some(unknown) = context.keys().find(|key| !known.contains_key(*key)) {
        let names: Vec<&str> = known.keys().map(String::as_str).collect();
        return Err(ConfigError::Invalid {
            path: PathBuf::from("[context]"),
            message: format!("unknown key `{unknown}`; known keys: {}", names.join(", ")),
        });
    }
    toml::Value::Table(context.clone())
        .try_into()
        .map_err(|err: toml::de::Error| ConfigError::Invalid {
            path: PathBuf::from("[context]"),
            message: err.to_string(),
        })
}
