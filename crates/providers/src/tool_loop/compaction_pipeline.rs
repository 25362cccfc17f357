//! The one summarize-verify-apply pipeline every summary compaction goes through: the
//! automatic one in place (`compaction`), the automatic one prepared ahead (`prepared`)
//! and the manual `/compact` (`compaction`).
//!
//! Its steps, in order, each one function here:
//! 1. **Gate** ([`AgentLoop::pre_compact_gate`]): the `PreCompact` hooks, whose
//!    instructions join the summary request.
//! 2. **Ask** ([`AgentLoop::summary_request`]): the history, then the compaction prompt,
//!    fitted when it would not fit; on a cold prompt cache, without breakpoints in the
//!    messages (nothing would read what they write).
//! 3. **Settle** ([`AgentLoop::settle_summary`]): the requests accounted for, and the
//!    summary read from how they ended (pith's own when the model kept calling tools).
//! 4. **Verify and apply** ([`AgentLoop::apply_summary`]): the summary held to its
//!    allowance, the replacement built (the `PostCompact` hooks add to it), refused when it
//!    would not shrink the history, persisted, and only then installed.
//!
//! How the summary is awaited differs (in place and private, in a background task, or
//! streamed to the user); everything else that differs between the kinds is data, the
//! [`Rules`] of [`AUTOMATIC`] and [`MANUAL`].

use std::sync::Arc;
use std::time::Instant;

use pith_core::context::floor::summary_allowance;
use pith_core::context::ledger::RenderedLedger;
use pith_core::hooks::{context_block, CompactGate, CompactionAsk, CompactionFacts};
use pith_core::prompts::FALLBACK_SUMMARY_WITH_LEDGER;
use pith_core::summary::{
    auto_prompt_with, fallback_summary, head_tokens, manual_prompt_with, replacement_text,
    with_hook_instructions, ReplacementParts, RestoredFile,
};
use pith_core::{
    Carried, Compaction, CompactionTrigger, EventSink, HistoryRewrite, HookEvent, LoopEvent,
    Message, Part, PersistError, RequestReport, Role, ToolDefinition, TurnSink, Usage,
};
use tokio_util::sync::CancellationToken;

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::report::emit_hooks;
use crate::tool_loop::summary_outcome::SummaryOutcome;

/// Most tokens of pith's own summary when the model could not write one: the smaller of
/// 8,000 and a tenth of the input budget.
const FALLBACK_SUMMARY_MAX_TOKENS: u64 = 8_000;

/// What differs between the compactions that share the pipeline.
#[derive(Clone, Copy, Debug)]
pub(super) struct Rules {
    /// What started it, as recorded and told to the hooks.
    pub trigger: CompactionTrigger,
    /// Whether a `PreCompact` hook's block is obeyed; when the user asked for the
    /// compaction it is shown and overridden.
    pub obeys_hook_block: bool,
    /// Whether a replacement that is not smaller than the history it replaces is refused;
    /// when the user asked for the compaction it is applied anyway.
    pub refuses_larger: bool,
    /// Whether its usage is part of the turn's, so that what went to the compaction model
    /// is counted apart ([`AgentLoop::take_compaction_model_usage`]); a manual
    /// compaction's usage is reported with it instead.
    pub charged_to_turn: bool,
}

/// The automatic compaction, in place or prepared ahead: private, inside a turn.
pub(super) const AUTOMATIC: Rules = Rules {
    trigger: CompactionTrigger::Auto,
    obeys_hook_block: true,
    refuses_larger: true,
    charged_to_turn: true,
};

/// The manual `/compact`: the user asked for it, between turns.
pub(super) const MANUAL: Rules = Rules {
    trigger: CompactionTrigger::Manual,
    obeys_hook_block: false,
    refuses_larger: false,
    charged_to_turn: false,
};

/// A summary request, ready to send.
pub(super) struct SummaryRequest {
    /// The request.
    pub request: crate::wire::adapter::ModelRequest,
    /// pith's count of it, weighed against its reported usage.
    pub counted: u64,
    /// Its estimate in the server's terms (the count, calibrated).
    pub estimate: u64,
    /// Most tokens of the summary.
    pub allowance: u64,
}

/// A summary request that ended, not yet accounted for.
pub(super) struct SummaryAnswer {
    /// How it ended.
    pub outcome: SummaryOutcome,
    /// The requests it sent, not yet reported.
    pub reports: Vec<RequestReport>,
    /// pith's count of the request, weighed against its reported usage.
    pub counted: u64,
}

/// How a summary request settled.
pub(super) enum Settled {
    /// The summary to apply.
    Summary(String),
    /// It was cancelled.
    Cancelled,
    /// It failed, for this reason.
    Failed(String),
}

/// A summary, with what applying it needs.
pub(super) struct Summarized<'a> {
    /// Which compaction it is.
    pub rules: Rules,
    /// The summary, as the model wrote it.
    pub summary: String,
    /// Most tokens of the summary.
    pub allowance: u64,
    /// The ledger the replacement carries.
    pub ledger: Option<RenderedLedger>,
    /// The files the replacement re-attaches.
    pub restored: Vec<RestoredFile>,
    /// The latest user message, repeated in the replacement unless `tail` holds it.
    pub last_user: Option<&'a str>,
    /// The messages after the summary's mark, kept verbatim after the replacement (empty
    /// when the summary covers the whole history).
    pub tail: Vec<Message>,
    /// The history's size before, in the server's terms.
    pub tokens_before: u64,
    /// What the summary's requests used.
    pub usage: Usage,
    /// The compaction model they went to (`provider/model`), if not the loop's.
    pub model: Option<String>,
}

/// Why a summary was not applied; the history is unchanged.
#[derive(Debug, thiserror::Error)]
pub(super) enum NotApplied {
    /// The replacement would not shrink the history.
    #[error("the replacement ({} tokens) is not smaller than the history it would replace ({} tokens); not applied", pith_core::thousands(*.after), pith_core::thousands(*.before))]
    NotSmaller {
        /// The replacement's size.
        after: u64,
        /// The history's size.
        before: u64,
    },
    /// The transcript could not record it.
    #[error(transparent)]
    NotPersisted(#[from] PersistError),
}

impl AgentLoop {
    /// Step 1: the `PreCompact` hooks before a compaction of a history of `tokens` (what
    /// they ran is reported). With `rules` that do not obey a block, the block is shown
    /// and the compaction proceeds without instructions.
    pub(super) async fn pre_compact_gate(
        &self,
        rules: Rules,
        tokens: u64,
        focus: Option<&str>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> CompactGate {
        let hooks = Arc::clone(&self.hooks);
        let gate = hooks
            .pre_compact(
                CompactionAsk {
                    trigger: rules.trigger,
                    tokens_before: tokens,
                    focus,
                },
                cancel,
            )
            .await;
        emit_hooks(gate.runs, sink);
        match gate.value {
            CompactGate::Block { reason } if !rules.obeys_hook_block => {
                sink.emit(LoopEvent::Notice(format!(
                    "a PreCompact hook asked not to compact ({reason}); compacting as you asked"
                )));
                CompactGate::Proceed { instructions: None }
            }
            gate => gate,
        }
    }

    /// Step 2: the summary request over the history as it is now: the history, then the
    /// prompt of `rules` (the manual one with the user's `focus`) with `ledger`'s request
    /// text and the hooks' `instructions`, fitted when it would not fit.
    pub(super) fn summary_request(
        &mut self,
        rules: Rules,
        focus: Option<&str>,
        ledger: Option<&RenderedLedger>,
        instructions: Option<String>,
        tools: &[ToolDefinition],
    ) -> SummaryRequest {
        let ledger_text = ledger.map(|l| l.summary_request_text.as_str());
        let prompt = match rules.trigger {
            CompactionTrigger::Manual => manual_prompt_with(focus, ledger_text),
            CompactionTrigger::Auto => auto_prompt_with(ledger_text),
        };
        let mut messages = self.history_for_summary();
        messages.push(Message::user(with_hook_instructions(
            prompt,
            instructions.as_deref(),
        )));
        let messages = self.fit_if_needed(messages, tools);
        let (estimate, counted) =
            self.context
                .estimate_other(&self.system_prompt, &messages, tools);
        let mut request = self.request(Arc::new(messages), tools.to_vec());
        // On a cold cache (the user was away longer than its TTL) nothing of this history
        // is cached, and no later request sends it again: the compaction replaces it. A
        // breakpoint in it would only have it written at the write premium (1.25× on
        // Anthropic), so none is placed; the system prompt and the tools keep theirs.
        request.cache.no_message_breakpoints = self
            .context
            .cache_cold(self.options.prompt_cache.ttl, Instant::now());
        SummaryRequest {
            request,
            counted,
            estimate,
            allowance: summary_allowance(self.context.budget.working_budget(), ledger.is_some()),
        }
    }

    /// Step 3: a summary request that ended, accounted for (its requests reported) and
    /// read: the summary, pith's own when the model kept calling tools, or why there is
    /// none. Returns what its requests used too.
    pub(super) fn settle_summary(
        &mut self,
        rules: Rules,
        answer: SummaryAnswer,
        on_compaction_model: bool,
        has_ledger: bool,
        sink: &mut dyn EventSink,
    ) -> (Settled, Usage) {
        let SummaryAnswer {
            outcome,
            reports,
            counted,
        } = answer;
        let usage = outcome.usage();
        // The last request's usage calibrates this server's counts (another model's says
        // nothing of them); what went to the compaction model as part of the turn is
        // counted apart.
        self.context.last_request_at = Some(Instant::now());
        if let Some(reported) = reports
            .last()
            .filter(|r| r.usage_reported && r.compaction_model.is_none())
        {
            self.context.observe_summary_usage(reported.usage, counted);
        }
        self.emit_requests(reports, sink);
        if on_compaction_model && rules.charged_to_turn {
            self.compaction_model_spent += usage;
        }
        let settled = match outcome {
            SummaryOutcome::Summary { summary, .. } => Settled::Summary(summary),
            SummaryOutcome::ToolRoundsExhausted { .. } => {
                sink.emit(LoopEvent::Notice(
                    "the model kept calling tools instead of summarising; compacted without its summary"
                        .to_owned(),
                ));
                Settled::Summary(self.fallback_summary(has_ledger))
            }
            SummaryOutcome::Cancelled { .. } => Settled::Cancelled,
            SummaryOutcome::Failed { reason, .. } => Settled::Failed(reason),
        };
        (settled, usage)
    }

    /// Step 4: `summarized` verified, persisted and installed as the history, or the
    /// reason it was not (the history is then unchanged).
    pub(super) async fn apply_summary(
        &mut self,
        summarized: Summarized<'_>,
        sink: &mut dyn TurnSink,
        cancel: &CancellationToken,
    ) -> Result<Compaction, NotApplied> {
        let Summarized {
            rules,
            summary,
            allowance,
            ledger,
            restored,
            last_user,
            tail,
            tokens_before,
            usage,
            model,
        } = summarized;
        let summary = self.within_allowance(summary, allowance);
        let last_user = last_user.filter(|text| !tail_holds_user_message(&tail, text));
        let (mut replacement, carried) = self.replacement(&summary, ledger, restored, last_user);
        replacement.extend(tail);
        let tools = self.tools.definitions();
        let facts = CompactionFacts {
            trigger: rules.trigger,
            tokens_before,
            tokens_after: 0,
            summary: &summary,
        };
        let (replacement, tokens_after) = self
            .after_summary(facts, &tools, replacement, sink, cancel)
            .await;
        if rules.refuses_larger && tokens_after >= tokens_before {
            return Err(NotApplied::NotSmaller {
                after: tokens_after,
                before: tokens_before,
            });
        }
        let compaction = Compaction {
            trigger: rules.trigger,
            replacement,
            summary,
            tokens_before,
            tokens_after,
            usage: Some(usage),
            model,
            carried,
        };
        sink.persist(&HistoryRewrite::Compaction(compaction.clone()))?;
        self.context.install(compaction.replacement.clone());
        self.mark_restored_seen(&compaction.carried.restored_files);
        self.pins_carried(&compaction.carried, sink);
        Ok(compaction)
    }

    /// `summary` cut to its allowance (its head, and a note of what was left out).
    fn within_allowance(&self, summary: String, allowance: u64) -> String {
        let counter = self.counter();
        let max = usize::try_from(allowance).unwrap_or(usize::MAX);
        match head_tokens(counter.as_ref(), &summary, max) {
            Some(head) => format!(
                "{head}\n[pith: the summary was cut here, at its allowance of {} tokens]",
                pith_core::thousands(allowance)
            ),
            None => summary,
        }
    }

    /// The replacement history of a compaction: one user message with the summary, the
    /// ledger, the pins (read afresh), the re-attached files and (automatic compaction)
    /// the latest user message.
    fn replacement(
        &self,
        summary: &str,
        ledger: Option<RenderedLedger>,
        restored: Vec<RestoredFile>,
        last_user_message: Option<&str>,
    ) -> (Vec<Message>, Carried) {
        let pins = self.render_pins();
        let text = replacement_text(ReplacementParts {
            summary,
            ledger: ledger.as_ref().map(|l| l.text.as_str()),
            pins: &pins.text,
            restored_files: &restored,
            last_user_message,
        });
        let carried = Carried {
            ledger_tokens: ledger.as_ref().map_or(0, |l| l.tokens as u64),
            ledger: ledger.map(|l| l.text),
            restored_files: restored.into_iter().map(|f| f.path).collect(),
            pins_tokens: pins.tokens as u64,
            pins_left_out: pins.left_out.iter().map(|l| l.describe()).collect(),
        };
        (vec![Message::user(text)], carried)
    }

    /// The replacement with what the `PostCompact` (and `SessionStart` `compact`) hooks
    /// add appended to its first message (a verbatim tail may follow it), and its
    /// estimated size in the server's terms. `facts.tokens_after` is filled in here.
    async fn after_summary(
        &mut self,
        mut facts: CompactionFacts<'_>,
        tools: &[ToolDefinition],
        mut replacement: Vec<Message>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> (Vec<Message>, u64) {
        let estimate = |agent: &Self, messages: &[Message]| {
            agent
                .context
                .estimate_other(&agent.system_prompt, messages, tools)
                .0
        };
        let tokens_after = estimate(self, &replacement);
        facts.tokens_after = tokens_after;
        let hooks = Arc::clone(&self.hooks);
        let hooked = hooks.post_compact(facts, cancel).await;
        emit_hooks(hooked.runs, sink);
        let (Some(context), Some(first)) = (hooked.value, replacement.first_mut()) else {
            return (replacement, tokens_after);
        };
        first.parts.push(Part::Text {
            text: context_block(HookEvent::PostCompact, &context),
        });
        let tokens_after = estimate(self, &replacement);
        (replacement, tokens_after)
    }

    /// pith's own summary of the current history, for when the model could not write one.
    /// With a ledger (which holds the user's messages) it is a short note.
    fn fallback_summary(&self, with_ledger: bool) -> String {
        if with_ledger {
            return FALLBACK_SUMMARY_WITH_LEDGER.to_owned();
        }
        let max = FALLBACK_SUMMARY_MAX_TOKENS.min(self.context.budget.working_budget() / 10);
        fallback_summary(
            &self.context.history,
            self.counter().as_ref(),
            usize::try_from(max).unwrap_or(usize::MAX),
        )
    }
}

/// Whether the latest user message (`text`) is among `tail`, kept verbatim: then the
/// replacement need not repeat it.
fn tail_holds_user_message(tail: &[Message], text: &str) -> bool {
    tail.iter()
        .any(|message| message.role == Role::User && message.text_content() == text)
}
