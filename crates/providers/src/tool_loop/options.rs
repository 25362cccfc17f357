//! The loop's knobs and the shapes of its results.

use pith_core::context::{ContextConfig, PruneConfig};
use pith_core::{Message, PersistError, Usage};
use thiserror::Error;

use crate::tool_loop::output_cap::enforced_output_cap;
use crate::tool_loop::request::Timeouts;
use crate::tool_loop::retry::RetryPolicy;
use crate::wire::{ProviderError, ReasoningEffort, StructuredOutput};

/// Knobs of the loop, with the defaults a user of pith gets.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopOptions {
    /// Automatic (LLM) compaction at the budget's auto threshold. `--no-auto-compact`
    /// turns it off.
    pub auto_compaction: bool,
    /// Most model requests in one user turn (`--max-turns`); `None` for no limit.
    pub max_requests_per_turn: Option<u32>,
    /// Retry policy for transient failures.
    pub retry: RetryPolicy,
    /// Request and idle-stream timeouts.
    pub timeouts: Timeouts,
    /// Output cap sent with every request.
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// How hard the model may think (`--reasoning`, `reasoning =` per model), sent with
    /// every request; `None` for the provider's default (no Anthropic thinking).
    pub reasoning: Option<ReasoningEffort>,
    /// Most rounds of rejected tool calls a compaction request may go through before
    /// pith compacts without the model's summary (see `summary::fallback_summary`).
    pub compaction_tool_rounds: u32,
    /// Micro-compaction (dedup + prune, no LLM) at the budget's micro threshold.
    pub micro_compaction: bool,
    /// Prune thresholds of micro-compaction.
    pub prune: PruneConfig,
    /// Output tokens at which pith cuts an answer itself, whatever the server does with
    /// `max_output_tokens` (see `guard`): the model's cap plus a margin.
    pub output_cap: u64,
    /// Identical lines or sentences in a row that end a degenerate answer.
    pub repeated_line_limit: usize,
    /// The session ledger every compaction carries, and the files it re-attaches.
    pub ledger: LedgerOptions,
    /// Most automatic LLM compactions in one user turn (`[context]
    /// max_auto_compactions_per_turn`); past it the overflow path fits requests.
    pub max_auto_compactions_per_turn: u32,
    /// The doom-loop guard: the same call with the same result over and over.
    pub repeated_calls: RepeatedCallLimits,
    /// Which usage reports are believed (`[context] usage_ratio_min` / `max`).
    pub usage_band: pith_core::context::calibration::Band,
    /// The schema the final answer must match, sent with every request
    /// (`--output-schema`; set by the conversation, forced for its correction request).
    pub output: Option<StructuredOutput>,
    /// The provider's prompt cache: how long an unused prefix lives there, and the key
    /// requests are routed by.
    pub prompt_cache: PromptCacheOptions,
    /// Prepare the automatic compaction's summary in the background from this percentage
    /// of the threshold (`[context] prepare_summary_percent`, 90 in the binary; 0, the
    /// library's default, waits for the threshold).
    pub prepare_summary_percent: u8,
}

/// What the loop knows of its provider's prompt cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptCacheOptions {
    /// How long the provider keeps an unused prefix (Anthropic and Bedrock 5 minutes,
    /// OpenAI about 10); `None`: no prompt cache (a local server), so a pause never makes
    /// it cold.
    pub ttl: Option<std::time::Duration>,
    /// The key requests are routed by (OpenAI's `prompt_cache_key`): the session id.
    pub key: Option<String>,
}

/// The doom-loop guard's counts (`[doom_loop]`): the same tool call with the same
/// arguments and the same result this many times in a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepeatedCallLimits {
    /// The result gets a note telling the model so (0: never).
    pub note_after: u32,
    /// The turn asks the front-end whether to go on, and stops unless it says yes (0:
    /// never).
    pub stop_after: u32,
}

impl Default for RepeatedCallLimits {
    fn default() -> Self {
        Self {
            note_after: 3,
            stop_after: 6,
        }
    }
}

/// The session ledger's budgets (the `[context]` keys of the same names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LedgerOptions {
    /// Most tokens of the ledger, percent of the input budget (0: no ledger).
    pub ledger_percent: u8,
    /// Most tokens of its user messages.
    pub user_messages_max_tokens: u64,
    /// Files re-attached after a compaction (0: none).
    pub restore_files: usize,
    /// Most tokens of the re-attached files together, percent of the input budget.
    pub restore_files_percent: u8,
    /// Most tokens of the user's pins, percent of the input budget (0: pins are off).
    pub pins_percent: u8,
}

impl LedgerOptions {
    /// The options a `[context]` section gives.
    pub fn from_context(context: &ContextConfig) -> Self {
        Self {
            ledger_percent: context.ledger_percent,
            user_messages_max_tokens: context.ledger_user_messages_max_tokens,
            restore_files: context.restore_files,
            restore_files_percent: context.restore_files_percent,
            pins_percent: context.pins_percent,
        }
    }

    /// No ledger and no re-attached files: compactions carry the summary and the latest
    /// user message only (as before the ledger existed).
    pub fn off() -> Self {
        Self {
            ledger_percent: 0,
            user_messages_max_tokens: 0,
            restore_files: 0,
            restore_files_percent: 0,
            pins_percent: 0,
        }
    }
}

impl Default for LedgerOptions {
    fn default() -> Self {
        Self::from_context(&ContextConfig::default())
    }
}

/// Output cap of models whose own cap nobody knows.
pub const DEFAULT_OUTPUT_CAP_TOKENS: u32 = 32_000;

impl Default for LoopOptions {
    fn default() -> Self {
        Self {
            auto_compaction: true,
            max_requests_per_turn: None,
            retry: RetryPolicy::default(),
            timeouts: Timeouts::default(),
            max_output_tokens: None,
            temperature: None,
            reasoning: None,
            compaction_tool_rounds: 2,
            micro_compaction: true,
            prune: PruneConfig::default(),
            output_cap: enforced_output_cap(DEFAULT_OUTPUT_CAP_TOKENS),
            repeated_line_limit: 50,
            ledger: LedgerOptions::default(),
            max_auto_compactions_per_turn:
                pith_core::context::governor::DEFAULT_MAX_AUTO_COMPACTIONS_PER_TURN,
            repeated_calls: RepeatedCallLimits::default(),
            usage_band: Default::default(),
            output: None,
            prompt_cache: PromptCacheOptions::default(),
            prepare_summary_percent: 0,
        }
    }
}

/// Why a turn or a manual compaction stopped without completing.
#[derive(Debug, Clone, Error)]
pub enum LoopError {
    /// The provider failed for good (after retries).
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// The turn's token was cancelled (Ctrl+C, SIGINT, …).
    #[error("cancelled")]
    Cancelled,
    /// The turn reached `max_requests_per_turn`.
    #[error("stopped after {0} model requests (--max-turns)")]
    MaxRequests(u32),
    /// A manual compaction could not produce a usable summary.
    #[error("compaction failed: {0}")]
    Compaction(String),
    /// A manual compaction's replacement could not be persisted; the history is
    /// unchanged.
    #[error(transparent)]
    Persist(#[from] PersistError),
    /// Nothing could make the request fit the window: what is never cut (the system
    /// prompt, the tool definitions, the latest message) is larger than the input budget.
    /// No request was sent.
    #[error("the request cannot fit the context window: {0}")]
    ContextTooLarge(String),
    /// The doom-loop guard stopped the turn: the model made the same call with the same
    /// result `times` times in a row, and nobody said to go on.
    #[error("stopped: the model called {tool} {times} times in a row with the same arguments and got the same result (the doom-loop guard, [doom_loop] stop_after)")]
    RepeatedCall {
        /// The tool.
        tool: String,
        /// Calls in a row.
        times: u32,
    },
}

/// The result of a completed turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnSummary {
    /// Usage over every request of the turn, compaction requests included.
    pub usage: Usage,
    /// Model requests sent for the turn itself (compaction requests excluded).
    pub requests: u32,
    /// Tool calls executed.
    pub tool_calls: u32,
}

/// A turn that stopped early, with what it used.
#[derive(Debug, Clone)]
pub struct TurnFailure {
    /// Why it stopped.
    pub error: LoopError,
    /// Usage and counts up to the failure.
    pub summary: TurnSummary,
}

/// The result of a manual compaction.
#[derive(Debug, Clone, PartialEq)]
pub struct ManualCompaction {
    /// The summary (trimmed): the model's, or pith's own when the model kept calling
    /// tools.
    pub summary: String,
    /// The new history: one user message holding the summary, the ledger and the
    /// re-attached files.
    pub replacement: Vec<Message>,
    /// Usage of the compaction requests.
    pub usage: Usage,
    /// The compaction model (`provider/model`) they went to; `None`: the conversation's
    /// model.
    pub model: Option<String>,
    /// Tokens of the session ledger in the replacement (0 without one).
    pub ledger_tokens: u64,
    /// Files re-attached to the replacement.
    pub restored_files: Vec<String>,
    /// Estimated request size before.
    pub tokens_before: u64,
    /// Estimated request size after.
    pub tokens_after: u64,
}
