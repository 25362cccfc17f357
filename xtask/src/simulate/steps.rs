//! The peers' steps before a request (see [`super::policy`] for where each rule comes
//! from): what `keen`, `zesdex`, `claude-code`, `codex`, `opencode`, `gemini-cli` and
//! `masking` do to the history before the agent's next request. pith's step is in
//! [`super::pith_step`], next to the engine functions it calls.

use pith_core::context::{collapse, PRUNE_PLACEHOLDER};
use pith_core::message::{Message, Part, Role};

use super::engine::{is_read_only, Replay, ViewKind};
use super::policy::Policy;

/// zesdex shaping thresholds and retention, percent of the input budget.
const ZESDEX_FIRST_SHAPE_PERCENT: u64 = 85;
const ZESDEX_RESHAPE_PERCENT: u64 = 95;
const ZESDEX_RETAIN_PERCENT: u64 = 70;
/// Claude Code: the summary's reserve, the buffer below it, the idle gap after which old
/// tool results are cleared, and how many are kept.
const CLAUDE_SUMMARY_RESERVE: u64 = 20_000;
const CLAUDE_BUFFER: u64 = 13_000;
const CLAUDE_IDLE_GAP_S: f64 = 3_600.0;
const CLAUDE_KEEP_RECENT: usize = 5;
/// Codex CLI compacts at this percentage of the window.
const CODEX_PERCENT: u64 = 90;
/// opencode: the newest output protected, the least a prune must free, the reserve.
const OPENCODE_PROTECT: usize = 40_000;
const OPENCODE_MINIMUM: usize = 20_000;
const OPENCODE_RESERVE: u64 = 20_000;
/// gemini-cli: output protected, the least worth masking, the compression threshold and
/// the share of history kept by a compression.
const GEMINI_PROTECT: usize = 50_000;
const GEMINI_MIN_PRUNABLE: usize = 30_000;
const GEMINI_COMPRESS_PERCENT: u64 = 50;
const GEMINI_PRESERVE_PERCENT: u64 = 30;
/// gemini-cli's stub for a masked output.
const GEMINI_MASKED: &str = "<tool_output_masked>output saved to a file</tool_output_masked>";
/// JetBrains' placeholder for an old observation.
const MASKING_PLACEHOLDER: &str = "Old environment output omitted.";

/// What a peer remembers between requests.
#[derive(Debug, Default)]
pub(super) struct StepState {
    /// New history since the last compaction (keen and the thresholded peers compact
    /// only then).
    pub new_history: bool,
    /// zesdex has shaped once.
    pub shaped: bool,
}

/// True when a tool result's text is already one of the peers' stubs.
fn is_stub(content: &str) -> bool {
    content == PRUNE_PLACEHOLDER || content == GEMINI_MASKED || content == MASKING_PLACEHOLDER
}

impl Replay<'_> {
    /// What a peer does when a new user message arrives: opencode prunes once per turn.
    pub(super) fn user_turn_starts(&mut self, policy: &Policy, _state: &mut StepState) {
        if *policy == Policy::OpenCode {
            self.opencode_prune();
        }
    }

    /// The peer's step before the agent's next request.
    pub(super) fn peer_step(&mut self, policy: &Policy, state: &mut StepState) {
        let window = self.params.window;
        match policy {
            Policy::Keen => {
                let threshold = self.budget.auto_threshold;
                self.compact_at(threshold, state);
            }
            Policy::Zesdex => self.zesdex_step(&mut state.shaped),
            Policy::ClaudeCode(_) => {
                if self
                    .last_request_at
                    .is_some_and(|last| self.now - last >= CLAUDE_IDLE_GAP_S)
                {
                    self.clear_tool_results(CLAUDE_KEEP_RECENT, 0, PRUNE_PLACEHOLDER);
                }
                let reserve = self.params.reserved_output().min(CLAUDE_SUMMARY_RESERVE);
                let threshold = window
                    .saturating_sub(reserve + CLAUDE_BUFFER)
                    .max(window / 2);
                self.compact_at(threshold, state);
            }
            Policy::Codex => self.compact_at(window * CODEX_PERCENT / 100, state),
            Policy::OpenCode => {
                let reserve = self.params.reserved_output().min(OPENCODE_RESERVE);
                self.compact_at(window - reserve, state);
            }
            Policy::GeminiCli => self.gemini_step(),
            Policy::Masking { keep } => {
                self.clear_tool_results(*keep, 0, MASKING_PLACEHOLDER);
                let threshold = self.budget.auto_threshold;
                self.compact_at(threshold, state);
            }
            Policy::Pith(_) => {}
        }
    }

    /// An LLM compaction when the estimate reaches `threshold` after new history.
    fn compact_at(&mut self, threshold: u64, state: &mut StepState) {
        if state.new_history && self.estimate() >= threshold {
            self.llm_compaction();
            state.new_history = false;
        }
    }

    /// Replaces every tool result but the newest `keep` (and, with `min_freed` > 0, only
    /// when that frees at least `min_freed` tokens) by `stub`.
    fn clear_tool_results(&mut self, keep: usize, min_freed: usize, stub: &str) {
        let mut seen = 0;
        let mut new = self.history.clone();
        let mut freed = 0;
        for i in (0..new.len()).rev() {
            if new[i].role != Role::Tool {
                continue;
            }
            let mut changed = false;
            for part in &mut new[i].parts {
                if let Part::ToolResult(result) = part {
                    seen += 1;
                    if seen > keep && !is_stub(&result.content) {
                        result.content = stub.to_owned();
                        changed = true;
                    }
                }
            }
            if changed {
                let before = self.tokens_at(i);
                let after = pith_core::tokens::count_message(self.params.counter.as_ref(), &new[i]);
                freed += before.saturating_sub(after);
            }
        }
        if freed > 0 && freed >= min_freed {
            self.micro_compaction(new);
        }
    }

    /// Installs `masked`, a history with tool results masked, as one micro-compaction.
    pub(super) fn micro_compaction(&mut self, masked: Vec<Message>) {
        self.set_history(masked);
        self.outcome.micro_compactions += 1;
        self.record_view(ViewKind::Masking, 0);
    }

    /// Masks every tool result of the messages at `indices` by `stub`, as one
    /// micro-compaction.
    fn stub_messages(&mut self, indices: Vec<usize>, stub: &str) {
        let mut new = self.history.clone();
        for i in indices {
            stub_message(&mut new[i], stub);
        }
        self.micro_compaction(new);
    }

    /// opencode's prune: newest first, past the last 2 user turns, outputs beyond the
    /// newest 40,000 tokens are cleared when they add up to more than 20,000.
    fn opencode_prune(&mut self) {
        let mut turns = 0;
        let mut protected = 0;
        let mut candidates = Vec::new();
        let mut total = 0;
        for i in (0..self.history.len()).rev() {
            match self.history[i].role {
                Role::User => turns += 1,
                Role::Tool if turns >= 2 => {
                    let is_stub = self.history[i].parts.iter().all(|p| match p {
                        Part::ToolResult(r) => is_stub(&r.content),
                        _ => true,
                    });
                    if is_stub {
                        break;
                    }
                    let tokens = self.tokens_at(i);
                    if protected + tokens <= OPENCODE_PROTECT {
                        protected += tokens;
                    } else {
                        candidates.push(i);
                        total += tokens;
                    }
                }
                _ => {}
            }
        }
        if total <= OPENCODE_MINIMUM {
            return;
        }
        self.stub_messages(candidates, PRUNE_PLACEHOLDER);
    }

    /// gemini-cli: mask outputs beyond the newest 50,000 tokens (the latest output
    /// protected) when 30,000 are prunable, then compress at 50% of the window.
    fn gemini_step(&mut self) {
        let mut protected = 0;
        let mut prunable = Vec::new();
        let mut prunable_tokens = 0;
        let mut latest = true;
        for i in (0..self.history.len()).rev() {
            if self.history[i].role != Role::Tool {
                continue;
            }
            let tokens = self.tokens_at(i);
            let stubbed = self.history[i].parts.iter().all(|p| match p {
                Part::ToolResult(r) => is_stub(&r.content),
                _ => true,
            });
            if latest {
                latest = false;
                protected += tokens;
            } else if stubbed {
                continue;
            } else if protected + tokens <= GEMINI_PROTECT {
                protected += tokens;
            } else {
                prunable.push(i);
                prunable_tokens += tokens;
            }
        }
        if prunable_tokens >= GEMINI_MIN_PRUNABLE {
            self.stub_messages(prunable, GEMINI_MASKED);
        }
        if self.estimate() >= self.params.window * GEMINI_COMPRESS_PERCENT / 100 {
            let total = self.estimate();
            self.shape(total * GEMINI_PRESERVE_PERCENT / 100);
        }
    }

    /// zesdex: dedup before every request, shaping with hysteresis.
    fn zesdex_step(&mut self, shaped: &mut bool) {
        let (deduplicated, stats) = collapse(&self.history, is_read_only);
        if stats.results_collapsed > 0 {
            self.set_history(deduplicated);
            self.outcome.micro_compactions += 1;
        }
        let percent = if *shaped {
            ZESDEX_RESHAPE_PERCENT
        } else {
            ZESDEX_FIRST_SHAPE_PERCENT
        };
        if self.estimate() < self.budget.input_budget * percent / 100 {
            return;
        }
        if self.shape(self.budget.input_budget * ZESDEX_RETAIN_PERCENT / 100) {
            *shaped = true;
        }
    }

    /// Where the history's newest messages within `tokens` start, moved on past tool
    /// results whose call would be cut off (so every kept result keeps its call).
    pub(super) fn tail_start(&mut self, tokens: usize) -> usize {
        let mut start = self.history.len();
        let mut kept = 0;
        while start > 0 {
            let message_tokens = self.tokens_at(start - 1);
            if kept + message_tokens > tokens {
                break;
            }
            kept += message_tokens;
            start -= 1;
        }
        while start < self.history.len() && self.history[start].role == Role::Tool {
            start += 1;
        }
        start
    }

    /// Summarises the history but its newest `retain` tokens (cut before a non-tool
    /// message); returns whether it did.
    fn shape(&mut self, retain: u64) -> bool {
        let cut = self.tail_start(retain as usize);
        if cut == 0 {
            return false;
        }
        self.summary_request(cut);
        let mut shaped = vec![Message::user(self.params.summary.clone())];
        shaped.extend_from_slice(&self.history[cut..]);
        self.set_history(shaped);
        self.record_view(ViewKind::Llm, 0);
        true
    }
}

/// Replaces every tool result of `message` by `stub`.
fn stub_message(message: &mut Message, stub: &str) {
    for part in &mut message.parts {
        if let Part::ToolResult(result) = part {
            result.content = stub.to_owned();
        }
    }
}
