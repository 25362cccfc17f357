//! Dedup of read-only tool results: when the same read-only call (same tool, same
//! canonical JSON arguments) was made again later, the earlier result is superseded and
//! becomes [`DUPLICATE_PLACEHOLDER`].
//!
//! Only the *results* change: the assistant's tool calls stay, so the model still sees
//! what it did. Which tools are read-only is the caller's knowledge
//! (`ToolRegistry::is_read_only`), never a list in this module; mutating tools (write,
//! edit, bash) are therefore never touched, because repeating them can mean something
//! (a retried build). Results whose call id matches no call are left alone. Runs only as
//! part of a compaction step (see [`super::policy`]): rewriting sent history invalidates
//! the provider's prompt cache.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::protocol::message::{Message, Part};

/// What a superseded result's content becomes.
pub const DUPLICATE_PLACEHOLDER: &str = "[Duplicate result: superseded by a later identical call]";

/// What [`collapse`] changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DedupStats {
    /// Results replaced by the placeholder.
    pub results_collapsed: usize,
    /// Bytes of result content removed (net of placeholders).
    pub bytes_removed: usize,
}

/// Arguments serialised with object keys sorted at every depth, so that the same call
/// spelt with different key order has the same key (independent of serde_json's
/// `preserve_order` feature).
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    if let Some(v) = map.get(*k) {
                        write(v, out);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(v, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Replaces every superseded read-only result by [`DUPLICATE_PLACEHOLDER`].
pub fn collapse(
    history: &[Message],
    is_read_only: impl Fn(&str) -> bool,
) -> (Vec<Message>, DedupStats) {
    // call id -> dedup key, for read-only calls only.
    let mut key_of_call: HashMap<&str, (&str, String)> = HashMap::new();
    for message in history {
        for call in message.tool_calls() {
            if is_read_only(&call.name) {
                key_of_call.insert(&call.id, (&call.name, canonical_json(&call.arguments)));
            }
        }
    }
    // The last result position of each key wins.
    let mut last_of_key: HashMap<(&str, &str), (usize, usize)> = HashMap::new();
    for (mi, message) in history.iter().enumerate() {
        for (pi, part) in message.parts.iter().enumerate() {
            if let Part::ToolResult(result) = part {
                if let Some((name, args)) = key_of_call.get(result.call_id.as_str()) {
                    last_of_key.insert((name, args.as_str()), (mi, pi));
                }
            }
        }
    }
    let mut stats = DedupStats::default();
    let mut out = history.to_vec();
    let mut collapsed_messages = Vec::new();
    for (mi, message) in history.iter().enumerate() {
        for (pi, part) in message.parts.iter().enumerate() {
            let Part::ToolResult(result) = part else {
                continue;
            };
            let Some((name, args)) = key_of_call.get(result.call_id.as_str()) else {
                continue;
            };
            if last_of_key.get(&(*name, args.as_str())) == Some(&(mi, pi))
                || result.content == DUPLICATE_PLACEHOLDER
            {
                continue;
            }
            if let Some(Part::ToolResult(target)) = out[mi].parts.get_mut(pi) {
                stats.results_collapsed += 1;
                stats.bytes_removed += target
                    .content
                    .len()
                    .saturating_sub(DUPLICATE_PLACEHOLDER.len());
                target.content = DUPLICATE_PLACEHOLDER.to_owned();
                collapsed_messages.push(mi);
            }
        }
    }
    // An image a superseded `read` returned goes with its result (the newer read has it).
    for mi in collapsed_messages {
        let only_collapsed = out[mi]
            .tool_results()
            .all(|r| r.content == DUPLICATE_PLACEHOLDER);
        if only_collapsed {
            out[mi].parts.retain(|p| !matches!(p, Part::Image(_)));
        }
    }
    (out, stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::ToolCall;
    use serde_json::json;

    fn call(id: &str, name: &str, args: Value) -> Message {
        Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: id.into(),
                name: name.into(),
                arguments: args,
            }],
        )
    }

    fn read_only(name: &str) -> bool {
        matches!(name, "read" | "grep")
    }

    fn content(m: &Message) -> &str {
        &m.tool_results().next().unwrap().content
    }

    #[test]
    fn earlier_identical_read_becomes_placeholder_and_the_call_stays() {
        let h = vec![
            call("1", "read", json!({"path": "a.rs"})),
            Message::tool_result("1", "first", false),
            call("2", "read", json!({"path": "a.rs"})),
            Message::tool_result("2", "second", false),
        ];
        let (out, stats) = collapse(&h, read_only);
        assert_eq!(content(&out[1]), DUPLICATE_PLACEHOLDER);
        assert_eq!(content(&out[3]), "second");
        assert_eq!(out[0], h[0], "the tool call must stay untouched");
        assert_eq!(stats.results_collapsed, 1);
    }

    #[test]
    fn key_order_does_not_matter_but_values_do() {
        let h = vec![
            call("1", "grep", json!({"pattern": "x", "path": "."})),
            Message::tool_result("1", "a", false),
            call("2", "grep", json!({"path": ".", "pattern": "x"})),
            Message::tool_result("2", "b", false),
            call("3", "grep", json!({"path": "src", "pattern": "x"})),
            Message::tool_result("3", "c", false),
        ];
        let (out, _) = collapse(&h, read_only);
        assert_eq!(content(&out[1]), DUPLICATE_PLACEHOLDER);
        assert_eq!(content(&out[3]), "b");
        assert_eq!(content(&out[5]), "c");
    }

    #[test]
    fn mutating_tools_are_never_touched() {
        let h = vec![
            call("1", "bash", json!({"command": "cargo test"})),
            Message::tool_result("1", "3 failed", false),
            call("2", "bash", json!({"command": "cargo test"})),
            Message::tool_result("2", "ok", false),
        ];
        let (out, stats) = collapse(&h, read_only);
        assert_eq!(out, h);
        assert_eq!(stats.results_collapsed, 0);
    }

    #[test]
    fn unmatched_result_ids_are_left_alone() {
        let h = vec![
            Message::tool_result("orphan", "x", false),
            call("1", "read", json!({"path": "a"})),
        ];
        let (out, _) = collapse(&h, read_only);
        assert_eq!(out, h);
    }
}
