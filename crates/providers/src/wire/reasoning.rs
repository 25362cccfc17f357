//! How hard the model may think: `--reasoning low|medium|high|off` or a token budget
//! (`--reasoning 8000`), and `reasoning = …` under `[models."p/m"]`.
//!
//! Each protocol reads it its own way: Anthropic turns extended thinking on with a
//! `budget_tokens` ([`ReasoningEffort::anthropic_budget`]); OpenAI Responses sends
//! `reasoning.effort` ([`ReasoningEffort::openai_effort`]). Chat Completions servers
//! disagree on the field, so it sends none.

use serde::{Deserialize, Deserializer};

/// The smallest thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u32 = 1024;

/// A reasoning setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReasoningEffort {
    /// No reasoning requested (the provider's default; for Anthropic, no thinking).
    Off,
    /// A little: Anthropic 4,000 thinking tokens, OpenAI `low`.
    Low,
    /// Anthropic 10,000 thinking tokens, OpenAI `medium`.
    Medium,
    /// Anthropic 32,000 thinking tokens, OpenAI `high`.
    High,
    /// An explicit thinking budget in tokens (at least [`MIN_THINKING_BUDGET`]).
    Budget(u32),
}

impl ReasoningEffort {
    /// Parses `off`, `low`, `medium`, `high` or a token budget of at least 1024.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "off" | "none" => Ok(Self::Off),
            "low" => Ok(Self::Low),
            "medium" => Ok(Self::Medium),
            "high" => Ok(Self::High),
            other => match other.replace('_', "").parse::<u32>() {
                Ok(tokens) => Self::budget(tokens),
                Err(_) => Err(format!(
                    "`{text}` is not a reasoning setting: use off, low, medium, high or a token budget such as 8000"
                )),
            },
        }
    }

    /// A budget of `tokens`, refused below [`MIN_THINKING_BUDGET`].
    pub fn budget(tokens: u32) -> Result<Self, String> {
        if tokens < MIN_THINKING_BUDGET {
            return Err(format!(
                "a reasoning budget of {tokens} tokens is too small: the minimum is {MIN_THINKING_BUDGET}"
            ));
        }
        Ok(Self::Budget(tokens))
    }

    /// `None` for [`ReasoningEffort::Off`], the setting otherwise.
    pub fn enabled(self) -> Option<Self> {
        (self != Self::Off).then_some(self)
    }

    /// Anthropic's `thinking.budget_tokens` (0 for off). The levels follow the budgets
    /// Anthropic's own tools use for "think", "think hard" and "ultrathink".
    pub fn anthropic_budget(self) -> u32 {
        match self {
            Self::Off => 0,
            Self::Low => 4_000,
            Self::Medium => 10_000,
            Self::High => 32_000,
            Self::Budget(tokens) => tokens,
        }
    }

    /// OpenAI's `reasoning.effort`; a budget maps to the level whose Anthropic budget it
    /// reaches (below 10,000 `low`, below 32,000 `medium`, else `high`).
    pub fn openai_effort(self) -> Option<&'static str> {
        match self {
            Self::Off => None,
            Self::Low => Some("low"),
            Self::Medium => Some("medium"),
            Self::High => Some("high"),
            Self::Budget(tokens) if tokens < 10_000 => Some("low"),
            Self::Budget(tokens) if tokens < 32_000 => Some("medium"),
            Self::Budget(_) => Some("high"),
        }
    }
}

impl std::fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Low => f.write_str("low"),
            Self::Medium => f.write_str("medium"),
            Self::High => f.write_str("high"),
            Self::Budget(tokens) => write!(f, "{tokens}"),
        }
    }
}

impl<'de> Deserialize<'de> for ReasoningEffort {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Tokens(u32),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Tokens(tokens) => Self::budget(tokens),
            Raw::Text(text) => Self::parse(&text),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// The Anthropic thinking budget (Anthropic's API, Claude on Bedrock) of a request with
/// `reasoning`: `None` when that is off or absent, or when the request `forced` the
/// structured-output tool (the API refuses thinking with a forced tool).
pub(crate) fn thinking_budget(reasoning: Option<ReasoningEffort>, forced: bool) -> Option<u32> {
    reasoning
        .filter(|_| !forced)
        .map(ReasoningEffort::anthropic_budget)
        .filter(|budget| *budget > 0)
}

/// The output cap of a request of the Anthropic family (Anthropic's API, Claude on
/// Bedrock): the `requested` cap, else `default`; with thinking, `max_tokens` must stay
/// above the thinking `budget`, so a cap at or below it becomes the budget plus `default`
/// tokens of room for the answer.
pub(crate) fn cap_above_budget(requested: Option<u32>, budget: Option<u32>, default: u32) -> u32 {
    let max_tokens = requested.unwrap_or(default);
    match budget {
        Some(budget) if max_tokens <= budget => budget.saturating_add(default),
        _ => max_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_budgets_and_off_parse_and_bad_values_are_named() {
        assert_eq!(ReasoningEffort::parse("High"), Ok(ReasoningEffort::High));
        assert_eq!(
            ReasoningEffort::parse("8000"),
            Ok(ReasoningEffort::Budget(8000))
        );
        assert_eq!(ReasoningEffort::parse("off").unwrap().enabled(), None);
        assert!(ReasoningEffort::parse("500")
            .unwrap_err()
            .contains("minimum is 1024"));
        assert!(ReasoningEffort::parse("lots")
            .unwrap_err()
            .contains("`lots`"));
        assert_eq!(ReasoningEffort::Medium.anthropic_budget(), 10_000);
        assert_eq!(ReasoningEffort::Budget(8000).openai_effort(), Some("low"));
        assert_eq!(
            ReasoningEffort::Budget(20_000).openai_effort(),
            Some("medium")
        );
        #[derive(Deserialize)]
        struct T {
            r: ReasoningEffort,
        }
        let t: T = toml::from_str("r = 16000").unwrap();
        assert_eq!(t.r, ReasoningEffort::Budget(16_000));
        let t: T = toml::from_str("r = \"low\"").unwrap();
        assert_eq!(t.r, ReasoningEffort::Low);
        assert!(toml::from_str::<T>("r = 10").is_err());
    }
}
