//! An upper bound of a request's estimate, for the moments before the exact counter is
//! ready (the first request of a process).
//!
//! The bound counts every text as its length in bytes. That is a proven upper bound of
//! its token count in any byte-level BPE (o200k, cl100k, and the providers' own): every
//! token is at least one byte, and the tokens of a text partition its bytes. Everything
//! else in the estimate (framing, image formulas, encrypted reasoning) is computed exactly
//! as [`estimate_request`] does, so the bound is never below the exact estimate, whatever
//! the input: a decision taken on a bound below a threshold is the decision the exact
//! count would have taken.
//!
//! Bytes overstate real text about fourfold (3.9 bytes per o200k token on the corpus),
//! which is why a bound is used only far below the threshold: [`crate::RequestEstimator`]
//! answers with one only while its counter is not ready, no usage was reported yet, and
//! the bound is at least [`UPPER_BOUND_HEADROOM_PERCENT`]% below the lowest threshold it
//! was given. Anywhere else it counts exactly, waiting for the tables if it must.

use crate::context::tokens::count::{estimate_request, RequestEstimate};
use crate::context::tokens::counter::TokenCounter;
use crate::protocol::message::Message;
use crate::protocol::tool::ToolDefinition;

/// How far below its threshold an upper bound must stay for the estimator to use it, in
/// percent of the threshold. The bound is proven, so this headroom is not what keeps the
/// decision right; it keeps tokens a provider adds on its side (a tool-use preamble, its
/// own framing) out of the argument.
pub const UPPER_BOUND_HEADROOM_PERCENT: u64 = 10;

/// A counter that answers every text with its length in bytes, and images as `exact`
/// does (their formulas need no tables).
struct ByteBound<'a> {
    exact: &'a dyn TokenCounter,
}

impl TokenCounter for ByteBound<'_> {
    fn count(&self, text: &str) -> usize {
        text.len()
    }

    fn image_tokens(&self, width: u32, height: u32) -> usize {
        self.exact.image_tokens(width, height)
    }
}

/// The upper bound of a request's estimate: [`estimate_request`] with every text counted
/// as its bytes. Never below `estimate_request(counter, …)`; needs no tables.
pub fn upper_bound_estimate(
    counter: &dyn TokenCounter,
    system: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> RequestEstimate {
    RequestEstimate {
        upper_bound: true,
        ..estimate_request(&ByteBound { exact: counter }, system, messages, tools)
    }
}

/// The largest upper bound the estimator may answer with, for `threshold`.
pub(super) fn bound_limit(threshold: u64) -> usize {
    let limit =
        u128::from(threshold) * u128::from(100 - UPPER_BOUND_HEADROOM_PERCENT.min(100)) / 100;
    usize::try_from(limit).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::context::tokens::{
        count_message, BpeCounter, Encoding, ImageFormula, RequestEstimator,
    };
    use crate::protocol::message::{Image, Part, Reasoning, Role, ToolCall};

    /// An exact counter whose tables are "not ready" until the test says so; it counts
    /// the texts it is asked to count exactly (as the real one does after waiting).
    struct Gated {
        exact: BpeCounter,
        ready: AtomicBool,
        counted: AtomicUsize,
    }

    impl Gated {
        fn new() -> Arc<Self> {
            Arc::new(Self {
                exact: BpeCounter::new(Encoding::O200kBase)
                    .with_image_formula(ImageFormula::Anthropic),
                ready: AtomicBool::new(false),
                counted: AtomicUsize::new(0),
            })
        }
    }

    impl TokenCounter for Gated {
        fn count(&self, text: &str) -> usize {
            self.counted.fetch_add(1, Ordering::SeqCst);
            self.exact.count(text)
        }
        fn image_tokens(&self, width: u32, height: u32) -> usize {
            self.exact.image_tokens(width, height)
        }
        fn is_ready(&self) -> bool {
            self.ready.load(Ordering::SeqCst)
        }
    }

    fn varied_history() -> Vec<Message> {
        vec![
            Message::user("Fix the failing test in src/parser.rs, please. 日本語も。"),
            Message {
                role: Role::Assistant,
                parts: vec![
                    Part::Reasoning(Reasoning {
                        origin: "anthropic".into(),
                        text: "Let me look at the parser first.".into(),
                        signature: Some("sig".into()),
                        ..Reasoning::default()
                    }),
                    Part::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": "src/parser.rs"}),
                    }),
                ],
            },
            Message::tool_result("c1", "fn parse() {}\n".repeat(40), false),
            Message {
                role: Role::User,
                parts: vec![Part::Image(Image {
                    path: "shot.png".into(),
                    media_type: "image/png".into(),
                    width: 1024,
                    height: 768,
                    data: "iVBOR".repeat(1000),
                })],
            },
        ]
    }

    fn tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file from the workspace".into(),
            parameters: serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }]
    }

    #[test]
    fn the_bound_is_never_below_the_exact_estimate() {
        let counter = BpeCounter::new(Encoding::O200kBase);
        let history = varied_history();
        let exact = estimate_request(&counter, "You are pith.", &history, &tools());
        let bound = upper_bound_estimate(&counter, "You are pith.", &history, &tools());
        assert!(bound.upper_bound && !exact.upper_bound);
        assert!(bound.system >= exact.system);
        assert!(bound.tools >= exact.tools);
        assert!(bound.messages >= exact.messages);
        assert!(bound.total >= exact.total);
        for message in &history {
            assert!(
                count_message(&ByteBound { exact: &counter }, message)
                    >= count_message(&counter, message)
            );
        }
    }

    #[test]
    fn far_below_the_threshold_an_unready_counter_is_not_asked() {
        let counter = Gated::new();
        let mut estimator = RequestEstimator::new(counter.clone()).with_upper_bounds_below(100_000);
        let estimate = estimator.estimate("You are pith.", &varied_history(), &tools());
        assert!(estimate.upper_bound);
        assert_eq!(
            counter.counted.load(Ordering::SeqCst),
            0,
            "the counter was asked"
        );
        let exact = estimate_request(&counter.exact, "You are pith.", &varied_history(), &tools());
        assert!(estimate.total >= exact.total);
    }

    #[test]
    fn near_the_threshold_the_estimate_is_an_exact_count() {
        let counter = Gated::new();
        let history = varied_history();
        let bound = upper_bound_estimate(&counter.exact, "sys", &history, &tools()).total as u64;
        // A threshold whose headroom the bound reaches: the estimator counts.
        let threshold = bound + bound / 20;
        let mut estimator =
            RequestEstimator::new(counter.clone()).with_upper_bounds_below(threshold);
        let estimate = estimator.estimate("sys", &history, &tools());
        assert!(!estimate.upper_bound);
        assert!(counter.counted.load(Ordering::SeqCst) > 0);
        assert_eq!(
            estimate,
            estimate_request(&counter.exact, "sys", &history, &tools())
        );
    }

    #[test]
    fn reported_usage_or_a_ready_counter_means_exact_counts() {
        let counter = Gated::new();
        let history = varied_history();
        let mut estimator =
            RequestEstimator::new(counter.clone()).with_upper_bounds_below(1_000_000);
        estimator.record_usage(900, 40, history.len(), 900);
        assert!(!estimator.estimate("sys", &history, &[]).upper_bound);

        let mut estimator =
            RequestEstimator::new(counter.clone()).with_upper_bounds_below(1_000_000);
        assert!(estimator.estimate("sys", &history, &[]).upper_bound);
        counter.ready.store(true, Ordering::SeqCst);
        let estimate = estimator.estimate("sys", &history, &[]);
        assert!(!estimate.upper_bound);
        assert_eq!(
            estimate,
            estimate_request(&counter.exact, "sys", &history, &[])
        );
    }

    #[test]
    fn without_a_threshold_the_estimator_always_counts() {
        let counter = Gated::new();
        let mut estimator = RequestEstimator::new(counter.clone());
        assert!(
            !estimator
                .estimate("sys", &varied_history(), &[])
                .upper_bound
        );
        assert!(counter.counted.load(Ordering::SeqCst) > 0);
    }

    #[test]
    fn the_limit_keeps_the_headroom() {
        assert_eq!(bound_limit(142_500), 128_250);
        assert_eq!(bound_limit(0), 0);
        assert!(bound_limit(u64::MAX) > usize::MAX / 2);
    }
}
