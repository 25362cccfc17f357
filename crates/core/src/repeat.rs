//! The doom-loop guard: a model that makes the same tool call with the same arguments and
//! gets the same result, over and over (opencode's name for it).
//!
//! [`RepeatTracker`] counts such calls in a row. The loop appends
//! [`repeated_call_note`] to the result from `note_after` on, so the model reads that it
//! is repeating itself; at `stop_after` it asks its [`RepeatGate`] whether to go on. The
//! REPL asks the user; `pith run` has nobody to ask and stops with its own exit code.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::protocol::message::{ToolCall, ToolResult};

/// Counts identical calls with identical results in a row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepeatTracker {
    last: Option<u64>,
    run: u32,
}

impl RepeatTracker {
    /// Takes the next call and its result; returns how many times in a row this exact
    /// call got this exact result (1 for a new one).
    pub fn observe(&mut self, call: &ToolCall, result: &ToolResult) -> u32 {
        let mut hasher = DefaultHasher::new();
        call.name.hash(&mut hasher);
        hash_json(&call.arguments, &mut hasher);
        result.content.hash(&mut hasher);
        result.is_error.hash(&mut hasher);
        let key = hasher.finish();
        if self.last == Some(key) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(key);
            self.run = 1;
        }
        self.run
    }

    /// Starts counting afresh (the user said to go on).
    pub fn reset(&mut self) {
        self.run = 0;
    }
}

/// Hashes `value` with every object's keys in sorted order, so the same arguments in
/// another key order hash alike — whether or not serde_json keeps insertion order (its
/// `preserve_order` feature, which a dependency in the workspace turns on: the ACP SDK).
fn hash_json(value: &serde_json::Value, hasher: &mut impl Hasher) {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            ('{', entries.len()).hash(hasher);
            for (key, item) in entries {
                key.hash(hasher);
                hash_json(item, hasher);
            }
        }
        serde_json::Value::Array(items) => {
            ('[', items.len()).hash(hasher);
            for item in items {
                hash_json(item, hasher);
            }
        }
        scalar => scalar.to_string().hash(hasher),
    }
}

/// The note appended to a result the model got `times` times in a row.
pub fn repeated_call_note(tool: &str, times: u32) -> String {
    format!(
        "\n\n[pith] You have called {tool} with these same arguments {times} times in a row and \
got this same result each time. Calling it again will not change it: use what you have, try \
something different, or say what is blocking you."
    )
}

/// Asked when the model repeats itself `stop_after` times: go on, or stop the turn?
#[async_trait]
pub trait RepeatGate: Send + Sync {
    /// The model called `tool` `times` times in a row with the same arguments and result.
    /// `true` lets the turn go on (the count starts afresh).
    async fn go_on(&self, tool: &str, times: u32, cancel: &CancellationToken) -> bool;
}

/// The gate of a front-end with nobody to ask: always stop.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopRepeating;

#[async_trait]
impl RepeatGate for StopRepeating {
    async fn go_on(&self, _tool: &str, _times: u32, _cancel: &CancellationToken) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(path: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "read".into(),
            arguments: json!({ "path": path, "limit": 10 }),
        }
    }

    fn result(content: &str) -> ToolResult {
        ToolResult::new("c", content, false)
    }

    #[test]
    fn counts_the_same_call_with_the_same_result_in_a_row() {
        let mut tracker = RepeatTracker::default();
        assert_eq!(tracker.observe(&call("a"), &result("x")), 1);
        assert_eq!(tracker.observe(&call("a"), &result("x")), 2);
        assert_eq!(tracker.observe(&call("a"), &result("x")), 3);
        assert_eq!(
            tracker.observe(&call("a"), &result("changed")),
            1,
            "a different result is progress"
        );
        assert_eq!(tracker.observe(&call("b"), &result("changed")), 1);
        assert_eq!(tracker.observe(&call("b"), &result("changed")), 2);
        tracker.reset();
        assert_eq!(tracker.observe(&call("b"), &result("changed")), 1);
    }

    #[test]
    fn argument_order_does_not_matter() {
        let mut tracker = RepeatTracker::default();
        let a = ToolCall {
            arguments: serde_json::from_str(r#"{"path": "a", "limit": 10}"#).unwrap(),
            ..call("a")
        };
        let b = ToolCall {
            arguments: serde_json::from_str(r#"{"limit": 10, "path": "a"}"#).unwrap(),
            ..call("a")
        };
        tracker.observe(&a, &result("x"));
        assert_eq!(tracker.observe(&b, &result("x")), 2);
    }

    #[test]
    fn nested_key_order_does_not_matter_but_values_do() {
        let mut tracker = RepeatTracker::default();
        let with = |text: &str| ToolCall {
            arguments: serde_json::from_str(text).unwrap(),
            ..call("a")
        };
        tracker.observe(
            &with(r#"{"edits": [{"old": "x", "new": "y"}], "path": "a"}"#),
            &result("r"),
        );
        assert_eq!(
            tracker.observe(
                &with(r#"{"path": "a", "edits": [{"new": "y", "old": "x"}]}"#),
                &result("r")
            ),
            2
        );
        assert_eq!(
            tracker.observe(
                &with(r#"{"path": "a", "edits": [{"new": "x", "old": "y"}]}"#),
                &result("r")
            ),
            1,
            "other values are another call"
        );
    }

    #[test]
    fn the_note_names_the_tool_and_the_count() {
        let note = repeated_call_note("bash", 3);
        assert!(note.contains("bash") && note.contains("3 times in a row"));
        assert!(note.trim_start().starts_with("[pith]"));
    }
}
