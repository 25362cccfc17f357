//! End-to-end: the session ledger through the real `pith run` binary against the testkit
//! server. A compaction carries the user's messages verbatim and the files worked on
//! (re-attached from disk), a resumed session rebuilds the ledger from its transcript,
//! and the transcript, the JSON report, stream-json and replay all show it.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{records, stderr, stdout, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY: &str = "## Goal\nFinish the report.";
const FIRST_INSTRUCTION: &str = "Read notes.txt. House rule: every answer ends with the word OVER.";

/// The text of the first message of request `index`.
fn first_message_text(server: &TestServer, index: usize) -> String {
    let request = &server.requests()[index].body;
    request["messages"][0]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_resumed_session_compacts_with_the_ledger_of_its_whole_life() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    std::fs::write(workspace.join("notes.txt"), "the deadline is friday\n").unwrap();
    std::fs::write(workspace.join("plan.md"), "1. draft\n2. review\n").unwrap();
    // Re-attached files are off by default (docs/context-pipeline.md); this session asks
    // for them, so that what they carry is checked too.
    std::fs::create_dir_all(workspace.join(".pith")).unwrap();
    std::fs::write(
        workspace.join(".pith/config.toml"),
        "[context]\nrestore_files = 3\n",
    )
    .unwrap();
    let server = TestServer::start(Script::anthropic([
        // Job 1: reads notes.txt, no compaction.
        Turn::text("Reading.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::text("Noted. OVER"),
        // Job 2 (resumed): reads plan.md over the threshold, compacts, finishes.
        Turn::text("Now the plan.")
            .with_tool_call("read", json!({"path": "plan.md"}))
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Done. OVER"),
    ]))
    .unwrap();

    sandbox.believe_scripted_usage();

    let first = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "json", FIRST_INSTRUCTION],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let report: Value = serde_json::from_str(stdout(&first).trim()).unwrap();
    let session_id = report["session_id"].as_str().unwrap().to_owned();

    // Someone edits notes.txt between the jobs.
    std::fs::write(workspace.join("notes.txt"), "the deadline is monday\n").unwrap();

    let second = sandbox.run(
        &server,
        &[
            "--session",
            &session_id,
            "--format",
            "stream-json",
            "now read plan.md",
        ],
    );
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    let events: Vec<Value> = stdout(&second)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let compaction = events
        .iter()
        .find(|e| e["type"] == "compaction")
        .expect("a compaction event");
    let ledger_tokens = compaction["ledger_tokens"].as_u64().unwrap();
    // 10% of the input budget (200k window minus the output reserve).
    assert!(
        ledger_tokens > 0 && ledger_tokens <= 19_000,
        "ledger tokens {ledger_tokens}"
    );
    let result = events.last().unwrap();
    assert_eq!(
        result["compactions"][0]["ledger_tokens"],
        json!(ledger_tokens)
    );

    // The request after the compaction starts from the replacement: the summary, the
    // ledger with the first job's instruction verbatim and both files, the files
    // re-attached from disk as they are now, and the latest user message.
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let replacement = first_message_text(&server, 4);
    assert!(replacement.starts_with(&format!("<compacted_context>{SUMMARY}")));
    assert!(
        replacement.contains(FIRST_INSTRUCTION),
        "the first job's instruction survives verbatim: {replacement}"
    );
    let notes = replacement
        .lines()
        .find(|l| l.starts_with("- notes.txt"))
        .unwrap_or_else(|| panic!("notes.txt in the ledger: {replacement}"));
    assert!(notes.contains("CHANGED ON DISK since last seen"), "{notes}");
    assert!(replacement.contains("<restored_file path=\"plan.md\">"));
    assert!(replacement.contains("     2\t2. review"), "{replacement}");
    assert!(
        replacement.contains("the deadline is monday"),
        "re-attached from disk as it is now: {replacement}"
    );
    assert!(replacement.ends_with("<last_user_message>now read plan.md</last_user_message>"));
    // The summary request showed the model the ledger, the first job's instruction
    // listed (its text is in the history the request carries), and asked for the short
    // schema the ledger allows.
    let summary_request = requests[3].body.to_string();
    assert!(summary_request.contains("<session_ledger>"));
    assert!(
        summary_request.contains("--- message 1: ") && summary_request.contains("attached whole"),
        "{summary_request}"
    );
    assert_eq!(
        summary_request.matches(FIRST_INSTRUCTION).count(),
        1,
        "quoted once, in the history: {summary_request}"
    );
    assert!(summary_request.contains("under about 750 words"));

    // The transcript records what the replacement carried.
    let transcript = records(&sandbox.only_transcript());
    let applied = transcript
        .iter()
        .find(|r| r["kind"] == "compaction_applied")
        .expect("compaction_applied");
    assert_eq!(applied["ledger_tokens"], json!(ledger_tokens));
    assert!(applied["ledger"]
        .as_str()
        .unwrap()
        .contains(FIRST_INSTRUCTION));
    assert_eq!(applied["restored_files"][0], json!("plan.md"));

    // Replay says so.
    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let text = stdout(&replay);
    assert!(text.contains("[session ledger carried:"), "{text}");
    assert!(
        text.contains(&format!("  {FIRST_INSTRUCTION}")),
        "replay shows the ledger itself: {text}"
    );
    assert!(text.contains("[re-attached: plan.md"), "{text}");
}

/// One `pith run` job that reads notes.txt (holding `notes`) over the threshold and
/// compacts, with `config` as the workspace's `.pith/config.toml` when given; it must end
/// with exit code 0.
fn compact_after_reading_notes(
    notes: &str,
    config: Option<&str>,
) -> (Sandbox, TestServer, std::process::Output) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), notes).unwrap();
    if let Some(config) = config {
        std::fs::create_dir_all(sandbox.workspace().join(".pith")).unwrap();
        std::fs::write(sandbox.workspace().join(".pith/config.toml"), config).unwrap();
    }
    let (server, output) = compacting_job(
        &sandbox,
        vec![
            Turn::text("Reading.")
                .with_tool_call("read", json!({"path": "notes.txt"}))
                .with_usage(180_000, 40),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
        &[],
    );
    (sandbox, server, output)
}

/// One `pith run --format json go` job in `sandbox` (with `args` before the prompt)
/// against a server scripted with `turns`, whose usage pith believes, so that a turn
/// reporting usage over the threshold compacts; it must end with exit code 0.
fn compacting_job(
    sandbox: &Sandbox,
    turns: Vec<Turn>,
    args: &[&str],
) -> (TestServer, std::process::Output) {
    let server = TestServer::start(Script::anthropic(turns)).unwrap();
    sandbox.believe_scripted_usage();
    let mut all = vec!["--model", MODEL, "--format", "json"];
    all.extend_from_slice(args);
    all.push("go");
    let output = sandbox.run(&server, &all);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    (server, output)
}

#[test]
fn by_default_a_compaction_names_the_files_read_without_re_attaching_them() {
    let (sandbox, server, _) = compact_after_reading_notes("the secret word\n", None);
    let replacement = first_message_text(&server, 2);
    assert!(replacement.contains("<session_ledger>"), "{replacement}");
    assert!(
        replacement.lines().any(|l| l.starts_with("- notes.txt")),
        "the ledger names the file: {replacement}"
    );
    assert!(!replacement.contains("<restored_file"), "{replacement}");
    assert!(!replacement.contains("the secret word"), "{replacement}");
    let transcript = records(&sandbox.only_transcript());
    let applied = transcript
        .iter()
        .find(|r| r["kind"] == "compaction_applied")
        .expect("compaction_applied");
    assert!(
        applied
            .get("restored_files")
            .is_none_or(|files| files.as_array().is_some_and(Vec::is_empty)),
        "{applied}"
    );
}

#[test]
fn the_ledger_lists_a_commands_newest_spill_file_once_and_counts_the_earlier_runs() {
    // The same long command twice, then ten small ones, so that both long runs leave the
    // Commands section's ten newest: the Full outputs section keeps the newer run's file.
    let sandbox = Sandbox::new();
    let mut first = Turn::text("Counting.");
    for _ in 0..2 {
        first = first.with_tool_call("bash", json!({"command": "seq 1 6000"}));
    }
    let mut second = Turn::text("Listing.");
    for i in 0..10 {
        second = second.with_tool_call("bash", json!({"command": format!("echo step {i}")}));
    }
    let (server, _) = compacting_job(
        &sandbox,
        vec![
            first,
            second.with_usage(180_000, 40),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
        &["--approval", "full"],
    );
    let replacement = first_message_text(&server, 3);
    let full = replacement
        .split("## Full outputs")
        .nth(1)
        .unwrap_or_else(|| panic!("no Full outputs section: {replacement}"));
    let listed: Vec<&str> = full
        .lines()
        .filter(|l| l.starts_with("- $PITH_SPILL_DIR/"))
        .collect();
    assert_eq!(listed.len(), 1, "{full}");
    assert!(
        listed[0].starts_with("- $PITH_SPILL_DIR/2.txt") && listed[0].ends_with("`seq 1 6000`"),
        "the newer run's file: {full}"
    );
    assert!(full.contains("[1 older spill files omitted]"), "{full}");
}

#[test]
fn ledger_percent_zero_turns_the_ledger_off() {
    let (_sandbox, server, output) =
        compact_after_reading_notes("x\n", Some("[context]\nledger_percent = 0\n"));
    let replacement = first_message_text(&server, 2);
    assert_eq!(
        replacement,
        format!(
            "<compacted_context>{SUMMARY}</compacted_context>\n<last_user_message>go</last_user_message>"
        )
    );
    let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(report["compactions"][0].get("ledger_tokens"), None);
}

#[test]
fn a_plan_reaches_stream_json_and_survives_a_compaction_after_a_resume() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let steps = json!([
        {"step": "read notes.txt", "status": "done", "note": "one line"},
        {"step": "write the report", "status": "in_progress"},
        {"step": "ask the user to review it", "status": "pending"}
    ]);
    let server = TestServer::start(Script::anthropic([
        // Job 1 (read-only, the default): a refused plan, then a good one.
        Turn::text("Planning.").with_tool_call(
            "update_plan",
            json!({"steps": [
                {"step": "a", "status": "in_progress"},
                {"step": "b", "status": "in_progress"}
            ]}),
        ),
        Turn::text("Again.").with_tool_call("update_plan", json!({ "steps": steps })),
        Turn::text("Planned."),
        // Job 2 (resumed): over the threshold, compacts, finishes.
        Turn::text("Reading.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Done."),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();

    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "stream-json",
            "plan the report",
        ],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let events: Vec<Value> = stdout(&first)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let plans: Vec<usize> = (0..events.len())
        .filter(|&i| events[i]["type"] == "plan")
        .collect();
    assert_eq!(plans.len(), 1, "only the accepted plan is sent: {events:?}");
    assert_eq!(events[plans[0]], json!({"type": "plan", "steps": steps}));
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results[0]["is_error"], json!(true));
    assert!(results[0]["preview"]
        .as_str()
        .unwrap()
        .contains("at most one step may be in progress"));
    assert_eq!(results[1]["is_error"], json!(false));
    assert_eq!(
        results[1]["preview"],
        json!("Plan updated (3 steps: 1 done, 1 in progress, 1 pending).")
    );
    let result_at = events
        .iter()
        .position(|e| e["type"] == "tool_result" && e["is_error"] == json!(false))
        .unwrap();
    assert!(
        plans[0] < result_at,
        "the plan comes before its call's result"
    );
    let session_id = events[0]["session_id"].as_str().unwrap().to_owned();

    let second = sandbox.run(
        &server,
        &["--session", &session_id, "--format", "json", "go on"],
    );
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    let checklist = "[x] read notes.txt — one line\n[~] write the report\n\
                     [ ] ask the user to review it\n";
    let replacement = first_message_text(&server, 5);
    assert!(replacement.starts_with(&format!("<compacted_context>{SUMMARY}")));
    assert_eq!(
        replacement.matches(checklist).count(),
        1,
        "the plan rebuilt from the transcript, verbatim: {replacement}"
    );

    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let text = stdout(&replay);
    assert!(
        text.contains("* update_plan 3 steps: 1 done, 1 in progress, 1 pending\n      [x] read notes.txt — one line\n      [~] write the report\n"),
        "{text}"
    );
}

/// The decisions the session starts with, which every later request must still carry.
const DECISIONS: &str = "Part 1, the decisions:\n- We chose SQLite in WAL mode because the team already operates it.\n- Raw events are kept for 90 days.\nAcknowledge in one short sentence.";

#[test]
fn a_small_window_keeps_the_first_message_through_compactions_after_plans_and_reads() {
    // A 6k window and a model that plans, reads and runs a command on every step: the
    // smallest compaction plan's ledger is tight, and its plan, files and commands once
    // took all of it, so every request after a compaction lost the session's first
    // message (seen in the demo with a real 135M model).
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    let mut turns = vec![Turn::text("Noted.")];
    for part in 2..=10 {
        std::fs::write(workspace.join(format!("part{part}.md")), "draft\n").unwrap();
        let steps: Vec<Value> = (1..=6)
            .map(|i| json!({"step": format!("write part {i} of the design document with every decision"), "status": "pending"}))
            .collect();
        turns.push(
            Turn::text("Planning.")
                .with_tool_call("read", json!({"path": format!("part{part}.md")}))
                .with_tool_call("bash", json!({"command": format!("ls -la part{part}.md")}))
                .with_tool_call("update_plan", json!({ "steps": steps })),
        );
        turns.push(Turn::text(
            "the store event design part decision region snapshot replay ".repeat(if part < 6 {
                3
            } else {
                120
            }),
        ));
    }
    let server = TestServer::start(
        Script::openai_chat(turns)
            .responding("This is a context compaction request", Turn::text(SUMMARY)),
    )
    .unwrap();
    let mut session: Option<String> = None;
    for part in 1..=10 {
        let prompt = if part == 1 {
            DECISIONS.to_owned()
        } else {
            format!(
                "Part {part} of the design: {} Acknowledge in one short sentence.",
                "a paragraph of the design that the model is asked to acknowledge. ".repeat(4)
            )
        };
        let mut args = vec!["--context-window", "6144", "--format", "json"];
        match &session {
            Some(id) => args.extend(["--session", id.as_str()]),
            None => args.extend(["--model", "openai-chat/gpt-4o"]),
        }
        args.push(&prompt);
        let output = sandbox.run(&server, &args);
        assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
        let report: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
        session = session.or_else(|| report["session_id"].as_str().map(str::to_owned));
    }

    let requests = server.requests();
    let is_summary = |body: &Value| {
        body.to_string()
            .contains("This is a context compaction request")
    };
    let summaries = requests.iter().filter(|r| is_summary(&r.body)).count();
    assert!(
        summaries >= 2,
        "the window made pith compact at least twice: {summaries}"
    );
    let first_summary = requests.iter().position(|r| is_summary(&r.body)).unwrap();
    let mut checked = 0;
    for (index, request) in requests.iter().enumerate().skip(first_summary) {
        if is_summary(&request.body) {
            continue;
        }
        let body = request.body.to_string();
        assert!(
            body.contains("We chose SQLite in WAL mode because the team already operates it.")
                && body.contains("Raw events are kept for 90 days."),
            "request {index} lost the first message: {body}"
        );
        checked += 1;
    }
    assert!(checked >= 2, "requests after a compaction: {checked}");
}
