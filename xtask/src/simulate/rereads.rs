//! Re-reads: a policy cannot look cheap by forgetting. When the original session relies
//! on a file it printed earlier — a later command edits it, runs it or names it in any
//! other way than printing it again — and the policy has hidden that earlier output
//! (masked, cleared, pruned or summarised away, and not re-attached by a compaction), the
//! simulated model first reads the file again: one more request whose answer is a
//! `read` call, and the output back in the history, where it is carried like any other.
//! A command that prints the file itself is a re-read the session already paid for.

use std::collections::HashMap;

use pith_core::message::{Message, Part, ToolCall};
use pith_core::tokens::count_message;

use super::engine::Replay;
use crate::corpus::CorpusSession;
use crate::fidelity::facts::read_files;

/// Tokens of the assistant's answer that asks for a re-read.
const REREAD_CALL_TOKENS: u64 = 30;

/// The latest output that printed each file.
#[derive(Debug, Default)]
pub(super) struct Rereads {
    /// File → (call id, the output as the policy captured it).
    covering: HashMap<String, (String, String)>,
    made: usize,
}

impl Rereads {
    /// Notes the files a tool message's commands printed.
    pub(super) fn capture(&mut self, session: &CorpusSession, message: &Message) {
        for part in &message.parts {
            if let Part::ToolResult(result) = part {
                let Some(command) = session.commands.get(&result.call_id) else {
                    continue;
                };
                for file in read_files(command) {
                    self.covering
                        .insert(file, (result.call_id.clone(), result.content.clone()));
                }
            }
        }
    }

    /// Before the request that writes `message` (the original assistant message): reads
    /// again every file its commands rely on whose latest output the policy hid.
    pub(super) fn before_request(
        &mut self,
        replay: &mut Replay<'_>,
        _session: &CorpusSession,
        message: &Message,
    ) {
        let mut needed: Vec<String> = Vec::new();
        for part in &message.parts {
            let Part::ToolCall(call) = part else {
                continue;
            };
            let command = call
                .arguments
                .get("command")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            let printed = read_files(command);
            for file in self.covering.keys() {
                if command.contains(file.as_str())
                    && !printed.contains(file)
                    && !needed.contains(file)
                {
                    needed.push(file.clone());
                }
            }
        }
        needed.sort();
        for file in needed {
            let Some((id, content)) = self.covering.get(&file).cloned() else {
                continue;
            };
            if visible(&replay.history, &id, &content) {
                continue;
            }
            if replay.restored_paths.contains(&file) {
                if !replay.restored_used.contains(&file) {
                    replay.outcome.restored_used += 1;
                    replay.restored_used.push(file);
                }
                continue;
            }
            self.made += 1;
            let call_id = format!("reread_{}", self.made);
            replay.reread_request(REREAD_CALL_TOKENS);
            let call = Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: call_id.clone(),
                    name: "read".to_owned(),
                    arguments: serde_json::json!({ "path": file }),
                }],
            );
            let result = Message::tool_result(call_id.clone(), content.clone(), false);
            let tokens = count_message(replay.params.counter.as_ref(), &result) as u64;
            replay.outcome.reread_tokens += tokens;
            replay.outcome.rereads += 1;
            replay.push(call);
            replay.push(result);
            self.covering.insert(file, (call_id, content));
        }
    }
}

/// True when the history still holds the result of `call_id` as it was captured.
fn visible(history: &[Message], call_id: &str, content: &str) -> bool {
    history.iter().rev().any(|m| {
        m.parts.iter().any(|p| match p {
            Part::ToolResult(r) => r.call_id == call_id && r.content == content,
            _ => false,
        })
    })
}
