//! Resolving `--model provider/model` against the built-in providers, the provider and
//! model tables and the environment into a [`ResolvedModel`]: where requests go, with
//! which key, how large the window is and where that figure came from.
//!
//! Environment variables provide keys and base URLs; they are read through a lookup
//! function so tests never depend on the real environment. See docs/configuration.md.

use std::sync::Arc;

use crate::models::builtin::BuiltIn;
use crate::models::builtin::{
    built_in_providers, lookup_key, BUILT_INS, KEY_FALLBACKS, LOCAL_FREQUENCY_PENALTY,
    LOCAL_MAX_OUTPUT_TOKENS, LOCAL_REPEAT_PENALTY,
};
use crate::models::catalog::{self, Pricing};
use crate::models::error::ModelError;
use crate::models::tables::{ModelTables, ProtocolKind, ProviderConfig};
use crate::wire::adapter::ProviderAdapter;
use crate::wire::error::ProviderError;
use crate::wire::http::HttpOptions;
use crate::wire::openai_chat::ChatOptions;
use crate::wire::openai_chat::Penalties;
use crate::wire::reasoning::ReasoningEffort;

/// Window used for models that are neither in the catalog nor configured.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 128_000;

/// Where the user's configuration lives, for messages.
pub(crate) const CONFIG_FILE_HINT: &str = "~/.config/pith/config.toml";

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

pith_core::debug_fields!(ResolvedModel |this| {
    provider: this.provider,
    model: this.model,
    kind: this.kind,
    base_url: this.base_url,
    api_key: this.api_key.as_ref().map(|_| "<redacted>"),
    context_window: this.context_window,
    window_source: this.window_source,
});

impl ResolvedModel {
    /// `provider/model`.
    pub fn spec(&self) -> String {
        format!("{}/{}", self.provider, self.model)
    }

    /// How long the provider keeps a prompt prefix no request used, when it caches
    /// prompts (docs/context-pipeline.md, "Prompt caching"): Anthropic and Bedrock's Claude
    /// 5 minutes, OpenAI about 10 (its documented 5–10 minutes of inactivity), Gemini's
    /// implicit cache 5; `None` for servers pith knows nothing of (local ones, OpenRouter's
    /// many upstreams, custom providers): a pause never counts as a cold cache there.
    pub fn prompt_cache_ttl(&self) -> Option<std::time::Duration> {
        let minutes = |m: u64| Some(std::time::Duration::from_secs(m * 60));
        match (self.kind, self.provider.as_str()) {
            (ProtocolKind::Anthropic, _) => minutes(5),
            (ProtocolKind::Bedrock, _)
                if crate::wire::bedrock::encode::supports_cache_points(&self.model) =>
            {
                minutes(5)
            }
            (ProtocolKind::OpenAiResponses, "openai")
            | (ProtocolKind::OpenAiChat, "openai-chat") => minutes(10),
            (ProtocolKind::Gemini, _) => minutes(5),
            _ => None,
        }
    }

    /// True when requests carry a key the provider routes them to one prompt cache by
    /// (OpenAI's `prompt_cache_key`): OpenAI's own API, not the servers that borrow its
    /// protocol.
    pub fn takes_prompt_cache_key(&self) -> bool {
        matches!(
            (self.kind, self.provider.as_str()),
            (ProtocolKind::OpenAiResponses, "openai") | (ProtocolKind::OpenAiChat, "openai-chat")
        )
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

/// The prices of `spec` (`provider/model`): the configuration's `[models."p/m"] pricing`,
/// else the catalog's (Bedrock ids looked up as Bedrock's); `None` when neither knows
/// it. Needs no key: reports price what a session already spent.
pub fn price_of(spec: &str, tables: &ModelTables) -> Option<Pricing> {
    if let Some(pricing) = tables.models.get(spec).and_then(|m| m.pricing) {
        return Some(pricing);
    }
    let (provider, model) = spec.split_once('/')?;
    let kind = tables
        .providers
        .get(provider)
        .and_then(|c| c.kind)
        .or(BUILT_INS
            .iter()
            .find(|b| b.name == provider)
            .map(|b| b.kind));
    let entry = match kind {
        Some(ProtocolKind::Bedrock) => catalog::lookup_bedrock(model),
        _ => catalog::lookup(model),
    };
    entry.and_then(|e| e.pricing)
}

/// The provider's base URL: configured, else the built-in's variable, else its default.
fn base_url(
    provider: &str,
    built_in: Option<&BuiltIn>,
    custom: Option<&ProviderConfig>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ModelError> {
    custom
        .and_then(|c| c.base_url.clone())
        .or_else(|| {
            built_in
                .and_then(|b| b.base_url_env)
                .and_then(lookup)
                .filter(|v| !v.is_empty())
        })
        .or(built_in.map(|b| b.base_url.to_owned()))
        .ok_or_else(|| ModelError::Model(format!("provider `{provider}` needs a base_url")))
}

/// The output cap sent when none is configured: the Messages API requires one (the
/// model's own maximum), Bedrock caps every model (the catalog's maximum too), and
/// small local models may ramble until their context is full.
fn default_output_cap(
    kind: ProtocolKind,
    provider: &str,
    catalog_entry: Option<&catalog::ModelInfo>,
) -> Option<u32> {
    match (kind, provider) {
        (ProtocolKind::Anthropic | ProtocolKind::Bedrock, _) => catalog_entry.map(|e| e.max_output),
        (_, "local") => Some(LOCAL_MAX_OUTPUT_TOKENS),
        _ => None,
    }
}

/// The API key in `env` (or its fallback variable); its absence is an error naming both.
fn required_key(
    provider: &str,
    env: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ModelError> {
    lookup_key(env, lookup).ok_or_else(|| {
        let fallback = KEY_FALLBACKS.iter().find(|(primary, _)| *primary == env);
        ModelError::MissingKey {
            provider: provider.to_owned(),
            env: match fallback {
                Some((_, other)) => format!("{env} (or {other})"),
                None => env.to_owned(),
            },
        }
    })
}

/// The model's window and where it came from: the configuration, else the catalog,
/// else the default with a loud warning (an unknown model).
fn window_of(
    spec: &str,
    configured: Option<u64>,
    catalog_entry: Option<&catalog::ModelInfo>,
    tables: &ModelTables,
) -> (u64, WindowSource, Option<String>) {
    if let Some(window) = configured {
        return (window, WindowSource::Config, None);
    }
    if let Some(entry) = catalog_entry {
        return (entry.context_window, WindowSource::Catalog, None);
    }
    let window = tables
        .default_context_window
        .unwrap_or(DEFAULT_CONTEXT_WINDOW);
    let warning = format!(
        "warning: unknown model `{spec}`: pith's catalog has no window, output cap or price for it; assuming a context window of {window} tokens. Set [models.\"{spec}\"] context_window (and max_output_tokens, pricing) in {CONFIG_FILE_HINT} or .pith/config.toml, or pass --context-window"
    );
    (window, WindowSource::Default, Some(warning))
}

/// Resolves `spec` (`provider/model`) against the built-ins, the configuration and the
/// environment.
pub fn resolve_model(
    spec: &str,
    tables: &ModelTables,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ResolvedModel, ModelError> {
    let Some((provider, model)) = spec
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
    else {
        return Err(ModelError::Model(format!(
            "`{spec}` is not a model: use provider/model, e.g. anthropic/claude-sonnet-4-5 (providers: {})",
            built_in_providers().join(", ")
        )));
    };
    let built_in = BUILT_INS.iter().find(|b| b.name == provider);
    let custom = tables.providers.get(provider);
    let kind = custom
        .and_then(|c| c.kind)
        .or(built_in.map(|b| b.kind))
        .ok_or_else(|| {
            ModelError::Model(format!(
                "unknown provider `{provider}`: built-in providers are {}; define others under [providers.{provider}] with kind, base_url and api_key_env",
                built_in_providers().join(", ")
            ))
        })?;
    let base_url = base_url(provider, built_in, custom, lookup)?;
    let key_env = custom
        .and_then(|c| c.api_key_env.clone())
        .or(built_in.and_then(|b| b.api_key_env.map(str::to_owned)));
    let api_key = match &key_env {
        Some(env) => Some(required_key(provider, env, lookup)?),
        None => None,
    };

    let model_config = tables.models.get(spec);
    let catalog_entry = match kind {
        ProtocolKind::Bedrock => catalog::lookup_bedrock(model),
        _ => catalog::lookup(model),
    };
    let configured_window = model_config
        .and_then(|m| m.context_window)
        .or(custom.and_then(|c| c.context_window));
    let (context_window, window_source, window_warning) =
        window_of(spec, configured_window, catalog_entry.as_ref(), tables);
    let max_output_tokens = model_config
        .and_then(|m| m.max_output_tokens)
        .or_else(|| default_output_cap(kind, provider, catalog_entry.as_ref()));
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
            limits: tables.wire_limits,
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
            penalties: Penalties {
                repeat: model_config
                    .and_then(|m| m.repeat_penalty)
                    .or((provider == "local").then_some(LOCAL_REPEAT_PENALTY)),
                frequency: model_config
                    .and_then(|m| m.frequency_penalty)
                    .or((provider == "local").then_some(LOCAL_FREQUENCY_PENALTY)),
            },
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::models::builtin::{default_model_spec, LOCAL_BASE_URL};

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
        let model = resolve_model(
            "anthropic/claude-sonnet-4-5",
            &ModelTables::default(),
            &lookup,
        )
        .unwrap();
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
        let model =
            resolve_model("gemini/gemini-2.5-pro", &ModelTables::default(), &lookup).unwrap();
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
        let err = resolve_model("gemini/gemini-2.5-pro", &ModelTables::default(), &env(&[]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "gemini needs an API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)"
        );
        let model =
            resolve_model("gemini/gemini-2.5-flash", &ModelTables::default(), &lookup).unwrap();
        assert!(model.adapter().is_ok());
        assert_eq!(
            default_model_spec(&ModelTables::default(), &lookup),
            "gemini/gemini-2.5-pro"
        );
        let config: ModelTables = toml::from_str(
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
            &ModelTables::default(),
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
        let model = resolve_model(
            "bedrock/amazon.nova-pro-v1:0",
            &ModelTables::default(),
            &lookup,
        )
        .unwrap();
        assert_eq!(model.aws.region.as_deref(), Some("us-west-2"));
        assert_eq!(model.base_url, "http://127.0.0.1:9");
        let config: ModelTables =
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
        let err = resolve_model("openai/gpt-5", &ModelTables::default(), &env(&[])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "openai needs an API key: set OPENAI_API_KEY"
        );
    }

    #[test]
    fn unknown_model_warns_loudly_and_uses_the_default_window() {
        let lookup = env(&[("OPENROUTER_API_KEY", "k")]);
        let config = ModelTables {
            default_context_window: Some(64_000),
            ..ModelTables::default()
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
        let config: ModelTables = toml::from_str(
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
        assert!(resolve_model("gpt-5", &ModelTables::default(), &env(&[]))
            .unwrap_err()
            .to_string()
            .contains("provider/model"));
        assert!(resolve_model("acme/x", &ModelTables::default(), &env(&[]))
            .unwrap_err()
            .to_string()
            .contains("unknown provider `acme`"));
    }

    #[test]
    fn local_needs_no_key() {
        let model = resolve_model("local/smollm2", &ModelTables::default(), &env(&[])).unwrap();
        assert_eq!(model.base_url, LOCAL_BASE_URL);
    }

    #[test]
    fn local_models_sample_greedily_with_a_repetition_penalty_and_config_overrides_it() {
        let model = resolve_model("local/smollm2", &ModelTables::default(), &env(&[])).unwrap();
        assert_eq!(model.temperature, Some(0.0));
        assert_eq!(
            model.chat.penalties,
            Penalties {
                repeat: Some(LOCAL_REPEAT_PENALTY),
                frequency: Some(LOCAL_FREQUENCY_PENALTY)
            }
        );
        assert_eq!(model.max_output_tokens, Some(LOCAL_MAX_OUTPUT_TOKENS));
        let config: ModelTables =
            toml::from_str("[models.\"local/smollm2\"]\nrepeat_penalty = 1.0\ntemperature = 0.7\n")
                .unwrap();
        let model = resolve_model("local/smollm2", &config, &env(&[])).unwrap();
        assert_eq!(model.chat.penalties.repeat, Some(1.0));
        assert_eq!(
            model.chat.penalties.frequency,
            Some(LOCAL_FREQUENCY_PENALTY)
        );
        assert_eq!(model.temperature, Some(0.7));
        // Hosted providers keep their servers' defaults.
        let hosted = resolve_model(
            "openrouter/x/y",
            &ModelTables::default(),
            &env(&[("OPENROUTER_API_KEY", "k")]),
        )
        .unwrap();
        assert_eq!(hosted.chat.penalties, Penalties::default());
    }
}
