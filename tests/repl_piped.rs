//! The REPL without a terminal: `pith` reads one input per line from a pipe, prints plain
//! text (no escape codes, no loader), and persists like the interactive REPL. Runs the
//! real binary against pith-testkit.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::path::Path;

use assert_cmd::Command;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::Value;

fn pith(root: &Path, server: &TestServer) -> Command {
    let project = root.join("project");
    std::fs::create_dir_all(&project).unwrap();
    let mut command = Command::cargo_bin("pith").unwrap();
    command
        .current_dir(&project)
        .env_clear()
        .env("PITH_HOME", root.join("home"))
        .env("HOME", root)
        .env("XDG_CONFIG_HOME", root.join("config"))
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "dummy-key")
        .args(["--model", "anthropic/claude-sonnet-4-5"]);
    command
}

fn transcripts(root: &Path) -> Vec<Vec<Value>> {
    let sessions = root.join("home").join("sessions");
    let mut found = Vec::new();
    let Ok(projects) = std::fs::read_dir(&sessions) else {
        return found;
    };
    for project in projects {
        for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let text =
                std::fs::read_to_string(session.unwrap().path().join("transcript.jsonl")).unwrap();
            found.push(
                text.lines()
                    .map(|line| serde_json::from_str(line).unwrap())
                    .collect(),
            );
        }
    }
    found
}

#[test]
fn piped_input_runs_turns_and_commands_and_persists_a_manual_compaction() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("First **answer**."),
        Turn::text("## Goal\nPIPED-SUMMARY"),
        Turn::text("Second answer."),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let output = pith(root.path(), &server)
        .write_stdin(
            "/ledger\nhello\n/context\n/ledger\n/compact keep the parser\nand then?\n/frobnicate\n/exit\n",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");
    assert!(
        !stdout.contains('\x1b'),
        "piped output must have no escape codes: {stdout:?}"
    );
    assert!(stdout.contains("First **answer**."), "{stdout}");
    assert!(
        stdout.contains("tool definitions"),
        "/context report missing: {stdout}"
    );
    assert!(
        stdout.contains("PIPED-SUMMARY"),
        "the manual summary is shown: {stdout}"
    );
    assert!(stdout.contains("Context compacted ("), "{stdout}");
    assert!(
        stdout.contains("The session ledger is empty"),
        "/ledger before any message: {stdout}"
    );
    assert!(
        stdout.contains("Session ledger: ")
            && stdout.contains("carried verbatim by the next compaction"),
        "/context shows the ledger's size: {stdout}"
    );
    let ledger_at = stdout
        .find("<session_ledger>")
        .expect("/ledger shows the ledger");
    assert!(
        stdout[ledger_at..].contains("--- message 1\nhello\n"),
        "the user's message is in the ledger: {stdout}"
    );
    assert!(stdout.contains("Second answer."), "{stdout}");
    assert!(stdout.contains("unknown command /frobnicate"), "{stdout}");

    let requests = server.requests();
    assert!(requests[1].body["messages"]
        .to_string()
        .contains("keep the parser"));
    let transcripts = transcripts(root.path());
    assert_eq!(transcripts.len(), 1);
    let kinds: Vec<&str> = transcripts[0]
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec![
            "session_started",
            "user_message",
            "assistant_turn",
            "compaction_applied",
            "user_message",
            "assistant_turn"
        ]
    );
    assert_eq!(transcripts[0][3]["trigger"], "manual");
}

#[test]
fn a_session_left_without_a_message_is_not_kept_and_continue_resumes_the_latest() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("Remembered."),
        Turn::text("CONTINUED-ANSWER"),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    pith(root.path(), &server)
        .write_stdin("/exit\n")
        .assert()
        .success();
    assert!(
        transcripts(root.path()).is_empty(),
        "an unused session must be removed"
    );
    pith(root.path(), &server)
        .write_stdin("remember this\n")
        .assert()
        .success();
    let output = pith(root.path(), &server)
        .arg("--continue")
        .write_stdin("what did I say?\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("remember this"),
        "the resumed conversation is shown: {stdout}"
    );
    assert!(stdout.contains("CONTINUED-ANSWER"), "{stdout}");
    assert_eq!(
        transcripts(root.path()).len(),
        1,
        "--continue reuses the session"
    );
    let second = server.requests()[1].body["messages"].to_string();
    assert!(
        second.contains("remember this") && second.contains("Remembered."),
        "the continued request carries the earlier conversation: {second}"
    );
}

#[test]
fn resume_switches_to_another_session_and_shows_its_conversation() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("Remembered."),
        Turn::text("RESUMED-ANSWER"),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    pith(root.path(), &server)
        .write_stdin("remember this\n")
        .assert()
        .success();
    let sessions = root.path().join("home").join("sessions");
    let project = std::fs::read_dir(&sessions)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let id = std::fs::read_dir(project)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name()
        .into_string()
        .unwrap();
    let output = pith(root.path(), &server)
        .write_stdin(format!("/resume {id}\n/resume {id}\nwhat did I say?\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.contains("remember this"),
        "the resumed conversation is shown: {stdout}"
    );
    assert!(stdout.contains("That is the current session."), "{stdout}");
    assert!(stdout.contains("RESUMED-ANSWER"), "{stdout}");
    assert_eq!(
        transcripts(root.path()).len(),
        1,
        "the new session left unused is removed after /resume"
    );
    let second = server.requests()[1].body["messages"].to_string();
    assert!(second.contains("remember this") && second.contains("Remembered."));
}

/// A 1×1 PNG.
const PNG_1X1: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

#[test]
fn at_path_attaches_an_image_and_reasoning_is_collapsed_never_answer_text() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("A single pixel.").with_reasoning("The image is tiny, one transparent pixel."),
        Turn::text("Nothing to attach."),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(project.join("shots")).unwrap();
    std::fs::write(project.join("shots/one.png"), PNG_1X1).unwrap();
    let output = pith(root.path(), &server)
        .args(["--reasoning", "2000"])
        .write_stdin("what is in @shots/one.png?\n/context\nand @missing.png?\n/exit\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");

    // The reasoning shows as one collapsed line before the answer, never as its text.
    let thought = stdout
        .find("\u{25b8} thought (7 words)")
        .unwrap_or_else(|| panic!("no collapsed reasoning line: {stdout}"));
    let answer = stdout.find("A single pixel.").expect("the answer");
    assert!(thought < answer, "{stdout}");
    assert!(!stdout.contains("one transparent pixel"), "{stdout}");

    // The image went with the user message, in Anthropic's form, after the text.
    let requests = server.requests();
    let content = &requests[0].body["messages"][0]["content"];
    assert_eq!(
        content[0]["text"], "what is in @shots/one.png?",
        "{content}"
    );
    assert_eq!(content[1]["type"], "image", "{content}");
    assert_eq!(content[1]["source"]["type"], "base64");
    assert_eq!(content[1]["source"]["media_type"], "image/png");

    // `/context` counts it in a row of its own.
    let images_row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("images"))
        .unwrap_or_else(|| panic!("no images row: {stdout}"));
    assert!(!images_row.trim_end().ends_with(" 0"), "{images_row}");

    // A path that is no image file is said so, and the message goes without it.
    assert!(stdout.contains("@missing.png: not attached"), "{stdout}");
    let second = requests[1].body["messages"].as_array().unwrap();
    let last = second.last().unwrap();
    assert!(
        !last.to_string().contains("\"image\""),
        "nothing attached: {last}"
    );

    // The transcript keeps the image with the user message.
    let transcripts = transcripts(root.path());
    let user = transcripts[0]
        .iter()
        .find(|r| r["kind"] == "user_message")
        .unwrap();
    let parts = user["message"]["parts"].as_array().unwrap();
    assert!(parts.iter().any(|p| p["type"] == "image"), "{user}");
}

#[test]
fn a_subagent_runs_from_the_repl_and_context_lists_what_it_used() {
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call(
            "task",
            serde_json::json!({"description": "find the parser", "prompt": "Where is the parser?"}),
        ),
        Turn::text("CHILD-REPORT: src/parse.rs:1").with_usage(4_000, 100),
        Turn::text("The parser is in src/parse.rs."),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let output = pith(root.path(), &server)
        .write_stdin("where is the parser?\n/context\n/exit\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");
    assert!(
        stdout.contains("[explore] subagent explore started: find the parser"),
        "the child's start names its agent: {stdout}"
    );
    assert!(
        stdout.contains("CHILD-REPORT"),
        "the task card shows the report: {stdout}"
    );
    assert!(
        stdout.contains("The parser is in src/parse.rs."),
        "{stdout}"
    );
    assert!(
        stdout.contains("Subagents: 1 run, 4,100 tokens in their own contexts"),
        "/context lists the child: {stdout}"
    );
    assert_eq!(
        transcripts(root.path()).len(),
        2,
        "parent and child transcripts"
    );
}

#[test]
fn a_plan_shows_as_a_checklist_card_and_in_the_ledger() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("Planning.").with_tool_call(
            "update_plan",
            serde_json::json!({"steps": [
                {"step": "read the parser", "status": "done", "note": "depth is global"},
                {"step": "fix the depth", "status": "in_progress"}
            ]}),
        ),
        Turn::text("Planned."),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    // The default approval is `ask`, which a pipe cannot answer: the plan asks nothing.
    let output = pith(root.path(), &server)
        .write_stdin("plan the fix\n/ledger\n/exit\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");
    assert!(stdout.contains("update_plan  2 steps"), "{stdout}");
    assert!(
        stdout.contains(
            "Plan · 2 steps: 1 done, 1 in progress, 0 pending\n  [x] read the parser — depth is global\n  [~] fix the depth\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("Planned."), "{stdout}");
    // /ledger shows the plan the next compaction carries.
    let ledger = &stdout[stdout.find("<session_ledger>").expect("/ledger output")..];
    assert!(
        ledger.contains("## Plan (") && ledger.contains("\n[~] fix the depth\n"),
        "{ledger}"
    );
}

#[test]
fn rewind_lists_the_turns_and_puts_the_files_back_without_a_question_when_nothing_changed_outside()
{
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.").with_tool_call(
            "write",
            serde_json::json!({"path": "made.txt", "content": "made by pith\n"}),
        ),
        Turn::text("WROTE-IT"),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let output = pith(root.path(), &server)
        .args(["--approval", "full"])
        .write_stdin("/rewind\nwrite the file\n/rewind\n/rewind 7\n/rewind 1 files\n/rewind 1 code\n/context\n/rewind undo\n/exit\n")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");
    assert!(stdout.contains("Nothing to rewind: no turn"), "{stdout}");
    assert!(stdout.contains("WROTE-IT"), "{stdout}");
    assert!(
        stdout.contains("   1  ") && stdout.contains("write the file  [made.txt]"),
        "{stdout}"
    );
    assert!(stdout.contains("the session has no turn 7"), "{stdout}");
    assert!(stdout.contains("unknown rewind mode `files`"), "{stdout}");
    assert!(stdout.contains("restore made.txt"), "{stdout}");
    assert!(
        !stdout.contains("[y/N]"),
        "nothing changed outside pith: {stdout}"
    );
    assert!(
        stdout.contains("Rewound to before turn 1: 1 file(s) restored"),
        "{stdout}"
    );
    assert!(stdout.contains("checkpoints: "), "/context: {stdout}");
    // The rewind of the last (only) turn is undone by one command.
    assert!(
        stdout.contains("Undid the latest rewind: 1 file(s) restored"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("project/made.txt")).unwrap(),
        "made by pith\n"
    );
    let transcript = &transcripts(root.path())[0];
    assert_eq!(
        transcript
            .iter()
            .filter(|record| record["kind"] == "rewind")
            .count(),
        2,
        "the rewind and its undo are both recorded"
    );
}

#[test]
fn a_hand_edit_between_turns_is_asked_about_before_a_rewind_overwrites_it() {
    use std::io::{BufRead, BufReader, Write};
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.").with_tool_call(
            "write",
            serde_json::json!({"path": "made.txt", "content": "made by pith\n"}),
        ),
        Turn::text("WROTE-IT"),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    // The same hermetic command as `pith()`, as a std Command: its stdin is written turn
    // by turn.
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("pith"))
        .current_dir(&project)
        .env_clear()
        .env("PITH_HOME", root.path().join("home"))
        .env("HOME", root.path())
        .env("XDG_CONFIG_HOME", root.path().join("config"))
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "dummy-key")
        .args([
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--approval",
            "full",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = lines.send(line);
        }
    });
    writeln!(stdin, "write the file").unwrap();
    let mut out = String::new();
    while !out.contains("WROTE-IT") {
        let line = seen
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no answer: {out}"));
        out.push_str(&line);
        out.push('\n');
    }
    // The user edits the file by hand between two turns.
    std::fs::write(root.path().join("project/made.txt"), "edited by hand\n").unwrap();
    write!(stdin, "/rewind 1 code\nn\n/exit\n").unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    out.extend(seen.try_iter().map(|line| line + "\n"));
    assert!(status.success(), "pith failed: {out}");
    assert!(
        out.contains("changed outside pith") && out.contains("made.txt"),
        "{out}"
    );
    assert!(out.contains("[y/N]"), "the user is asked: {out}");
    assert!(out.contains("Rewind cancelled"), "{out}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("project/made.txt")).unwrap(),
        "edited by hand\n"
    );
}

#[test]
fn pins_are_made_listed_removed_sent_and_kept_through_a_conversation_rewind() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("FIRST-ANSWER"),
        Turn::text("SECOND-ANSWER"),
        Turn::text("THIRD-ANSWER"),
    ]))
    .unwrap();
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("spec.md"), "PINNED-SPEC-TEXT\n").unwrap();
    let output = pith(root.path(), &server)
        .write_stdin(
            "/pin spec.md\n/pin \"PINNED-NOTE keep it short\"\n/pin spec.md\n/pin missing.md\n/pin\nfirst\n/pin \"LATE-NOTE\"\nsecond\n/unpin 2\n/context\n/rewind 2 conversation\nthird\n/pin\n/exit\n",
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "pith failed: {stdout}");
    assert!(stdout.contains("Pinned spec.md ("), "{stdout}");
    assert!(
        stdout.contains("Pinned note \"PINNED-NOTE keep it short\""),
        "{stdout}"
    );
    assert!(stdout.contains("spec.md is pinned already"), "{stdout}");
    assert!(stdout.contains("cannot pin missing.md"), "{stdout}");
    assert!(
        stdout.contains("  1. spec.md  "),
        "/pin lists them: {stdout}"
    );
    assert!(
        stdout.contains("Unpinned note \"PINNED-NOTE keep it short\""),
        "{stdout}"
    );
    assert!(stdout.contains("pins: "), "/context lists them: {stdout}");

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let first = requests[0].body.to_string();
    assert!(
        first.contains("PINNED-SPEC-TEXT") && first.contains("PINNED-NOTE"),
        "{first}"
    );
    let second = requests[1].body.to_string();
    assert_eq!(
        second.matches("PINNED-SPEC-TEXT").count(),
        1,
        "shown once, with the message after the pin: {second}"
    );
    assert!(second.contains("LATE-NOTE"), "{second}");
    // Back to just before turn 2: the unpin made after it went with the rewind; the
    // pins made before it stay, and the one that turn showed the model is shown again.
    let third = requests[2].body.to_string();
    assert_eq!(third.matches("LATE-NOTE").count(), 1, "{third}");
    assert_eq!(third.matches("PINNED-NOTE").count(), 1, "{third}");
    assert!(!third.contains("SECOND-ANSWER"), "{third}");
    let listing = stdout.rsplit("THIRD-ANSWER").next().unwrap();
    assert!(listing.contains("1. spec.md"), "{listing}");
    assert!(
        listing.contains("2. note \"PINNED-NOTE keep it short\""),
        "the unpin after the rewind point went with the rewind: {listing}"
    );
    assert!(listing.contains("3. note \"LATE-NOTE\""), "{listing}");
}
