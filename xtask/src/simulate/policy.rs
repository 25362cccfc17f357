//! The context policies the simulator compares, and their command-line names. Each
//! peer's rules come from its source or paper (docs/benchmarks.md cites them; the notes
//! below give the figures):
//!
//! - `keen` (the naive design: a summary and the last user message): tool outputs kept
//!   raw, LLM compaction at 90% of the input budget.
//! - `zesdex` (a shaping design): dedup every turn, shaping at 85%/95% keeping the
//!   newest 70%.
//! - `claude-code`: auto-compact at window − min(max output, 20k) − 13k
//!   (`autoCompact.ts`); when the last request is over an hour old (its time-based
//!   microcompact, `gapThresholdMinutes: 60`), every tool result but the newest 5 is
//!   cleared. The replacement is the summary, the files it re-attaches (up to 5 of the
//!   newest read or written, 5,000 tokens each, 50,000 in all and at most a quarter of
//!   the window: [`super::claude_code`]) and the last user message.
//! - `codex`: compaction at 90% of the window (`auto_compact_token_limit`); the
//!   replacement keeps the newest user messages within 20,000 tokens, then the summary.
//! - `opencode`: once per user turn, tool outputs older than the newest 40,000 tokens of
//!   output (and than the last 2 user turns) are cleared when that frees over 20,000;
//!   summary at window − min(20k, max output) (`compaction.ts`, `overflow.ts`).
//! - `gemini-cli`: before every request, tool outputs beyond the newest 50,000 tokens of
//!   output (the latest turn protected) are masked when at least 30,000 tokens are
//!   prunable; compression at 50% of the window keeps the newest 30% and summarises the
//!   rest (`toolOutputMaskingService.ts`, `chatCompressionService.ts`).
//! - `masking`: the last M = 10 observations are kept, older ones replaced by a
//!   placeholder (JetBrains, arXiv 2508.21433); LLM compaction at 90% as a last resort.
//!   `masking:keep=M` sets M.
//! - `pith`: pith's default pipeline, through core's own functions as the agent loop
//!   calls them: squash at capture, the working set, masking with stubs in batches
//!   (micro-compaction), LLM compaction with the session ledger, the cold-cache rule,
//!   breakpoints at the system prompt, the stable prefix and the last message.
//!   Variants override the defaults: `pith:ws=32000,mprotect=25,mbatch=25,cold=0,coldpct=40,…`
//!   (`micro`, `protect`, `minimum`, `turns`, `carry`, `restore`, `ledger` as before). What an LLM
//!   compaction's replacement carries is `carry=pith` (summary, session ledger,
//!   re-attached files, last user message), `carry=keen` or `carry=codex`.

use anyhow::{bail, Context, Result};
use pith_core::context::{ContextConfig, PruneConfig};

/// Claude Code's `POST_COMPACT_MAX_FILES_TO_RESTORE`: files re-attached after a
/// compaction ([`super::claude_code`]).
pub const CLAUDE_RESTORE_FILES: usize = 5;

/// JetBrains' M: observations kept by `masking`.
pub const MASKING_KEEP: usize = 10;

/// pith's pipeline and its settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PithPolicy {
    /// Micro-compaction threshold, percent of the working budget.
    pub micro_percent: u8,
    /// Prune (masking) thresholds.
    pub prune: PruneConfig,
    /// What an LLM compaction's replacement carries.
    pub carry: Carry,
    /// Files re-attached by a `pith` replacement.
    pub restore_files: usize,
    /// `[context] ledger_percent`: the session ledger's share of the input budget
    /// (`ledger=P`; `carry=pith` needs it above 0).
    pub ledger_percent: u8,
    /// `[context] working_set_tokens` (0: off).
    pub working_set: u64,
    /// The cold-cache rule: after a pause longer than the TTL, due work is done early.
    pub cold_rule: bool,
    /// The thresholds after such a pause, percent of theirs (`coldpct=P`; pith's
    /// `COLD_THRESHOLD_PERCENT`).
    pub cold_percent: u64,
    /// `[context] prepare_summary_percent`: the summary is prepared in the background
    /// from this percentage of the threshold (0: in place only).
    pub prepare_percent: u8,
    /// The system prompt's and the stable prefix's breakpoints ask for Anthropic's 1-hour
    /// cache, the last message's keeps 5 minutes (`hour=0|1`; an experiment, not what pith
    /// sends).
    pub hour_prefix: bool,
    /// `[context] compaction_model`: summaries go to another model whose prices are this
    /// fraction of the main model's (`summary=R`), without its prompt cache; `None`: the
    /// main model, with its cache.
    pub summary_price: Option<f64>,
    /// Compaction without an LLM call (`tail=P`): no summary request; the replacement is
    /// the session ledger, the last user message and the newest messages within P% of the
    /// working budget, verbatim. `None`: pith's LLM summary.
    pub ledger_only_tail: Option<u8>,
}

/// The files Claude Code re-attaches after a compaction (`claude-code:files=N,budget=T`;
/// [`super::claude_code`] has its rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaudeRestore {
    /// Files at most (`POST_COMPACT_MAX_FILES_TO_RESTORE`, 5; 0: none).
    pub files: usize,
    /// Tokens of all of them at most; `None`: `POST_COMPACT_TOKEN_BUDGET`, at most a
    /// quarter of the window.
    pub budget: Option<usize>,
}

impl Default for ClaudeRestore {
    fn default() -> Self {
        Self {
            files: CLAUDE_RESTORE_FILES,
            budget: None,
        }
    }
}

/// One policy to simulate.
#[derive(Debug, Clone, PartialEq)]
pub enum Policy {
    /// Keen Code: LLM compaction at 90% only, raw tool outputs.
    Keen,
    /// zesdex: dedup every turn + shaping at 85/95%.
    Zesdex,
    /// Claude Code's auto-compact, time-based microcompact and re-attached files.
    ClaudeCode(ClaudeRestore),
    /// Codex CLI's compaction at 90% of the window.
    Codex,
    /// opencode's prune and summary.
    OpenCode,
    /// gemini-cli's output masking and compression.
    GeminiCli,
    /// Observation masking, keeping the last `keep` observations.
    Masking {
        /// Observations kept raw.
        keep: usize,
    },
    /// pith.
    Pith(PithPolicy),
}

/// What the replacement of an LLM compaction carries besides the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Carry {
    /// Summary + last user message.
    Keen,
    /// The user messages, newest first within 20,000 tokens, then the summary (Codex CLI).
    Codex,
    /// Summary + session ledger + re-attached files + last user message (pith).
    Pith,
    /// Summary + the files Claude Code re-attaches + last user message
    /// ([`super::claude_code`]).
    ClaudeCode,
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
            Carry::ClaudeCode => "claude-code",
        }
    }

    /// True when the replay keeps a session ledger and a disk for this design: pith's
    /// ledger, and the files Claude Code re-attaches (its `readFileState`, newest first).
    pub fn tracks_files(self) -> bool {
        matches!(self, Carry::Pith | Carry::ClaudeCode)
    }

    /// Parses a name of [`Carry::as_str`] among [`Carry::ALL`].
    pub fn parse(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|c| c.as_str() == name)
            .with_context(|| format!("unknown carry `{name}` (keen, codex, pith)"))
    }
}

/// The policies a run compares when none is named, peers first, pith last.
pub const DEFAULT_POLICIES: [&str; 7] = [
    "keen",
    "claude-code",
    "codex",
    "opencode",
    "gemini-cli",
    "masking",
    "pith",
];

impl Policy {
    /// pith's defaults.
    pub fn pith_default() -> Self {
        let config = ContextConfig::default();
        Self::Pith(PithPolicy {
            micro_percent: config.micro_percent,
            prune: config.prune(),
            carry: if config.ledger_percent > 0 {
                Carry::Pith
            } else {
                Carry::Keen
            },
            restore_files: config.restore_files,
            ledger_percent: config.ledger_percent,
            working_set: config.working_set_tokens,
            cold_rule: true,
            cold_percent: pith_core::context::budget::COLD_THRESHOLD_PERCENT,
            prepare_percent: config.prepare_summary_percent_for("anthropic"),
            hour_prefix: false,
            summary_price: None,
            ledger_only_tail: None,
        })
    }

    /// pith's defaults with another design of what a compaction carries (`carry`): the
    /// fidelity probes compare the designs on the same policy.
    pub fn pith_with_carry(carry: Carry) -> Self {
        match Self::pith_default() {
            Self::Pith(p) => Self::Pith(PithPolicy { carry, ..p }),
            other => other,
        }
    }

    /// The session ledger's share of the input budget under this policy (`pith`'s
    /// default for the others, which carry no ledger).
    pub fn ledger_percent(&self) -> u8 {
        match self {
            Self::Pith(p) => p.ledger_percent,
            _ => ContextConfig::default().ledger_percent,
        }
    }

    /// Files a `pith` replacement re-attaches under this policy.
    pub fn restore_files(&self) -> usize {
        match self {
            Self::Pith(p) => p.restore_files,
            _ => 0,
        }
    }

    /// What this policy's LLM compactions carry.
    pub fn carry(&self) -> Carry {
        match self {
            Self::Pith(p) => p.carry,
            Self::Codex => Carry::Codex,
            Self::ClaudeCode(_) => Carry::ClaudeCode,
            _ => Carry::Keen,
        }
    }

    /// Parses a policy name, `masking:keep=M` or `pith:key=value,…`.
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
        let pairs = || -> Result<Vec<(&str, &str)>> {
            params
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|pair| {
                    pair.split_once('=')
                        .with_context(|| format!("`{pair}` in `{spec}`: expected key=value"))
                })
                .collect()
        };
        let number = |key: &str, value: &str| -> Result<u64> {
            value
                .parse()
                .with_context(|| format!("`{key}={value}` in `{spec}`: not a number"))
        };
        let simple = match name {
            "keen" => Some(Self::Keen),
            "zesdex" => Some(Self::Zesdex),
            "codex" => Some(Self::Codex),
            "opencode" => Some(Self::OpenCode),
            "gemini-cli" => Some(Self::GeminiCli),
            _ => None,
        };
        if let Some(policy) = simple {
            if !params.is_empty() {
                bail!("policy `{name}` takes no parameters (got `{params}`)");
            }
            return Ok(policy);
        }
        match name {
            "claude-code" => {
                let mut restore = ClaudeRestore::default();
                for (key, value) in pairs()? {
                    match key {
                        "files" => restore.files = number(key, value)? as usize,
                        "budget" => restore.budget = Some(number(key, value)? as usize),
                        other => bail!("unknown claude-code parameter `{other}` (files, budget)"),
                    }
                }
                Ok(Self::ClaudeCode(restore))
            }
            "masking" => {
                let mut keep = MASKING_KEEP;
                for (key, value) in pairs()? {
                    match key {
                        "keep" => keep = number(key, value)? as usize,
                        other => bail!("unknown masking parameter `{other}` (keep)"),
                    }
                }
                Ok(Self::Masking { keep })
            }
            "pith" => {
                let Self::Pith(mut p) = Self::pith_default() else {
                    unreachable!("pith_default is pith")
                };
                for (key, value) in pairs()? {
                    match key {
                        "micro" => p.micro_percent = number(key, value)?.min(100) as u8,
                        "protect" => p.prune.protect = number(key, value)?,
                        "minimum" => p.prune.minimum = number(key, value)?,
                        "turns" => p.prune.min_user_turns = number(key, value)? as usize,
                        "carry" => p.carry = Carry::parse(value)?,
                        "restore" => p.restore_files = number(key, value)? as usize,
                        "ledger" => p.ledger_percent = number(key, value)?.clamp(1, 100) as u8,
                        "ws" => p.working_set = number(key, value)?,
                        "mprotect" => p.prune.protect_percent = number(key, value)?.min(100) as u8,
                        "mbatch" => p.prune.minimum_percent = number(key, value)?.min(100) as u8,
                        "cold" => p.cold_rule = number(key, value)? != 0,
                        "coldpct" => p.cold_percent = number(key, value)?.min(100),
                        "prepare" => p.prepare_percent = number(key, value)?.min(100) as u8,
                        "hour" => p.hour_prefix = number(key, value)? != 0,
                        "summary" => p.summary_price = Some(price_ratio(spec, value)?),
                        "tail" => p.ledger_only_tail = Some(number(key, value)?.min(100) as u8),
                        other => bail!(
                            "unknown pith parameter `{other}` (micro, protect, minimum, turns, carry, restore, ledger, ws, mprotect, mbatch, cold, coldpct, prepare, hour, summary, tail)"
                        ),
                    }
                }
                Ok(Self::Pith(p))
            }
            "tiered" => bail!("policy `tiered` is now called `pith`"),
            other => bail!(
                "unknown policy `{other}` ({}, zesdex, masking:keep=M, pith:key=value,…)",
                DEFAULT_POLICIES.join(", ")
            ),
        }
    }

    /// The price ratio of the model this policy's summaries go to (`pith:summary=R`).
    pub fn summary_price(&self) -> Option<f64> {
        match self {
            Self::Pith(p) => p.summary_price,
            _ => None,
        }
    }

    /// `pith:tail=P`: compactions without an LLM call, keeping P% of the working budget.
    pub fn ledger_only_tail(&self) -> Option<u8> {
        match self {
            Self::Pith(p) => p.ledger_only_tail,
            _ => None,
        }
    }

    /// The files this policy re-attaches the way Claude Code does (none for the others).
    pub fn claude_restore(&self) -> ClaudeRestore {
        match self {
            Self::ClaudeCode(restore) => *restore,
            _ => ClaudeRestore {
                files: 0,
                budget: Some(0),
            },
        }
    }

    /// True when tool outputs are squashed at capture (pith and zesdex).
    pub fn squashes(&self) -> bool {
        matches!(self, Self::Pith(_) | Self::Zesdex)
    }
}

/// `summary=R` of `spec`: a positive price ratio.
fn price_ratio(spec: &str, value: &str) -> Result<f64> {
    match value.parse::<f64>() {
        Ok(ratio) if ratio.is_finite() && ratio > 0.0 => Ok(ratio),
        _ => bail!("`summary={value}` in `{spec}`: expected a positive price ratio such as 0.2"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_and_pith_overrides_parse() {
        assert_eq!(Policy::parse("keen").unwrap(), Policy::Keen);
        assert_eq!(Policy::parse("pith").unwrap(), Policy::pith_default());
        for name in DEFAULT_POLICIES {
            Policy::parse(name).unwrap();
        }
        let Policy::Pith(p) = Policy::parse(
            "pith:micro=60,turns=1,carry=codex,restore=1,ws=32000,cold=0,coldpct=40,mbatch=10,ledger=8,hour=1",
        )
        .unwrap() else {
            panic!("pith expected")
        };
        assert_eq!((p.micro_percent, p.prune.min_user_turns), (60, 1));
        assert_eq!((p.carry, p.restore_files), (Carry::Codex, 1));
        assert_eq!(p.ledger_percent, 8);
        assert_eq!(
            Policy::pith_default().ledger_percent(),
            ContextConfig::default().ledger_percent
        );
        assert_eq!(
            (p.working_set, p.cold_rule, p.prune.minimum_percent),
            (32_000, false, 10)
        );
        assert_eq!(p.cold_percent, 40);
        assert!(p.hour_prefix);
        let Policy::Pith(default) = Policy::pith_default() else {
            panic!("pith expected")
        };
        assert_eq!(
            default.cold_percent,
            pith_core::context::budget::COLD_THRESHOLD_PERCENT
        );
        assert_eq!(Policy::pith_default().carry(), Carry::Pith);
        assert_eq!(Policy::Codex.carry(), Carry::Codex);
        assert_eq!(
            Policy::parse("masking:keep=3").unwrap(),
            Policy::Masking { keep: 3 }
        );
        assert_eq!(
            Policy::parse("masking").unwrap(),
            Policy::Masking { keep: MASKING_KEEP }
        );
        assert_eq!(
            Policy::parse("claude-code").unwrap().claude_restore(),
            ClaudeRestore {
                files: 5,
                budget: None
            }
        );
        assert_eq!(
            Policy::parse("claude-code:files=2,budget=9000")
                .unwrap()
                .claude_restore(),
            ClaudeRestore {
                files: 2,
                budget: Some(9_000)
            }
        );
        assert_eq!(Policy::Keen.claude_restore().files, 0);
        assert_eq!(
            Policy::parse("claude-code").unwrap().carry(),
            Carry::ClaudeCode
        );
    }

    #[test]
    fn a_summary_model_is_a_price_ratio() {
        assert_eq!(Policy::pith_default().summary_price(), None);
        let cheap = Policy::parse("pith:summary=0.2").unwrap();
        assert_eq!(cheap.summary_price(), Some(0.2));
        for bad in ["pith:summary=0", "pith:summary=-1", "pith:summary=cheap"] {
            let err = Policy::parse(bad).unwrap_err().to_string();
            assert!(err.contains("price ratio"), "{err}");
        }
    }

    #[test]
    fn bad_policy_specs_are_refused_with_the_reason() {
        let err = Policy::parse("greedy").unwrap_err().to_string();
        assert!(err.contains("unknown policy `greedy`"), "{err}");
        let err = Policy::parse("pith:micro=lots").unwrap_err().to_string();
        assert!(err.contains("not a number"), "{err}");
        assert!(Policy::parse("keen:micro=3").is_err());
        assert!(Policy::parse("pith:carry=all").is_err());
        assert!(Policy::parse("pith:carry=claude-code").is_err());
        let err = Policy::parse("claude-code:keep=3").unwrap_err().to_string();
        assert!(
            err.contains("unknown claude-code parameter `keep`"),
            "{err}"
        );
        let err = Policy::parse("tiered").unwrap_err().to_string();
        assert!(err.contains("now called `pith`"), "{err}");
    }
}
