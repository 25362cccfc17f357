//! End-to-end: the real `pith run` binary against the testkit provider server.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::{kinds, records, stderr, stdout, Sandbox};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";

/// A job whose first request reports usage above the automatic threshold: the loop
/// compacts privately, then the turn continues from the replacement.
fn compacting_script() -> Script {
    Script::anthropic([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Done."),
    ])
}

#[test]
fn a_compacting_job_prints_pre_and_post_text_and_records_the_pair_atomically() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(compacting_script()).unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(&server, &["--model", MODEL, "read the notes"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Let me look.\nDone.\n",
        "the private summary must never be printed"
    );

    let records = records(&sandbox.only_transcript());
    assert_eq!(
        kinds(&records),
        [
            "session_started",
            "user_message",
            "assistant_turn",
            "compaction_applied",
            "assistant_turn"
        ]
    );
    for (i, record) in records.iter().enumerate() {
        assert_eq!(
            record["seq"],
            json!(i as u64 + 1),
            "seq must be consecutive"
        );
        assert_eq!(record["v"], json!(1));
    }
    let compaction = &records[3];
    assert_eq!(compaction["trigger"], json!("auto"));
    assert_eq!(compaction["summary"], json!(SUMMARY));
    assert!(compaction["tokens_before"].as_u64().unwrap() >= 171_000);
    let replacement = compaction["messages"].as_array().unwrap();
    assert_eq!(
        replacement.len(),
        1,
        "system messages are stripped before persisting"
    );
    assert_eq!(replacement[0]["role"], json!("user"));
    // The tool really ran: its result is in the checkpoint before the compaction.
    assert!(records[2].to_string().contains("remember the milk"));

    // The third request (after the compaction) starts from the compacted user message.
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let after = &requests[2].body["messages"];
    assert_eq!(after.as_array().unwrap().len(), 1);
    assert!(after[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("<compacted_context>## Goal"));
}

#[test]
fn replay_renders_the_job_and_a_continued_session_starts_from_the_compacted_history() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(compacting_script().then(Turn::text("Second answer."))).unwrap();
    sandbox.believe_scripted_usage();
    let first = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "json", "read the notes"],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let result: Value =
        serde_json::from_str(stdout(&first).trim()).expect("--format json prints one object");
    let session_id = result["session_id"].as_str().unwrap().to_owned();
    assert_eq!(result["text"], json!("Let me look.\nDone."));
    assert_eq!(
        result["compactions"],
        json!([{"trigger": "auto", "tokens_before": result["compactions"][0]["tokens_before"], "tokens_after": result["compactions"][0]["tokens_after"], "ledger_tokens": result["compactions"][0]["ledger_tokens"]}])
    );
    assert_eq!(result["turns"], json!(2));
    assert_eq!(result["error"], Value::Null);
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() >= 180_000);
    assert!(
        result["cost"].as_f64().unwrap() > 0.0,
        "catalog prices give a cost"
    );

    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    assert_eq!(
        replay.status.code(),
        Some(0),
        "replay stderr: {}",
        stderr(&replay)
    );
    let text = stdout(&replay);
    assert!(
        text.contains("read the notes") && text.contains("Let me look.") && text.contains("Done."),
        "{text}"
    );
    assert!(
        text.to_lowercase().contains("compact"),
        "replay shows the compaction marker:\n{text}"
    );

    let second = sandbox.run(&server, &["--session", &session_id, "and now?"]);
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    assert_eq!(stdout(&second), "Second answer.\n");
    let request = &server.requests()[3].body;
    let messages = request["messages"].as_array().unwrap();
    assert!(
        messages[0]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<compacted_context>"),
        "{request}"
    );
    assert_eq!(
        messages.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["text"],
        json!("and now?")
    );
    assert_eq!(
        request["model"],
        json!("claude-sonnet-4-5"),
        "the session's model is reused"
    );
}

#[test]
fn a_failing_resumed_stream_prints_the_partial_result_and_exits_1() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text(SUMMARY),
        Turn::text("Half of the answer and then").with_fault(Fault::DropMidStream),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(&server, &["--model", MODEL, "read the notes"]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    let printed = stdout(&output);
    assert!(
        printed.starts_with("Let me look.\n"),
        "the pre-compaction text is part of the partial result: {printed:?}"
    );
    assert!(!stderr(&output).is_empty());
    let records = records(&sandbox.only_transcript());
    assert_eq!(kinds(&records)[3], "compaction_applied");
    let last = records.last().unwrap();
    assert_eq!(last["kind"], json!("assistant_turn"));
    assert!(last["error"].is_string(), "the failure is recorded: {last}");
}

#[test]
fn stream_json_emits_one_event_per_line_ending_with_the_result() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(compacting_script()).unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "stream-json",
            "read the notes",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session_started",
            "request",
            "assistant",
            "tool_started",
            "tool_result",
            "compaction_started",
            "request",
            "compaction",
            "request",
            "assistant",
            "result"
        ]
    );
    assert_eq!(events[2]["tool_calls"][0]["name"], json!("read"));
    assert_eq!(events.last().unwrap()["text"], json!("Let me look.\nDone."));
    assert!(
        !stdout(&output).contains("Read the notes."),
        "the summary stays private"
    );
}

#[test]
fn configuration_problems_exit_2_before_anything_runs() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("never")])).unwrap();
    let missing_key = sandbox
        .pith(None)
        .args(["run", "--model", "openai/gpt-5", "hi"])
        .output()
        .unwrap();
    assert_eq!(missing_key.status.code(), Some(2));
    assert!(stderr(&missing_key).contains("OPENAI_API_KEY"));
    let bad_model = sandbox.run(&server, &["--model", "nonsense", "hi"]);
    assert_eq!(bad_model.status.code(), Some(2));
    assert!(stderr(&bad_model).contains("provider/model"));
    let no_prompt = sandbox.run(&server, &["--model", MODEL]);
    assert_eq!(no_prompt.status.code(), Some(2));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn the_prompt_can_come_from_stdin_and_the_key_never_reaches_the_transcript() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("Hello from stdin.")])).unwrap();
    let mut child = sandbox
        .pith(Some(&server))
        .args(["run", "--model", MODEL, "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"say hello").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "Hello from stdin.\n");
    let transcript = std::fs::read_to_string(sandbox.only_transcript()).unwrap();
    assert!(transcript.contains("say hello"));
    assert!(
        !transcript.contains("sk-ant-test-key"),
        "API keys never go into transcripts"
    );
    assert_eq!(server.requests()[0].header("x-api-key"), Some("<redacted>"));
}

/// The tool results (first part of each tool message) of the transcript's last
/// assistant turn.
fn last_turn_tool_results(sandbox: &Sandbox) -> Vec<Value> {
    let records = records(&sandbox.only_transcript());
    let turn = records
        .iter()
        .rev()
        .find(|r| r["kind"] == "assistant_turn")
        .expect("the transcript has an assistant turn");
    turn["messages"]
        .as_array()
        .expect("an assistant turn has messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["parts"][0].clone())
        .collect()
}

#[test]
fn hostile_tool_calls_are_refused_and_recorded_without_touching_anything() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call(
            "write",
            json!({"path": "../escaped.txt", "content": "pwned"}),
        ),
        Turn::text("").with_tool_call(
            "write",
            json!({"path": "/tmp/pith-e2e-absolute.txt", "content": "pwned"}),
        ),
        Turn::text("").with_tool_call("bash", json!({"command": "yes | head -c 3000000"})),
        Turn::text("Finished."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--approval", "full", "try things"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        !sandbox.root.path().join("escaped.txt").exists(),
        "a write escaped the workspace"
    );
    assert!(!std::path::Path::new("/tmp/pith-e2e-absolute.txt").exists());
    let results = last_turn_tool_results(&sandbox);
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["is_error"], json!(true));
    assert_eq!(results[1]["is_error"], json!(true));
    let yes_output = results[2]["content"].as_str().unwrap();
    assert!(
        yes_output.len() < 100_000,
        "3 MB of output reached the model ({} bytes)",
        yes_output.len()
    );
    assert!(
        yes_output.contains("[full output: "),
        "the raw output is spilled and named: {yes_output:.300}"
    );
}

#[test]
fn the_model_reads_a_spilled_output_back_through_the_markers_path() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("bash", json!({"command": "seq 1 6000"})),
        Turn::text("").with_tool_call(
            "read",
            json!({"path": "$PITH_SPILL_DIR/1.txt", "offset": 5999, "limit": 2}),
        ),
        Turn::text("").with_tool_call(
            "bash",
            json!({"command": "tail -n 1 \"$PITH_SPILL_DIR/1.txt\""}),
        ),
        Turn::text("Read it."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--approval", "full", "count to 6000"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results: Vec<String> = last_turn_tool_results(&sandbox)
        .iter()
        .map(|r| r["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results[0].ends_with("[full output: $PITH_SPILL_DIR/1.txt]"),
        "the squashed output names its spill file: {}",
        results[0]
    );
    assert!(
        !results[0].contains("\n3000\n"),
        "the middle was squashed away"
    );
    assert_eq!(
        results[1], "  5999\t5999\n  6000\t6000\n",
        "read resolves the variable"
    );
    assert!(
        results[2].starts_with("6000\n"),
        "bash exports it: {}",
        results[2]
    );
}

#[test]
fn read_only_is_the_default_approval() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("write", json!({"path": "new.txt", "content": "x"})),
        Turn::text("ok"),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "write a file"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        !sandbox.workspace().join("new.txt").exists(),
        "read-only must refuse writes"
    );
}

#[test]
fn a_job_killed_mid_turn_leaves_a_replayable_session_that_can_be_continued() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Looking.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::fault(Fault::Hang),
        Turn::text("Resumed fine."),
    ]))
    .unwrap();
    let mut child = sandbox
        .pith(Some(&server))
        .args(["run", "--model", MODEL, "read the notes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    server
        .wait_for_requests_blocking(2, std::time::Duration::from_secs(30))
        .expect("the job reached its second request");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let transcript = sandbox.only_transcript();
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
    assert_eq!(
        replay.status.code(),
        Some(0),
        "replay after SIGKILL: {}",
        stderr(&replay)
    );
    assert!(stdout(&replay).contains("read the notes"));

    let resumed = sandbox.run(&server, &["--session", &session_id, "continue"]);
    assert_eq!(
        resumed.status.code(),
        Some(0),
        "a killed writer must not leave the session locked: {}",
        stderr(&resumed)
    );
    assert_eq!(stdout(&resumed), "Resumed fine.\n");
    let kinds = kinds(&records(&transcript));
    assert_eq!(kinds.first().map(String::as_str), Some("session_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("assistant_turn"));
}

#[test]
fn without_keys_or_a_local_server_pith_explains_how_to_get_a_model() {
    let sandbox = Sandbox::new();
    // Nothing listens on port 9 of localhost: the local model is not running.
    let output = sandbox
        .pith(None)
        .env("PITH_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
        .args(["run", "hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    let message = stderr(&output);
    // An installed pith has no source checkout: no developer commands, but how to start a
    // local OpenAI-compatible server and which setting points pith at it.
    assert!(!message.contains("xtask"), "{message}");
    for needed in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "llama-server",
        "Ollama",
        "llama_cpp.server",
        "PITH_LOCAL_BASE_URL",
        "[providers.local]",
    ] {
        assert!(message.contains(needed), "missing {needed}: {message}");
    }
}

#[test]
fn pith_log_writes_diagnostics_to_the_log_file_and_never_to_stdout() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(compacting_script()).unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox
        .pith(Some(&server))
        .env("PITH_LOG", "debug")
        .args([
            "run",
            "--model",
            MODEL,
            "--format",
            "stream-json",
            "read the notes",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    for line in stdout(&output).lines() {
        serde_json::from_str::<Value>(line).expect("stdout holds only stream-json events");
    }
    let log = std::fs::read_to_string(sandbox.pith_home().join("logs").join("pith.log"))
        .expect("the log file exists");
    for expected in [
        "compaction decision",
        "estimate",
        "tool call finished",
        "elapsed_ms",
    ] {
        assert!(
            log.contains(expected),
            "missing `{expected}` in the log:\n{log}"
        );
    }
    assert!(!log.contains("sk-ant-test-key"), "no key in the log");
}
