//! Replaying one corpus session under one policy: the messages arrive in their recorded
//! order, every assistant message stands for one model request, and before each request
//! the policy may rewrite the history exactly as the agent would have.
//!
//! The `tiered` step mirrors `AgentLoop::before_request` (crates/providers) call for call:
//! the estimate comes from core's [`RequestEstimator`], the thresholds from
//! [`ContextBudget`], the decision from [`decide`], micro-compaction is
//! [`collapse`] + [`prune_old_tool_outputs`], the replacement after an LLM compaction is
//! [`build_auto_replacement`], and tool outputs go through [`squash::apply`] at capture.
//! The LLM summary is a deterministic stand-in of a fixed token size.
//!
//! Modelling choices (documented in docs/benchmarks.md): every corpus call is `bash`; a
//! call whose command is a file view, grep, find or ls is renamed to the pith tool that
//! would have made it (`read`, `grep`, `glob`, `ls`: pith's read-only tools), so dedup
//! sees what it would see in pith, while squash still judges the bash command. The
//! assistant's replies are replayed unchanged whatever happened to the history.

use std::collections::HashMap;
use std::sync::Arc;

use pith_core::context::ledger::{render, restore_files, Ledger as SessionLedger, RestoreBudget};
use pith_core::context::squash::{self, command_family, CommandFamily, SquashConfig};
use pith_core::context::{collapse, decide, prune_old_tool_outputs, Action, Facts, Governor};
use pith_core::message::{Message, Part, Role};
use pith_core::prompts::LEDGER_SUMMARY_WORDS;
use pith_core::summary::{
    auto_prompt, auto_prompt_with, build_auto_replacement, replacement_text, strip_system,
    ReplacementParts,
};
use pith_core::tokens::{count_message, estimate_request};
use pith_core::{ContextBudget, RequestEstimator, TokenCounter};
use serde::Serialize;

use super::disk::SessionDisk;
use super::ledger::{Block, Ledger, LedgerTotals, Prices};
use super::policy::{Carry, Policy};
use crate::corpus::CorpusSession;
use crate::eval_core::EXAMPLE_SPILL_PATH;

/// Block identity of the system prompt.
const SYSTEM_ID: u64 = 0;
/// Block identity of the compaction prompt appended to a summary request.
const PROMPT_ID: u64 = 1;
/// zesdex shaping thresholds and retention, percent of the input budget (seed 000).
const ZESDEX_FIRST_SHAPE_PERCENT: u64 = 85;
const ZESDEX_RESHAPE_PERCENT: u64 = 95;
const ZESDEX_RETAIN_PERCENT: u64 = 70;
/// Tokens of user messages the `codex` replacement keeps (Codex CLI's figure).
const CODEX_USER_MESSAGES_TOKENS: usize = 20_000;

/// What stays fixed across policies and sessions.
pub struct SimParams {
    /// The model's context window.
    pub window: u64,
    /// The stand-in summary every LLM compaction returns (the full schema: `keen`,
    /// `codex`, zesdex, keen).
    pub summary: String,
    /// Its token count.
    pub summary_tokens: u64,
    /// The stand-in summary of a compaction whose replacement carries the session ledger
    /// (`carry=pith`): its prompt asks for the shorter schema within
    /// [`LEDGER_SUMMARY_WORDS`] words, so it is no longer than that (at 4 tokens per 3
    /// words) nor than the full one.
    pub ledger_summary: String,
    /// Its token count.
    pub ledger_summary_tokens: u64,
    /// The cost model.
    pub prices: Prices,
    /// The counter (o200k).
    pub counter: Arc<dyn TokenCounter>,
}

impl SimParams {
    /// Parameters for `window`, with a stand-in summary of about `summary_tokens`.
    pub fn new(
        window: u64,
        summary_tokens: usize,
        prices: Prices,
        counter: Arc<dyn TokenCounter>,
    ) -> Self {
        let summary = standin_summary(counter.as_ref(), summary_tokens);
        let ledger_summary = standin_summary(
            counter.as_ref(),
            summary_tokens.min(default_ledger_summary_tokens()),
        );
        Self {
            window,
            summary_tokens: counter.count(&summary) as u64,
            summary,
            ledger_summary_tokens: counter.count(&ledger_summary) as u64,
            ledger_summary,
            prices,
            counter,
        }
    }

    /// These parameters with a ledger stand-in summary of about `tokens` instead.
    pub fn with_ledger_summary_tokens(mut self, tokens: usize) -> Self {
        self.ledger_summary = standin_summary(self.counter.as_ref(), tokens);
        self.ledger_summary_tokens = self.counter.count(&self.ledger_summary) as u64;
        self
    }
}

/// The ledger stand-in summary's default size: [`LEDGER_SUMMARY_WORDS`] at 4 tokens per
/// 3 words (English prose under o200k).
pub fn default_ledger_summary_tokens() -> usize {
    LEDGER_SUMMARY_WORDS * 4 / 3
}

/// A deterministic summary in the schema's shape with about `tokens` tokens.
pub fn standin_summary(counter: &dyn TokenCounter, tokens: usize) -> String {
    let mut text = String::from(
        "## Goal\nFix the reported bug.\n## Key Instructions\nKeep the public API.\n\
         ## Discoveries\n",
    );
    let tail = "\n## Accomplished\nReproduced the failure.\n## Relevant Files\nsrc/module.py\n";
    let mut i = 0;
    while counter.count(&text) + counter.count(tail) < tokens {
        text.push_str(&format!("- fact {i} about the code base.\n"));
        i += 1;
    }
    text.push_str(tail);
    text
}

/// The figures of one session under one policy.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionOutcome {
    /// Requests, tokens, cache and cost.
    pub ledger: LedgerTotals,
    /// Largest agent request (estimate after the policy acted), tokens.
    pub peak_context: u64,
    /// Micro-compactions (tiered: dedup + prune; zesdex: dedup rewrites).
    pub micro_compactions: u64,
    /// LLM compactions (tiered and keen: automatic summaries; zesdex: shapings).
    pub llm_compactions: u64,
    /// Agent requests still over the input budget after the policy acted.
    pub overflowing_requests: u64,
    /// The model's view right after each LLM compaction (only when asked for).
    pub views: Vec<CompactionView>,
}

/// The model's view right after one LLM compaction.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompactionView {
    /// Index in the session of the last message before the compaction.
    pub after_message: usize,
    /// The history the next request carries (system prompt excluded).
    pub messages: Vec<Message>,
    /// Tokens of the session ledger in it (0 for designs without one).
    pub ledger_tokens: u64,
    /// The input budget it was made for.
    pub input_budget: u64,
}

/// The pith tool a corpus bash command corresponds to (see the module docs).
fn pith_tool_name(command: &str) -> &'static str {
    match command_family(command) {
        CommandFamily::FileView => "read",
        CommandFamily::Grep => "grep",
        CommandFamily::Find => "glob",
        CommandFamily::Ls => "ls",
        _ => "bash",
    }
}

/// pith's read-only tools among the names [`pith_tool_name`] produces.
fn is_read_only(name: &str) -> bool {
    matches!(name, "read" | "grep" | "glob" | "ls")
}

struct Replay<'a> {
    params: &'a SimParams,
    budget: ContextBudget,
    system: String,
    system_tokens: usize,
    prompt_tokens: usize,
    history: Vec<Message>,
    ids: Vec<u64>,
    tokens: HashMap<u64, usize>,
    next_id: u64,
    estimator: RequestEstimator,
    ledger: Ledger,
    outcome: SessionOutcome,
    last_user_text: String,
    carry: Carry,
    restore_files: usize,
    session_ledger: SessionLedger,
    disk: SessionDisk,
    user_texts: Vec<String>,
    record_views: bool,
    message_index: usize,
}

impl<'a> Replay<'a> {
    fn new(params: &'a SimParams, system: &str, budget: ContextBudget, carry: Carry) -> Self {
        let counter = params.counter.as_ref();
        Self {
            params,
            budget,
            system: system.to_owned(),
            system_tokens: estimate_request(counter, system, &[], &[]).system,
            prompt_tokens: count_message(counter, &Message::user(auto_prompt())),
            history: Vec::new(),
            ids: Vec::new(),
            tokens: HashMap::new(),
            next_id: PROMPT_ID + 1,
            estimator: RequestEstimator::new(Arc::clone(&params.counter)),
            ledger: Ledger::default(),
            outcome: SessionOutcome::default(),
            last_user_text: String::new(),
            carry,
            restore_files: 0,
            session_ledger: SessionLedger::default(),
            disk: SessionDisk::default(),
            user_texts: Vec::new(),
            record_views: false,
            message_index: 0,
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn push(&mut self, message: Message) {
        let id = self.fresh_id();
        self.history.push(message);
        self.ids.push(id);
    }

    /// Installs a rewritten history; unchanged messages keep their identity.
    fn set_history(&mut self, new: Vec<Message>) {
        let mut ids = Vec::with_capacity(new.len());
        for (i, message) in new.iter().enumerate() {
            match self.history.get(i) {
                Some(old) if old == message => ids.push(self.ids[i]),
                _ => ids.push(self.fresh_id()),
            }
        }
        self.history = new;
        self.ids = ids;
    }

    fn tokens_at(&mut self, i: usize) -> usize {
        let counter = self.params.counter.as_ref();
        let message = &self.history[i];
        *self
            .tokens
            .entry(self.ids[i])
            .or_insert_with(|| count_message(counter, message))
    }

    /// Tokens of `messages`, reusing the counts of messages equal to the current history.
    fn tokens_of(&mut self, messages: &[Message]) -> usize {
        let mut total = 0;
        for (i, message) in messages.iter().enumerate() {
            total += if self.history.get(i) == Some(message) {
                self.tokens_at(i)
            } else {
                count_message(self.params.counter.as_ref(), message)
            };
        }
        total
    }

    fn blocks(&mut self, upto: usize) -> Vec<Block> {
        let mut blocks = Vec::with_capacity(upto + 2);
        blocks.push((SYSTEM_ID, self.system_tokens));
        for i in 0..upto {
            let tokens = self.tokens_at(i);
            blocks.push((self.ids[i], tokens));
        }
        blocks
    }

    fn estimate(&mut self) -> u64 {
        self.estimator
            .estimate(&self.system, &self.history, &[])
            .total as u64
    }

    /// The summary request (history prefix + compaction prompt) and its output.
    fn summary_request(&mut self, upto: usize) {
        self.summary_request_with(
            upto,
            (PROMPT_ID, self.prompt_tokens),
            self.params.summary_tokens,
        );
    }

    /// [`Self::summary_request`] with a prompt of `prompt_tokens` under block `prompt_id`,
    /// answered by a summary of `summary_tokens`.
    fn summary_request_with(
        &mut self,
        upto: usize,
        (prompt_id, prompt_tokens): Block,
        summary_tokens: u64,
    ) {
        let mut blocks = self.blocks(upto);
        blocks.push((prompt_id, prompt_tokens));
        self.ledger.send(blocks, &self.params.prices);
        self.ledger
            .summary_output(summary_tokens, &self.params.prices);
        self.outcome.llm_compactions += 1;
    }

    /// Automatic LLM compaction (seed 002): summary request, then the replacement, which
    /// carries what the policy's [`Carry`] says.
    fn llm_compaction(&mut self) {
        let mut ledger_tokens = 0;
        let replacement = match self.carry {
            Carry::Keen => {
                self.summary_request(self.history.len());
                strip_system(&build_auto_replacement(
                    &[Message::system(self.system.clone())],
                    &self.params.summary,
                    &self.last_user_text,
                ))
            }
            Carry::Codex => {
                self.summary_request(self.history.len());
                self.codex_replacement()
            }
            Carry::Pith => {
                let counter = Arc::clone(&self.params.counter);
                let config = pith_core::context::ContextConfig::default();
                let rendered = render(
                    &self.session_ledger,
                    config.ledger_budget(self.budget.input_budget),
                    true,
                    counter.as_ref(),
                    Some(&self.disk),
                );
                // The summary request shows the ledger; its prompt is its own block.
                let prompt =
                    auto_prompt_with(rendered.as_ref().map(|r| r.summary_request_text.as_str()));
                let prompt_tokens = count_message(counter.as_ref(), &Message::user(prompt));
                let prompt_id = self.fresh_id();
                self.summary_request_with(
                    self.history.len(),
                    (prompt_id, prompt_tokens),
                    self.params.ledger_summary_tokens,
                );
                let restored = restore_files(
                    &self.session_ledger,
                    &self.disk,
                    counter.as_ref(),
                    RestoreBudget {
                        files: self.restore_files,
                        ..config.restore_budget(self.budget.input_budget)
                    },
                );
                ledger_tokens = rendered.as_ref().map_or(0, |r| r.tokens as u64);
                vec![Message::user(replacement_text(ReplacementParts {
                    summary: &self.params.ledger_summary,
                    ledger: rendered.as_ref().map(|r| r.text.as_str()),
                    restored_files: &restored,
                    last_user_message: Some(&self.last_user_text),
                }))]
            }
        };
        self.set_history(replacement);
        if self.record_views {
            self.outcome.views.push(CompactionView {
                after_message: self.message_index.saturating_sub(1),
                messages: self.history.clone(),
                ledger_tokens,
                input_budget: self.budget.input_budget,
            });
        }
    }

    /// Codex CLI's replacement: the user messages, newest first within
    /// [`CODEX_USER_MESSAGES_TOKENS`] (a message that does not fit whole is cut), in
    /// their order, then the summary.
    fn codex_replacement(&self) -> Vec<Message> {
        let counter = self.params.counter.as_ref();
        let mut left = CODEX_USER_MESSAGES_TOKENS;
        let mut kept = Vec::new();
        for text in self.user_texts.iter().rev() {
            if left == 0 {
                break;
            }
            let tokens = counter.count(text);
            if tokens <= left {
                kept.push(text.clone());
                left -= tokens;
            } else {
                let cut: String = text.chars().take(left * 4).collect();
                kept.push(format!("{cut}\n[truncated]"));
                left = 0;
            }
        }
        kept.reverse();
        let mut messages: Vec<Message> = kept.into_iter().map(Message::user).collect();
        messages.push(Message::user(self.params.summary.clone()));
        messages
    }

    /// What the session ledger observes of an assistant message (its calls as the
    /// session made them, before they are renamed for dedup).
    fn observe_assistant(&mut self, message: &Message) {
        if self.carry == Carry::Pith {
            self.session_ledger
                .observe_message(message, Some(&self.disk));
        }
    }

    /// What the session ledger observes of a tool message: the result as pith's model
    /// saw it (squashed), with the exit code line pith's bash tool writes.
    fn observe_tool(&mut self, session: &CorpusSession, squashed: &Message, raw: &Message) {
        if self.carry != Carry::Pith {
            return;
        }
        for part in &raw.parts {
            if let Part::ToolResult(result) = part {
                if let Some(command) = session.commands.get(&result.call_id) {
                    let code = session.exit_codes.get(&result.call_id).copied();
                    self.disk.observe(command, code, &result.content);
                }
            }
        }
        let mut seen = squashed.clone();
        for part in &mut seen.parts {
            if let Part::ToolResult(result) = part {
                if let Some(code) = session.exit_codes.get(&result.call_id) {
                    result.content.push_str(&format!("\n[exit code: {code}]"));
                }
            }
        }
        self.session_ledger.observe_message(&seen, Some(&self.disk));
    }

    /// Dedup + prune of the current history, not applied: (new history, tokens freed).
    fn micro_candidate(&mut self, policy: &Policy) -> (Vec<Message>, u64) {
        let Policy::Tiered { prune, .. } = policy else {
            return (self.history.clone(), 0);
        };
        let (deduplicated, _) = collapse(&self.history, is_read_only);
        let (pruned, _) =
            prune_old_tool_outputs(&deduplicated, self.params.counter.as_ref(), prune);
        let before = self.tokens_of(&self.history.clone());
        let after = self.tokens_of(&pruned);
        (pruned, before.saturating_sub(after) as u64)
    }

    /// The loop's per-request decision (`AgentLoop::prepare_turn_request`), step for step,
    /// on the simulated history: decide, act, decide again until there is nothing to do.
    fn tiered_step(&mut self, policy: &Policy, memory: &mut Governor) {
        let Policy::Tiered { prune, .. } = policy else {
            return;
        };
        let (mut micro_allowed, mut llm_allowed) = (true, true);
        loop {
            let estimate = self.estimate();
            let micro = (micro_allowed
                && memory.new_history_since_attempt
                && self.budget.reaches_micro(estimate))
            .then(|| self.micro_candidate(policy));
            let facts = Facts {
                estimate,
                content: estimate,
                micro_reclaimable: micro.as_ref().map_or(0, |(_, reclaimed)| *reclaimed),
                micro_minimum: prune.minimum,
                llm_allowed,
            };
            match (decide(&facts, &self.budget, memory), micro) {
                (Action::Micro, Some((replacement, _))) => {
                    micro_allowed = false;
                    self.set_history(replacement);
                    self.outcome.micro_compactions += 1;
                }
                (Action::Llm, _) => {
                    llm_allowed = false;
                    memory.record_attempt_started(estimate, &self.budget);
                    self.llm_compaction();
                    let after = self.estimate();
                    memory.record_applied(estimate.saturating_sub(after), after, &self.budget);
                }
                _ => return,
            }
        }
    }

    /// Keen: LLM compaction at the automatic threshold after new history, nothing else.
    fn keen_step(&mut self, new_history: &mut bool) {
        let estimate = self.estimate();
        if *new_history && self.budget.reaches_auto(estimate) {
            self.llm_compaction();
            *new_history = false;
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
        let retain = (self.budget.input_budget * ZESDEX_RETAIN_PERCENT / 100) as usize;
        let mut cut = self.history.len();
        let mut kept = 0;
        while cut > 0 {
            let tokens = self.tokens_at(cut - 1);
            if kept + tokens > retain {
                break;
            }
            kept += tokens;
            cut -= 1;
        }
        while cut < self.history.len() && self.history[cut].role == Role::Tool {
            cut += 1;
        }
        if cut == 0 {
            return;
        }
        self.summary_request(cut);
        let mut shaped_history = vec![Message::user(self.params.summary.clone())];
        shaped_history.extend_from_slice(&self.history[cut..]);
        self.set_history(shaped_history);
        *shaped = true;
    }
}

/// Replays `session` under `policy` with window `params.window`.
pub fn replay(session: &CorpusSession, policy: &Policy, params: &SimParams) -> SessionOutcome {
    replay_with(session, policy, params, false)
}

/// [`replay`], also recording the model's view after each LLM compaction when
/// `record_views` (for `cargo xtask fidelity`).
pub fn replay_with(
    session: &CorpusSession,
    policy: &Policy,
    params: &SimParams,
    record_views: bool,
) -> SessionOutcome {
    let budget = match policy {
        Policy::Tiered { micro_percent, .. } => {
            ContextBudget::with_micro_percent(params.window, *micro_percent)
        }
        _ => ContextBudget::for_window(params.window),
    };
    let squash_config = SquashConfig::default();
    let mut replay = Replay::new(params, &session.system, budget, policy.carry());
    replay.record_views = record_views;
    replay.restore_files = policy.restore_files();
    // The loop's governor with its defaults (the ceiling included).
    let mut memory = Governor::default();
    let mut keen_new_history = true;
    let mut shaped = false;
    for (index, message) in session.messages.iter().enumerate() {
        replay.message_index = index;
        match message.role {
            Role::User | Role::System => {
                replay.last_user_text = message.text_content();
                replay.user_texts.push(replay.last_user_text.clone());
                if replay.carry == Carry::Pith {
                    replay.session_ledger.observe_user(&replay.last_user_text);
                }
                replay.push(message.clone());
                memory.start_turn();
                keen_new_history = true;
            }
            Role::Tool => {
                let mut message = message.clone();
                if policy.squashes() {
                    for part in &mut message.parts {
                        if let Part::ToolResult(result) = part {
                            let command = session.commands.get(&result.call_id);
                            let squashed = squash::apply(
                                "bash",
                                command.map(String::as_str),
                                session.exit_codes.get(&result.call_id).copied(),
                                &result.content,
                                &squash_config,
                            );
                            if squashed.dropped_anything {
                                result.content =
                                    squash::with_spill_marker(&squashed.text, EXAMPLE_SPILL_PATH);
                            }
                        }
                    }
                }
                replay.observe_tool(session, &message, &session.messages[index]);
                replay.push(message);
                memory.record_new_history();
                keen_new_history = true;
            }
            Role::Assistant => {
                match policy {
                    Policy::Keen => replay.keen_step(&mut keen_new_history),
                    Policy::Zesdex => replay.zesdex_step(&mut shaped),
                    Policy::Tiered { .. } => replay.tiered_step(policy, &mut memory),
                }
                let estimate = replay.estimate();
                replay.outcome.peak_context = replay.outcome.peak_context.max(estimate);
                if budget.overflows(estimate) {
                    replay.outcome.overflowing_requests += 1;
                }
                let blocks = replay.blocks(replay.history.len());
                replay.ledger.send(blocks, &params.prices);
                replay.observe_assistant(message);
                let mut message = message.clone();
                for part in &mut message.parts {
                    if let Part::ToolCall(call) = part {
                        let command = call
                            .arguments
                            .get("command")
                            .and_then(|c| c.as_str())
                            .unwrap_or_default();
                        if call.name == "bash" {
                            call.name = pith_tool_name(command).to_owned();
                        }
                    }
                }
                replay.push(message);
            }
        }
    }
    replay.outcome.ledger = replay.ledger.totals();
    replay.outcome
}
