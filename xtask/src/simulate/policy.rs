//! The context policies the simulator compares, and their command-line names.
//!
//! - `keen` (seed 002): tool outputs kept raw, nothing rewritten, LLM compaction when the
//!   estimate reaches 90% of the input budget after a new tool turn.
//! - `zesdex` (seed 000): squash at capture, dedup of read-only results before every
//!   request, shaping with hysteresis (85% of the input budget the first time, 95% once
//!   shaped) keeping the newest 70% and summarising the rest with the LLM.
//! - `tiered` (pith): squash at capture, micro-compaction (dedup + prune) and LLM
//!   compaction as `pith_core::context::policy::decide` says. Variants override pith's
//!   defaults: `tiered:micro=60,protect=20000,minimum=10000,turns=1`. What an LLM
//!   compaction's replacement carries is `carry=pith` (pith's default: summary, session
//!   ledger, re-attached files, last user message), `carry=keen` (summary and last user
//!   message, seed 002) or `carry=codex` (summary after the user messages, newest first,
//!   within 20,000 tokens); `restore=N` sets how many files a `pith` replacement
//!   re-attaches.

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
        /// What an LLM compaction's replacement carries.
        carry: Carry,
        /// Files re-attached by a `pith` replacement.
        restore_files: usize,
    },
}

/// What the replacement of an LLM compaction carries besides the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carry {
    /// Summary + last user message (seed 002).
    Keen,
    /// The user messages, newest first within 20,000 tokens, then the summary (Codex CLI).
    Codex,
    /// Summary + session ledger + re-attached files + last user message (pith).
    Pith,
}

impl Carry {
    /// All designs, in report order.
    pub const ALL: [Carry; 3] = [Carry::Keen, Carry::Codex, Carry::Pith];

    /// The name used in specs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Carry::Keen => "keen",
            Carry::Codex => "codex",
            Carry::Pith => "pith",
        }
    }

    /// Parses a name of [`Carry::as_str`].
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .with_context(|| format!("unknown carry `{name}` (keen, codex, pith)"))
    }
}

impl Policy {
    /// pith's defaults.
    pub fn tiered_default() -> Self {
        let config = ContextConfig::default();
        Self::Tiered {
            micro_percent: config.micro_percent,
            prune: config.prune(),
            carry: if config.ledger_percent > 0 {
                Carry::Pith
            } else {
                Carry::Keen
            },
            restore_files: config.restore_files,
        }
    }

    /// pith's defaults with another design of what a compaction carries (`carry`): the
    /// fidelity probes compare the designs on the same tiered policy.
    pub fn tiered_with_carry(carry: Carry) -> Self {
        match Self::tiered_default() {
            Self::Tiered {
                micro_percent,
                prune,
                restore_files,
                ..
            } => Self::Tiered {
                micro_percent,
                prune,
                carry,
                restore_files,
            },
            other => other,
        }
    }

    /// Files a `pith` replacement re-attaches under this policy.
    pub fn restore_files(&self) -> usize {
        match self {
            Self::Tiered { restore_files, .. } => *restore_files,
            _ => 0,
        }
    }

    /// What this policy's LLM compactions carry (`keen` for keen and zesdex).
    pub fn carry(&self) -> Carry {
        match self {
            Self::Tiered { carry, .. } => *carry,
            _ => Carry::Keen,
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
                    mut carry,
                    mut restore_files,
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
                        "carry" => carry = Carry::parse(value)?,
                        "restore" => restore_files = value.parse().with_context(bad)?,
                        other => bail!(
                            "unknown tiered parameter `{other}` (micro, protect, minimum, turns, carry, restore)"
                        ),
                    }
                }
                Ok(Self::Tiered {
                    micro_percent,
                    prune,
                    carry,
                    restore_files,
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
            carry,
            restore_files,
        } = Policy::parse("tiered:micro=60,turns=1,carry=codex,restore=1").unwrap()
        else {
            panic!("tiered expected")
        };
        assert_eq!((micro_percent, prune.min_user_turns), (60, 1));
        assert_eq!(carry, Carry::Codex);
        assert_eq!(restore_files, 1);
        assert_eq!(Policy::tiered_default().carry(), Carry::Pith);
        assert_eq!(Policy::Keen.carry(), Carry::Keen);
        assert!(Policy::parse("tiered:carry=all").is_err());
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
