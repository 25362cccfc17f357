//! The state of one session being replayed ([`Replay`]): the history a policy keeps with
//! each message's cache identity, the clock, the bill, and the requests a policy sends
//! (the agent's, summaries, re-reads). The policies' steps ([`super::steps`],
//! [`super::pith_step`]) act on it; [`super::replay`] drives it through a session.

use std::collections::HashMap;
use std::sync::Arc;

use pith_core::context::ledger::{
    render, restore_files, Ledger as SessionLedger, RenderedLedger, RestoreBudget,
};
use pith_core::context::ContextConfig;
use pith_core::message::{Message, Part};
use pith_core::prompts::LEDGER_SUMMARY_WORDS;
use pith_core::summary::{
    auto_prompt, auto_prompt_with, build_auto_replacement, replacement_text, strip_system,
    ReplacementParts, RestoredFile,
};
use pith_core::tokens::{count_message, estimate_request};
use pith_core::{ContextBudget, RequestEstimator, TokenCounter};
use serde::Serialize;

use super::disk::SessionDisk;
use super::ledger::{Block, Ledger, LedgerTotals};
use super::policy::{Carry, ClaudeRestore, Policy};
use super::prices::PriceModel;
use crate::corpus::CorpusSession;

/// Block identity of the system prompt.
const SYSTEM_ID: u64 = 0;
/// Block identity of the compaction prompt appended to a summary request.
const PROMPT_ID: u64 = 1;

/// What stays fixed across policies and sessions.
pub struct SimParams {
    /// The model's context window.
    pub window: u64,
    /// The stand-in summary every LLM compaction returns (the full schema).
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
    /// Prices, cache rules and speed.
    pub prices: PriceModel,
    /// The counter (o200k).
    pub counter: Arc<dyn TokenCounter>,
}

impl SimParams {
    /// Parameters for `window`, with a stand-in summary of about `summary_tokens`.
    pub fn new(
        window: u64,
        summary_tokens: usize,
        prices: PriceModel,
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

    /// The largest answer the peers' thresholds reserve room for: the model's, but at
    /// most a quarter of a small window.
    pub fn reserved_output(&self) -> u64 {
        self.prices.max_output.min(self.window / 4)
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
    /// Sum of the agent requests' estimates (for the mean).
    pub context_sum: u64,
    /// Agent requests.
    pub agent_requests: u64,
    /// Rewrites without an LLM call (masking, clearing, prune, dedup).
    pub micro_compactions: u64,
    /// LLM compactions (summaries, shapings, compressions).
    pub llm_compactions: u64,
    /// Agent requests still over the input budget after the policy acted.
    pub overflowing_requests: u64,
    /// Tokens the model read again because the policy had hidden them.
    pub reread_tokens: u64,
    /// Re-reads.
    pub rereads: u64,
    /// Files LLM compactions re-attached (`claude-code`; pith with `restore` > 0).
    pub restored_files: u64,
    /// Tokens of those files.
    pub restored_tokens: u64,
    /// Of them, files a later command relied on before the next compaction: the re-reads
    /// re-attaching saved.
    pub restored_used: u64,
    /// The model's view right after each rewrite (only when asked for).
    pub views: Vec<CompactionView>,
    /// Summaries prepared in the background (pith, `prepare` > 0).
    pub prepared: u64,
    /// Of them, never applied (the session ended first, or what followed the mark left
    /// no room and the compaction ran in place).
    pub unused: u64,
    /// What the unused ones cost (part of the ledger's `cost_dollars`).
    pub unused_dollars: f64,
    /// What every summary request cost, its input and its summary (part of the ledger's
    /// `cost_dollars`; the unused prepared ones included).
    pub summary_dollars: f64,
    /// Seconds the agent waited for its LLM compactions (the whole summary in place,
    /// what was left of it when prepared ahead).
    pub compaction_wait_s: f64,
    /// The user's pauses: one before every task but the first.
    pub pauses: u64,
}

/// A summary the simulated pith prepared in the background.
#[derive(Debug, Clone, Copy)]
pub(super) struct SimPrepared {
    /// History length when it was sent: it covers the messages before.
    pub mark: usize,
    /// When its answer is complete, seconds since the session started.
    pub ready_at: f64,
    /// What its request cost.
    pub dollars: f64,
}

/// What made a view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum ViewKind {
    /// An LLM compaction.
    #[default]
    Llm,
    /// A rewrite without an LLM call (masking, clearing, prune).
    Masking,
}

/// The model's view right after one rewrite.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CompactionView {
    /// Index in the session of the last message before the rewrite.
    pub after_message: usize,
    /// The history the next request carries (system prompt excluded).
    pub messages: Vec<Message>,
    /// Tokens of the session ledger in it (0 for designs without one).
    pub ledger_tokens: u64,
    /// The input budget it was made for.
    pub input_budget: u64,
    /// What made it.
    pub kind: ViewKind,
}

/// pith's read-only tools among the names the replay gives corpus calls.
pub(super) fn is_read_only(name: &str) -> bool {
    matches!(name, "read" | "grep" | "glob" | "ls")
}

/// One session being replayed: the history the policy keeps, the clock and the bill.
pub(super) struct Replay<'a> {
    pub(super) params: &'a SimParams,
    pub(super) budget: ContextBudget,
    pub(super) system: String,
    pub(super) system_tokens: usize,
    pub(super) prompt_tokens: usize,
    pub(super) history: Vec<Message>,
    pub(super) ids: Vec<u64>,
    pub(super) tokens: HashMap<u64, usize>,
    pub(super) next_id: u64,
    pub(super) estimator: RequestEstimator,
    pub(super) ledger: Ledger,
    pub(super) outcome: SessionOutcome,
    pub(super) last_user_text: String,
    pub(super) carry: Carry,
    pub(super) restore_files: usize,
    /// The session ledger's share of the input budget.
    pub(super) ledger_percent: u8,
    pub(super) session_ledger: SessionLedger,
    pub(super) disk: SessionDisk,
    pub(super) user_texts: Vec<String>,
    pub(super) record_views: bool,
    pub(super) message_index: usize,
    /// Seconds since the session started.
    pub(super) now: f64,
    /// When the last request was sent.
    pub(super) last_request_at: Option<f64>,
    /// Messages at the start of the history that no rewrite will change (pith's
    /// breakpoint anchor).
    pub(super) stable_prefix: usize,
    /// Put the anchor breakpoint (pith) and how many trailing messages get one.
    pub(super) anchor_breakpoint: bool,
    /// The system prompt's and the stable prefix's breakpoints ask for Anthropic's 1-hour
    /// cache (`pith:hour=1`); the last message's keeps the 5 minutes.
    pub(super) hour_prefix: bool,
    pub(super) tail_breakpoints: usize,
    /// Files a compaction re-attached whole, until the next compaction.
    pub(super) restored_paths: Vec<String>,
    /// Of them, those a later command relied on.
    pub(super) restored_used: Vec<String>,
    /// The summary being prepared in the background (pith, `prepare` > 0).
    pub(super) prepared: Option<SimPrepared>,
    /// Summaries go to a model at this fraction of the prices, without the cache
    /// (`pith:summary=R`).
    pub(super) summary_price: Option<f64>,
    /// Summary requests on a cold cache carry no message breakpoint (pith's loop, whatever
    /// its replacement carries; the peers keep theirs).
    pub(super) cold_summary_unmarked: bool,
    /// The files `claude-code` re-attaches.
    pub(super) claude_restore: ClaudeRestore,
    /// `pith:tail=P`: compactions without an LLM call.
    pub(super) ledger_only_tail: Option<u8>,
}

impl<'a> Replay<'a> {
    pub(super) fn new(
        params: &'a SimParams,
        system: &str,
        budget: ContextBudget,
        policy: &Policy,
    ) -> Self {
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
            ledger: Ledger::new(params.prices),
            outcome: SessionOutcome::default(),
            last_user_text: String::new(),
            carry: policy.carry(),
            restore_files: policy.restore_files(),
            ledger_percent: policy.ledger_percent(),
            session_ledger: SessionLedger::default(),
            disk: SessionDisk::default(),
            user_texts: Vec::new(),
            record_views: false,
            message_index: 0,
            now: 0.0,
            last_request_at: None,
            stable_prefix: 0,
            anchor_breakpoint: matches!(policy, Policy::Pith(_)),
            hour_prefix: matches!(policy, Policy::Pith(p) if p.hour_prefix),
            tail_breakpoints: if matches!(policy, Policy::OpenCode) {
                2
            } else {
                1
            },
            restored_paths: Vec::new(),
            restored_used: Vec::new(),
            prepared: None,
            summary_price: policy.summary_price(),
            cold_summary_unmarked: matches!(policy, Policy::Pith(_)),
            claude_restore: policy.claude_restore(),
            ledger_only_tail: policy.ledger_only_tail(),
        }
    }

    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(super) fn push(&mut self, message: Message) {
        let id = self.fresh_id();
        self.history.push(message);
        self.ids.push(id);
    }

    /// Installs a rewritten history; unchanged messages keep their identity. The stable
    /// prefix moves as the loop's does (`stable_prefix_after`).
    pub(super) fn set_history(&mut self, new: Vec<Message>) {
        let same_length = new.len() == self.history.len();
        let mut ids = Vec::with_capacity(new.len());
        let mut last_changed = 0;
        for (i, message) in new.iter().enumerate() {
            match self.history.get(i) {
                Some(old) if old == message => ids.push(self.ids[i]),
                _ => {
                    ids.push(self.fresh_id());
                    last_changed = i + 1;
                }
            }
        }
        self.stable_prefix = if same_length {
            last_changed.max(self.stable_prefix).min(new.len())
        } else {
            new.len()
        };
        self.history = new;
        self.ids = ids;
    }

    pub(super) fn tokens_at(&mut self, i: usize) -> usize {
        let counter = self.params.counter.as_ref();
        let message = &self.history[i];
        *self
            .tokens
            .entry(self.ids[i])
            .or_insert_with(|| count_message(counter, message))
    }

    /// Tokens of `messages`, reusing the counts of messages equal to the current history.
    pub(super) fn tokens_of(&mut self, messages: &[Message]) -> usize {
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

    /// The blocks of a request carrying the first `upto` messages, with the policy's
    /// breakpoints: the system prompt, pith's stable prefix, the last message(s).
    fn blocks(&mut self, upto: usize) -> Vec<Block> {
        let mut blocks = Vec::with_capacity(upto + 2);
        blocks.push(Block {
            id: SYSTEM_ID,
            tokens: self.system_tokens,
            breakpoint: true,
            hour: self.hour_prefix,
        });
        let tail_from = upto.saturating_sub(self.tail_breakpoints);
        for i in 0..upto {
            let tokens = self.tokens_at(i);
            let anchor = self.anchor_breakpoint && i + 1 == self.stable_prefix;
            blocks.push(Block {
                id: self.ids[i],
                tokens,
                breakpoint: anchor || i >= tail_from,
                hour: anchor && self.hour_prefix,
            });
        }
        blocks
    }

    pub(super) fn estimate(&mut self) -> u64 {
        self.estimator
            .estimate(&self.system, &self.history, &[])
            .total as u64
    }

    /// Sends a request of the whole history plus `extra` at the current time; returns
    /// its input tokens.
    fn send(&mut self, upto: usize, extra: Option<Block>) -> u64 {
        let mut blocks = self.blocks(upto);
        blocks.extend(extra);
        let bill = self.ledger.send(self.now, &blocks);
        self.last_request_at = Some(self.now);
        bill.input_tokens
    }

    /// True when the provider's cache has expired since the last request (its TTL).
    pub(super) fn cache_cold(&self) -> bool {
        let ttl = self.params.prices.ttl_s();
        self.last_request_at
            .is_some_and(|last| self.now - last > ttl)
    }

    /// Sends a summary request (the first `upto` messages and `prompt`) and bills its
    /// answer of `summary_tokens`: to the policy's summary model when it has one (its
    /// prices, none of the cache), else like any request. Returns its input tokens.
    pub(super) fn send_summary(&mut self, upto: usize, prompt: Block, summary_tokens: u64) -> u64 {
        let before = self.ledger.totals().cost_dollars;
        let input = match self.summary_price {
            None => {
                let mut blocks = self.blocks(upto);
                if self.cold_summary_unmarked && self.cache_cold() {
                    // pith's summary request on a cold cache: its history is about to
                    // be replaced, so none of it is written (at the write premium) for
                    // a later request that will not send it (`no_message_breakpoints`).
                    // A 1-hour breakpoint (`pith:hour=1`) may still be cached: kept.
                    for block in blocks.iter_mut().skip(1).filter(|b| !b.hour) {
                        block.breakpoint = false;
                    }
                }
                blocks.push(prompt);
                let bill = self.ledger.send(self.now, &blocks);
                self.ledger
                    .summary_output(bill.input_tokens, summary_tokens);
                bill.input_tokens
            }
            Some(ratio) => {
                let mut blocks = self.blocks(upto);
                blocks.push(prompt);
                let input = self.ledger.send_elsewhere(&blocks, ratio);
                self.ledger.summary_output_at(input, summary_tokens, ratio);
                input
            }
        };
        self.last_request_at = Some(self.now);
        self.outcome.summary_dollars += self.ledger.totals().cost_dollars - before;
        input
    }

    /// The agent's request for the assistant message that follows, and its answer of
    /// `answer_tokens`.
    pub(super) fn agent_request(&mut self, answer_tokens: u64) {
        let estimate = self.estimate();
        self.outcome.peak_context = self.outcome.peak_context.max(estimate);
        self.outcome.context_sum += estimate;
        self.outcome.agent_requests += 1;
        if self.budget.overflows(estimate) {
            self.outcome.overflowing_requests += 1;
        }
        let input = self.send(self.history.len(), None);
        self.ledger.answer_output(input, answer_tokens);
        self.now += self.params.prices.latency_s(answer_tokens);
    }

    /// A request whose answer is a re-read call of `answer_tokens`, billed to the policy.
    pub(super) fn reread_request(&mut self, answer_tokens: u64) {
        let input = self.send(self.history.len(), None);
        self.ledger.reread_output(input, answer_tokens);
        self.now += self.params.prices.latency_s(answer_tokens);
    }

    /// The summary request (the first `upto` messages + compaction prompt) and its output.
    pub(super) fn summary_request(&mut self, upto: usize) {
        self.summary_request_with(
            upto,
            (PROMPT_ID, self.prompt_tokens),
            self.params.summary_tokens,
        );
    }

    fn summary_request_with(
        &mut self,
        upto: usize,
        (prompt_id, prompt_tokens): (u64, usize),
        summary_tokens: u64,
    ) {
        let prompt = Block {
            id: prompt_id,
            tokens: prompt_tokens,
            breakpoint: false,
            hour: false,
        };
        self.send_summary(upto, prompt, summary_tokens);
        let latency = self.params.prices.latency_s(summary_tokens);
        self.now += latency;
        self.outcome.compaction_wait_s += latency;
        self.outcome.llm_compactions += 1;
    }

    /// Records the view after a rewrite, when views are wanted.
    pub(super) fn record_view(&mut self, kind: ViewKind, ledger_tokens: u64) {
        if self.record_views {
            self.outcome.views.push(CompactionView {
                after_message: self.message_index.saturating_sub(1),
                messages: self.history.clone(),
                ledger_tokens,
                input_budget: self.budget.input_budget,
                kind,
            });
        }
    }

    /// Automatic LLM compaction: summary request, then the replacement, which
    /// carries what the policy's [`Carry`] says.
    pub(super) fn llm_compaction(&mut self) {
        let mut ledger_tokens = 0;
        self.restored_paths.clear();
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
            Carry::ClaudeCode => {
                self.summary_request(self.history.len());
                self.claude_code_replacement()
            }
            Carry::Pith if self.ledger_only_tail.is_some() => {
                return self.ledger_only_compaction();
            }
            Carry::Pith => {
                let ledger = self.pith_ledger();
                let prompt = self.pith_prompt_block(ledger.as_ref());
                self.summary_request_with(
                    self.history.len(),
                    prompt,
                    self.params.ledger_summary_tokens,
                );
                let params = self.params;
                let (replacement, tokens) = self.pith_replacement(ledger, &params.ledger_summary);
                ledger_tokens = tokens;
                replacement
            }
        };
        self.set_history(replacement);
        self.record_view(ViewKind::Llm, ledger_tokens);
    }

    /// The session ledger as a pith compaction carries it now.
    pub(super) fn pith_ledger(&self) -> Option<RenderedLedger> {
        let config = ContextConfig {
            ledger_percent: self.ledger_percent,
            ..ContextConfig::default()
        };
        render(
            &self.session_ledger,
            config.ledger_budget(self.budget.working_budget()),
            true,
            self.params.counter.as_ref(),
            Some(&self.disk),
        )
    }

    /// pith's summary request's own block (the automatic prompt with `ledger`'s request
    /// text): its id and tokens.
    pub(super) fn pith_prompt_block(&mut self, ledger: Option<&RenderedLedger>) -> (u64, usize) {
        let prompt = auto_prompt_with(ledger.map(|r| r.summary_request_text.as_str()));
        let prompt_tokens = count_message(self.params.counter.as_ref(), &Message::user(prompt));
        (self.fresh_id(), prompt_tokens)
    }

    /// pith's replacement message carrying `ledger` (the summary, the ledger, the files it
    /// re-attaches, the latest user message) and the ledger's tokens in it.
    pub(super) fn pith_replacement(
        &mut self,
        ledger: Option<RenderedLedger>,
        summary: &str,
    ) -> (Vec<Message>, u64) {
        let counter = Arc::clone(&self.params.counter);
        let config = ContextConfig::default();
        let restored = restore_files(
            &self.session_ledger,
            &self.disk,
            counter.as_ref(),
            RestoreBudget {
                files: self.restore_files,
                ..config.restore_budget(self.budget.working_budget())
            },
        );
        self.note_restored(&restored);
        let ledger_tokens = ledger.as_ref().map_or(0, |r| r.tokens as u64);
        let message = Message::user(replacement_text(ReplacementParts {
            summary,
            ledger: ledger.as_ref().map(|r| r.text.as_str()),
            pins: "",
            restored_files: &restored,
            last_user_message: Some(&self.last_user_text),
        }));
        (vec![message], ledger_tokens)
    }

    /// Remembers `restored`, the files a compaction re-attached, until the next one, and
    /// counts them.
    pub(super) fn note_restored(&mut self, restored: &[RestoredFile]) {
        let counter = self.params.counter.as_ref();
        self.restored_paths = restored.iter().map(|f| f.path.clone()).collect();
        self.restored_used.clear();
        self.outcome.restored_files += restored.len() as u64;
        self.outcome.restored_tokens += restored
            .iter()
            .map(|f| counter.count(&f.content) as u64)
            .sum::<u64>();
    }

    /// What the session ledger observes of an assistant message.
    pub(super) fn observe_assistant(&mut self, message: &Message) {
        if self.carry.tracks_files() {
            self.session_ledger
                .observe_message(message, Some(&self.disk));
        }
    }

    /// What the session ledger observes of a tool message: the result as pith's model
    /// saw it (squashed), with the exit code line pith's bash tool writes.
    pub(super) fn observe_tool(
        &mut self,
        session: &CorpusSession,
        squashed: &Message,
        raw: &Message,
    ) {
        if !self.carry.tracks_files() {
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
}
