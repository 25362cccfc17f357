//! Pruning old tool outputs: the cheap, LLM-free half of micro-compaction, and the
//! observation masking of the working set (docs/context-pipeline.md).
//!
//! Backward scan over the history (docs/context-pipeline.md, "Prune and masking"): the newest `protect` tokens of tool output
//! are never touched; older tool results become a masked stub that keeps their facts and
//! the way back to them ([`crate::context::masking`]), but only when that frees at least
//! `minimum` tokens and the history has at least `min_user_turns` user messages. The
//! result of the latest test run and of the latest failing command are never masked:
//! they are what the model works from. User messages, system prompts, assistant text and
//! tool *calls* are never pruned, so the model still sees what it did and why. Results
//! that already are stubs (or the older blank placeholder) are skipped. An image a tool
//! returned (a `read` of a screenshot) is tool output too: counted at its provider's
//! image cost, and pruned to its placeholder text (see [`crate::context::images`]).

use serde::Deserialize;

use std::collections::HashMap;

use crate::context::ledger::{exit_code, shell_command};
use crate::context::masking::{is_masked, mask_stub};
use crate::context::squash::detect::looks_like_test_output;
use crate::context::squash::{command_family, CommandFamily};
use crate::context::tokens::TokenCounter;
use crate::protocol::message::{Message, Part, Role, ToolCall};

/// Prune thresholds (the `prune_*` and `mask_*` keys of `[context]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PruneConfig {
    /// Tokens of the newest tool output that are never pruned (default 40 000).
    pub protect: u64,
    /// Prune only when at least this many tokens are freed (default 20 000).
    pub minimum: u64,
    /// Prune only when the history has at least this many user turns (default 2).
    pub min_user_turns: usize,
    /// Within a working set ([`crate::ContextBudget::working`]), `protect` is at most this
    /// percentage of it (`mask_protect_percent`).
    pub protect_percent: u8,
    /// Within a working set, `minimum` — the batch one rewrite of the prompt cache
    /// buys — is at most this percentage of it (`mask_batch_percent`).
    pub minimum_percent: u8,
}

/// Default of [`PruneConfig::protect_percent`].
pub const DEFAULT_MASK_PROTECT_PERCENT: u8 = 25;
/// Default of [`PruneConfig::minimum_percent`].
pub const DEFAULT_MASK_BATCH_PERCENT: u8 = 25;
/// What prune must free at least when the prompt cache has expired anyway (rewriting
/// costs nothing extra then): a stub is no saving below this.
pub const COLD_MINIMUM_TOKENS: u64 = 1_000;

impl Default for PruneConfig {
    fn default() -> Self {
        Self {
            protect: 40_000,
            minimum: 20_000,
            min_user_turns: 2,
            protect_percent: DEFAULT_MASK_PROTECT_PERCENT,
            minimum_percent: DEFAULT_MASK_BATCH_PERCENT,
        }
    }
}

impl PruneConfig {
    /// The thresholds for one request under `budget`: within a working set, `protect` and
    /// `minimum` shrink to their percentages of it (the absolute figures are meant for
    /// the whole window); when the prompt cache is `cold`, any saving of at least
    /// [`COLD_MINIMUM_TOKENS`] is worth it.
    pub fn within(self, budget: &crate::ContextBudget, cold: bool) -> Self {
        let mut config = self;
        if budget.has_working_set() {
            let working = budget.working_budget();
            config.protect = config
                .protect
                .min(working * u64::from(self.protect_percent.min(100)) / 100);
            config.minimum = config
                .minimum
                .min(working * u64::from(self.minimum_percent.min(100)) / 100);
        }
        if cold {
            config.minimum = config.minimum.min(COLD_MINIMUM_TOKENS);
        }
        config
    }
}

/// Replaces old tool results by their masked stubs; returns the new history and the
/// tokens reclaimed (content tokens removed minus stub tokens added). When the guards
/// are not met the history is returned unchanged with 0.
pub fn prune_old_tool_outputs(
    history: &[Message],
    counter: &dyn TokenCounter,
    config: &PruneConfig,
) -> (Vec<Message>, u64) {
    let user_turns = history.iter().filter(|m| m.role == Role::User).count();
    if user_turns < config.min_user_turns {
        return (history.to_vec(), 0);
    }
    let calls: HashMap<&str, &ToolCall> = history
        .iter()
        .flat_map(|m| m.tool_calls())
        .map(|c| (c.id.as_str(), c))
        .collect();
    let kept = working_results(history, &calls);
    let mut protected = 0u64;
    let mut targets: Vec<(usize, usize, String)> = Vec::new();
    let mut reclaimable = 0u64;
    for (mi, message) in history.iter().enumerate().rev() {
        for (pi, part) in message.parts.iter().enumerate().rev() {
            let (tokens, replacement_tokens, stub) = match part {
                Part::ToolResult(result) if !is_masked(&result.content) => {
                    let stub = mask_stub(calls.get(result.call_id.as_str()).copied(), result);
                    let tokens = counter.count(&result.content) as u64;
                    if kept.contains(&result.call_id.as_str()) {
                        protected += tokens;
                        continue;
                    }
                    (tokens, counter.count(&stub) as u64, Some(stub))
                }
                Part::Image(image) if message.role == Role::Tool => {
                    let tokens = counter.image_tokens(image.width, image.height);
                    let placeholder = counter.count(&image.placeholder(tokens)) as u64;
                    (tokens as u64, placeholder, None)
                }
                _ => continue,
            };
            if protected < config.protect {
                protected += tokens;
                continue;
            }
            if tokens > replacement_tokens {
                targets.push((mi, pi, stub.unwrap_or_default()));
                reclaimable += tokens - replacement_tokens;
            }
        }
    }
    if reclaimable < config.minimum || targets.is_empty() {
        return (history.to_vec(), 0);
    }
    let mut pruned = history.to_vec();
    for (mi, pi, stub) in targets {
        match pruned[mi].parts.get_mut(pi) {
            Some(Part::ToolResult(result)) => result.content = stub,
            Some(part @ Part::Image(_)) => {
                if let Some(text) = crate::context::images::image_placeholder(part, counter) {
                    *part = text;
                }
            }
            _ => {}
        }
    }
    (pruned, reclaimable)
}

/// The call ids of the results the model works from, never masked: the latest test
/// run's and the latest failing command's.
fn working_results<'a>(history: &'a [Message], calls: &HashMap<&str, &ToolCall>) -> Vec<&'a str> {
    let mut latest_test = None;
    let mut latest_failure = None;
    for result in history.iter().flat_map(|m| m.tool_results()) {
        if is_masked(&result.content) {
            continue;
        }
        let command = calls
            .get(result.call_id.as_str())
            .and_then(|call| shell_command(call));
        let is_test = command
            .as_deref()
            .is_some_and(|c| command_family(c) == CommandFamily::TestRunner)
            || looks_like_test_output(&result.content);
        if is_test {
            latest_test = Some(result.call_id.as_str());
        }
        if result.is_error || exit_code(&result.content).is_some_and(|code| code != 0) {
            latest_failure = Some(result.call_id.as_str());
        }
    }
    latest_test.into_iter().chain(latest_failure).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::ToolCall;

    /// One token per whitespace-separated word: makes the thresholds easy to reason about.
    struct WordCounter;
    impl TokenCounter for WordCounter {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    fn words(n: usize) -> String {
        "w ".repeat(n)
    }

    fn turn(id: &str, result_words: usize) -> Vec<Message> {
        vec![
            Message::assistant_with_calls(
                "looking",
                vec![ToolCall {
                    id: id.into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": id}),
                }],
            ),
            Message::tool_result(id, words(result_words), false),
        ]
    }

    fn history(results: &[usize], users: usize) -> Vec<Message> {
        let mut h = vec![Message::system("sys")];
        for u in 0..users {
            h.push(Message::user(format!("task {u}")));
        }
        for (i, n) in results.iter().enumerate() {
            h.extend(turn(&format!("c{i}"), *n));
        }
        h
    }

    #[test]
    fn newest_forty_thousand_tokens_are_protected_and_older_results_cleared() {
        let h = history(&[30_000, 30_000, 25_000, 25_000], 2);
        let (out, reclaimed) = prune_old_tool_outputs(&h, &WordCounter, &PruneConfig::default());
        let results: Vec<&str> = out
            .iter()
            .flat_map(|m| m.tool_results())
            .map(|r| r.content.as_str())
            .collect();
        assert!(results[0].starts_with("[masked to save context: read c0 — "));
        assert!(results[1].starts_with("[masked to save context: read c1 — "));
        assert!(!is_masked(results[2]), "inside the protected window");
        assert!(!is_masked(results[3]), "newest result");
        let stubs = (WordCounter.count(results[0]) + WordCounter.count(results[1])) as u64;
        assert_eq!(reclaimed, 60_000 - stubs);
        let calls_before: Vec<_> = h.iter().flat_map(|m| m.tool_calls()).collect();
        let calls_after: Vec<_> = out.iter().flat_map(|m| m.tool_calls()).collect();
        assert_eq!(calls_before, calls_after, "tool calls are never pruned");
        assert_eq!(out[1], h[1], "user messages are never pruned");
    }

    #[test]
    fn the_latest_test_run_and_the_latest_failure_are_never_masked() {
        let mut h = history(&[30_000, 30_000], 2);
        let bash = |id: &str, command: &str| {
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: id.into(),
                    name: "bash".into(),
                    arguments: serde_json::json!({"command": command}),
                }],
            )
        };
        // Old, then the test run and a failing command: both old enough to be masked.
        h.push(bash("t", "python -m pytest tests"));
        h.push(Message::tool_result(
            "t",
            format!(
                "{}
[exit code: 1]",
                words(20_000)
            ),
            true,
        ));
        h.push(bash("f", "make build"));
        h.push(Message::tool_result(
            "f",
            format!(
                "{}
[exit code: 2]",
                words(20_000)
            ),
            true,
        ));
        h.extend(turn("new", 45_000));
        let (out, reclaimed) = prune_old_tool_outputs(&h, &WordCounter, &PruneConfig::default());
        assert!(reclaimed > 0);
        let content = |id: &str| {
            out.iter()
                .flat_map(|m| m.tool_results())
                .find(|r| r.call_id == id)
                .map(|r| r.content.clone())
                .unwrap()
        };
        assert!(is_masked(&content("c0")) && is_masked(&content("c1")));
        assert!(!is_masked(&content("t")), "the latest test run");
        assert!(!is_masked(&content("f")), "the latest failure");
    }

    #[test]
    fn nothing_happens_below_the_minimum_saving() {
        let h = history(&[10_000, 45_000], 3);
        let (out, reclaimed) = prune_old_tool_outputs(&h, &WordCounter, &PruneConfig::default());
        assert_eq!(reclaimed, 0);
        assert_eq!(out, h);
    }

    #[test]
    fn nothing_happens_with_fewer_than_two_user_turns() {
        let h = history(&[50_000, 50_000, 50_000], 1);
        let (out, reclaimed) = prune_old_tool_outputs(&h, &WordCounter, &PruneConfig::default());
        assert_eq!(reclaimed, 0);
        assert_eq!(out, h);
    }

    #[test]
    fn old_screenshots_a_tool_returned_become_placeholders() {
        use crate::protocol::message::Image;
        /// Words for text; a flat 30 000 tokens per image.
        struct Screens;
        impl TokenCounter for Screens {
            fn count(&self, text: &str) -> usize {
                text.split_whitespace().count()
            }
            fn image_tokens(&self, _: u32, _: u32) -> usize {
                30_000
            }
        }
        let mut h = history(&[1, 1, 1], 2);
        for message in h.iter_mut().filter(|m| m.role == Role::Tool) {
            message.parts.push(Part::Image(Image {
                path: "shot.png".into(),
                media_type: "image/png".into(),
                width: 800,
                height: 600,
                data: "AAAA".into(),
            }));
        }
        let (out, reclaimed) = prune_old_tool_outputs(&h, &Screens, &PruneConfig::default());
        let images: Vec<usize> = out.iter().map(|m| m.images().count()).collect();
        assert_eq!(
            images.iter().sum::<usize>(),
            2,
            "the newest two stay: {images:?}"
        );
        assert!(reclaimed > 29_000, "{reclaimed}");
        assert!(out.iter().any(|m| m
            .text_content()
            .starts_with("[image: shot.png, 800×600, ~30000 tokens")));
    }
}
