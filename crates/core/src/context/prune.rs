//! Pruning old tool outputs: the cheap, LLM-free half of micro-compaction.
//!
//! Backward scan over the history (seed 004): the newest `protect` tokens of tool output
//! are never touched; older tool results are replaced by [`PRUNE_PLACEHOLDER`], but only
//! when that frees at least `minimum` tokens and the history has at least
//! `min_user_turns` user messages. User messages, system prompts, assistant text and tool
//! *calls* are never pruned, so the model still sees what it did and why. Results that
//! already are placeholders are skipped.

use serde::Deserialize;

use crate::message::{Message, Part, Role};
use crate::tokens::TokenCounter;

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
            let Part::ToolResult(result) = part else {
                continue;
            };
            if result.content == PRUNE_PLACEHOLDER {
                continue;
            }
            let tokens = counter.count(&result.content) as u64;
            if protected < config.protect {
                protected += tokens;
                continue;
            }
            if tokens > placeholder_tokens {
                targets.push((mi, pi));
                reclaimable += tokens - placeholder_tokens;
            }
        }
    }
    if reclaimable < config.minimum || targets.is_empty() {
        return (history.to_vec(), 0);
    }
    let mut pruned = history.to_vec();
    for (mi, pi) in targets {
        if let Some(Part::ToolResult(result)) = pruned[mi].parts.get_mut(pi) {
            result.content = PRUNE_PLACEHOLDER.to_owned();
        }
    }
    (pruned, reclaimable)
}
