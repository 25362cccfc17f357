//! pith's configuration files and the resolution of `--model provider/model` into a
//! ready-to-use provider.
//!
//! Files: the user's `$XDG_CONFIG_HOME/pith/config.toml` (default `~/.config/pith/…`),
//! then the project's `.pith/config.toml`, merged table by table (the project wins).
//! Environment variables provide keys and base URLs; they are read through a lookup
//! function so tests never depend on the real environment. See docs/configuration.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use thiserror::Error;

use crate::models::catalog::{self, Pricing};
use crate::wire::adapter::ProviderAdapter;
use crate::wire::error::ProviderError;
use crate::wire::http::HttpOptions;
use crate::wire::limits::WireLimits;
use crate::wire::openai_chat::{ChatOptions, MaxTokensField};
use crate::wire::reasoning::ReasoningEffort;

/// Window used for models that are neither in the catalog nor configured.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Default base URL of the `local` provider: an OpenAI-compatible server on port 8077
/// (`PITH_LOCAL_BASE_URL` or `[providers.local] base_url` point it elsewhere).
pub const LOCAL_BASE_URL: &str = "http://127.0.0.1:8077/v1";

/// Output cap of the built-in `local` provider (overridable per model in config).
pub const LOCAL_MAX_OUTPUT_TOKENS: u32 = 1024;

/// Window assumed for a local server that does not report its context size and has no
/// configured window (a small, safe size; a wrong large one would never compact).
pub const LOCAL_FALLBACK_WINDOW: u64 = 4096;

/// A configuration problem (exit code 2 in the binary).
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid TOML or does not match the schema.
    #[error("invalid configuration in {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line when known.
        message: String,
    },
    /// `--model` is not of the form `provider/model`, or names an unknown provider.
    #[error("{0}")]
    Model(String),
    /// The provider needs a key and its environment variable is not set.
    #[error("{provider} needs an API key: set {env}")]
    MissingKey {
        /// Provider name.
        provider: String,
        /// Environment variable to set.
        env: String,
    },
    /// The adapter could not be built.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

/// Wire protocol of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum ProtocolKind {
    /// OpenAI Chat Completions (and compatible servers).
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// OpenAI Responses.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Google Gemini API, native (`streamGenerateContent`).
    #[serde(rename = "gemini")]
    Gemini,
    /// AWS Bedrock Converse (SigV4-signed, binary event stream).
    #[serde(rename = "bedrock")]
    Bedrock,
}

/// A `[providers.NAME]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Wire protocol (required for custom providers).
    pub kind: Option<ProtocolKind>,
    /// Base URL.
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// Context window of this provider's models, when the catalog does not know them.
    pub context_window: Option<u64>,
    /// Follow 307/308 redirects of this provider's API (default false: a redirect is an
    /// error naming its target). Credentials never go to another origin either way.
    pub follow_redirects: Option<bool>,
    /// Chat Completions: the field that carries the output cap, `max_tokens` or
    /// `max_completion_tokens` (defaults: `max_completion_tokens` for `openai-chat`,
    /// `max_tokens` for every other provider).
    pub max_tokens_field: Option<MaxTokensField>,
    /// Chat Completions: headers sent with every request (e.g. OpenRouter's
    /// `HTTP-Referer` and `X-Title`); they replace the built-in ones of the same name.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Bedrock: the AWS region (over `AWS_REGION` / `AWS_DEFAULT_REGION` and the profile's).
    pub region: Option<String>,
    /// Bedrock: the AWS profile of `~/.aws/config` to take credentials (and a region) from,
    /// instead of `AWS_PROFILE` / `default`.
    pub profile: Option<String>,
}

/// The `[doom_loop]` table: the guard against a model that makes the same tool call with
/// the same result over and over (see `pith_core::repeat`). Every key is optional.
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

/// A `[models."provider/model"]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Context window override.
    pub context_window: Option<u64>,
    /// Output cap override.
    pub max_output_tokens: Option<u32>,
    /// Prices override (dollars per million tokens).
    pub pricing: Option<Pricing>,
    /// Sampling temperature sent with every request.
    pub temperature: Option<f32>,
    /// How hard the model may think: `"off"`, `"low"`, `"medium"`, `"high"` or a token
    /// budget (`8000`); `--reasoning` overrides it.
    pub reasoning: Option<ReasoningEffort>,
    /// Whether the model accepts images (overrides the catalog; unknown models: false).
    pub images: Option<bool>,
}

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
    /// docs/mcp.md), so this crate does not depend on MCP.
    #[serde(default)]
    pub mcp_servers: toml::Table,
    /// The `[agents]` table (subagent limits), kept raw: parsed by pith-agent (see
    /// docs/agents.md).
    #[serde(default)]
    pub agents: toml::Table,
    /// The `[hooks]` tables of the user's config file, kept raw: parsed by pith-hooks
    /// (see docs/hooks.md).
    #[serde(default)]
    pub hooks: toml::Table,
    /// The `[hooks]` tables of the project's `.pith/config.toml`, kept apart: they run
    /// only once the user trusts the project (pith-agent `trust.rs`).
    #[serde(skip)]
    pub project_hooks: toml::Table,
    /// The `[telemetry]` table of the user's config file, kept raw: parsed by pith-agent
    /// (see docs/configuration.md). A project's own is never used: it could send the
    /// session to any address.
    #[serde(default)]
    pub telemetry: toml::Table,
    /// The project's `.pith/config.toml` had a `[telemetry]` table, which was ignored.
    #[serde(skip)]
    pub project_telemetry_ignored: bool,
}

impl Config {
    /// The typed `[context]` section (squash, prune and micro thresholds), with the
    /// documented defaults for every key not given.
    /// Misspelt keys are errors that list the known ones (serde cannot reject unknown
    /// keys of the flattened section itself).
    pub fn context_config(&self) -> Result<pith_core::context::ContextConfig, ConfigError> {
        let known =
            toml::Table::try_from(pith_core::context::ContextConfig::default()).map_err(|err| {
                ConfigError::Invalid {
                    path: PathBuf::from("[context]"),
                    message: err.to_string(),
                }
            })?;
        if let Some(unknown) = self.context.keys().find(|key| !known.contains_key(*key)) {
            let names: Vec<&str> = known.keys().map(String::as_str).collect();
            return Err(ConfigError::Invalid {
                path: PathBuf::from("[context]"),
                message: format!("unknown key `{unknown}`; known keys: {}", names.join(", ")),
            });
        }
        toml::Value::Table(self.context.clone())
            .try_into()
            .map_err(|err: toml::de::Error| ConfigError::Invalid {
                path: PathBuf::from("[context]"),
                message: err.to_string(),
            })
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

/// A built-in provider.
struct BuiltIn {
    name: &'static str,
    kind: ProtocolKind,
    base_url: &'static str,
    base_url_env: Option<&'static str>,
    api_key_env: Option<&'static str>,
    /// Chat Completions: the field of the output cap.
    max_tokens_field: MaxTokensField,
    /// Chat Completions: headers sent with every request.
    headers: &'static [(&'static str, &'static str)],
}

/// OpenRouter's attribution headers: `X-Title` names the app. `HTTP-Referer` (the app's
/// site) is left to the user's `[providers.openrouter] headers`: pith has no site of its
/// own to name.
const OPENROUTER_HEADERS: &[(&str, &str)] = &[("X-Title", "pith")];

const BUILT_INS: &[BuiltIn] = &[
    BuiltIn {
        name: "openai",
        kind: ProtocolKind::OpenAiResponses,
        base_url: "https://api.openai.com/v1",
        base_url_env: Some("OPENAI_BASE_URL"),
        api_key_env: Some("OPENAI_API_KEY"),
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: &[],
    },
    BuiltIn {
        name: "openai-chat",
        kind: ProtocolKind::OpenAiChat,
        base_url: "https://api.openai.com/v1",
        base_url_env: Some("OPENAI_BASE_URL"),
        api_key_env: Some("OPENAI_API_KEY"),
        // OpenAI's reasoning models reject `max_tokens`.
        max_tokens_field: MaxTokensField::MaxCompletionTokens,
        headers: &[],
    },
    BuiltIn {
        name: "anthropic",
        kind: ProtocolKind::Anthropic,
        base_url: "https://api.anthropic.com",
        base_url_env: Some("ANTHROPIC_BASE_URL"),
        api_key_env: Some("ANTHROPIC_API_KEY"),
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: &[],
    },
    BuiltIn {
        name: "bedrock",
        kind: ProtocolKind::Bedrock,
        base_url: crate::wire::bedrock::DEFAULT_BASE_URL,
        base_url_env: Some("BEDROCK_BASE_URL"),
        // SigV4 credentials come from the AWS chain, not one key variable.
        api_key_env: None,
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: &[],
    },
    BuiltIn {
        name: "openrouter",
        kind: ProtocolKind::OpenAiChat,
        base_url: "https://openrouter.ai/api/v1",
        base_url_env: Some("OPENROUTER_BASE_URL"),
        api_key_env: Some("OPENROUTER_API_KEY"),
        // OpenRouter documents `max_tokens` and maps it to each upstream's own field.
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: OPENROUTER_HEADERS,
    },
    BuiltIn {
        name: "gemini",
        kind: ProtocolKind::Gemini,
        base_url: crate::wire::gemini::DEFAULT_BASE_URL,
        base_url_env: Some("GEMINI_BASE_URL"),
        api_key_env: Some("GEMINI_API_KEY"),
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: &[],
    },
    BuiltIn {
        name: "local",
        kind: ProtocolKind::OpenAiChat,
        base_url: LOCAL_BASE_URL,
        base_url_env: Some("PITH_LOCAL_BASE_URL"),
        api_key_env: None,
        // llama.cpp's server and llama-cpp-python cap output with `max_tokens`.
        max_tokens_field: MaxTokensField::MaxTokens,
        headers: &[],
    },
];

/// A key variable read when the built-in one is unset: Google's SDKs take the Gemini key
/// from `GOOGLE_API_KEY` too.
const KEY_FALLBACKS: &[(&str, &str)] = &[("GEMINI_API_KEY", "GOOGLE_API_KEY")];

/// The key in `env`, else in its [`KEY_FALLBACKS`] variable; empty values do not count.
fn lookup_key(env: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let set = |name: &str| lookup(name).filter(|v| !v.is_empty());
    set(env).or_else(|| {
        KEY_FALLBACKS
            .iter()
            .find(|(primary, _)| *primary == env)
            .and_then(|(_, fallback)| set(fallback))
    })
}

/// The environment variables that hold credentials: every provider's key variable (and
/// its fallback), the configured ones, and AWS's secrets. Nothing pith exports may carry
/// their values.
pub fn secret_variables(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = BUILT_INS
        .iter()
        .filter_map(|b| b.api_key_env)
        .chain(KEY_FALLBACKS.iter().map(|(_, fallback)| *fallback))
        .chain(["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
        .map(str::to_owned)
        .chain(
            config
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Names of the built-in providers.
pub fn built_in_providers() -> Vec<&'static str> {
    BUILT_INS.iter().map(|b| b.name).collect()
}

/// Where a model's context window came from (reported by `/context` and warnings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowSource {
    /// `--context-window` (applied by the settings layer, never by this module).
    CommandLine,
    /// `[models."p/m"]` or `[providers.p]` in a config file.
    Config,
    /// The model catalog.
    Catalog,
    /// Reported by the server itself (local servers).
    Server,
    /// Nothing knew it: `default_context_window`.
    Default,
}

/// A model ready to be used: where to send requests and how large its window is.
#[derive(Clone)]
pub struct ResolvedModel {
    /// Provider name (`anthropic`, `local`, a custom name).
    pub provider: String,
    /// Model id sent to the provider.
    pub model: String,
    /// Wire protocol.
    pub kind: ProtocolKind,
    /// Base URL.
    pub base_url: String,
    /// The API key (never logged or persisted).
    api_key: Option<String>,
    /// Context window in tokens.
    pub context_window: u64,
    /// Where the window came from.
    pub window_source: WindowSource,
    /// Output cap sent with every request (`None`: the provider's default).
    pub max_output_tokens: Option<u32>,
    /// The model's output cap as far as pith knows it (config, else the catalog, else
    /// [`crate::tool_loop::DEFAULT_OUTPUT_CAP_TOKENS`]): pith enforces it, plus a margin,
    /// whatever the server does.
    pub output_cap: u32,
    /// HTTP handling: response bounds and redirects.
    pub http: HttpOptions,
    /// Sampling temperature, when configured.
    pub temperature: Option<f32>,
    /// Prices, when known.
    pub pricing: Option<Pricing>,
    /// The loud warning about a window nothing knew (an unknown model, a local server
    /// that does not report its size). Irrelevant when the user gave the window.
    pub window_warning: Option<String>,
    /// Chat Completions: the output cap's field and extra headers.
    pub chat: ChatOptions,
    /// The catalog says the model reasons (Responses then asks for encrypted reasoning).
    pub reasoning_model: bool,
    /// The configured reasoning setting (`[models."p/m"] reasoning`), before `--reasoning`.
    pub reasoning: Option<ReasoningEffort>,
    /// The model accepts images (config, else the catalog; unknown models: false).
    pub images: bool,
    /// Bedrock: the AWS region and profile, as far as config and environment name them.
    pub aws: AwsOptions,
}

/// Where a Bedrock model's requests are signed for: the region (config, else
/// `AWS_REGION`, else `AWS_DEFAULT_REGION`; `None`: the profile's, asked at the first
/// request) and the profile (config; `None`: `AWS_PROFILE` or `default`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AwsOptions {
    /// The region, when config or environment names one.
    pub region: Option<String>,
    /// The profile, when config names one.
    pub profile: Option<String>,
}

impl std::fmt::Debug for ResolvedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedModel")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("context_window", &self.context_window)
            .field("window_source", &self.window_source)
            .finish()
    }
}

impl ResolvedModel {
    /// `provider/model`.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }

    /// Builds the adapter for this model.
    pub fn adapter(&self) -> Result<Arc<dyn ProviderAdapter>, ProviderError> {
        use crate::wire::{anthropic, gemini, openai_chat, openai_responses};
        let key = self.api_key.as_deref();
        let url = &self.base_url;
        Ok(match self.kind {
            ProtocolKind::OpenAiChat => Arc::new(
                openai_chat::OpenAiChat::with_options(url, key, self.http)?
                    .with_chat_options(self.chat.clone()),
            ),
            ProtocolKind::OpenAiResponses => Arc::new(
                openai_responses::OpenAiResponses::with_options(url, key, self.http)?
                    .for_reasoning_model(self.reasoning_model),
            ),
            ProtocolKind::Anthropic => {
                Arc::new(anthropic::Anthropic::with_options(url, key, self.http)?)
            }
            ProtocolKind::Gemini => Arc::new(gemini::Gemini::with_options(url, key, self.http)?),
            ProtocolKind::Bedrock => Arc::new(crate::wire::bedrock::Bedrock::with_options(
                url,
                self.aws.region.as_deref(),
                Arc::new(crate::wire::bedrock::AwsChain::new(
                    self.aws.profile.as_deref(),
                )),
                self.http,
            )?),
        })
    }
}

/// Resolves `spec` (`provider/model`) against the built-ins, the configuration and the
/// environment.
pub fn resolve_model(
    spec: &str,
    config: &Config,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, ConfigError> {
    let Some((provider, model)) = spec
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
    else {
        return Err(ConfigError::Model(format!(
            "`{spec}` is not a model: use provider/model, e.g. anthropic/claude-sonnet-4-5 (providers: {})",
            built_in_providers().join(", ")
        )));
    };
    let built_in = BUILT_INS.iter().find(|b| b.name == provider);
    let custom = config.providers.get(provider);
    let kind = custom
        .and_then(|c| c.kind)
        .or(built_in.map(|b| b.kind))
        .ok_or_else(|| {
            ConfigError::Model(format!(
                "unknown provider `{provider}`: built-in providers are {}; define others under [providers.{provider}] with kind, base_url and api_key_env",
                built_in_providers().join(", ")
            ))
        })?;
    let base_url = custom
        .and_then(|c| c.base_url.clone())
        .or_else(|| {
            built_in
                .and_then(|b| b.base_url_env)
                .and_then(lookup)
                .filter(|v| !v.is_empty())
        })
        .or(built_in.map(|b| b.base_url.to_owned()))
        .ok_or_else(|| ConfigError::Model(format!("provider `{provider}` needs a base_url")))?;
    let key_env = custom
        .and_then(|c| c.api_key_env.clone())
        .or(built_in.and_then(|b| b.api_key_env.map(str::to_owned)));
    let api_key = match &key_env {
        Some(env) => match lookup_key(env, lookup) {
            Some(key) => Some(key),
            None => {
                let fallback = KEY_FALLBACKS.iter().find(|(primary, _)| primary == env);
                return Err(ConfigError::MissingKey {
                    provider: provider.to_owned(),
                    env: match fallback {
                        Some((_, other)) => format!("{env} (or {other})"),
                        None => env.clone(),
                    },
                });
            }
        },
        None => None,
    };

    let model_config = config.models.get(spec);
    let catalog_entry = match kind {
        ProtocolKind::Bedrock => catalog::lookup_bedrock(model),
        _ => catalog::lookup(model),
    };
    let mut window_warning = None;
    let (context_window, window_source) = if let Some(window) =
        model_config.and_then(|m| m.context_window)
    {
        (window, WindowSource::Config)
    } else if let Some(window) = custom.and_then(|c| c.context_window) {
        (window, WindowSource::Config)
    } else if let Some(entry) = catalog_entry {
        (entry.context_window, WindowSource::Catalog)
    } else {
        let window = config
            .default_context_window
            .unwrap_or(DEFAULT_CONTEXT_WINDOW);
        window_warning = Some(format!(
            "warning: unknown model `{spec}`: pith's catalog has no window, output cap or price for it; assuming a context window of {window} tokens. Set [models.\"{spec}\"] context_window (and max_output_tokens, pricing) in {CONFIG_FILE_HINT} or .pith/config.toml, or pass --context-window"
        ));
        (window, WindowSource::Default)
    };
    let max_output_tokens =
        model_config
            .and_then(|m| m.max_output_tokens)
            .or(match (kind, provider) {
                // The Messages API requires a cap; send the model's own maximum.
                // Bedrock caps every model; send the catalog's maximum too.
                (ProtocolKind::Anthropic | ProtocolKind::Bedrock, _) => {
                    catalog_entry.map(|e| e.max_output)
                }
                // Small local models may ramble until their context is full.
                (_, "local") => Some(LOCAL_MAX_OUTPUT_TOKENS),
                _ => None,
            });
    Ok(ResolvedModel {
        provider: provider.to_owned(),
        model: model.to_owned(),
        kind,
        base_url,
        api_key,
        context_window,
        window_source,
        max_output_tokens,
        output_cap: max_output_tokens
            .or(catalog_entry.map(|e| e.max_output))
            .unwrap_or(crate::tool_loop::DEFAULT_OUTPUT_CAP_TOKENS),
        http: HttpOptions {
            limits: config.limits.wire(),
            follow_redirects: custom.and_then(|c| c.follow_redirects).unwrap_or(false),
        },
        temperature: model_config
            .and_then(|m| m.temperature)
            .or((provider == "local").then_some(0.0)),
        pricing: model_config
            .and_then(|m| m.pricing)
            .or(catalog_entry.and_then(|e| e.pricing)),
        window_warning,
        chat: ChatOptions {
            max_tokens_field: custom
                .and_then(|c| c.max_tokens_field)
                .or(built_in.map(|b| b.max_tokens_field))
                .unwrap_or_default(),
            headers: chat_headers(built_in.map_or(&[], |b| b.headers), custom),
        },
        reasoning_model: catalog_entry.is_some_and(|e| e.reasoning),
        reasoning: model_config.and_then(|m| m.reasoning),
        images: model_config
            .and_then(|m| m.images)
            .or(catalog_entry.map(|e| e.images))
            .unwrap_or(false),
        aws: AwsOptions {
            region: custom
                .and_then(|c| c.region.clone())
                .or_else(|| lookup("AWS_REGION"))
                .or_else(|| lookup("AWS_DEFAULT_REGION"))
                .filter(|r| !r.is_empty()),
            profile: custom.and_then(|c| c.profile.clone()),
        },
    })
}

/// The built-in headers with the configured ones over them (same name, any case).
fn chat_headers(
    built_in: &[(&str, &str)],
    custom: Option<&ProviderConfig>,
) -> Vec<(String, String)> {
    let configured = custom.map(|c| &c.headers);
    let mut headers: Vec<(String, String)> = built_in
        .iter()
        .filter(|(name, _)| {
            !configured.is_some_and(|c| c.keys().any(|k| k.eq_ignore_ascii_case(name)))
        })
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect();
    if let Some(configured) = configured {
        headers.extend(configured.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    headers
}

/// Asks an OpenAI-compatible server for its context window when nothing configured it
/// (the `local` provider, or a custom provider whose model the catalog does not know),
/// and fails clearly when the `local` server does not answer at all.
///
/// Order of authority for the window: config, the server's own report, the catalog; a
/// model none of them knows keeps the loudly-warned default. (`--context-window` beats
/// them all; the settings layer applies it.)
pub async fn apply_server_window(resolved: &mut ResolvedModel) -> Result<(), ConfigError> {
    let is_local = resolved.provider == "local";
    let probe_worthy = is_local
        || (resolved.kind == ProtocolKind::OpenAiChat
            && resolved.window_source == WindowSource::Default);
    if !probe_worthy {
        return Ok(());
    }
    let probe = crate::models::probe::probe_openai_compatible(
        &resolved.base_url,
        &resolved.model,
        std::time::Duration::from_secs(3),
    )
    .await;
    match probe {
        Ok(info) => {
            let replaceable = matches!(
                resolved.window_source,
                WindowSource::Default | WindowSource::Catalog
            );
            if let (true, Some(window)) = (replaceable, info.context_window) {
                resolved.context_window = window;
                resolved.window_source = WindowSource::Server;
                resolved.window_warning = None;
            } else if is_local && resolved.window_source == WindowSource::Default {
                resolved.context_window = LOCAL_FALLBACK_WINDOW;
                resolved.window_warning = Some(format!(
                    "warning: the local server at {} does not report the context size of `{}`; assuming {LOCAL_FALLBACK_WINDOW} tokens. Set [models.\"{}\"] context_window in {} or pass --context-window if it differs",
                    resolved.base_url,
                    resolved.model,
                    resolved.spec(),
                    CONFIG_FILE_HINT,
                ));
            }
            Ok(())
        }
        Err(error) if is_local => Err(ConfigError::Model(no_local_server(
            &resolved.base_url,
            &error,
        ))),
        // A remote server that cannot be probed keeps its configured or default window.
        Err(_) => Ok(()),
    }
}

/// Where the user's configuration lives, for messages.
const CONFIG_FILE_HINT: &str = "~/.config/pith/config.toml";

/// The message for a `local` model whose server does not answer: how to use a hosted
/// model instead, or how to start a local OpenAI-compatible server and point pith at it.
/// It names no developer command: an installed pith has no source checkout.
fn no_local_server(base_url: &str, error: &ProviderError) -> String {
    format!(
        "no local model server answers at {base_url} ({error}).
pith needs a model. Either use a hosted one: set ANTHROPIC_API_KEY, OPENAI_API_KEY, \
OPENROUTER_API_KEY or GEMINI_API_KEY (or pass --model provider/model);
or start a local OpenAI-compatible server, for example:
  llama.cpp         llama-server -m model.gguf --port 8077
  llama-cpp-python  python -m llama_cpp.server --model model.gguf --port 8077
  Ollama            ollama serve   (it listens on http://127.0.0.1:11434/v1)
and point the `local` provider at it: PITH_LOCAL_BASE_URL=http://127.0.0.1:11434/v1, or \
base_url under [providers.local] in {CONFIG_FILE_HINT}. Pick the model with \
--model local/<name as the server lists it>."
    )
}

/// True for the `local` provider and for OpenAI-compatible models whose window nothing
/// configured.
fn needs_server_probe(resolved: &ResolvedModel) -> bool {
    resolved.provider == "local"
        || (resolved.kind == ProtocolKind::OpenAiChat
            && resolved.window_source == WindowSource::Default)
}

/// [`apply_server_window`] for synchronous callers (front-end start-up): the probe runs
/// on its own thread and runtime, so it is safe inside or outside a tokio runtime. Does
/// nothing (and costs nothing) when no probe is needed.
pub fn apply_server_window_blocking(resolved: &mut ResolvedModel) -> Result<(), ConfigError> {
    if !needs_server_probe(resolved) {
        return Ok(());
    }
    let mut probed = resolved.clone();
    let worker = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ConfigError::Model(format!("cannot start the probe runtime: {e}")))?;
        runtime.block_on(apply_server_window(&mut probed))?;
        Ok::<ResolvedModel, ConfigError>(probed)
    });
    *resolved = worker
        .join()
        .map_err(|_| ConfigError::Model("the server probe panicked".to_owned()))??;
    Ok(())
}

/// The model to use when neither `--model` nor `model =` in config names one: the first
/// hosted provider whose key is set, else the local model.
pub fn default_model_spec(config: &Config, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(model) = &config.model {
        return model.clone();
    }
    let has = |env: &str| lookup(env).is_some_and(|v| !v.is_empty());
    if has("ANTHROPIC_API_KEY") {
        "anthropic/claude-sonnet-4-5".to_owned()
    } else if has("OPENAI_API_KEY") {
        "openai/gpt-5".to_owned()
    } else if has("OPENROUTER_API_KEY") {
        "openrouter/anthropic/claude-sonnet-4.5".to_owned()
    } else if has("GEMINI_API_KEY") || has("GOOGLE_API_KEY") {
        "gemini/gemini-2.5-pro".to_owned()
    } else {
        "local/smollm2".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn built_in_provider_resolves_with_catalog_window_and_env_base_url() {
        let lookup = env(&[
            ("ANTHROPIC_API_KEY", "sk-test"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]);
        let model =
            resolve_model("anthropic/claude-sonnet-4-5", &Config::default(), &lookup).unwrap();
        assert_eq!(model.kind, ProtocolKind::Anthropic);
        assert_eq!(model.base_url, "http://127.0.0.1:9/");
        assert_eq!(model.context_window, 200_000);
        assert_eq!(model.window_source, WindowSource::Catalog);
        assert!(model.window_warning.is_none());
        assert!(
            !format!("{model:?}").contains("sk-test"),
            "the key must never be printed"
        );
    }

    #[test]
    fn gemini_takes_either_key_and_its_base_url_variable() {
        let lookup = env(&[
            ("GOOGLE_API_KEY", "g-key"),
            ("GEMINI_BASE_URL", "http://127.0.0.1:9"),
        ]);
        let model = resolve_model("gemini/gemini-2.5-pro", &Config::default(), &lookup).unwrap();
        assert_eq!(model.kind, ProtocolKind::Gemini);
        assert_eq!(model.base_url, "http://127.0.0.1:9");
        assert_eq!(model.context_window, 1_048_576);
        assert!(model.pricing.is_some() && model.images);
        assert!(!format!("{model:?}").contains("g-key"));
        let both = env(&[("GEMINI_API_KEY", "first"), ("GOOGLE_API_KEY", "second")]);
        assert_eq!(
            lookup_key("GEMINI_API_KEY", &both).as_deref(),
            Some("first"),
            "GEMINI_API_KEY wins"
        );
        let err = resolve_model("gemini/gemini-2.5-pro", &Config::default(), &env(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "gemini needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)"
        );
        let model = resolve_model("gemini/gemini-2.5-flash", &Config::default(), &lookup).unwrap();
        assert!(model.adapter().is_ok());
        assert_eq!(
            default_model_spec(&Config::default(), &lookup),
            "gemini/gemini-2.5-pro"
        );
        let config: Config = toml::from_str(
            "[providers.proxy]\nkind = \"gemini\"\nbase_url = \"http://127.0.0.1:9/v1beta\"\n",
        )
        .unwrap();
        let proxied = resolve_model("proxy/gemini-2.5-flash", &config, &env(&[])).unwrap();
        assert_eq!(proxied.kind, ProtocolKind::Gemini);
        assert!(proxied.adapter().is_ok());
    }

    #[test]
    fn bedrock_resolves_its_region_endpoint_and_catalog_entry_without_a_key() {
        let lookup = env(&[("AWS_DEFAULT_REGION", "eu-central-1")]);
        let model = resolve_model(
            "bedrock/eu.anthropic.claude-sonnet-4-5-20250929-v1:0",
            &Config::default(),
            &lookup,
        )
        .unwrap();
        assert_eq!(model.kind, ProtocolKind::Bedrock);
        assert_eq!(model.model, "eu.anthropic.claude-sonnet-4-5-20250929-v1:0");
        assert_eq!(model.base_url, crate::wire::bedrock::DEFAULT_BASE_URL);
        assert_eq!(model.aws.region.as_deref(), Some("eu-central-1"));
        assert_eq!(model.context_window, 200_000);
        assert_eq!(model.max_output_tokens, Some(64_000));
        let lookup = env(&[
            ("AWS_REGION", "us-west-2"),
            ("AWS_DEFAULT_REGION", "eu-central-1"),
            ("BEDROCK_BASE_URL", "http://127.0.0.1:9"),
        ]);
        let model =
            resolve_model("bedrock/amazon.nova-pro-v1:0", &Config::default(), &lookup).unwrap();
        assert_eq!(model.aws.region.as_deref(), Some("us-west-2"));
        assert_eq!(model.base_url, "http://127.0.0.1:9");
        let config: Config =
            toml::from_str("[providers.bedrock]\nregion = \"ap-south-1\"\nprofile = \"work\"\n")
                .unwrap();
        let model = resolve_model("bedrock/amazon.nova-pro-v1:0", &config, &lookup).unwrap();
        assert_eq!(
            model.aws,
            AwsOptions {
                region: Some("ap-south-1".into()),
                profile: Some("work".into()),
            }
        );
        assert!(model.adapter().is_ok());
    }

    #[test]
    fn missing_key_names_the_variable() {
        let err = resolve_model("openai/gpt-5", &Config::default(), &env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "openai needs an API key: set OPENAI_API_KEY"
        );
    }

    #[test]
    fn unknown_model_warns_loudly_and_uses_the_default_window() {
        let lookup = env(&[("OPENROUTER_API_KEY", "k")]);
        let config = Config {
            default_context_window: Some(64_000),
            ..Config::default()
        };
        let model = resolve_model("openrouter/some/new-model", &config, &lookup).unwrap();
        assert_eq!(model.model, "some/new-model");
        assert_eq!(model.context_window, 64_000);
        assert!(model
            .window_warning
            .as_deref()
            .is_some_and(|w| w.contains("unknown model")));
    }

    #[test]
    fn custom_provider_and_model_overrides_come_from_config() {
        let config: Config = toml::from_str(
            r#"
            [providers.vllm]
            kind = "openai-chat"
            base_url = "http://localhost:8000/v1"
            api_key_env = "VLLM_KEY"
            context_window = 32768

            [models."vllm/qwen-coder"]
            max_output_tokens = 4096
            "#,
        )
        .unwrap();
        let model = resolve_model("vllm/qwen-coder", &config, &env(&[("VLLM_KEY", "x")])).unwrap();
        assert_eq!(model.kind, ProtocolKind::OpenAiChat);
        assert_eq!(model.context_window, 32_768);
        assert_eq!(model.max_output_tokens, Some(4096));
    }

    #[test]
    fn bad_specs_and_unknown_providers_are_clear_errors() {
        assert!(resolve_model("gpt-5", &Config::default(), &env(&[]))
            .unwrap_err()
            .to_string()
            .contains("provider/model"));
        assert!(resolve_model("acme/x", &Config::default(), &env(&[]))
            .unwrap_err()
            .to_string()
            .contains("unknown provider `acme`"));
    }

    #[test]
    fn local_needs_no_key() {
        let model = resolve_model("local/smollm2", &Config::default(), &env(&[])).unwrap();
        assert_eq!(model.base_url, LOCAL_BASE_URL);
    }

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

    #[test]
    fn default_model_prefers_configured_then_keys_then_local() {
        assert_eq!(
            default_model_spec(&Config::default(), &env(&[])),
            "local/smollm2"
        );
        assert_eq!(
            default_model_spec(&Config::default(), &env(&[("OPENAI_API_KEY", "k")])),
            "openai/gpt-5"
        );
        let config = Config {
            model: Some("anthropic/claude-opus-4-5".into()),
            ..Config::default()
        };
        assert_eq!(
            default_model_spec(&config, &env(&[("OPENAI_API_KEY", "k")])),
            "anthropic/claude-opus-4-5"
        );
    }
}
