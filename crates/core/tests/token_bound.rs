//! The upper bound the estimator answers with before the exact counter is ready
//! (`pith_core::tokens::upper_bound_estimate`: every text counted as its bytes) holds on
//! real sessions: no text part has more tokens than bytes in either encoding, and at
//! every request of every session the bound is at least the exact estimate, figure by
//! figure. The vendored sample runs always; the whole shared corpus runs with
//! `cargo test -p pith-core --test token_bound -- --ignored` (`.ci/run` does when the
//! corpus is next to the checkout, and says it skips it otherwise).
//!
//! The whole-corpus run also prints the bytes-per-token floors measured on its two
//! halves (sessions in name order, alternately), to show why pith's floor is 1 byte per
//! token and not a figure measured on text.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_core::tokens::upper_bound_estimate;
use pith_core::{
    BpeCounter, Encoding, Message, RequestEstimator, Role, TokenCounter, ToolCall, ToolDefinition,
};
use serde_json::Value;

/// The exact counter, claiming its tables are not ready: the estimator then answers
/// with the bound.
struct NotReady(BpeCounter);

impl TokenCounter for NotReady {
    fn count(&self, text: &str) -> usize {
        self.0.count(text)
    }
    fn is_ready(&self) -> bool {
        false
    }
}

/// One corpus session: its system prompt and its history.
struct Session {
    name: String,
    system: String,
    messages: Vec<Message>,
}

fn read_session(path: &Path) -> Session {
    let text = std::fs::read_to_string(path).expect("a corpus session is readable UTF-8");
    let mut system = String::new();
    let mut messages = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line).expect("a corpus line is JSON");
        let content = record["content"].as_str().unwrap_or_default().to_owned();
        match record["role"].as_str() {
            Some("system") => system = content,
            Some("user") => messages.push(Message::user(content)),
            Some("assistant") => {
                let calls: Vec<ToolCall> = record["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|call| ToolCall {
                        id: call["id"].as_str().unwrap_or_default().to_owned(),
                        name: call["name"].as_str().unwrap_or_default().to_owned(),
                        arguments: call["arguments"].clone(),
                    })
                    .collect();
                messages.push(Message::assistant_with_calls(content, calls));
            }
            Some("tool") => messages.push(Message::tool_result(
                record["tool_call_id"].as_str().unwrap_or_default(),
                content,
                false,
            )),
            other => panic!("{}: unknown role {other:?}", path.display()),
        }
    }
    Session {
        name: path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into()),
        system,
        messages,
    }
}

fn sessions_in(dir: &Path) -> Vec<Session> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files.iter().map(|f| read_session(f)).collect()
}

fn bash_tool() -> Vec<ToolDefinition> {
    vec![ToolDefinition {
        name: "bash".into(),
        description: "Run a shell command in the repository and return its output.".into(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        }),
    }]
}

/// Bytes per token, the lowest seen: over single text parts, and over whole requests.
#[derive(Debug, Clone, Copy)]
struct Floors {
    part: f64,
    request: f64,
}

/// Checks the bound on `sessions`; returns the o200k floors observed.
fn check(sessions: &[Session]) -> Floors {
    let tools = bash_tool();
    let counters = [
        BpeCounter::new(Encoding::O200kBase),
        BpeCounter::new(Encoding::Cl100kBase),
    ];
    let mut floors = Floors {
        part: f64::MAX,
        request: f64::MAX,
    };
    for session in sessions {
        // Every text part, in both encodings.
        let texts = std::iter::once(session.system.as_str()).chain(
            session
                .messages
                .iter()
                .flat_map(|m| m.parts.iter())
                .filter_map(|part| match part {
                    pith_core::Part::Text { text } => Some(text.as_str()),
                    pith_core::Part::ToolResult(result) => Some(result.content.as_str()),
                    _ => None,
                }),
        );
        for text in texts.filter(|t| !t.is_empty()) {
            for counter in &counters {
                let tokens = counter.count(text);
                assert!(
                    tokens <= text.len(),
                    "{}: {:?} has {tokens} tokens in {} bytes",
                    session.name,
                    counter.encoding(),
                    text.len()
                );
                if counter.encoding() == Encoding::O200kBase {
                    floors.part = floors.part.min(text.len() as f64 / tokens as f64);
                }
            }
        }

        // Every request: the history before each assistant message, and the whole one.
        let mut exact = RequestEstimator::new(Arc::new(counters[0]));
        let mut bounded = RequestEstimator::new(Arc::new(NotReady(counters[0])))
            .with_upper_bounds_below(u64::MAX);
        let requests = session
            .messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.role == Role::Assistant)
            .map(|(i, _)| i)
            .chain([session.messages.len()]);
        for end in requests {
            let history = &session.messages[..end];
            let count = exact.estimate(&session.system, history, &tools);
            let bound = bounded.estimate(&session.system, history, &tools);
            assert!(bound.upper_bound && !count.upper_bound);
            assert_eq!(
                bound,
                upper_bound_estimate(&counters[0], &session.system, history, &tools)
            );
            for (figure, b, c) in [
                ("system", bound.system, count.system),
                ("tools", bound.tools, count.tools),
                ("messages", bound.messages, count.messages),
                ("total", bound.total, count.total),
            ] {
                assert!(
                    b >= c,
                    "{}, request of {end} messages: {figure} bound {b} < count {c}",
                    session.name
                );
            }
            floors.request = floors.request.min(bound.total as f64 / count.total as f64);
        }
    }
    floors
}

#[test]
fn the_upper_bound_holds_on_the_vendored_sample() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus-sample");
    let sessions = sessions_in(&dir);
    assert!(sessions.len() >= 10, "the vendored sample lost sessions");
    let floors = check(&sessions);
    assert!(floors.part >= 1.0 && floors.request >= 1.0, "{floors:?}");
}

/// The shared corpus: `PITH_CORPUS`, else `../shared/corpus/sessions` next to the
/// repository or its worktree parent.
fn shared_corpus() -> PathBuf {
    if let Some(dir) = std::env::var_os("PITH_CORPUS") {
        return PathBuf::from(dir);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    ["../shared/corpus/sessions", "../../shared/corpus/sessions"]
        .iter()
        .map(|relative| root.join(relative))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| {
            panic!(
                "no shared corpus next to {} (set PITH_CORPUS to its sessions directory)",
                root.display()
            )
        })
}

#[test]
#[ignore = "needs the shared corpus (../shared/corpus/sessions, or PITH_CORPUS)"]
fn the_upper_bound_holds_on_the_whole_corpus() {
    let sessions = sessions_in(&shared_corpus());
    assert!(sessions.len() >= 200, "only {} sessions", sessions.len());
    // Two halves, alternately by name: a floor measured on one is checked on the other.
    let (first, second): (Vec<_>, Vec<_>) = sessions
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let first: Vec<Session> = first.into_iter().map(|(_, s)| s).collect();
    let second: Vec<Session> = second.into_iter().map(|(_, s)| s).collect();
    let (a, b) = (check(&first), check(&second));
    println!(
        "o200k bytes per token, lowest: text part {:.3} / {:.3}, whole request {:.3} / {:.3} \
         (halves of {} and {} sessions)",
        a.part,
        b.part,
        a.request,
        b.request,
        first.len(),
        second.len()
    );
    // pith's floor, 1 byte per token, holds on both halves.
    for floors in [a, b] {
        assert!(floors.part >= 1.0 && floors.request >= 1.0, "{floors:?}");
    }
}
