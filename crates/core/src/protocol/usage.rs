//! Token usage: what the provider reported a request (or several) cost in tokens.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Token usage of one or more model requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens, cached ones included.
    #[serde(rename = "input_tokens")]
    pub input_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(rename = "cached_input_tokens", default)]
    pub cached_input_tokens: u64,
    /// Input tokens the provider wrote to its prompt cache (Anthropic's and Bedrock's
    /// `cache_creation_input_tokens`, billed above the input price); part of
    /// `input_tokens`, never of `cached_input_tokens`. 0 where writes are not billed apart
    /// (OpenAI, Gemini) and in older transcripts.
    #[serde(
        rename = "cache_write_tokens",
        default,
        skip_serializing_if = "is_zero"
    )]
    pub cache_write_tokens: u64,
    /// Output tokens, reasoning included.
    #[serde(rename = "output_tokens")]
    pub output_tokens: u64,
    /// The part of `output_tokens` the model spent reasoning (OpenAI
    /// `output_tokens_details.reasoning_tokens`, Chat `completion_tokens_details`; 0 when
    /// the provider does not say, as Anthropic does not). Missing in older transcripts.
    #[serde(rename = "reasoning_tokens", default)]
    pub reasoning_tokens: u64,
    /// What the provider itself said these requests cost, in billionths of a US dollar
    /// (OpenRouter's `usage.cost`); 0 when it said nothing. When set it is the cost pith
    /// reports, rather than one computed from catalog prices.
    #[serde(
        rename = "provider_cost_nanousd",
        default,
        skip_serializing_if = "is_zero"
    )]
    pub provider_cost_nanousd: u64,
}

impl Usage {
    /// `self` without `other` (each count at least 0): the usage of the requests of a
    /// sum that are not in a part of it.
    pub fn saturating_sub(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_sub(other.input_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_sub(other.cached_input_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(other.cache_write_tokens),
            output_tokens: self.output_tokens.saturating_sub(other.output_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_sub(other.reasoning_tokens),
            provider_cost_nanousd: self
                .provider_cost_nanousd
                .saturating_sub(other.provider_cost_nanousd),
        }
    }

    /// True when nothing was used.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// Usage of requests sent to one model (`provider/model`): in a transcript, what went to
/// a model other than the session's (a compaction model's summaries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelUsage {
    /// `provider/model`.
    #[serde(rename = "model")]
    pub model: String,
    /// What its requests used.
    #[serde(rename = "usage")]
    pub usage: Usage,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl AddAssign for Usage {
    fn add_assign(&mut self, other: Self) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
        self.provider_cost_nanousd += other.provider_cost_nanousd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_round_trips() {
        let mut total = Usage::default();
        total += Usage {
            input_tokens: 10,
            cached_input_tokens: 4,
            output_tokens: 2,
            ..Default::default()
        };
        total += Usage {
            input_tokens: 5,
            cached_input_tokens: 0,
            output_tokens: 1,
            ..Default::default()
        };
        assert_eq!(
            total,
            Usage {
                input_tokens: 15,
                cached_input_tokens: 4,
                output_tokens: 3,
                ..Default::default()
            }
        );
        let back: Usage = serde_json::from_str(&serde_json::to_string(&total).unwrap()).unwrap();
        assert_eq!(back, total);
    }
}
