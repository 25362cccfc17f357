//! End-to-end: pins through the real `pith run` binary against the testkit server. A
//! pinned file (as it is on disk at each compaction) and a pinned note are in every
//! request after two compactions, a resume and a fork; a pin that does not fit the budget
//! is named, at `--pin` and at a compaction, and the others are kept.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{json_lines, records, stderr, stdout, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window
const NOTE: &str = "NOTE-7731 ship on friday, never touch the public API";
const SPEC_V1: &str = "SPEC-V1 the parser accepts signed integers only";
const SPEC_V2: &str = "SPEC-V2 the parser accepts signed and unsigned integers";

/// A turn that reads `notes.txt` and reports usage over the compaction threshold.
fn over_the_threshold() -> Turn {
    Turn::text("Reading.")
        .with_tool_call("read", json!({"path": "notes.txt"}))
        .with_usage(180_000, 40)
}

fn body(server: &TestServer, index: usize) -> String {
    server.requests()[index].body.to_string()
}

/// The text of the first message of request `index` (a replacement, after a compaction).
fn first_text(server: &TestServer, index: usize) -> String {
    server.requests()[index].body["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn pins_are_in_every_request_after_two_compactions_a_resume_and_a_fork() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    std::fs::write(workspace.join("notes.txt"), "nothing much\n").unwrap();
    std::fs::write(workspace.join("spec.md"), format!("{SPEC_V1}\n")).unwrap();
    std::fs::write(workspace.join("grows.md"), "GROWS small for now\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        // Job 1: the first compaction.
        over_the_threshold(),
        Turn::text("## Goal\nFirst summary."),
        Turn::text("Done one."),
        // Job 2 (resumed, after spec.md changed and grows.md grew past the budget): the
        // second compaction.
        over_the_threshold(),
        Turn::text("## Goal\nSecond summary."),
        Turn::text("Done two."),
        // Job 3 (a fork of the session).
        Turn::text("Done three."),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();

    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--pin",
            "spec.md",
            "--pin",
            "grows.md",
            "--pin-note",
            NOTE,
            "read notes.txt",
        ],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let report: Value = serde_json::from_str(stdout(&first).trim()).unwrap();
    let session_id = report["session_id"].as_str().unwrap().to_owned();
    assert_eq!(
        report["compactions"].as_array().unwrap().len(),
        1,
        "{report}"
    );
    assert_eq!(server.requests().len(), 3);
    for index in 0..3 {
        let body = body(&server, index);
        assert!(
            body.contains(SPEC_V1),
            "request {index} has the pinned file: {body}"
        );
        assert!(
            body.contains(NOTE),
            "request {index} has the pinned note: {body}"
        );
        assert!(body.contains("GROWS small"), "request {index}: {body}");
    }
    // The first request carries the pins in a part of their own, after the user's words;
    // the request after the compaction in the replacement, once.
    let first_request = &server.requests()[0].body;
    let parts = first_request["messages"][0]["content"].as_array().unwrap();
    assert_eq!(parts[0]["text"], json!("read notes.txt"));
    assert!(parts[1]["text"].as_str().unwrap().starts_with("<pinned>"));
    let replacement = first_text(&server, 2);
    assert!(
        replacement.starts_with("<compacted_context>") && replacement.contains("<pinned>"),
        "{replacement}"
    );
    assert_eq!(
        replacement.matches(NOTE).count(),
        1,
        "carried once: {replacement}"
    );

    // Between the jobs: spec.md changes, grows.md grows past the pins budget.
    std::fs::write(workspace.join("spec.md"), format!("{SPEC_V2}\n")).unwrap();
    let big: String = (0..4_000)
        .map(|i| format!("GROWS line {i} of filler\n"))
        .collect();
    std::fs::write(workspace.join("grows.md"), big).unwrap();

    let second = sandbox.run(
        &server,
        &["--session", &session_id, "--format", "stream-json", "go on"],
    );
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    let events = json_lines(&second);
    assert!(
        events.iter().any(|e| e["type"] == "compaction"),
        "the second compaction: {events:?}"
    );
    let named = events
        .iter()
        .filter(|e| e["type"] == "notice")
        .filter_map(|e| e["text"].as_str())
        .find(|text| text.contains("pinned grows.md"))
        .unwrap_or_else(|| panic!("the pin over the budget is named: {events:?}"));
    assert!(named.contains("pins_percent"), "{named}");
    assert_eq!(server.requests().len(), 6);
    // Request 3 continues the history (the first replacement: the file as it was then).
    assert!(body(&server, 3).contains(SPEC_V1) && body(&server, 3).contains(NOTE));
    // After the second compaction: the file as it is now, the note, and grows.md named
    // in place of its content.
    let after = first_text(&server, 5);
    assert!(after.contains(SPEC_V2), "the current content: {after}");
    assert!(!after.contains(SPEC_V1), "not the old one: {after}");
    assert!(after.contains(NOTE), "{after}");
    assert!(
        after.contains("<pinned_file path=\"grows.md\" left_out="),
        "{after}"
    );
    assert!(!body(&server, 5).contains("GROWS line 3999"));

    let third = sandbox.run(
        &server,
        &["--fork", &session_id, "--format", "json", "and the fork"],
    );
    assert_eq!(third.status.code(), Some(0), "stderr: {}", stderr(&third));
    let forked = body(&server, 6);
    assert!(
        forked.contains(SPEC_V2) && forked.contains(NOTE),
        "{forked}"
    );

    // The transcript holds the pins as records, and replay names them.
    let transcripts = common::transcripts(&sandbox.pith_home().join("sessions"));
    let original = transcripts
        .iter()
        .find(|path| path.display().to_string().contains(&session_id))
        .unwrap();
    let pins: Vec<Value> = records(original)
        .into_iter()
        .filter(|r| r["kind"] == "pin")
        .collect();
    assert_eq!(pins.len(), 3, "{pins:?}");
    assert_eq!(pins[2]["pin"], json!({"type": "note", "text": NOTE}));
    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    let text = stdout(&replay);
    assert!(text.contains("-- pinned spec.md"), "{text}");
    assert!(
        !text.contains("<pinned>"),
        "the pins block is not shown as the user's words: {text}"
    );
}

#[test]
fn a_pin_over_the_budget_is_refused_by_name_and_nothing_is_sent() {
    let sandbox = Sandbox::new();
    let big: String = (0..4_000)
        .map(|i| format!("line {i} of a large file\n"))
        .collect();
    std::fs::write(sandbox.workspace().join("big.md"), big).unwrap();
    let server = TestServer::start(Script::anthropic([Turn::text("never")])).unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--pin", "big.md", "summarise big.md"],
    );
    assert_eq!(output.status.code(), Some(2), "stdout: {}", stdout(&output));
    let said = stderr(&output);
    assert!(
        said.contains("not pinned: pinned big.md") && said.contains("pins_percent"),
        "{said}"
    );
    assert!(server.requests().is_empty());

    let missing = sandbox.run(&server, &["--model", MODEL, "--pin", "nope.md", "go"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("cannot pin nope.md"),
        "{}",
        stderr(&missing)
    );
    assert!(server.requests().is_empty());
}
