//! The model catalog: context windows, output caps and prices of current hosted models.
//!
//! Figures are the providers' published ones (checked 2026-11); prices are US dollars per
//! million tokens. A model missing here still works: pith warns loudly and uses the
//! configured default window (`default_context_window`, 128,000 unless configured),
//! because a wrong window is how compaction ends up never firing.

/// Prices in US dollars per million tokens (the cost rule lives in pith-core).
pub use pith_core::Pricing;

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
    /// The model accepts images as input.
    pub images: bool,
    /// The model reasons before answering (OpenAI o-series and GPT-5; Claude models with
    /// extended thinking): Responses requests ask for its encrypted reasoning.
    pub reasoning: bool,
}

/// What a model accepts besides text.
#[derive(Clone, Copy)]
struct Abilities {
    images: bool,
    reasoning: bool,
}

const VISION: Abilities = Abilities {
    images: true,
    reasoning: false,
};
const VISION_REASONING: Abilities = Abilities {
    images: true,
    reasoning: true,
};
const TEXT_REASONING: Abilities = Abilities {
    images: false,
    reasoning: true,
};

const fn model(
    id: &'static str,
    context_window: u64,
    max_output: u32,
    prices: [f64; 3],
    abilities: Abilities,
) -> ModelInfo {
    ModelInfo {
        id,
        context_window,
        max_output,
        pricing: Some(Pricing {
            input: prices[0],
            cached_input: prices[1],
            output: prices[2],
            cache_write: None,
        }),
        images: abilities.images,
        reasoning: abilities.reasoning,
    }
}

/// A Claude model (Anthropic, Bedrock): cache writes cost 1.25× the input price (the
/// 5-minute cache pith's breakpoints use).
const fn claude(
    id: &'static str,
    context_window: u64,
    max_output: u32,
    prices: [f64; 3],
    abilities: Abilities,
) -> ModelInfo {
    let mut info = model(id, context_window, max_output, prices, abilities);
    info.pricing = Some(Pricing {
        input: prices[0],
        cached_input: prices[1],
        output: prices[2],
        cache_write: Some(prices[0] * CACHE_WRITE_FACTOR),
    });
    info
}

/// Anthropic's price of a cache write (5-minute TTL) over the input price.
pub const CACHE_WRITE_FACTOR: f64 = 1.25;

/// OpenAI models (Responses and Chat Completions).
#[rustfmt::skip] // one row per model: id, window, output cap, prices (input, cached, output)
pub const OPENAI_MODELS: &[ModelInfo] = &[
    model("gpt-5.1",        400_000, 128_000, [1.25, 0.125, 10.0], VISION_REASONING),
    model("gpt-5",          400_000, 128_000, [1.25, 0.125, 10.0], VISION_REASONING),
    model("gpt-5-mini",     400_000, 128_000, [0.25, 0.025, 2.0],  VISION_REASONING),
    model("gpt-5-nano",     400_000, 128_000, [0.05, 0.005, 0.4],  VISION_REASONING),
    model("gpt-5-codex",    400_000, 128_000, [1.25, 0.125, 10.0], VISION_REASONING),
    model("gpt-4.1",      1_047_576,  32_768, [2.0, 0.5, 8.0],     VISION),
    model("gpt-4.1-mini", 1_047_576,  32_768, [0.4, 0.1, 1.6],     VISION),
    model("gpt-4.1-nano", 1_047_576,  32_768, [0.1, 0.025, 0.4],   VISION),
    model("gpt-4o",         128_000,  16_384, [2.5, 1.25, 10.0],   VISION),
    model("gpt-4o-mini",    128_000,  16_384, [0.15, 0.075, 0.6],  VISION),
    model("o3",             200_000, 100_000, [2.0, 0.5, 8.0],     VISION_REASONING),
    model("o3-mini",        200_000, 100_000, [1.1, 0.55, 4.4],    TEXT_REASONING),
    model("o4-mini",        200_000, 100_000, [1.1, 0.275, 4.4],   VISION_REASONING),
];

/// Anthropic models (Messages API). Cached input is the cache-read price.
#[rustfmt::skip] // one row per model: id, window, output cap, prices (input, cached, output)
pub const ANTHROPIC_MODELS: &[ModelInfo] = &[
    claude("claude-opus-4-5",         200_000, 64_000, [5.0, 0.5, 25.0],  VISION_REASONING),
    claude("claude-opus-4-1",         200_000, 32_000, [15.0, 1.5, 75.0], VISION_REASONING),
    claude("claude-sonnet-4-5",       200_000, 64_000, [3.0, 0.3, 15.0],  VISION_REASONING),
    claude("claude-sonnet-4-0",       200_000, 64_000, [3.0, 0.3, 15.0],  VISION_REASONING),
    claude("claude-haiku-4-5",        200_000, 64_000, [1.0, 0.1, 5.0],   VISION_REASONING),
    claude("claude-3-5-haiku-latest", 200_000,  8_192, [0.8, 0.08, 4.0],  VISION),
];

/// Google Gemini models (native Gemini API). Windows of 1,048,576 tokens, prices of
/// prompts up to 200,000 tokens (longer prompts cost more on the Pro models); cached
/// input is the implicit-cache price.
#[rustfmt::skip] // one row per model: id, window, output cap, prices (input, cached, output)
pub const GEMINI_MODELS: &[ModelInfo] = &[
    model("gemini-3-pro-preview",   1_048_576, 65_536, [2.0, 0.2, 12.0],    VISION_REASONING),
    model("gemini-3-flash-preview", 1_048_576, 65_536, [0.5, 0.05, 3.0],    VISION_REASONING),
    model("gemini-2.5-pro",         1_048_576, 65_536, [1.25, 0.125, 10.0], VISION_REASONING),
    model("gemini-2.5-flash",       1_048_576, 65_536, [0.3, 0.03, 2.5],    VISION_REASONING),
    model("gemini-2.5-flash-lite",  1_048_576, 65_536, [0.1, 0.01, 0.4],    VISION_REASONING),
];

const TEXT: Abilities = Abilities {
    images: false,
    reasoning: false,
};

/// Models on AWS Bedrock (Converse), by their Bedrock model ids. Claude's figures are
/// Anthropic's own (cached input: the cache-read price); models without prompt caching
/// have their input price as the cached price. Prices are the on-demand ones of
/// us-east-1; cross-region inference profiles (`us.`, `eu.`, `global.` …) resolve to the
/// same entry ([`lookup_bedrock`]).
#[rustfmt::skip] // one row per model: id, window, output cap, prices (input, cached, output)
pub const BEDROCK_MODELS: &[ModelInfo] = &[
    claude("anthropic.claude-opus-4-5-20251101-v1:0",     200_000, 64_000, [5.0, 0.5, 25.0],       VISION_REASONING),
    claude("anthropic.claude-opus-4-1-20250805-v1:0",     200_000, 32_000, [15.0, 1.5, 75.0],      VISION_REASONING),
    claude("anthropic.claude-sonnet-4-5-20250929-v1:0",   200_000, 64_000, [3.0, 0.3, 15.0],       VISION_REASONING),
    claude("anthropic.claude-sonnet-4-20250514-v1:0",     200_000, 64_000, [3.0, 0.3, 15.0],       VISION_REASONING),
    claude("anthropic.claude-haiku-4-5-20251001-v1:0",    200_000, 64_000, [1.0, 0.1, 5.0],        VISION_REASONING),
    model("amazon.nova-pro-v1:0",                        300_000, 10_000, [0.8, 0.2, 3.2],        VISION),
    model("amazon.nova-lite-v1:0",                       300_000, 10_000, [0.06, 0.015, 0.24],    VISION),
    model("amazon.nova-micro-v1:0",                      128_000, 10_000, [0.035, 0.00875, 0.14], TEXT),
    model("meta.llama3-3-70b-instruct-v1:0",             128_000,  8_192, [0.72, 0.72, 0.72],     TEXT),
    model("meta.llama4-maverick-17b-instruct-v1:0",    1_000_000,  8_192, [0.24, 0.24, 0.97],     VISION),
    model("mistral.mistral-large-2407-v1:0",             128_000,  8_192, [2.0, 2.0, 6.0],        TEXT),
    model("mistral.pixtral-large-2502-v1:0",             128_000,  8_192, [2.0, 2.0, 6.0],        VISION),
];

/// The geographic prefixes of Bedrock's cross-region inference profiles.
const BEDROCK_GEOGRAPHIES: &[&str] = &[
    "us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca.", "global.",
];

/// Looks a Bedrock model id up in [`BEDROCK_MODELS`], exactly, after two steps that only
/// remove routing: an ARN's resource path (`arn:…:inference-profile/us.anthropic.…` →
/// its last segment) and an inference profile's geography (`us.`, `eu.`, `apac.`,
/// `global.`, …). No other normalisation: Bedrock ids carry their version (`-v1:0`).
pub fn lookup_bedrock(model_id: &str) -> Option<ModelInfo> {
    let id = model_id.rsplit('/').next().unwrap_or(model_id);
    let base = BEDROCK_GEOGRAPHIES
        .iter()
        .find_map(|geo| id.strip_prefix(geo))
        .unwrap_or(id);
    BEDROCK_MODELS.iter().find(|m| m.id == base).copied()
}

/// Looks a model up by id, in two steps and never by prefix:
///
/// 1. the exact id (for a routed id such as OpenRouter's `anthropic/claude-sonnet-4.5`,
///    its last segment);
/// 2. the one normalisation, applied to both sides: lower case, dots become dashes, and
///    a trailing date (`-20250929`, `-2024-08-06`) or `-latest` is dropped. So
///    `claude-sonnet-4.5`, `claude-sonnet-4-5-20250929` and `claude-sonnet-4-5` are one
///    model, and `gpt-4o-2024-08-06` is `gpt-4o`.
///
/// A shorter id never lends its entry to a longer one: `o3-mini` is not `o3`, and
/// `gpt-4o-mini-2024-07-18` is `gpt-4o-mini`, never `gpt-4o`. Anything else is unknown
/// (the caller warns loudly).
pub fn lookup(model_id: &str) -> Option<ModelInfo> {
    let id = model_id.rsplit('/').next().unwrap_or(model_id);
    let all = OPENAI_MODELS
        .iter()
        .chain(ANTHROPIC_MODELS)
        .chain(GEMINI_MODELS);
    if let Some(exact) = all.clone().find(|m| m.id == id) {
        return Some(*exact);
    }
    let wanted = normalise(id);
    all.filter(|m| normalise(m.id) == wanted).copied().next()
}

/// The documented normalisation of [`lookup`].
pub fn normalise(id: &str) -> String {
    let mut id = id.to_ascii_lowercase().replace('.', "-");
    if let Some(stripped) = id.strip_suffix("-latest") {
        id = stripped.to_owned();
    }
    if let Some(date) = date_suffix_compact(&id).or_else(|| date_suffix_dashed(&id)) {
        id.truncate(date);
    }
    id
}

/// Where a `-YYYYMMDD` suffix starts, if `id` ends with one.
fn date_suffix_compact(id: &str) -> Option<usize> {
    let start = id.len().checked_sub(9)?;
    let tail = id.get(start..)?;
    (tail.starts_with('-')
        && tail[1..].bytes().all(|b| b.is_ascii_digit())
        && tail[1..].starts_with("20"))
    .then_some(start)
}

/// Where a `-YYYY-MM-DD` suffix starts, if `id` ends with one.
fn date_suffix_dashed(id: &str) -> Option<usize> {
    let start = id.len().checked_sub(11)?;
    let tail = id.get(start..)?.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| range.into_iter().all(|i| tail[i].is_ascii_digit());
    (tail[0] == b'-'
        && tail[5] == b'-'
        && tail[8] == b'-'
        && digits(1..5)
        && digits(6..8)
        && digits(9..11))
    .then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::Usage;

    #[test]
    fn routed_ids_with_dots_resolve_and_shorter_ids_never_lend_their_entry() {
        let routed = lookup("anthropic/claude-sonnet-4.5").unwrap();
        assert_eq!(routed.id, "claude-sonnet-4-5");
        assert!(
            routed.pricing.is_some(),
            "the OpenRouter default has a price"
        );
        assert_eq!(lookup("openai/gpt-5.1").unwrap().id, "gpt-5.1");
        assert_eq!(lookup("o3-mini").unwrap().id, "o3-mini");
        assert_eq!(lookup("o3-mini-2025-01-31").unwrap().id, "o3-mini");
        assert!(lookup("o3-pro").is_none(), "never priced as o3");
        assert!(lookup("gpt-5-pro").is_none(), "never priced as gpt-5");
        assert!(lookup("claude-opus-4").is_none(), "never opus 4.1 or 4.5");
        assert!(lookup("claude-opus-4-6").is_none());
        assert_eq!(
            lookup("claude-3-5-haiku-20241022").unwrap().id,
            "claude-3-5-haiku-latest"
        );
        assert_eq!(normalise("Claude-Sonnet-4.5-20250929"), "claude-sonnet-4-5");
        assert_eq!(normalise("gpt-4o-2024-08-06"), "gpt-4o");
        assert!(!lookup("o3-mini").unwrap().images);
        assert!(lookup("gpt-5").unwrap().reasoning && !lookup("gpt-4.1").unwrap().reasoning);
    }

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
        assert_eq!(lookup("gemini-2.5-flash").unwrap().max_output, 65_536);
        assert_eq!(
            lookup("google/gemini-2.5-pro").unwrap().id,
            "gemini-2.5-pro"
        );
        assert!(
            lookup("gemini-2.5").is_none(),
            "never priced as a longer id"
        );
    }

    #[test]
    fn bedrock_ids_resolve_through_profiles_and_arns_only() {
        let sonnet = lookup_bedrock("anthropic.claude-sonnet-4-5-20250929-v1:0").unwrap();
        assert_eq!(sonnet.context_window, 200_000);
        assert_eq!(
            lookup_bedrock("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(sonnet)
        );
        assert_eq!(
            lookup_bedrock("arn:aws:bedrock:eu-west-1:123456789012:inference-profile/global.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some(sonnet)
        );
        assert!(lookup_bedrock("anthropic.claude-sonnet-4-5").is_none());
        assert!(lookup_bedrock("claude-sonnet-4-5").is_none());
        assert!(
            !lookup_bedrock("meta.llama3-3-70b-instruct-v1:0")
                .unwrap()
                .images
        );
    }

    #[test]
    fn cost_separates_cached_input() {
        let pricing = Pricing {
            input: 3.0,
            cached_input: 0.3,
            output: 15.0,
            cache_write: None,
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 500_000,
            output_tokens: 100_000,
            ..Usage::default()
        };
        let cost = pricing.cost(&usage);
        assert!((cost - (1.5 + 0.15 + 1.5)).abs() < 1e-9, "{cost}");
    }
}
