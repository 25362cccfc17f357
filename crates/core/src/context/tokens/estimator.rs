//! The incremental estimate of a model request the tool loop keeps ([`RequestEstimator`]):
//! cached per message, anchored on plausible usage reports, scaled by the conversation's
//! calibration, and an upper bound instead of a count while the counter is not ready.

use std::sync::Arc;

use crate::context::calibration::{Band, Calibration, Evidence};
use crate::context::tokens::bound::{bound_limit, upper_bound_estimate};
use crate::context::tokens::count::{
    count_message, count_tools, estimate_request, system_tokens, RequestEstimate,
    REQUEST_FRAMING_TOKENS,
};
use crate::context::tokens::counter::TokenCounter;
use crate::protocol::message::{Message, Part, Role};
use crate::protocol::tool::ToolDefinition;

/// A cheap fingerprint of a message used to validate cached counts without hashing its
/// content: role, number of parts and the byte length of every part's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShapeKey {
    role: Role,
    parts: usize,
    bytes: usize,
    first_len: usize,
}

impl ShapeKey {
    fn of(message: &Message) -> Self {
        let mut bytes = 0;
        let mut first_len = 0;
        for (i, part) in message.parts.iter().enumerate() {
            let len = match part {
                Part::Text { text } => text.len(),
                Part::ToolCall(call) => call.name.len() + call.id.len(),
                Part::ToolResult(result) => result.content.len() + result.call_id.len(),
                Part::Reasoning(reasoning) => {
                    reasoning.text.len()
                        + reasoning.encrypted.as_ref().map_or(0, String::len)
                        + reasoning.signature.as_ref().map_or(0, String::len)
                }
                Part::Image(image) => image.data.len() + image.path.len(),
            };
            if i == 0 {
                first_len = len;
            }
            bytes += len;
        }
        Self {
            role: message.role,
            parts: message.parts.len(),
            bytes,
            first_len,
        }
    }
}

/// Usage the provider reported for a request (a plausible report), and how much history
/// it covered.
#[derive(Debug, Clone, Copy)]
struct ReportedAnchor {
    tokens: usize,
    covered_messages: usize,
}

/// The incremental per-request estimator used by the tool loop.
///
/// Usage is evidence, not truth: a report is weighed against pith's count of the request
/// it covers ([`Calibration`]); a plausible one anchors the estimate and calibrates the
/// count of what is added after it, an implausible one is ignored.
///
/// Contract: the caller passes the *current* history on every call. Messages already seen
/// at the same position with the same shape key are not counted again. A history that was
/// rewritten (compaction, pruning) is detected by the shape check and recounted from the
/// first difference; callers that rewrite history in place with identical byte lengths
/// must call [`RequestEstimator::invalidate`].
pub struct RequestEstimator {
    counter: Arc<dyn TokenCounter>,
    cached: Vec<(ShapeKey, usize)>,
    system: Option<(String, usize)>,
    tools: Option<(usize, usize)>,
    anchor: Option<ReportedAnchor>,
    calibration: Calibration,
    /// Set by [`RequestEstimator::with_upper_bounds_below`]: the largest upper bound the
    /// estimate may be while the counter is not ready.
    bound_limit: Option<usize>,
}

crate::debug_fields!(RequestEstimator |this| {
    cached_messages: this.cached.len(),
    anchor: this.anchor,
    calibration: this.calibration.factor(),
});

impl RequestEstimator {
    /// A fresh estimator with an empty cache.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        Self {
            counter,
            cached: Vec::new(),
            system: None,
            tools: None,
            anchor: None,
            calibration: Calibration::default(),
            bound_limit: None,
        }
    }

    /// The same estimator, allowed to answer with an upper bound instead of a count while
    /// its counter is not ready, no usage has been reported, and the bound stays at least
    /// [`crate::context::tokens::UPPER_BOUND_HEADROOM_PERCENT`]% below `threshold` (the lowest threshold a
    /// decision compares the estimate with: the budget's micro threshold).
    pub fn with_upper_bounds_below(mut self, threshold: u64) -> Self {
        self.bound_limit = Some(bound_limit(threshold));
        self
    }

    /// The upper bound to answer with instead of counting, if one may be used now.
    fn upper_bound_instead(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Option<RequestEstimate> {
        let limit = self.bound_limit?;
        if self.counter.is_ready() || self.anchor.is_some() {
            return None;
        }
        let mut bound = upper_bound_estimate(self.counter.as_ref(), system, messages, tools);
        // In the server's terms, as every estimate's total: scaled by the calibration
        // (1 until the conversation has taught it otherwise), so still an upper bound.
        let scaled = self.calibration.scale(bound.total as u64);
        bound.total = usize::try_from(scaled).unwrap_or(usize::MAX);
        (bound.total < limit).then_some(bound)
    }

    /// The conversation's calibration (server tokens per counted token).
    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// The server refused a request pith counted at `counted` as longer than `window`:
    /// counts from now on are scaled up accordingly (see
    /// [`Calibration::learn_refusal`]), and no report is anchored on. Returns the factor.
    pub fn learn_refusal(&mut self, counted: u64, window: u64) -> f64 {
        self.anchor = None;
        self.calibration.learn_refusal(counted, window)
    }

    /// Believes usage reports within `band` (default: 0.5× to 2× pith's count).
    pub fn set_usage_band(&mut self, band: Band) {
        self.calibration = Calibration::within(band);
    }

    /// The counter this estimator uses.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// Forgets every cached count and any reported usage.
    pub fn invalidate(&mut self) {
        self.cached.clear();
        self.system = None;
        self.tools = None;
        self.anchor = None;
    }

    /// Records the usage the provider reported for the request just answered, which
    /// pith counted at `counted` tokens when it sent it.
    ///
    /// `covered_messages` is the length of the history whose tokens the report covers:
    /// the messages sent plus the assistant reply appended after it. A plausible report's
    /// input plus output then stands for that whole prefix, system prompt and tools
    /// included, and its ratio to `counted` becomes the calibration. An implausible one
    /// drops any anchor: the estimate is pith's count times the calibration.
    pub fn record_usage(
        &mut self,
        input_tokens: u64,
        output_tokens: u64,
        covered_messages: usize,
        counted: u64,
    ) -> Evidence {
        let evidence = self.calibration.observe_history(input_tokens, counted);
        self.anchor = evidence.is_plausible().then(|| ReportedAnchor {
            tokens: usize::try_from(input_tokens.saturating_add(output_tokens))
                .unwrap_or(usize::MAX),
            covered_messages,
        });
        evidence
    }

    /// Weighs a report for a request that was not the history (a fitted request, a
    /// summary request): it may calibrate, it never anchors.
    pub fn observe_usage(&mut self, input_tokens: u64, counted: u64) -> Evidence {
        self.calibration.observe(input_tokens, counted)
    }

    /// pith's count of a request that is not the history (a fitted request), without
    /// touching the cache.
    pub fn count_request(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> usize {
        estimate_request(self.counter.as_ref(), system, messages, tools).total
    }

    /// Drops the reported-usage anchor (e.g. after history was replaced).
    pub fn clear_usage(&mut self) {
        self.anchor = None;
    }

    /// The history was rewritten: drops the anchor, and the next report must follow the
    /// rewrite (see [`Calibration::mark_rewrite`]).
    pub fn rewritten(&mut self) {
        self.anchor = None;
        self.calibration.mark_rewrite();
    }

    /// Estimates a request of `system` + `messages` + `tools`: an exact count, or an upper
    /// bound far below the threshold before the counter is ready (see
    /// [`RequestEstimator::with_upper_bounds_below`]; [`RequestEstimate::upper_bound`]
    /// tells which).
    pub fn estimate(
        &mut self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> RequestEstimate {
        if let Some(bound) = self.upper_bound_instead(system, messages, tools) {
            return bound;
        }
        self.counted_estimate(system, messages, tools)
    }

    /// [`RequestEstimator::estimate`], never an upper bound: counts, waiting for the
    /// counter's tables if they are not ready yet. For figures a user reads (the first
    /// context figure of a session), where a bound would overstate the use fourfold.
    pub fn counted_estimate(
        &mut self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> RequestEstimate {
        let counter = Arc::clone(&self.counter);
        let counter = counter.as_ref();

        let system_tokens = match &self.system {
            Some((text, tokens)) if text == system => *tokens,
            _ => {
                let tokens = system_tokens(counter, system);
                self.system = Some((system.to_owned(), tokens));
                tokens
            }
        };
        let tools_key = tools_fingerprint(tools);
        let tools_tokens = match self.tools {
            Some((key, tokens)) if key == tools_key => tokens,
            _ => {
                let tokens = count_tools(counter, tools);
                self.tools = Some((tools_key, tokens));
                tokens
            }
        };

        // Validate the cache against the current history and recount from the first
        // message that differs.
        let mut valid = 0;
        while valid < self.cached.len()
            && valid < messages.len()
            && self.cached[valid].0 == ShapeKey::of(&messages[valid])
        {
            valid += 1;
        }
        if valid < self.cached.len() {
            self.cached.truncate(valid);
            if self.anchor.is_some_and(|a| a.covered_messages > valid) {
                self.anchor = None;
            }
        }
        for message in &messages[valid..] {
            self.cached
                .push((ShapeKey::of(message), count_message(counter, message)));
        }
        let message_tokens: usize = self.cached.iter().map(|(_, t)| t).sum();

        let local_total = REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens;
        let scale = |counted: usize| {
            usize::try_from(self.calibration.scale(counted as u64)).unwrap_or(usize::MAX)
        };
        let anchored = self
            .anchor
            .filter(|a| a.covered_messages <= messages.len())
            .map(|a| {
                let added: usize = self.cached[a.covered_messages..]
                    .iter()
                    .map(|(_, t)| t)
                    .sum();
                a.tokens.saturating_add(scale(added))
            });
        RequestEstimate {
            system: system_tokens,
            tools: tools_tokens,
            messages: message_tokens,
            total: anchored.unwrap_or_else(|| scale(local_total)),
            anchored_on_reported_usage: anchored.is_some(),
            counted: local_total,
            upper_bound: false,
        }
    }
}

fn tools_fingerprint(tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|t| t.name.len() * 31 + t.description.len() * 7 + 1)
        .fold(tools.len(), |acc, x| {
            acc.wrapping_mul(1_000_003).wrapping_add(x)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::tokens::{BpeCounter, Encoding};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn o200k() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    /// Counts how many bytes it was asked to tokenize, to prove caching.
    struct CountingCounter {
        inner: BpeCounter,
        bytes_seen: AtomicUsize,
    }

    impl TokenCounter for CountingCounter {
        fn count(&self, text: &str) -> usize {
            self.bytes_seen.fetch_add(text.len(), Ordering::SeqCst);
            self.inner.count(text)
        }
    }

    fn history(n: usize) -> Vec<Message> {
        (0..n)
            .flat_map(|i| {
                [
                    Message::user(format!("question number {i} about the parser")),
                    Message::assistant(format!("answer {i}: the parser handles that case")),
                ]
            })
            .collect()
    }

    #[test]
    fn estimator_matches_the_full_estimate_without_usage() {
        let counter = Arc::new(o200k());
        let tools = vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let msgs = history(10);
        let mut estimator = RequestEstimator::new(counter.clone());
        let incremental = estimator.estimate("You are pith.", &msgs, &tools);
        let full = estimate_request(counter.as_ref(), "You are pith.", &msgs, &tools);
        assert_eq!(incremental, full);
    }

    #[test]
    fn unchanged_history_is_not_tokenized_again() {
        let counter = Arc::new(CountingCounter {
            inner: o200k(),
            bytes_seen: AtomicUsize::new(0),
        });
        let mut estimator = RequestEstimator::new(counter.clone());
        let mut msgs = history(50);
        let first = estimator.estimate("sys", &msgs, &[]);
        let after_first = counter.bytes_seen.load(Ordering::SeqCst);
        let second = estimator.estimate("sys", &msgs, &[]);
        assert_eq!(first, second);
        assert_eq!(
            counter.bytes_seen.load(Ordering::SeqCst),
            after_first,
            "recounted an unchanged history"
        );

        msgs.push(Message::user("one more"));
        estimator.estimate("sys", &msgs, &[]);
        assert_eq!(
            counter.bytes_seen.load(Ordering::SeqCst) - after_first,
            "one more".len(),
            "only the new message should be tokenized"
        );
    }

    #[test]
    fn rewritten_history_is_recounted() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let msgs = history(20);
        let before = estimator.estimate("sys", &msgs, &[]);
        let replaced = vec![Message::user(
            "<compacted_context>short</compacted_context>",
        )];
        let after = estimator.estimate("sys", &replaced, &[]);
        assert!(after.total < before.total);
        assert_eq!(
            after,
            estimate_request(counter.as_ref(), "sys", &replaced, &[])
        );
    }

    #[test]
    fn a_plausible_report_anchors_the_prefix_and_calibrates_what_is_added() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let mut msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        assert_eq!(sent.total, sent.counted, "no report yet: the count itself");
        // The server counts 25% more than o200k (and 40 output tokens).
        let reported = sent.counted as u64 * 5 / 4;
        let evidence = estimator.record_usage(reported, 40, msgs.len(), sent.counted as u64);
        assert!(evidence.is_plausible());
        let added = Message::tool_result("c1", "src/lib.rs:1:fn main() {}", false);
        msgs.push(added.clone());
        let estimate = estimator.estimate("sys", &msgs, &[]);
        assert!(estimate.anchored_on_reported_usage);
        let factor = estimator.calibration().factor();
        let added_tokens = count_message(counter.as_ref(), &added) as f64;
        assert_eq!(
            estimate.total as u64,
            reported + 40 + (added_tokens * factor).ceil() as u64
        );
        assert_eq!(
            estimate.counted,
            sent.counted + count_message(counter.as_ref(), &added)
        );
    }

    #[test]
    fn an_implausible_report_is_not_anchored_on() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter);
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        // A server that reports a fixed 100 input tokens, and one that reports 30,000.
        for reported in [1, sent.counted as u64 * 3, 30_000] {
            let evidence = estimator.record_usage(reported, 40, msgs.len(), sent.counted as u64);
            assert!(!evidence.is_plausible(), "{reported}");
            let estimate = estimator.estimate("sys", &msgs, &[]);
            assert!(!estimate.anchored_on_reported_usage);
            assert_eq!(estimate.total, estimate.counted);
        }
    }

    #[test]
    fn without_an_anchor_the_count_is_scaled_by_the_calibration() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter);
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        // A fitted request told the calibration (×1.5) without anchoring.
        estimator.observe_usage(3_000, 2_000);
        let estimate = estimator.estimate("sys", &msgs, &[]);
        assert!(!estimate.anchored_on_reported_usage);
        assert_eq!(estimate.total, (sent.counted as f64 * 1.5).ceil() as usize);
    }

    #[test]
    fn rewriting_the_covered_prefix_drops_the_anchor() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        estimator.record_usage(sent.counted as u64, 40, msgs.len(), sent.counted as u64);
        let replaced = vec![Message::user("summary")];
        let estimate = estimator.estimate("sys", &replaced, &[]);
        assert!(!estimate.anchored_on_reported_usage);
        assert!(estimate.total < 1_000);
    }
}
