//! End-to-end: `pith sessions` and `pith replay` on real and hand-damaged transcripts.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use pith_core::{Message, ToolCall};
use pith_session::{CompactionTrigger, Event, NewSession, SessionStore, TranscriptItem};

struct Fixture {
    home: tempfile::TempDir,
    project: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Self {
        Self {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn store(&self) -> SessionStore {
        SessionStore::at(self.home.path().join("sessions"))
    }

    fn pith(&self) -> Command {
        let mut cmd = Command::cargo_bin("pith").unwrap();
        cmd.env("PITH_HOME", self.home.path())
            .env_remove("XDG_DATA_HOME")
            .current_dir(self.project.path());
        cmd
    }

    /// A session with a user turn, tool use, an automatic compaction and a later turn.
    fn recorded_session(&self) -> (String, PathBuf) {
        let mut session = self
            .store()
            .create(NewSession {
                cwd: self.project.path().to_path_buf(),
                provider: "openai".into(),
                model: "gpt-4o".into(),
            })
            .unwrap();
        session
            .append(Event::user_text("fix the failing test"))
            .unwrap();
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: serde_json::json!({"command": "cargo test"}),
        };
        let messages = vec![
            Message::assistant_with_calls("Running the tests.", vec![call]),
            Message::tool_result("c1", "test parse ... FAILED", true),
        ];
        session
            .append_batch(vec![
                Event::AssistantTurn {
                    messages,
                    items: vec![],
                    usage: None,
                    interrupted: false,
                    error: None,
                    compaction_model_usage: None,
                },
                Event::CompactionApplied {
                    trigger: CompactionTrigger::Auto,
                    messages: vec![Message::user(
                        "<compacted_context>SECRET-SUMMARY</compacted_context>",
                    )],
                    summary: "SECRET-SUMMARY".into(),
                    tokens_before: 182_344,
                    tokens_after: 12_003,
                    usage: None,
                    ledger: None,
                    ledger_tokens: 0,
                    restored_files: Vec::new(),
                    model: None,
                },
            ])
            .unwrap();
        session
            .append(Event::AssistantTurn {
                messages: vec![Message::assistant("Fixed the parser.")],
                items: vec![
                    TranscriptItem::Notice {
                        text: "Context compacted automatically".into(),
                    },
                    TranscriptItem::AssistantText {
                        text: "Fixed the parser.".into(),
                    },
                ],
                usage: None,
                interrupted: false,
                error: None,
                compaction_model_usage: None,
            })
            .unwrap();
        (
            session.id().to_owned(),
            session.transcript_path().to_path_buf(),
        )
    }
}

fn stdout_of(cmd: &mut Command) -> String {
    let output = cmd.output().unwrap();
    assert!(
        output.status.success(),
        "pith failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn replace_line(path: &Path, line_no: usize, new_line: &str) {
    let text = fs::read_to_string(path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[line_no - 1] = new_line;
    fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn append_raw(path: &Path, bytes: &[u8]) {
    fs::OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

#[test]
fn replay_renders_user_text_tool_cards_and_the_compaction_marker() {
    let fx = Fixture::new();
    let (id, _) = fx.recorded_session();
    let text = stdout_of(fx.pith().args(["replay", &id]));
    for expected in [
        "fix the failing test",
        "Running the tests.",
        r#"* bash {"command":"cargo test"}"#,
        "! test parse ... FAILED",
        "context compacted automatically: 182,344 -> 12,003 tokens",
        "-- Context compacted automatically",
        "Fixed the parser.",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !text.contains("SECRET-SUMMARY"),
        "the automatic summary is private:\n{text}"
    );
}

#[test]
fn replay_model_view_starts_from_the_compacted_replacement() {
    let fx = Fixture::new();
    let (id, path) = fx.recorded_session();
    let json = stdout_of(fx.pith().args([
        "replay",
        path.to_str().unwrap(),
        "--view",
        "model",
        "--format",
        "json",
    ]));
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let messages: Vec<Message> = serde_json::from_value(doc["messages"].clone()).unwrap();
    assert_eq!(
        messages,
        vec![
            Message::user("<compacted_context>SECRET-SUMMARY</compacted_context>"),
            Message::assistant("Fixed the parser."),
        ]
    );
    let ui: serde_json::Value = serde_json::from_str(&stdout_of(
        fx.pith().args(["replay", &id, "--format", "json"]),
    ))
    .unwrap();
    let kinds: Vec<&str> = ui["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "user",
            "assistant",
            "compaction",
            "assistant"
        ]
    );
}

#[test]
fn a_corrupt_middle_line_fails_with_its_line_number_unless_skipped() {
    let fx = Fixture::new();
    let (id, path) = fx.recorded_session();
    replace_line(&path, 3, "{\"v\":1,\"seq\":3,\"kind\":");
    let output = fx.pith().args(["replay", &id]).output().unwrap();
    assert_eq!(output.status.code(), Some(1), "corrupt transcript exits 1");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 3 is corrupt") && stderr.contains("--skip-corrupt"),
        "{stderr}"
    );
    let output = fx
        .pith()
        .args(["replay", &id, "--skip-corrupt"])
        .output()
        .unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("skipped corrupt line 3"), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("Fixed the parser."));
}

#[test]
fn a_torn_tail_is_a_warning_not_a_failure() {
    let fx = Fixture::new();
    let (id, path) = fx.recorded_session();
    append_raw(&path, br#"{"v":1,"seq":6,"ts":"2026-11-29T13:1"#);
    let output = fx.pith().args(["replay", &id]).output().unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("warning: line 6 is incomplete"), "{stderr}");
}

#[test]
fn an_unknown_kind_is_reported_and_skipped() {
    let fx = Fixture::new();
    let (id, path) = fx.recorded_session();
    append_raw(
        &path,
        b"{\"v\":1,\"seq\":6,\"ts\":\"2026-11-29T13:10:15.123Z\",\"kind\":\"tool_approval\",\"ok\":true}\n",
    );
    let output = fx.pith().args(["replay", &id]).output().unwrap();
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("\"tool_approval\""), "{stderr}");
    assert!(String::from_utf8_lossy(&output.stdout).contains("Fixed the parser."));
}

#[test]
fn a_foreign_schema_version_is_refused_clearly() {
    let fx = Fixture::new();
    let (id, path) = fx.recorded_session();
    append_raw(
        &path,
        b"{\"v\":7,\"seq\":6,\"ts\":\"2026-11-29T13:10:15.123Z\",\"kind\":\"user_message\"}\n",
    );
    let output = fx.pith().args(["replay", &id]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("line 6") && stderr.contains("schema version 7"),
        "{stderr}"
    );
}

#[test]
fn unknown_sessions_and_bad_arguments_are_usage_errors() {
    let fx = Fixture::new();
    let output = fx.pith().args(["replay", "0000dead"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no session matches"));
    let output = fx
        .pith()
        .args(["replay", "x", "--view", "both"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn sessions_lists_the_current_project_unless_all() {
    let fx = Fixture::new();
    let (id, _) = fx.recorded_session();
    let other = tempfile::tempdir().unwrap();
    fx.store()
        .create(NewSession {
            cwd: other.path().to_path_buf(),
            provider: "anthropic".into(),
            model: "claude".into(),
        })
        .unwrap();
    let table = stdout_of(fx.pith().arg("sessions"));
    assert!(table.contains(&id), "{table}");
    assert!(table.contains("openai/gpt-4o"), "{table}");
    assert!(!table.contains("anthropic/claude"), "{table}");
    let all: serde_json::Value =
        serde_json::from_str(&stdout_of(fx.pith().args(["sessions", "--all", "--json"]))).unwrap();
    assert_eq!(all.as_array().unwrap().len(), 2, "{all}");
    let mine = all
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .unwrap();
    assert_eq!(mine["turns"], 1);
    assert_eq!(mine["model"], "gpt-4o");
}
