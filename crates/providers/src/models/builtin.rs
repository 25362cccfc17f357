//! The built-in providers (`openai`, `openai-chat`, `anthropic`, `bedrock`, `openrouter`,
//! `gemini`, `local`): their protocol, base URL and key variables, which variables hold
//! credentials, and the model pith picks when none is named.

use crate::models::tables::{ModelTables, ProtocolKind};
use crate::wire::openai_chat::MaxTokensField;

/// Default base URL of the `local` provider: an OpenAI-compatible server on port 8077
/// (`PITH_LOCAL_BASE_URL` or `[providers.local] base_url` point it elsewhere).
pub const LOCAL_BASE_URL: &str = "http://127.0.0.1:8077/v1";

/// Output cap of the built-in `local` provider (overridable per model in config).
pub const LOCAL_MAX_OUTPUT_TOKENS: u32 = 1024;

/// Repetition penalty (llama.cpp's `repeat_penalty`, 1.0 = off) of the built-in `local`
/// provider: very small models (SmolLM2-135M) repeat a heading or a sentence until the
/// output cap with llama.cpp's default of 1.1; 1.3, with [`LOCAL_FREQUENCY_PENALTY`],
/// ends those loops (both overridable per model in config). Both only see the server's
/// penalty window (llama-cpp-python's `--last_n_tokens_size`, 64 by default): a repeated
/// paragraph longer than that escapes them, so `cargo xtask local-llm` sets it to
/// [`LOCAL_MAX_OUTPUT_TOKENS`].
pub const LOCAL_REPEAT_PENALTY: f32 = 1.3;

/// `frequency_penalty` of the built-in `local` provider, sent with
/// [`LOCAL_REPEAT_PENALTY`]: on the demo's requests to SmolLM2-135M, the repeat penalty
/// alone still left 2 of 7 answers looping to the output cap, the two together none.
pub const LOCAL_FREQUENCY_PENALTY: f32 = 0.5;

/// A built-in provider.
pub(crate) struct BuiltIn {
    pub(crate) name: &'static str,
    pub(crate) kind: ProtocolKind,
    pub(crate) base_url: &'static str,
    pub(crate) base_url_env: Option<&'static str>,
    pub(crate) api_key_env: Option<&'static str>,
    /// Chat Completions: the field of the output cap.
    pub(crate) max_tokens_field: MaxTokensField,
    /// Chat Completions: headers sent with every request.
    pub(crate) headers: &'static [(&'static str, &'static str)],
}

/// OpenRouter's attribution headers: `X-Title` names the app. `HTTP-Referer` (the app's
/// site) is left to the user's `[providers.openrouter] headers`: pith has no site of its
/// own to name.
const OPENROUTER_HEADERS: &[(&str, &str)] = &[("X-Title", "pith")];

pub(crate) const BUILT_INS: &[BuiltIn] = &[
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
pub(crate) const KEY_FALLBACKS: &[(&str, &str)] = &[("GEMINI_API_KEY", "GOOGLE_API_KEY")];

/// The key in `env`, else in its [`KEY_FALLBACKS`] variable; empty values do not count.
pub(crate) fn lookup_key(env: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
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
pub fn secret_variables(tables: &ModelTables) -> Vec<String> {
    let mut names: Vec<String> = BUILT_INS
        .iter()
        .filter_map(|b| b.api_key_env)
        .chain(KEY_FALLBACKS.iter().map(|(_, fallback)| *fallback))
        .chain(["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"])
        .map(str::to_owned)
        .chain(
            tables
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The models a user may switch to (an editor's model picker, `/model`): the catalog's
/// models of each hosted provider whose key is set (`openai`, `anthropic`, `gemini`;
/// OpenRouter's and a local server's models are too many or unknown to list), then the
/// configuration's `[models."p/m"]` entries and its `model =`; each once, in that order.
pub fn model_choices(tables: &ModelTables, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    use crate::models::catalog::{ANTHROPIC_MODELS, GEMINI_MODELS, OPENAI_MODELS};
    let listed = [
        ("openai", OPENAI_MODELS),
        ("anthropic", ANTHROPIC_MODELS),
        ("gemini", GEMINI_MODELS),
    ];
    let mut choices: Vec<String> = Vec::new();
    for (provider, models) in listed {
        let keyed = BUILT_INS
            .iter()
            .find(|b| b.name == provider)
            .and_then(|b| b.api_key_env)
            .is_some_and(|env| lookup_key(env, lookup).is_some());
        if keyed {
            choices.extend(models.iter().map(|m| format!("{provider}/{}", m.id)));
        }
    }
    choices.extend(tables.models.keys().cloned());
    choices.extend(tables.model.iter().cloned());
    let mut seen = std::collections::BTreeSet::new();
    choices.retain(|spec| seen.insert(spec.clone()));
    choices
}

/// Names of the built-in providers.
pub fn built_in_providers() -> Vec<&'static str> {
    BUILT_INS.iter().map(|b| b.name).collect()
}

/// The model to use when neither `--model` nor `model =` in config names one: the first
/// hosted provider whose key is set, else the local model.
pub fn default_model_spec(tables: &ModelTables, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    if let Some(model) = &tables.model {
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
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn the_choices_are_the_keyed_providers_models_then_the_configured_ones() {
        let mut tables = ModelTables {
            model: Some("local/smollm2".into()),
            ..ModelTables::default()
        };
        tables
            .models
            .insert("openrouter/x/y".into(), Default::default());
        let choices = model_choices(&tables, &env(&[("ANTHROPIC_API_KEY", "k")]));
        assert!(choices.contains(&"anthropic/claude-sonnet-4-5".to_owned()));
        assert!(!choices.iter().any(|c| c.starts_with("openai/")));
        assert_eq!(
            choices[choices.len() - 2..],
            ["openrouter/x/y", "local/smollm2"]
        );
        let gemini = model_choices(&ModelTables::default(), &env(&[("GOOGLE_API_KEY", "k")]));
        assert!(gemini.iter().all(|c| c.starts_with("gemini/")) && !gemini.is_empty());
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn default_model_prefers_configured_then_keys_then_local() {
        assert_eq!(
            default_model_spec(&ModelTables::default(), &env(&[])),
            "local/smollm2"
        );
        assert_eq!(
            default_model_spec(&ModelTables::default(), &env(&[("OPENAI_API_KEY", "k")])),
            "openai/gpt-5"
        );
        let config = ModelTables {
            model: Some("anthropic/claude-opus-4-5".into()),
            ..ModelTables::default()
        };
        assert_eq!(
            default_model_spec(&config, &env(&[("OPENAI_API_KEY", "k")])),
            "anthropic/claude-opus-4-5"
        );
    }
}
