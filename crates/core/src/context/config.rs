//! The `[context]` configuration section: every threshold the context pipeline uses, with
//! its documented default.
//!
//! This module owns the numbers only; the modules that act on them (`squash`, `prune`)
//! take the section (or their part of it) as an argument so that tests and the `pith
//! compress` command can run the exact same code with the exact same defaults. Budget
//! thresholds (micro / auto / overflow) are *not* here: they belong to
//! [`crate::ContextBudget`].

use serde::{Deserialize, Serialize};

use super::prune::PruneConfig;

/// Thresholds of the capture-time squash (`[context]` keys; all optional).
///
/// Defaults (documented in `docs/context-pipeline.md`):
///
/// | key | default | meaning |
/// |---|---|---|
/// | `floor_bytes` | 1 500 | outputs at or under this size pass unchanged |
/// | `file_view_cap_bytes` | 50 000 | file views (`cat`, `sed -n`, `nl`, `head`, `tail`) are kept byte-exact up to this size |
/// | `view_budget_bytes` | 8 000 | a file view above the cap is squashed by its content to at most this size |
/// | `generic_budget_bytes` | 3 000 | byte budget of the generic fallback |
/// | `log_max_error_lines` | 20 | error lines a log keeps (highest score first) |
/// | `log_max_warning_lines` | 10 | warning lines a log keeps |
/// | `context_lines` | 2 | lines of context kept around each kept log line |
/// | `test_context_budget_bytes` | 300 | extra context a test-runner output may keep beyond its mandatory lines |
/// | `failure_block_max_lines` | 40 | lines kept of one failing test's block (header, details, last frames, captured output tail) |
/// | `failure_blocks_max` | 20 | failure blocks kept in detail; later ones keep their header (the test id) only |
/// | `grep_max_matches_per_file` | 5 | matches kept per file in grep output |
/// | `grep_max_matches_total` | 12 | matches kept over all files (each file keeps at least one) |
/// | `match_line_max_chars` | 160 | a kept grep match longer than this is cut (with a marker in the line) |
/// | `path_list_cap_bytes` | 16 000 | path lists (`find`, glob) are kept whole up to this size |
/// | `ls_max_entries_per_dir` | 25 | entries kept per directory in `ls -R` output |
/// | `json_array_keep` | 3 | array elements kept in full before the rest are summarised |
/// | `json_string_keep_chars` | 80 | a JSON string longer than this that is not identifier-like is elided |
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default)]
pub struct SquashConfig {
    /// Outputs at or under this many bytes pass unchanged.
    pub floor_bytes: usize,
    /// File views are kept byte-exact up to this many bytes; larger ones are squashed by
    /// their content (log, test report, JSON, source outline) to `view_budget_bytes`.
    pub file_view_cap_bytes: usize,
    /// Most bytes a file view above `file_view_cap_bytes` is squashed to.
    pub view_budget_bytes: usize,
    /// Byte budget of the generic fallback compressor.
    pub generic_budget_bytes: usize,
    /// Most error lines a log/build output keeps (highest score first).
    pub log_max_error_lines: usize,
    /// Most warning lines a log/build output keeps.
    pub log_max_warning_lines: usize,
    /// Lines of context kept on each side of a kept log line.
    pub context_lines: usize,
    /// Extra bytes of context (traceback frames, source lines) a test-runner output may
    /// keep beyond its mandatory lines (failing ids, error lines, summaries).
    pub test_context_budget_bytes: usize,
    /// Lines kept of one failure block (a failing test's header, details, last frames
    /// and captured output); a block within this is kept whole.
    pub failure_block_max_lines: usize,
    /// Failure blocks kept in detail; later blocks keep only their header line.
    pub failure_blocks_max: usize,
    /// Most matches kept per file in grep output.
    pub grep_max_matches_per_file: usize,
    /// Matches kept over all files of a grep output; each file keeps at least one, so
    /// every distinct path stays.
    pub grep_max_matches_total: usize,
    /// Kept grep match lines longer than this many characters are shortened.
    pub match_line_max_chars: usize,
    /// Path lists (`find`, glob output) are kept whole up to this many bytes.
    pub path_list_cap_bytes: usize,
    /// Most entries kept per directory in `ls -R` style listings.
    pub ls_max_entries_per_dir: usize,
    /// JSON arrays keep this many leading elements in full.
    pub json_array_keep: usize,
    /// JSON strings longer than this that are not identifier-like are elided.
    pub json_string_keep_chars: usize,
}

impl Default for SquashConfig {
    fn default() -> Self {
        Self {
            floor_bytes: 1_500,
            file_view_cap_bytes: 50_000,
            view_budget_bytes: 8_000,
            generic_budget_bytes: 3_000,
            log_max_error_lines: 20,
            log_max_warning_lines: 10,
            context_lines: 2,
            test_context_budget_bytes: 300,
            failure_block_max_lines: 40,
            failure_blocks_max: 20,
            grep_max_matches_per_file: 5,
            grep_max_matches_total: 12,
            match_line_max_chars: 160,
            path_list_cap_bytes: 16_000,
            ls_max_entries_per_dir: 25,
            json_array_keep: 3,
            json_string_keep_chars: 80,
        }
    }
}

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
    /// Tokens of newest tool output that prune never touches (`prune_protect_tokens`).
    pub prune_protect_tokens: u64,
    /// Prune acts only when it frees at least this many tokens (`prune_minimum_tokens`).
    pub prune_minimum_tokens: u64,
    /// Prune acts only with at least this many user turns (`prune_min_user_turns`).
    pub prune_min_user_turns: usize,
    /// Micro-compaction threshold as a percentage of the input budget
    /// (`micro_percent`), passed to [`crate::ContextBudget::with_micro_percent`].
    pub micro_percent: u8,
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
    /// The smallest reported/counted ratio of input tokens believed
    /// (`usage_ratio_min`; see [`crate::context::calibration`]).
    pub usage_ratio_min: f64,
    /// The largest (`usage_ratio_max`).
    pub usage_ratio_max: f64,
}

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
            prune_protect_tokens: prune.protect,
            prune_minimum_tokens: prune.minimum,
            prune_min_user_turns: prune.min_user_turns,
            micro_percent: crate::context::budget::DEFAULT_MICRO_PERCENT,
            mcp_defer_percent: DEFAULT_MCP_DEFER_PERCENT,
            ledger_percent: 10,
            ledger_user_messages_max_tokens: 8_000,
            restore_files: 3,
            restore_files_percent: 15,
            max_auto_compactions_per_turn:
                crate::context::governor::DEFAULT_MAX_AUTO_COMPACTIONS_PER_TURN,
            user_message_percent: DEFAULT_USER_MESSAGE_PERCENT,
            instructions_percent: DEFAULT_INSTRUCTIONS_PERCENT,
            usage_ratio_min: crate::context::calibration::PLAUSIBLE_RATIO_MIN,
            usage_ratio_max: crate::context::calibration::PLAUSIBLE_RATIO_MAX,
        }
    }
}

impl ContextConfig {
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

    /// Most tokens of one user message for an input budget of `input_budget`.
    pub fn user_message_tokens(&self, input_budget: u64) -> u64 {
        input_budget * u64::from(self.user_message_percent.clamp(1, 100)) / 100
    }

    /// Most tokens of the project's instruction files for an input budget of
    /// `input_budget`.
    pub fn instruction_tokens(&self, input_budget: u64) -> u64 {
        input_budget * u64::from(self.instructions_percent.clamp(1, 100)) / 100
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
        }
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
        assert_eq!(config.ledger_percent, 10);
        assert_eq!(config.ledger_user_messages_max_tokens, 8_000);
        assert_eq!(config.restore_files, 3);
        assert_eq!(config.restore_files_percent, 15);
        assert_eq!(config.max_auto_compactions_per_turn, 2);
        assert_eq!(config.user_message_percent, 25);
        assert_eq!(config.instructions_percent, 20);
        assert_eq!(config.user_message_tokens(28_672), 7_168);
        assert_eq!(config.instruction_tokens(28_672), 5_734);
        let ledger = config.ledger_budget(27_904);
        assert_eq!(
            (ledger.total_tokens, ledger.user_messages_tokens),
            (2_790, 2_790)
        );
        let ledger = config.ledger_budget(190_000);
        assert_eq!(
            (ledger.total_tokens, ledger.user_messages_tokens),
            (19_000, 8_000)
        );
        let restore = config.restore_budget(27_904);
        assert_eq!((restore.files, restore.tokens), (3, 4_185));
    }

    #[test]
    fn a_single_key_overrides_only_that_threshold() {
        let config: ContextConfig = serde_json::from_str(r#"{"floor_bytes": 4000}"#).unwrap();
        assert_eq!(config.squash.floor_bytes, 4_000);
        assert_eq!(config.squash.generic_budget_bytes, 3_000);
    }
}
