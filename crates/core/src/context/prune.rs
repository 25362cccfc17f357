//! Pruning old tool outputs: the cheap, LLM-free half of micro-compaction.
//!
//! Backward scan over the history (seed 004): the newest `protect` tokens of tool output
//! are never touched; older tool results are replaced by [`PRUNE_PLACEHOLDER`], but only
//! when that frees at least `minimum` tokens and the history has at least
//! `min_user_turns` user messages. User messages, system prompts, assistant text and tool
//! *calls* are never pruned, so the model still sees what it did and why. Results that
//! already are placeholders are skipped. An image a tool returned (a `read` of a
//! screenshot) is tool output too: counted at its provider's image cost, and pruned to its
//! placeholder text (see [`crate::context::images`]).

use serde::Deserialize;

use crate::context::tokens::TokenCounter;
use crate::protocol::message::{Message, Part, Role};

/// What a pruned tool result's content becomes.
pub const PRUNE_PLACEHOLDER: &str = "[Old tool result content cleared]";

/// Prune thresholds (the `prune_*` keys of `[context]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PruneConfig {
    /// Tokens of the newest tool output that are never pruned (default 40 000).
    pub protect: u64,
    /// Prune only when at least this many tokens are freed (default 20 000).
    pub minimum: u64,
    /// Prune only when the history has at least this many user turns (default 2).
    pub min_user_turns: usize,
}

impl Default for PruneConfig {
    fn default() -> Self {
        Self {
            protect: 40_000,
            minimum: 20_000,
            min_user_turns: 2,
        }
    }
}

/// Replaces old tool results by [`PRUNE_PLACEHOLDER`]; returns the new history and the
/// tokens reclaimed (content tokens removed minus placeholder tokens added). When the
/// guards are not met the history is returned unchanged with 0.
pub fn prune_old_tool_outputs(
    history: &[Message],
    counter: &dyn TokenCounter,
    config: &PruneConfig,
) -> (Vec<Message>, u64) {
    let user_turns = history.iter().filter(|m| m.role == Role::User).count();
    if user_turns < config.min_user_turns {
        return (history.to_vec(), 0);
    }
    let placeholder_tokens = counter.count(PRUNE_PLACEHOLDER) as u64;
    let mut protected = 0u64;
    let mut targets: Vec<(usize, usize)> = Vec::new();
    let mut reclaimable = 0u64;
    for (mi, message) in history.iter().enumerate().rev() {
        for (pi, part) in message.parts.iter().enumerate().rev() {
            let (tokens, replacement_tokens) = match part {
                Part::ToolResult(result) if result.content != PRUNE_PLACEHOLDER => {
                    (counter.count(&result.content) as u64, placeholder_tokens)
                }
                Part::Image(image) if message.role == Role::Tool => {
                    let tokens = counter.image_tokens(image.width, image.height);
                    let placeholder = counter.count(&image.placeholder(tokens)) as u64;
                    (tokens as u64, placeholder)
                }
                _ => continue,
            };
            if protected < config.protect {
                protected += tokens;
                continue;
            }
            if tokens > replacement_tokens {
                targets.push((mi, pi));
                reclaimable += tokens - replacement_tokens;
            }
        }
    }
    if reclaimable < config.minimum || targets.is_empty() {
        return (history.to_vec(), 0);
    }
    let mut pruned = history.to_vec();
    for (mi, pi) in targets {
        match pruned[mi].parts.get_mut(pi) {
            Some(Part::ToolResult(result)) => result.content = PRUNE_PLACEHOLDER.to_owned(),
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
        assert_eq!(results[0], PRUNE_PLACEHOLDER);
        assert_eq!(results[1], PRUNE_PLACEHOLDER);
        assert_ne!(results[2], PRUNE_PLACEHOLDER, "inside the protected window");
        assert_ne!(results[3], PRUNE_PLACEHOLDER, "newest result");
        let placeholder = WordCounter.count(PRUNE_PLACEHOLDER) as u64;
        assert_eq!(reclaimed, 60_000 - 2 * placeholder);
        let calls_before: Vec<_> = h.iter().flat_map(|m| m.tool_calls()).collect();
        let calls_after: Vec<_> = out.iter().flat_map(|m| m.tool_calls()).collect();
        assert_eq!(calls_before, calls_after, "tool calls are never pruned");
        assert_eq!(out[1], h[1], "user messages are never pruned");
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
