//! Summaries prepared ahead, through the binary: the automatic compaction's summary starts
//! in the background at the mark, the turn goes on, and the threshold applies it with the
//! messages after its mark kept verbatim (docs/context-pipeline.md, "Summaries prepared
//! ahead").

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{stderr, stdout, write_user_config, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

/// The summary the responder streams: 25 fragments of 16 characters, 200 ms apart, so
/// about 5 s from the first byte to the last.
fn slow_summary() -> Turn {
    Turn::text(format!(
        "## Goal\nRead the notes.{}",
        " The notes were read.".repeat(18)
    ))
    .with_chunk_delay_ms(200)
}

/// A note of about 1,000 tokens, different for every `n` (nothing deduplicates it).
fn note(n: usize) -> String {
    (0..45)
        .map(|i| {
            format!(
                "note {n} line {i}: segment {} of region r{n} holds {} events\n",
                i * 7 + n,
                i * 13
            )
        })
        .collect()
}

/// A sandbox whose config prepares summaries from `percent`, with `notes` notes, and the
/// scripted turns that read them one by one (each also sleeping `seconds` in `bash` when
/// given).
fn reading_notes(percent: u8, notes: usize, seconds: Option<f32>) -> (Sandbox, Vec<Turn>) {
    let sandbox = Sandbox::new();
    write_user_config(
        &sandbox,
        &format!("[context]\nprepare_summary_percent = {percent}\n"),
    );
    let turns = (0..notes)
        .map(|n| {
            std::fs::write(sandbox.workspace().join(format!("note{n}.md")), note(n)).unwrap();
            let read =
                Turn::text("").with_tool_call("read", json!({"path": format!("note{n}.md")}));
            match seconds {
                Some(seconds) => {
                    read.with_tool_call("bash", json!({"command": format!("sleep {seconds}")}))
                }
                None => read,
            }
        })
        .collect();
    (sandbox, turns)
}

/// True for a summary request (or a later round of one).
fn is_summary(request: &pith_testkit::RecordedRequest) -> bool {
    request
        .body
        .to_string()
        .contains("This is a context compaction request")
}

/// What the job printed, one event per line.
fn events(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("stream-json lines"))
        .collect()
}

/// Runs one job of `tool_turns` tool turns (each reads a new note and runs a command of
/// `seconds`) with `[context] prepare_summary_percent = percent`, and returns its events
/// and the server.
fn job(percent: u8, tool_turns: usize, seconds: f32) -> (Vec<Value>, TestServer) {
    let (sandbox, mut turns) = reading_notes(percent, tool_turns, Some(seconds));
    turns.push(Turn::text("All notes read."));
    let server = TestServer::start(
        Script::openai_chat(turns)
            .responding("This is a context compaction request", slow_summary()),
    )
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "openai-chat/gpt-4o",
            "--context-window",
            "16000",
            "--format",
            "stream-json",
            "--approval",
            "full",
            "Read every note, one at a time.",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    (events(&output), server)
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[test]
fn a_summary_prepared_at_the_mark_is_applied_at_the_threshold_without_waiting() {
    let (events, server) = job(75, 9, 2.0);
    let started = of_type(&events, "compaction_started");
    assert!(
        started.first().is_some_and(|s| s["background"] == true),
        "the first compaction starts in the background: {started:?}"
    );
    let applied: Vec<&Value> = of_type(&events, "compaction")
        .into_iter()
        .filter(|c| c["trigger"] == "auto")
        .collect();
    let first = applied
        .first()
        .expect("an automatic compaction was applied");
    let summary_ms = first["duration_ms"].as_u64().unwrap();
    let waited_ms = first["waited_ms"].as_u64().unwrap();
    assert!(
        summary_ms >= 4_000,
        "the summary streamed for about 5 s from its start: {summary_ms} ms"
    );
    assert!(
        waited_ms <= 200,
        "the turn that crossed the threshold waited {waited_ms} ms for a summary prepared {summary_ms} ms before: {:#?}",
        events.iter().filter(|e| e["type"] != "tool_result" && e["type"] != "tool_started").collect::<Vec<_>>()
    );

    // What came after the mark is kept verbatim after the replacement: the request after
    // the compaction holds the summary and the last note read before it, whole.
    let requests = server.requests();
    let summary_at = requests.iter().position(is_summary).unwrap();
    let after = requests
        .iter()
        .enumerate()
        .skip(summary_at + 1)
        .filter(|(_, r)| !is_summary(r))
        .find(|(_, r)| r.body.to_string().contains("<compacted_context>"))
        .map(|(i, r)| (i, r.body.to_string()))
        .expect("a request after the compaction carries the replacement");
    let before = requests[after.0 - 1].body.to_string();
    let last_note = (0..9)
        .rev()
        .find(|n| before.contains(&format!("note {n} line 44")))
        .expect("the request before the threshold held a note");
    assert!(
        after.1.contains(&format!("note {last_note} line 44")),
        "the last note before the threshold was read after the mark and is kept verbatim"
    );
    assert!(
        summary_at + 1 < after.0 - 1,
        "turn requests were sent while the summary was prepared (summary {summary_at}, applied at {})",
        after.0
    );

    // The JSON result counts it.
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert!(result["compaction"]["prepared"].as_u64().unwrap() >= 1);
    assert_eq!(result["compaction"]["applied"], applied.len());
    eprintln!("prepared ahead: the summary took {summary_ms} ms, the turn waited {waited_ms} ms");
}

#[test]
fn without_a_mark_the_turn_waits_for_the_whole_summary_as_before() {
    let (events, _) = job(0, 9, 0.0);
    assert!(
        of_type(&events, "compaction_started")
            .iter()
            .all(|s| s["background"] == false),
        "0 turns preparing off"
    );
    let applied = of_type(&events, "compaction");
    let first = applied
        .iter()
        .find(|c| c["trigger"] == "auto")
        .expect("an automatic compaction was applied");
    let waited_ms = first["waited_ms"].as_u64().unwrap();
    assert!(
        waited_ms >= 4_000,
        "in place, the turn waits for the whole summary: {waited_ms} ms"
    );
    assert_eq!(first["waited_ms"], first["duration_ms"]);
    eprintln!("in place: the turn waited {waited_ms} ms");
}

#[test]
fn a_job_that_ends_before_the_threshold_reports_its_prepared_summary_unused() {
    // Few turns: the mark is passed, the threshold never reached.
    let (events, _) = job(75, 6, 0.0);
    let started = of_type(&events, "compaction_started");
    assert!(
        started.iter().any(|s| s["background"] == true),
        "a summary was prepared: {started:?}"
    );
    let unused = of_type(&events, "compaction_unused");
    assert_eq!(unused.len(), 1, "told once: {events:?}");
    assert!(unused[0]["reason"].as_str().unwrap().contains("stopped"));
    let result = events.last().unwrap();
    assert_eq!(result["compaction"]["unused"], 1);
    assert_eq!(result["compaction"]["applied"], 0);
}

/// Runs a job that reads six notes and hangs in its next request, kills it (SIGKILL) there
/// — with a summary prepared in the background still streaming when `percent` is set —
/// then continues the session. Returns the transcript's record kinds and the messages of
/// the continued job's request.
fn killed_then_continued(percent: u8) -> (Vec<String>, Value) {
    let (sandbox, mut turns) = reading_notes(percent, 6, None);
    turns.push(Turn::fault(pith_testkit::Fault::Hang));
    turns.push(Turn::text("Resumed fine."));
    // About 12 s: still streaming when the job is killed.
    let summary = Turn::text("## Goal\nRead the notes. The notes were read.".repeat(6))
        .with_chunk_delay_ms(500);
    let server = TestServer::start(
        Script::openai_chat(turns).responding("This is a context compaction request", summary),
    )
    .unwrap();
    let mut child = sandbox
        .pith(Some(&server))
        .args([
            "run",
            "--model",
            "openai-chat/gpt-4o",
            "--context-window",
            "16000",
            "Read every note, one at a time.",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let requests = server.requests();
        let turns_sent = requests.iter().filter(|r| !is_summary(r)).count();
        let summary_sent = requests.iter().any(is_summary);
        if turns_sent >= 7 && (summary_sent || percent == 0) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the job never reached its hanging request: {} requests",
            requests.len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let transcript = sandbox.only_transcript();
    let kinds = common::kinds(&common::records(&transcript));
    let session_id = transcript
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let before = server.requests().len();
    let resumed = sandbox.run(&server, &["--session", &session_id, "continue"]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    assert_eq!(stdout(&resumed), "Resumed fine.\n");
    let continued = server
        .requests()
        .into_iter()
        .skip(before)
        .find(|r| !is_summary(r))
        .expect("the continued job sent its request");
    // The system message names the sandbox's own directory: the conversation is the rest.
    let messages = continued.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .cloned()
        .collect();
    (kinds, Value::Array(messages))
}

#[test]
fn a_kill_during_a_background_summary_leaves_the_session_as_if_it_never_started() {
    let (kinds, continued) = killed_then_continued(75);
    assert!(
        !kinds.iter().any(|k| k.starts_with("compaction")),
        "nothing of the summary was written: {kinds:?}"
    );
    assert!(!continued.to_string().contains("<compacted_context>"));
    let (kinds_without, continued_without) = killed_then_continued(0);
    assert_eq!(
        kinds, kinds_without,
        "the same records as a job that never prepared one"
    );
    assert_eq!(
        continued, continued_without,
        "the continued job sends what it would have sent had no summary started"
    );
}
