//! The context policies the simulator compares, and their command-line names.
//!
//! - `keen` (seed 002): tool outputs kept raw, nothing rewritten, LLM compaction when the
//!   estimate reaches 90% of the input budget after a new tool turn.
//! - `zesdex` (seed 000): squash at capture, dedup of read-only results before every
//!   request, shaping with hysteresis (85% of the input budget the first time, 95% once
//!   shaped) keeping the newest 70% and summarising the rest with the LLM.
//! - `tiered` (pith): squash at capture, micro-compaction (dedup + prune) and LLM
//!   compaction as `pith_core::context::policy::decide` says. Variants override pith's
//!   defaults: `tiered:micro=60,protect=20000,minimum=10000,turns=1`.

use anyhow::{bail, Context, Result};
use pith_core::context::{ContextConfig, PruneConfig};

/// One policy to simulate.
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// Keen Code: LLM compaction at 90% only, raw tool outputs.
    Keen,
    /// zesdex: dedup every turn + shaping at 85/95%.
    Zesdex,
    /// pith: squash at capture, micro at its threshold, LLM at 90%.
    Tiered {
        /// Micro-compaction threshold, percent of the input budget.
        micro_percent: u8,
        /// Prune thresholds.
        prune: PruneConfig,
    },
}

impl Policy {
    /// pith's defaults.
    pub fn tiered_default() -> Self {
        let config = ContextConfig::default();
        Self::Tiered {
            micro_percent: config.micro_percent,
            prune: config.prune(),
        }
    }

    /// Parses `keen`, `zesdex`, `tiered` or `tiered:key=value,…`.
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
        match name {
            "keen" if params.is_empty() => Ok(Self::Keen),
            "zesdex" if params.is_empty() => Ok(Self::Zesdex),
            "keen" | "zesdex" => bail!("policy `{name}` takes no parameters (got `{params}`)"),
            "tiered" => {
                let Self::Tiered {
                    mut micro_percent,
                    mut prune,
                } = Self::tiered_default()
                else {
                    unreachable!("tiered_default is tiered")
                };
                for pair in params.split(',').filter(|p| !p.is_empty()) {
                    let (key, value) = pair
                        .split_once('=')
                        .with_context(|| format!("`{pair}` in `{spec}`: expected key=value"))?;
                    let bad = || format!("`{pair}` in `{spec}`: not a number");
                    match key {
                        "micro" => micro_percent = value.parse().with_context(bad)?,
                        "protect" => prune.protect = value.parse().with_context(bad)?,
                        "minimum" => prune.minimum = value.parse().with_context(bad)?,
                        "turns" => prune.min_user_turns = value.parse().with_context(bad)?,
                        other => bail!(
                            "unknown tiered parameter `{other}` (micro, protect, minimum, turns)"
                        ),
                    }
                }
                Ok(Self::Tiered {
                    micro_percent,
                    prune,
                })
            }
            other => bail!("unknown policy `{other}` (keen, zesdex, tiered[:key=value,…])"),
        }
    }

    /// True when tool outputs are squashed at capture.
    pub fn squashes(&self) -> bool {
        !matches!(self, Self::Keen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_and_tiered_overrides_parse() {
        assert_eq!(Policy::parse("keen").unwrap(), Policy::Keen);
        assert_eq!(Policy::parse("tiered").unwrap(), Policy::tiered_default());
        let Policy::Tiered {
            micro_percent,
            prune,
        } = Policy::parse("tiered:micro=60,turns=1").unwrap()
        else {
            panic!("tiered expected")
        };
        assert_eq!((micro_percent, prune.min_user_turns), (60, 1));
        assert_eq!(prune.protect, PruneConfig::default().protect);
    }

    #[test]
    fn bad_policy_specs_are_refused_with_the_reason() {
        let err = Policy::parse("greedy").unwrap_err().to_string();
        assert!(err.contains("unknown policy `greedy`"), "{err}");
        let err = Policy::parse("tiered:micro=lots").unwrap_err().to_string();
        assert!(err.contains("not a number"), "{err}");
        assert!(Policy::parse("keen:micro=3").is_err());
    }
}
