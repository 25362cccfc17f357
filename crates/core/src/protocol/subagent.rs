//! Subagents: the vocabulary of a child conversation that a tool call (the `task` tool)
//! runs with its own history, budget and transcript.
//!
//! The child's loop events reach the parent's front-end while the call runs: the tool
//! sends them into the [`crate::Progress`] handle of its [`crate::ToolContext`], and the
//! tool loop forwards each, wrapped in a [`crate::SubagentEvent`], to the turn's
//! [`crate::EventSink`] from the turn's own task, in order. When the call ends, its
//! [`crate::ToolResult`] carries a [`ChildRun`]: the link to the child's transcript and
//! what the child used, so the parent's totals can include it.

use serde::{Deserialize, Serialize};

use crate::protocol::usage::Usage;

/// One child conversation a tool call ran: which, and what it used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildRun {
    /// The child's session id (its transcript is a session of the same store).
    #[serde(rename = "session_id")]
    pub session_id: String,
    /// The agent that ran (`explore`, or a configured agent's name).
    #[serde(rename = "agent")]
    pub agent: String,
    /// `provider/model` the child ran with.
    #[serde(rename = "model")]
    pub model: String,
    /// Usage over the child's requests, its compactions included.
    #[serde(rename = "usage")]
    pub usage: Usage,
    /// Model requests the child sent for its turn (compaction requests excluded).
    #[serde(rename = "requests", default)]
    pub requests: u32,
    /// Tool calls the child made.
    #[serde(rename = "tool_calls", default)]
    pub tool_calls: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_run_round_trips_with_its_field_names() {
        let run = ChildRun {
            session_id: "s1".into(),
            agent: "explore".into(),
            model: "openai/gpt".into(),
            usage: Usage {
                input_tokens: 10,
                output_tokens: 2,
                ..Usage::default()
            },
            requests: 2,
            tool_calls: 1,
        };
        let value = serde_json::to_value(&run).unwrap();
        assert_eq!(value["session_id"], "s1");
        assert_eq!(value["tool_calls"], 1);
        assert_eq!(serde_json::from_value::<ChildRun>(value).unwrap(), run);
    }
}
