//! Reading whole corpus sessions (the neutral JSONL format of `/work/shared/corpus`) as
//! pith messages, for the simulator and the benchmarks.
//!
//! `eval_core::samples_from_session` extracts only the tool results (it is shared with a
//! pith-core test through `#[path]`, so it cannot depend on this module); this module
//! keeps the whole conversation in order: the system prompt, user and assistant messages
//! with their tool calls, and tool results with their exit codes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use pith_core::message::{Message, ToolCall};
use serde_json::Value;

/// One session of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusSession {
    /// The file stem of the session (`django__django-11815`); empty when parsed from text.
    pub name: String,
    /// The system prompt (empty when the session has none).
    pub system: String,
    /// The conversation without the system prompt, in order.
    pub messages: Vec<Message>,
    /// The 0-based line of the session file each message came from (the system prompt,
    /// blank and malformed lines make it differ from the message's index).
    pub file_lines: Vec<usize>,
    /// The bash command of every tool call, by call id.
    pub commands: HashMap<String, String>,
    /// The recorded exit code of every tool result, by call id.
    pub exit_codes: HashMap<String, i32>,
    /// Lines that were not valid JSON objects (skipped).
    pub malformed_lines: usize,
    /// The index in `messages` where each task begins: its first user message, which a
    /// person typed. A corpus session is one task; its later user-role messages are the
    /// harness's (mini-swe-agent's format errors, the diff it echoes on submission), sent
    /// the moment the model answered. The simulator's user pauses before a task only.
    pub task_starts: Vec<usize>,
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Parses one session. Malformed lines and unknown roles are counted and skipped.
pub fn parse_session(jsonl: &str) -> CorpusSession {
    let mut session = CorpusSession {
        name: String::new(),
        system: String::new(),
        messages: Vec::new(),
        file_lines: Vec::new(),
        commands: HashMap::new(),
        exit_codes: HashMap::new(),
        malformed_lines: 0,
        task_starts: Vec::new(),
    };
    for (number, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            session.malformed_lines += 1;
            continue;
        };
        let content = str_field(&value, "content");
        match str_field(&value, "role") {
            "system" => {
                if !session.system.is_empty() {
                    session.system.push('\n');
                }
                session.system.push_str(content);
            }
            "user" => {
                if session.task_starts.is_empty() {
                    session.task_starts.push(session.messages.len());
                }
                session.messages.push(Message::user(content));
            }
            "assistant" => {
                let calls: Vec<ToolCall> = value
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(|calls| {
                        calls
                            .iter()
                            .map(|call| ToolCall {
                                id: str_field(call, "id").to_owned(),
                                name: str_field(call, "name").to_owned(),
                                arguments: call.get("arguments").cloned().unwrap_or(Value::Null),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                for call in &calls {
                    let command = call
                        .arguments
                        .get("command")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    session.commands.insert(call.id.clone(), command.to_owned());
                }
                session
                    .messages
                    .push(Message::assistant_with_calls(content, calls));
            }
            "tool" => {
                let id = str_field(&value, "tool_call_id");
                let exit_code = value
                    .get("exit_code")
                    .and_then(Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok());
                if let Some(code) = exit_code {
                    session.exit_codes.insert(id.to_owned(), code);
                }
                session.messages.push(Message::tool_result(
                    id,
                    content,
                    exit_code.is_some_and(|c| c != 0),
                ));
            }
            _ => session.malformed_lines += 1,
        }
        session.file_lines.resize(session.messages.len(), number);
    }
    session
}

/// The `*.jsonl` files of `dir`, sorted by name.
pub fn session_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading session directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no *.jsonl sessions in {}", dir.display());
    }
    Ok(files)
}

/// Reads and parses every session of `dir`.
pub fn read_sessions(dir: &Path) -> Result<Vec<CorpusSession>> {
    session_files(dir)?
        .iter()
        .map(|file| {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut session = parse_session(&text);
            session.name = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok(session)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::Role;

    #[test]
    fn a_neutral_session_becomes_system_prompt_plus_ordered_messages() {
        let jsonl = concat!(
            r#"{"role":"system","content":"You are an agent."}"#,
            "\n",
            r#"{"role":"user","content":"fix it"}"#,
            "\n",
            r#"{"role":"assistant","content":"THOUGHT: look","tool_calls":[{"id":"call_1","name":"bash","arguments":{"command":"ls"}}]}"#,
            "\n",
            r#"{"role":"tool","tool_call_id":"call_1","exit_code":2,"content":"a.py"}"#,
            "\n",
            "not json\n",
        );
        let s = parse_session(jsonl);
        assert_eq!(s.system, "You are an agent.");
        let roles: Vec<Role> = s.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::Tool]);
        assert_eq!(s.commands["call_1"], "ls");
        assert_eq!(s.exit_codes["call_1"], 2);
        assert!(s.messages[2].tool_results().all(|r| r.is_error));
        assert_eq!(s.malformed_lines, 1, "the non-JSON line must be counted");
    }

    #[test]
    fn only_the_first_user_message_starts_a_task_the_rest_are_the_harness_s() {
        let jsonl = concat!(
            r#"{"role":"user","content":"<pr_description>fix it</pr_description>"}"#,
            "\n",
            r#"{"role":"assistant","content":"two blocks"}"#,
            "\n",
            r#"{"role":"user","content":"Please always provide EXACTLY ONE action in triple backticks, found 2 actions."}"#,
            "\n",
            r#"{"role":"assistant","content":"one block"}"#,
            "\n",
        );
        let s = parse_session(jsonl);
        assert_eq!(s.messages.len(), 4);
        assert_eq!(s.task_starts, [0]);
        assert!(parse_session("").task_starts.is_empty());
    }
}
