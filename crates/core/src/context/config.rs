//! The `[context]` configuration section: every threshold the context pipeline uses, with
//! its documented default.
//!
//! This module owns the numbers only (the squash thresholds are [`SquashConfig`], next
//! to the squashers); the modules that act on them (`squash`, `prune`) take the section
//! (or their part of it) as an argument so that tests and the `pith
//! compress` command can run the exact same code with the exact same defaults. Budget
//! thresholds (micro / auto / overflow) are *not* here: they belong to
//! [`crate::ContextBudget`].

use serde::{Deserialize, Serialize};

use super::prune::PruneConfig;
use super::squash::config::SquashConfig;

/// The whole `[context]` section: squash thresholds, prune thresholds and the
/// micro-compaction threshold percentage.
///
/// (serde cannot reject unknown keys of a flattened section; the config loader in the
/// binary is where typos are reported.)
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct ContextConfig {
    /// Capture-time squash thresholds (keys directly under `[context]`).
    #[serde(flatten)]
    pub squash: SquashConfig,
    /// The model summaries are requested from (`compaction_model = "provider/model"`),
    /// with its own window and prices; unset: the conversation's model
    /// (docs/context-pipeline.md, "A model for summaries").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compaction_model: Option<String>,
    /// Tokens of newest tool output that prune never touches (`prune_protect_tokens`).
    pub prune_protect_tokens: u64,
    /// Prune acts only when it frees at least this many tokens (`prune_minimum_tokens`).
    pub prune_minimum_tokens: u64,
    /// Prune acts only with at least this many user turns (`prune_min_user_turns`).
    pub prune_min_user_turns: usize,
    /// Within a working set, prune never touches the newest tool output up to this
    /// percentage of it (`mask_protect_percent`).
    pub mask_protect_percent: u8,
    /// Within a working set, masking waits until it frees this percentage of it
    /// (`mask_batch_percent`): one rewrite of the prompt cache per batch.
    pub mask_batch_percent: u8,
    /// Micro-compaction threshold as a percentage of the input budget
    /// (`micro_percent`), passed to [`crate::ContextBudget::with_micro_percent`].
    pub micro_percent: u8,
    /// What pith keeps the carried context within on a large window
    /// (`working_set_tokens`; 0 turns it off): compaction and masking act at its
    /// thresholds instead of the window's ([`crate::ContextBudget::with_working_set`]).
    pub working_set_tokens: u64,
    /// MCP tool definitions are deferred (a one-line catalog and a loader tool instead of
    /// the schemas) when they would take more than this percentage of the input budget
    /// (`mcp_defer_percent`; 0 always defers, 100 never).
    pub mcp_defer_percent: u8,
    /// Most tokens of the session ledger every compaction carries, as a percentage of the
    /// input budget (`ledger_percent`; 0 turns the ledger off).
    pub ledger_percent: u8,
    /// Most tokens of the ledger's user messages (`ledger_user_messages_max_tokens`; the
    /// smaller of this and the ledger's budget applies).
    pub ledger_user_messages_max_tokens: u64,
    /// Files re-attached after a compaction, read fresh from disk (`restore_files`; 0
    /// turns it off).
    pub restore_files: usize,
    /// Most tokens of the re-attached files together, as a percentage of the input
    /// budget (`restore_files_percent`).
    pub restore_files_percent: u8,
    /// Most tokens of the user's pins (files and notes kept whole through every
    /// compaction), as a percentage of the input budget (`pins_percent`; 0 turns pins
    /// off). A pin that does not fit is named to the user, never dropped silently
    /// ([`super::pins`]).
    pub pins_percent: u8,
    /// Most automatic LLM compactions in one user turn (`max_auto_compactions_per_turn`;
    /// see [`crate::context::governor`]).
    pub max_auto_compactions_per_turn: u32,
    /// A user message larger than this percentage of the input budget is stored beside
    /// the transcript; the model gets its head and tail and the file to read
    /// (`user_message_percent`).
    pub user_message_percent: u8,
    /// The project's instruction files (AGENTS.md, PITH.md) together take at most this
    /// percentage of the input budget in the system prompt; the rest is named, to read
    /// (`instructions_percent`).
    pub instructions_percent: u8,
    /// A summary is prepared in the background once the context passes this percentage
    /// of the automatic compaction threshold (`prepare_summary_percent`; 0 turns it off):
    /// the turn goes on, and the threshold applies the summary instead of waiting for one
    /// (docs/context-pipeline.md, "Summaries prepared ahead"). Unset: see
    /// [`ContextConfig::prepare_summary_percent_for`].
    pub prepare_summary_percent: Option<u8>,
    /// The smallest reported/counted ratio of input tokens believed
    /// (`usage_ratio_min`; see [`crate::context::calibration`]).
    pub usage_ratio_min: f64,
    /// The largest (`usage_ratio_max`).
    pub usage_ratio_max: f64,
}

/// Default of [`ContextConfig::working_set_tokens`] (docs/context-pipeline.md, "The working
/// set": chosen with `cargo xtask simulate` on the tuning half of the corpus).
pub const DEFAULT_WORKING_SET_TOKENS: u64 = 32_000;

/// Default of [`ContextConfig::restore_files`]: none. `cargo xtask simulate` (with the
/// re-reads charged) found that not re-attaching files saves 9–12% at every window and
/// price model, with the same fidelity: most re-attached files are never used again
/// before the next compaction, and the ledger names every file to read again
/// (docs/context-pipeline.md, "Re-attached files").
pub const DEFAULT_RESTORE_FILES: usize = 0;

/// Default of [`ContextConfig::ledger_percent`]: the smallest share of the input budget
/// at which `cargo xtask simulate --day 5` keeps every probe a–d at 99.5% or more on the
/// tuning half at 32k (10%: user messages 98.9%; 11%: 99.2%; 12%: 100%), for about 2%
/// more cost (docs/context-pipeline.md, "The ledger's share").
pub const DEFAULT_LEDGER_PERCENT: u8 = 12;

/// Default of [`ContextConfig::prepare_summary_percent`] (docs/context-pipeline.md,
/// "Summaries prepared ahead": chosen with `cargo xtask simulate` on the tuning half of
/// the corpus, the mark with the least extra cost for most of the wait saved).
pub const DEFAULT_PREPARE_SUMMARY_PERCENT: u8 = 90;

/// Default of [`ContextConfig::user_message_percent`].
pub const DEFAULT_USER_MESSAGE_PERCENT: u8 = 25;

/// Default of [`ContextConfig::instructions_percent`].
pub const DEFAULT_INSTRUCTIONS_PERCENT: u8 = 20;

/// Default of [`ContextConfig::mcp_defer_percent`].
pub const DEFAULT_MCP_DEFER_PERCENT: u8 = 5;

impl Default for ContextConfig {
    fn default() -> Self {
        let prune = PruneConfig::default();
        Self {
            squash: SquashConfig::default(),
            compaction_model: None,
            prune_protect_tokens: prune.protect,
            prune_minimum_tokens: prune.minimum,
            prune_min_user_turns: prune.min_user_turns,
            mask_protect_percent: prune.protect_percent,
            mask_batch_percent: prune.minimum_percent,
            micro_percent: crate::context::budget::DEFAULT_MICRO_PERCENT,
            working_set_tokens: DEFAULT_WORKING_SET_TOKENS,
            mcp_defer_percent: DEFAULT_MCP_DEFER_PERCENT,
            ledger_percent: DEFAULT_LEDGER_PERCENT,
            ledger_user_messages_max_tokens: 8_000,
            restore_files: DEFAULT_RESTORE_FILES,
            restore_files_percent: 15,
            pins_percent: super::pins::DEFAULT_PINS_PERCENT,
            max_auto_compactions_per_turn:
                crate::context::governor::DEFAULT_MAX_AUTO_COMPACTIONS_PER_TURN,
            user_message_percent: DEFAULT_USER_MESSAGE_PERCENT,
            instructions_percent: DEFAULT_INSTRUCTIONS_PERCENT,
            prepare_summary_percent: None,
            usage_ratio_min: crate::context::calibration::PLAUSIBLE_RATIO_MIN,
            usage_ratio_max: crate::context::calibration::PLAUSIBLE_RATIO_MAX,
        }
    }
}

impl ContextConfig {
    /// The keys whose default is "unset" (absent from the serialised default), for the
    /// loader's check of known keys.
    pub const OPTIONAL_KEYS: &'static [&'static str] =
        &["prepare_summary_percent", "compaction_model"];

    /// The ledger's budgets for an input budget of `input_budget` tokens.
    pub fn ledger_budget(&self, input_budget: u64) -> super::ledger::LedgerBudget {
        super::ledger::LedgerBudget::for_input_budget(
            input_budget,
            self.ledger_percent.min(100),
            self.ledger_user_messages_max_tokens,
        )
    }

    /// How many files are re-attached after a compaction, and in how many tokens.
    pub fn restore_budget(&self, input_budget: u64) -> super::ledger::RestoreBudget {
        super::ledger::RestoreBudget::for_input_budget(
            input_budget,
            self.restore_files,
            self.restore_files_percent,
        )
    }

    /// Most tokens of the pins for an input budget of `input_budget`.
    pub fn pins_tokens(&self, input_budget: u64) -> usize {
        super::pins::pins_budget_tokens(input_budget, self.pins_percent)
    }

    /// Most tokens of one user message for an input budget of `input_budget`.
    pub fn user_message_tokens(&self, input_budget: u64) -> u64 {
        input_budget * u64::from(self.user_message_percent.clamp(1, 100)) / 100
    }

    /// Most tokens of the project's instruction files for an input budget of
    /// `input_budget`.
    pub fn instruction_tokens(&self, input_budget: u64) -> u64 {
        input_budget * u64::from(self.instructions_percent.clamp(1, 100)) / 100
    }

    /// The mark of summaries prepared in the background for a model of `provider`: the
    /// configured one, else [`DEFAULT_PREPARE_SUMMARY_PERCENT`], except on the `local`
    /// provider (a llama.cpp server on this machine), which usually serves one request at
    /// a time: there a summary in the background would make the turn's request wait
    /// behind it, so it is off unless configured.
    pub fn prepare_summary_percent_for(&self, provider: &str) -> u8 {
        match self.prepare_summary_percent {
            Some(percent) => percent.min(100),
            None if provider == "local" => 0,
            None => DEFAULT_PREPARE_SUMMARY_PERCENT,
        }
    }

    /// The band of believed usage reports (an inverted band is taken in order).
    pub fn usage_band(&self) -> crate::context::calibration::Band {
        let (min, max) = if self.usage_ratio_min <= self.usage_ratio_max {
            (self.usage_ratio_min, self.usage_ratio_max)
        } else {
            (self.usage_ratio_max, self.usage_ratio_min)
        };
        crate::context::calibration::Band { min, max }
    }

    /// The prune thresholds of this section.
    pub fn prune(&self) -> PruneConfig {
        PruneConfig {
            protect: self.prune_protect_tokens,
            minimum: self.prune_minimum_tokens,
            min_user_turns: self.prune_min_user_turns,
            protect_percent: self.mask_protect_percent,
            minimum_percent: self.mask_batch_percent,
        }
    }

    /// The context budget of a `window`: the micro percentage and the working set of
    /// this section applied.
    pub fn budget(&self, window: u64) -> crate::ContextBudget {
        crate::ContextBudget::with_micro_percent(window, self.micro_percent)
            .with_working_set(self.working_set_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_context_section_yields_the_documented_defaults() {
        let config: ContextConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(config, ContextConfig::default());
        assert_eq!(config.squash.floor_bytes, 1_500);
        assert_eq!(config.squash.file_view_cap_bytes, 50_000);
        assert_eq!(config.prune().protect, 40_000);
        assert_eq!(config.prune().minimum, 20_000);
        assert_eq!(config.prune().min_user_turns, 2);
        assert_eq!(config.mcp_defer_percent, 5);
        assert_eq!(config.ledger_percent, 12);
        assert_eq!(config.ledger_user_messages_max_tokens, 8_000);
        assert_eq!(config.restore_files, 0);
        assert_eq!(config.restore_files_percent, 15);
        assert_eq!(config.max_auto_compactions_per_turn, 2);
        assert_eq!(config.user_message_percent, 25);
        assert_eq!(config.instructions_percent, 20);
        assert_eq!(config.prepare_summary_percent_for("anthropic"), 90);
        assert_eq!(config.prepare_summary_percent_for("local"), 0);
        let set: ContextConfig =
            serde_json::from_str(r#"{"prepare_summary_percent": 60}"#).unwrap();
        assert_eq!(set.prepare_summary_percent_for("local"), 60);
        assert_eq!(config.user_message_tokens(28_672), 7_168);
        assert_eq!(config.instruction_tokens(28_672), 5_734);
        let ledger = config.ledger_budget(27_904);
        assert_eq!(
            (ledger.total_tokens, ledger.user_messages_tokens),
            (3_348, 3_348)
        );
        let ledger = config.ledger_budget(190_000);
        assert_eq!(
            (ledger.total_tokens, ledger.user_messages_tokens),
            (22_800, 8_000)
        );
        let restore = config.restore_budget(27_904);
        assert_eq!((restore.files, restore.tokens), (0, 4_185));
        let opted_in: ContextConfig = serde_json::from_str(r#"{"restore_files": 3}"#).unwrap();
        assert_eq!(opted_in.restore_budget(27_904).files, 3);
    }

    #[test]
    fn a_single_key_overrides_only_that_threshold() {
        let config: ContextConfig = serde_json::from_str(r#"{"floor_bytes": 4000}"#).unwrap();
        assert_eq!(config.squash.floor_bytes, 4_000);
        assert_eq!(config.squash.generic_budget_bytes, 3_000);
    }
}
