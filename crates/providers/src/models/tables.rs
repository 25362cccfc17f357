//! The provider and model tables of pith's configuration (`[providers.NAME]`,
//! `[models."provider/model"]`) and the part of the configuration model resolution reads
//! ([`ModelTables`]). The files themselves are read by pith-agent (`config/`), which hands
//! these tables over; this crate never reads a configuration file.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::models::catalog::Pricing;
use crate::wire::limits::WireLimits;
use crate::wire::openai_chat::MaxTokensField;
use crate::wire::reasoning::ReasoningEffort;

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
    /// `repeat_penalty` sent with every Chat Completions request: llama.cpp's repetition
    /// penalty (1.0 is off; llama.cpp and llama-cpp-python read it, other servers ignore
    /// it). Very small local models loop until the output cap without one; the `local`
    /// provider sends [`crate::models::builtin::LOCAL_REPEAT_PENALTY`] unless this is
    /// set.
    pub repeat_penalty: Option<f32>,
    /// `frequency_penalty` sent with every Chat Completions request (OpenAI's, -2.0 to
    /// 2.0): the `local` provider sends
    /// [`crate::models::builtin::LOCAL_FREQUENCY_PENALTY`] with its repeat penalty unless
    /// this is set.
    pub frequency_penalty: Option<f32>,
    /// How hard the model may think: `"off"`, `"low"`, `"medium"`, `"high"` or a token
    /// budget (`8000`); `--reasoning` overrides it.
    pub reasoning: Option<ReasoningEffort>,
    /// Whether the model accepts images (overrides the catalog; unknown models: false).
    pub images: Option<bool>,
}

/// What model resolution reads from the configuration: the default model and window, the
/// `[providers]` and `[models]` tables, and the bounds on what a server may send.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ModelTables {
    /// `model =`: the default model, `provider/model`.
    pub model: Option<String>,
    /// `default_context_window =`: the window of models nothing else knows (default
    /// 128,000).
    pub default_context_window: Option<u64>,
    /// Custom or overridden providers.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Per-model overrides, keyed `provider/model`.
    pub models: BTreeMap<String, ModelConfig>,
    /// The `[limits]` bounds on a server's responses.
    #[serde(skip)]
    pub wire_limits: WireLimits,
}
