//! [`ContextState`]: everything the loop knows about its context, in one place — the
//! history, the budget, the request estimator with its calibration, the governor's memory,
//! the session ledger, the pins and the view of the disk it uses.
//!
//! Three things change it, each through one method:
//! - the history grows ([`ContextState::push`], [`ContextState::push_user`]);
//! - a persisted rewrite is installed ([`ContextState::install`]);
//! - a server reports usage for a request ([`ContextState::observe_usage`]), which
//!   calibrates the estimate, verifies the last compaction, and may pause automatic
//!   compaction.
//!
//! And every compaction tells it what happened (`governing`: started, skipped, applied,
//! paused, reset), which it passes to its governor with its own budget: no caller pairs
//! the two by hand. Deciding what to do before a request (`decision`) reads it through
//! [`ContextState::estimate`] and [`ContextState::governor`].

use std::sync::Arc;

use pith_core::context::calibration::Evidence;
use pith_core::context::ledger::{FileProbe, Ledger};
use pith_core::context::pins::Pins;
use pith_core::context::{Governor, GovernorNotice};
use pith_core::{ContextBudget, Message, RequestEstimate, RequestEstimator, ToolDefinition, Usage};

/// What the loop knows about one request it sent, to weigh the usage reported for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Sent {
    /// pith's count of the request as sent.
    pub counted: u64,
    /// True when the request was fitted to the budget: it is not the history, so a report
    /// for it may calibrate but never anchor.
    pub fitted: bool,
    /// `Some(n)` when `counted` is only an upper bound (the first request of a process,
    /// sent before the exact counter was ready; see [`RequestEstimate::upper_bound`]): the
    /// request was the first `n` messages of the history, counted exactly when its usage
    /// is weighed, so a byte count never calibrates.
    pub upper_bound_of: Option<usize>,
}

impl Sent {
    /// A request of the history as it was estimated.
    pub fn history(estimate: &RequestEstimate, messages: usize) -> Self {
        Self {
            counted: estimate.counted as u64,
            fitted: false,
            upper_bound_of: estimate.upper_bound.then_some(messages),
        }
    }

    /// A request of messages pith counted exactly at `counted`.
    pub fn counted(counted: u64, fitted: bool) -> Self {
        Self {
            counted,
            fitted,
            upper_bound_of: None,
        }
    }
}

mod governing;
/// The loop's context; see the module docs.
pub(super) struct ContextState {
    pub budget: ContextBudget,
    /// Shared with the request in flight (copy on write: pushing clones only while a
    /// request still holds it, which it never does between requests).
    pub history: Arc<Vec<Message>>,
    pub estimator: RequestEstimator,
    /// Told through the verbs of `governing` (with this context's budget), read through
    /// [`ContextState::governor`].
    governor: Governor,
    /// The session ledger, observed as the history grows (see `carry`).
    pub ledger: Ledger,
    /// What the user pinned: every replacement carries it (see `carry`).
    pub pins: Pins,
    /// The disk as the ledger sees it, when the loop has a workspace.
    pub files: Option<Arc<dyn FileProbe>>,
    /// The messages at the start of the history that will not change again until the
    /// next compaction: a compaction's replacement, the results masked so far. Requests
    /// mark its end for the prompt cache ([`crate::wire::adapter::CacheHints`]).
    pub stable_prefix: usize,
    /// When the last request was sent: after a pause longer than the provider cache's
    /// TTL the cache is cold, and rewriting costs nothing extra.
    pub last_request_at: Option<std::time::Instant>,
    /// Counts the rewrites that moved messages (a compaction, a fit that dropped some, a
    /// new history): a summary prepared in an earlier epoch no longer has its mark.
    pub epoch: u64,
}

impl ContextState {
    /// The compaction governor, as the decision reads it.
    pub fn governor(&self) -> &Governor {
        &self.governor
    }

    /// An empty history for `budget`, with at most `max_per_turn` automatic compactions
    /// per user turn.
    pub fn new(budget: ContextBudget, estimator: RequestEstimator, max_per_turn: u32) -> Self {
        Self {
            budget,
            history: Arc::new(Vec::new()),
            estimator,
            governor: Governor::new(max_per_turn),
            ledger: Ledger::default(),
            pins: Pins::new(),
            stable_prefix: 0,
            last_request_at: None,
            epoch: 0,
            files: None,
        }
    }

    /// The estimate of a request of the history with `system` and `tools`.
    pub fn estimate(&mut self, system: &str, tools: &[ToolDefinition]) -> RequestEstimate {
        self.estimator.estimate(system, &self.history, tools)
    }

    /// [`ContextState::estimate`], counted (never an upper bound).
    pub fn counted_estimate(&mut self, system: &str, tools: &[ToolDefinition]) -> RequestEstimate {
        self.estimator
            .counted_estimate(system, &self.history, tools)
    }

    /// How far the conversation has grown, for the governor's gates: the smaller of the
    /// estimate and pith's own count times the calibration (see
    /// [`pith_core::context::Facts::progress`]).
    pub fn progress(&mut self, system: &str, tools: &[ToolDefinition]) -> u64 {
        let estimate = self.estimate(system, tools);
        let content = self.estimator.calibration().scale(estimate.counted as u64);
        (estimate.total as u64).min(content)
    }

    /// The estimate of a request of `messages` (not the history) in the server's terms,
    /// and pith's count of it.
    pub fn estimate_other(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> (u64, u64) {
        let counted = self.estimator.count_request(system, messages, tools) as u64;
        (self.estimator.calibration().scale(counted), counted)
    }

    /// A user message starts a turn: the ledger records it, the governor starts a fresh
    /// ceiling and counts it as new history.
    pub fn push_user(&mut self, message: Message) {
        self.ledger
            .observe_user(&pith_core::context::pins::user_words(&message));
        self.governor.start_turn();
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Appends an assistant or tool message (the ledger observes it).
    pub fn push(&mut self, message: Message) {
        self.ledger.observe_message(&message, self.files.as_deref());
        Arc::make_mut(&mut self.history).push(message);
    }

    /// Installs a persisted rewrite: the new history, no anchor on the old one, and the
    /// next report must follow it. A new epoch begins (messages moved).
    pub fn install(&mut self, replacement: Vec<Message>) {
        self.epoch += 1;
        self.install_in_place(replacement);
    }

    /// [`ContextState::install`] of a rewrite that keeps every message in its place and
    /// changes only contents (micro-compaction): the epoch stays.
    pub fn install_in_place(&mut self, replacement: Vec<Message>) {
        self.stable_prefix = stable_prefix_after(&self.history, &replacement, self.stable_prefix);
        self.history = Arc::new(replacement);
        self.estimator.rewritten();
    }

    /// True when the provider's prompt cache has expired since the last request (its TTL
    /// `ttl`; `None`: the provider has none): the next request rewrites it anyway.
    pub fn cache_cold(&self, ttl: Option<std::time::Duration>, now: std::time::Instant) -> bool {
        match (ttl, self.last_request_at) {
            (Some(ttl), Some(last)) => now.saturating_duration_since(last) > ttl,
            _ => false,
        }
    }

    /// Replaces the whole conversation (resume, `/clear`, a switched model): the governor
    /// starts afresh, the calibration is kept.
    pub fn replace_history(&mut self, history: Vec<Message>) {
        self.epoch += 1;
        self.stable_prefix = 0;
        self.history = Arc::new(pith_core::summary::strip_system(&history));
        self.estimator.clear_usage();
        self.governor.reset();
    }

    /// Takes what the server reported (`usage`, when it reported any) for a turn request
    /// described by `sent`, answered into a history of `covered` messages. Returns what the
    /// user must be told: an implausible report (once a session), a compaction that did not
    /// help (the first report after it is still over the threshold).
    pub fn observe_usage(
        &mut self,
        sent: Sent,
        usage: Option<Usage>,
        covered: usize,
        system: &str,
        tools: &[ToolDefinition],
    ) -> Vec<GovernorNotice> {
        let mut notices = Vec::new();
        let Some(usage) = usage else {
            // Nothing to verify with: the next report is not about the compacted request.
            self.governor.verifying = false;
            return notices;
        };
        let counted = match sent.upper_bound_of {
            Some(messages) => {
                let messages = &self.history[..messages.min(self.history.len())];
                self.estimator.count_request(system, messages, tools) as u64
            }
            None => sent.counted,
        };
        let evidence = if sent.fitted {
            self.estimator.observe_usage(usage.input_tokens, counted)
        } else {
            self.estimator
                .record_usage(usage.input_tokens, usage.output_tokens, covered, counted)
        };
        match evidence {
            Evidence::Implausible { reported, counted } => {
                notices.extend(self.governor.implausible_notice(reported, counted));
            }
            Evidence::Unresponsive {
                reported,
                counted_before,
                counted_after,
            } => notices.push(GovernorNotice::UsageUnresponsive {
                reported,
                counted_before,
                counted_after,
            }),
            Evidence::Plausible { .. } => {}
        }
        // A server whose usage does not follow the request cannot tell whether a
        // compaction helped.
        if self.estimator.calibration().is_deaf() {
            self.governor.verifying = false;
            return notices;
        }
        let progress = self.progress(system, tools);
        let budget = self.budget;
        notices.extend(self.governor.verify(usage.input_tokens, progress, &budget));
        notices
    }

    /// The server refused a request pith counted at `counted` as too long: the estimate
    /// is scaled up to what the refusal implies. Returns the notice for the user.
    pub fn learn_refusal(&mut self, counted: u64, message: &str) -> String {
        let window = self.budget.window;
        let factor = self.estimator.learn_refusal(counted, window);
        format!(
            "the server refused a request pith counted at {} tokens as too long for its {}-token window ({message}): pith now takes the server's tokens as {factor:.2}× its own count and sends the request again, fitted",
            pith_core::thousands(counted),
            pith_core::thousands(window)
        )
    }

    /// Takes the usage of a summary request pith counted at `counted`: calibration only.
    pub fn observe_summary_usage(&mut self, usage: Usage, counted: u64) {
        self.estimator.observe_usage(usage.input_tokens, counted);
    }
}

/// The stable prefix after `old` (whose stable prefix was `previous`) is rewritten into
/// `new`: a rewrite that keeps the length (masking, dedup) changes some messages in place,
/// and every message up to the last one it changed is final, as the previous prefix still
/// is; one that changes the length (a compaction's replacement, an overflow fit) is all
/// new, and all of it is final.
fn stable_prefix_after(old: &[Message], new: &[Message], previous: usize) -> usize {
    if old.len() != new.len() {
        return new.len();
    }
    let changed = old
        .iter()
        .zip(new)
        .rposition(|(before, after)| before != after)
        .map_or(0, |last| last + 1);
    changed.max(previous).min(new.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(items: &[&str]) -> Vec<Message> {
        items.iter().map(|t| Message::user(*t)).collect()
    }

    #[test]
    fn the_stable_prefix_ends_after_the_last_message_a_rewrite_changed() {
        let old = texts(&["a", "b", "c", "d"]);
        // Masking changed b: a and b are final.
        assert_eq!(
            stable_prefix_after(&old, &texts(&["a", "B", "c", "d"]), 0),
            2
        );
        // A later rewrite of an earlier message keeps the prefix known final.
        assert_eq!(
            stable_prefix_after(&old, &texts(&["A", "b", "c", "d"]), 3),
            3
        );
        // A compaction's replacement is all final.
        assert_eq!(stable_prefix_after(&old, &texts(&["summary"]), 3), 1);
        // Nothing changed: what was final stays so.
        assert_eq!(stable_prefix_after(&old, &old, 2), 2);
    }

    #[test]
    fn the_cache_is_cold_only_after_a_pause_longer_than_its_ttl() {
        let mut state = ContextState::new(
            ContextBudget::for_window(200_000),
            RequestEstimator::new(Arc::new(pith_core::BpeCounter::new(
                pith_core::Encoding::O200kBase,
            ))),
            2,
        );
        let now = std::time::Instant::now();
        let ttl = Some(std::time::Duration::from_secs(300));
        assert!(
            !state.cache_cold(ttl, now),
            "no request yet: nothing to be cold"
        );
        state.last_request_at = Some(now);
        assert!(!state.cache_cold(ttl, now + std::time::Duration::from_secs(299)));
        assert!(state.cache_cold(ttl, now + std::time::Duration::from_secs(301)));
        assert!(
            !state.cache_cold(None, now + std::time::Duration::from_secs(3600)),
            "a provider without a prompt cache is never cold"
        );
    }
}
