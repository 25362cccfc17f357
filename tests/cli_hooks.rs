//! End-to-end: hooks are real shell scripts run by the real `pith run` binary against the
//! testkit provider server. Each event is driven through a job: block, allow, add context,
//! timeout, crash, garbage output. Every stream-json line these jobs print is checked
//! against docs/stream-json.schema.json.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::{kinds, records, stderr, stdout, Sandbox};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";

/// Writes an executable `sh` script under the sandbox (outside the workspace) and
/// returns its path.
fn script(sandbox: &Sandbox, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dir = sandbox.root.path().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A file in the sandbox (outside the workspace) hooks may write to.
fn scratch(sandbox: &Sandbox, name: &str) -> PathBuf {
    sandbox.root.path().join(name)
}

/// Writes the user's config file.
fn config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn hook(event: &str, matcher: Option<&str>, command: &str, timeout_s: Option<u64>) -> String {
    let mut text = format!("[[hooks.{event}]]\ncommand = {command:?}\n");
    if let Some(matcher) = matcher {
        text.push_str(&format!("matcher = {matcher:?}\n"));
    }
    if let Some(timeout) = timeout_s {
        text.push_str(&format!("timeout_s = {timeout}\n"));
    }
    text
}

const SCHEMA: &str = include_str!("../docs/stream-json.schema.json");

/// Parses stream-json output, checking every line against the documented schema.
fn stream(output: &std::process::Output) -> Vec<Value> {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let url = schema["$id"].as_str().unwrap().to_owned();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&url, schema).unwrap();
    let index = compiler.compile(&url, &mut schemas).unwrap();
    let lines: Vec<Value> = stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    assert!(!lines.is_empty(), "stderr: {}", stderr(output));
    for line in &lines {
        if let Err(error) = schemas.validate(line, index) {
            panic!("{line} does not match docs/stream-json.schema.json: {error:#}");
        }
    }
    assert_eq!(lines.last().unwrap()["type"], "result");
    lines
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

fn hook_runs(sandbox: &Sandbox) -> Vec<Value> {
    records(&sandbox.only_transcript())
        .into_iter()
        .filter(|r| r["kind"] == "hook_run")
        .collect()
}

/// The text of the last request the server received.
fn request_text(server: &TestServer, index: usize) -> String {
    server.requests()[index].body.to_string()
}

#[test]
fn pre_tool_use_blocks_a_write_and_the_model_reads_why() {
    let sandbox = Sandbox::new();
    let input = scratch(&sandbox, "pre_input.json");
    let guard = script(
        &sandbox,
        "guard.sh",
        &format!(
            "cat > {}\necho 'writes are reviewed by hand here' >&2\nexit 2",
            input.display()
        ),
    );
    config(
        &sandbox,
        &hook("PreToolUse", Some("write|edit"), &guard, None),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("write", json!({"path": "a.txt", "content": "x\n"})),
        Turn::text("Understood."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--approval",
            "auto-edit",
            "--format",
            "stream-json",
            "write a.txt",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        !sandbox.workspace().join("a.txt").exists(),
        "the call never ran"
    );
    // The model read the reason as the call's error result.
    let second = request_text(&server, 1);
    assert!(
        second.contains("a PreToolUse hook refused this call: writes are reviewed by hand here"),
        "{second}"
    );
    let lines = stream(&output);
    let hooks = of_type(&lines, "hook");
    assert_eq!(hooks.len(), 1);
    assert_eq!(hooks[0]["event"], "PreToolUse");
    assert_eq!(hooks[0]["outcome"], "block");
    assert_eq!(hooks[0]["exit_code"], 2);
    let result = of_type(&lines, "tool_result");
    assert_eq!(result[0]["is_error"], true);
    // The hook got the documented input.
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "write");
    assert_eq!(input["tool_input"]["path"], "a.txt");
    assert_eq!(input["session_id"], lines[0]["session_id"]);
    assert_eq!(
        PathBuf::from(input["transcript_path"].as_str().unwrap()),
        sandbox.only_transcript()
    );
    assert_eq!(
        PathBuf::from(input["cwd"].as_str().unwrap()),
        std::fs::canonicalize(sandbox.workspace()).unwrap()
    );
    // And the run is in the transcript.
    let runs = hook_runs(&sandbox);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["outcome"], "block");
    assert_eq!(runs[0]["message"], "writes are reviewed by hand here");
}

#[test]
fn allowing_crashing_garbage_printing_and_sleeping_hooks_never_break_the_turn() {
    let sandbox = Sandbox::new();
    let allow = script(
        &sandbox,
        "allow.sh",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'"#,
    );
    let crash = script(&sandbox, "crash.sh", "kill -SEGV $$");
    let garbage = script(&sandbox, "garbage.sh", r"printf '\377\376\033[2J garbage'");
    let forever = script(&sandbox, "forever.sh", "sleep 1000 &\nsleep 1000");
    config(
        &sandbox,
        &[
            hook("PreToolUse", Some("write"), &allow, None),
            hook("PreToolUse", Some("write"), &crash, None),
            hook("PreToolUse", Some("write"), &garbage, None),
            hook("PreToolUse", Some("write"), &forever, Some(1)),
        ]
        .concat(),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("write", json!({"path": "a.txt", "content": "x\n"})),
        Turn::text("Written."),
    ]))
    .unwrap();
    let started = Instant::now();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--approval", "auto-edit", "write a.txt"],
    );
    let elapsed = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Written.\n");
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("a.txt")).unwrap(),
        "x\n",
        "the call ran"
    );
    // A hook that sleeps forever costs the turn its timeout (1 s), no more.
    assert!(elapsed < Duration::from_secs(6), "took {elapsed:?}");
    let err = stderr(&output);
    assert!(
        err.contains("crash.sh` failed: it crashed (signal 11"),
        "{err}"
    );
    assert!(
        err.contains("garbage.sh` failed: its output is not UTF-8"),
        "{err}"
    );
    assert!(
        err.contains("forever.sh` timed out after 1 s; its process group was killed"),
        "{err}"
    );
    let outcomes: Vec<Value> = hook_runs(&sandbox)
        .iter()
        .map(|r| r["outcome"].clone())
        .collect();
    assert_eq!(
        outcomes,
        [
            json!("proceed"),
            json!("error"),
            json!("error"),
            json!("timeout")
        ]
    );
    // The garbage was recorded without its escape sequences.
    let runs = hook_runs(&sandbox);
    assert!(!runs[2]["stdout"].as_str().unwrap().contains('\u{1b}'));
}

#[test]
fn a_hook_asking_for_approval_in_pith_run_refuses_the_call() {
    let sandbox = Sandbox::new();
    let ask = script(
        &sandbox,
        "ask.sh",
        r#"echo '{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "big change"}}'"#,
    );
    config(&sandbox, &hook("PreToolUse", None, &ask, None));
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("write", json!({"path": "a.txt", "content": "x\n"})),
        Turn::text("OK."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--approval", "auto-edit", "write a.txt"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(!sandbox.workspace().join("a.txt").exists());
    assert!(request_text(&server, 1).contains("no one to ask"));
}

#[test]
fn post_tool_use_adds_context_to_the_result() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "milk\n").unwrap();
    let note = script(&sandbox, "note.sh", "echo 'checked by the house linter'");
    let failing = script(&sandbox, "failing.sh", "echo broken >&2; exit 1");
    config(
        &sandbox,
        &[
            hook("PostToolUse", Some("read"), &note, None),
            hook("PostToolUse", Some("read"), &failing, None),
            hook("PostToolUse", Some("bash"), &failing, None),
        ]
        .concat(),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("read", json!({"path": "notes.txt"})),
        Turn::text("Milk."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--format", "json", "read"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let second = &server.requests()[1].body;
    let result = second["messages"].to_string();
    assert!(
        result.contains(
            r#"milk\n\n\n<hook_context event=\"PostToolUse\">\nchecked by the house linter\n</hook_context>"#
        ) || result.contains("<hook_context event=\\\"PostToolUse\\\">\\nchecked by the house linter"),
        "{result}"
    );
    let runs = hook_runs(&sandbox);
    assert_eq!(runs.len(), 2, "the bash matcher did not run");
    assert_eq!(runs[1]["outcome"], "error");
    // --format json carries the per-request usage list.
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let requests = report["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["id"], 1);
    assert_eq!(requests[1]["id"], 2);
    assert_eq!(requests[0]["purpose"], "turn");
    assert_eq!(requests[0]["protocol"], "anthropic");
}

#[test]
fn user_prompt_submit_blocks_a_prompt_or_adds_context() {
    let sandbox = Sandbox::new();
    let gate = script(
        &sandbox,
        "gate.sh",
        "if grep -q password; then echo 'no secrets in prompts' >&2; exit 2; fi\n\
         echo 'House rule: answer briefly.'",
    );
    config(&sandbox, &hook("UserPromptSubmit", None, &gate, None));
    let server = TestServer::start(Script::anthropic([Turn::text("Brief.")])).unwrap();
    let blocked = sandbox.run(&server, &["--model", MODEL, "my password is hunter2"]);
    assert_eq!(
        blocked.status.code(),
        Some(1),
        "stderr: {}",
        stderr(&blocked)
    );
    assert!(
        stderr(&blocked)
            .contains("a UserPromptSubmit hook blocked the prompt: no secrets in prompts"),
        "{}",
        stderr(&blocked)
    );
    assert_eq!(server.request_count(), 0, "nothing was sent");
    // The hook's run is recorded; the prompt is not.
    let records = records(&sandbox.only_transcript());
    assert_eq!(kinds(&records), ["session_started", "hook_run"]);
    assert_eq!(records[1]["outcome"], "block");

    let sandbox = Sandbox::new();
    config(&sandbox, &hook("UserPromptSubmit", None, &gate, None));
    let output = sandbox.run(&server, &["--model", MODEL, "hello"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let first = &server.requests()[0].body["messages"][0]["content"][0]["text"];
    assert_eq!(
        first,
        "hello\n\n<hook_context event=\"UserPromptSubmit\">\nHouse rule: answer briefly.\n</hook_context>"
    );
}

#[test]
fn session_start_adds_context_to_a_new_and_a_resumed_session() {
    let sandbox = Sandbox::new();
    let sources = scratch(&sandbox, "sources.txt");
    let start = script(
        &sandbox,
        "start.sh",
        &format!(
            "grep -o '\"source\":\"[a-z]*\"' >> {}\necho 'Branch: main. Open issues: 3.'",
            sources.display()
        ),
    );
    config(&sandbox, &hook("SessionStart", None, &start, None));
    let server =
        TestServer::start(Script::anthropic([Turn::text("Hi."), Turn::text("Again.")])).unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "hi"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = stream(&output);
    let session = lines[0]["session_id"].as_str().unwrap().to_owned();
    assert!(request_text(&server, 0)
        .contains(r#"<hook_context event=\"SessionStart\">\nBranch: main. Open issues: 3."#));
    let output = sandbox.run(&server, &["--model", MODEL, "--session", &session, "again"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(&sources).unwrap(),
        "\"source\":\"new\"\n\"source\":\"resume\"\n"
    );
}

/// A job whose first request reports usage above the automatic threshold.
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
fn pre_compact_blocks_an_automatic_compaction() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let block = script(
        &sandbox,
        "block.sh",
        "echo 'not during the release' >&2; exit 2",
    );
    config(&sandbox, &hook("PreCompact", Some("auto"), &block, None));
    let server = TestServer::start(Script::anthropic([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text("Done."),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "go"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = stream(&output);
    assert!(of_type(&lines, "compaction_started").is_empty());
    assert!(of_type(&lines, "notice").iter().any(|n| n["text"]
        .as_str()
        .unwrap()
        .contains("automatic compaction skipped: not during the release")));
    assert_eq!(server.request_count(), 2, "no summary request");
    assert!(!kinds(&records(&sandbox.only_transcript())).contains(&"compaction_applied".into()));
}

#[test]
fn pre_compact_instructions_and_post_compact_rules_shape_the_compaction() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let input = scratch(&sandbox, "post_input.json");
    let pre = script(&sandbox, "pre.sh", "echo 'Keep the TODO list verbatim.'");
    let post = script(
        &sandbox,
        "post.sh",
        &format!("cat > {}\necho 'RULE: indent with tabs.'", input.display()),
    );
    let start = script(&sandbox, "start.sh", "echo 'Resumed after compaction.'");
    config(
        &sandbox,
        &[
            hook("PreCompact", None, &pre, None),
            hook("PostCompact", None, &post, None),
            hook("SessionStart", Some("compact"), &start, None),
        ]
        .concat(),
    );
    let server = TestServer::start(compacting_script()).unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "go"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = stream(&output);
    // The summary request carries the PreCompact instructions.
    assert!(request_text(&server, 1)
        .contains("Additional instructions for this summary:\\nKeep the TODO list verbatim."));
    // The replacement carries the PostCompact and SessionStart(compact) context, persisted.
    let records = records(&sandbox.only_transcript());
    let compaction = records
        .iter()
        .find(|r| r["kind"] == "compaction_applied")
        .expect("compacted");
    let replacement = compaction["messages"].to_string();
    assert!(
        replacement.contains("RULE: indent with tabs."),
        "{replacement}"
    );
    assert!(
        replacement.contains("Resumed after compaction."),
        "{replacement}"
    );
    // The request after the compaction starts from it.
    assert!(request_text(&server, 2).contains("RULE: indent with tabs."));
    let input: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(input["trigger"], "auto");
    assert_eq!(input["summary"], SUMMARY);
    assert!(input["tokens_before"].as_u64().unwrap() >= 171_000);
    // Stream: compaction_started with its trigger and size, then the hooks, then the
    // compaction with its duration.
    let started = of_type(&lines, "compaction_started");
    assert_eq!(started[0]["trigger"], "auto");
    assert!(started[0]["tokens_before"].as_u64().unwrap() >= 171_000);
    let events: Vec<&str> = of_type(&lines, "hook")
        .iter()
        .map(|h| h["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["PreCompact", "PostCompact", "SessionStart"]);
    assert!(of_type(&lines, "compaction")[0]["duration_ms"].is_u64());
    let requests = of_type(&lines, "request");
    let purposes: Vec<&str> = requests
        .iter()
        .map(|r| r["purpose"].as_str().unwrap())
        .collect();
    assert_eq!(purposes, ["turn", "compaction", "turn"]);
    assert_eq!(requests[0]["input_tokens"], 180_000);
}

#[test]
fn a_stop_hook_continues_the_turn_and_max_turns_bounds_it() {
    let sandbox = Sandbox::new();
    let once = script(
        &sandbox,
        "once.sh",
        "if grep -q '\"stop_hook_active\":false'; then echo 'Run the tests before you stop.' >&2; exit 2; fi",
    );
    config(&sandbox, &hook("Stop", None, &once, None));
    let server = TestServer::start(Script::anthropic([
        Turn::text("Done."),
        Turn::text("Tests pass."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "fix it"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(server.request_count(), 2);
    assert!(request_text(&server, 1).contains("Run the tests before you stop."));
    assert_eq!(stdout(&output), "Done.\nTests pass.\n");

    let sandbox = Sandbox::new();
    let always = script(&sandbox, "always.sh", "echo 'Keep going.' >&2; exit 2");
    config(&sandbox, &hook("Stop", None, &always, None));
    let server = TestServer::start(Script::anthropic(
        (0..6).map(|i| Turn::text(format!("Answer {i}."))),
    ))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--max-turns", "3", "go"]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert_eq!(server.request_count(), 3, "bounded by --max-turns");
}

#[test]
fn project_hooks_run_only_once_trusted() {
    let sandbox = Sandbox::new();
    let marker = scratch(&sandbox, "ran");
    std::fs::create_dir_all(sandbox.workspace().join(".pith")).unwrap();
    std::fs::write(
        sandbox.workspace().join(".pith/config.toml"),
        hook(
            "UserPromptSubmit",
            None,
            &format!("touch {}", marker.display()),
            None,
        ),
    )
    .unwrap();
    let server =
        TestServer::start(Script::anthropic([Turn::text("A."), Turn::text("B.")])).unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "hi"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(!marker.exists(), "an untrusted project's hook never runs");
    assert!(
        stderr(&output).contains("the hooks of .pith/config.toml are not trusted yet"),
        "{}",
        stderr(&output)
    );
    let output = sandbox.run(&server, &["--model", MODEL, "--trust-project", "hi"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(marker.exists(), "--trust-project runs it");
}

#[test]
fn stream_json_carries_deltas_retries_and_per_request_usage() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::fault(Fault::Overloaded),
        Turn::text("Hello there.")
            .with_reasoning("Thinking it over.")
            .with_usage(1_234, 56),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "stream-json",
            "--include-partial",
            "hi",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = stream(&output);
    let deltas: String = of_type(&lines, "text_delta")
        .iter()
        .map(|d| d["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "Hello there.");
    assert!(!of_type(&lines, "reasoning_delta").is_empty());
    assert_eq!(of_type(&lines, "retry").len(), 1);
    let requests = of_type(&lines, "request");
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["retries"], 1);
    assert_eq!(requests[0]["input_tokens"], 1_234);
    assert_eq!(requests[0]["output_tokens"], 56);
    let result = lines.last().unwrap();
    let mut listed = result["requests"][0].clone();
    listed["type"] = json!("request");
    assert_eq!(&listed, requests[0], "the result lists the same requests");
    assert_eq!(result["usage"]["input_tokens"], 1_234);

    // Without --include-partial there are no deltas.
    let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "hi"],
    );
    assert!(of_type(&stream(&output), "text_delta").is_empty());
}

/// Every tool call of a long job runs its `PreToolUse` and `PostToolUse` hooks, each
/// recorded. (What they cost is a benchmark, not a test: docs/benchmarks.md.)
#[test]
fn every_tool_call_of_a_job_runs_and_records_both_hooks() {
    let calls = 20;
    let sandbox = Sandbox::new();
    config(
        &sandbox,
        &[
            hook("PreToolUse", None, "exit 0", None),
            hook("PostToolUse", None, "exit 0", None),
        ]
        .concat(),
    );
    // A different directory each time: the same call with the same result over and
    // over would meet the doom-loop guard.
    for i in 0..calls {
        std::fs::create_dir_all(sandbox.workspace().join(format!("d{i}"))).unwrap();
    }
    let turns = (0..calls)
        .map(|i| Turn::tool_call("ls", json!({ "path": format!("d{i}") })))
        .chain([Turn::text("Listed.")]);
    let server = TestServer::start(Script::anthropic(turns)).unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "list"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(hook_runs(&sandbox).len(), calls * 2);
}

const HOOKS_DOC: &str = include_str!("../docs/hooks.md");

/// The `sh` scripts of docs/hooks.md, by the name their second line gives them.
fn documented_scripts() -> Vec<(String, String)> {
    HOOKS_DOC
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| {
            let body = &block[..block.find("```")?];
            let name = body
                .lines()
                .nth(1)?
                .strip_prefix("# .pith/hooks/")?
                .split(':')
                .next()?
                .to_owned();
            Some((name, body.to_owned()))
        })
        .collect()
}

/// Runs a documented script as pith would: `sh -c PATH` in the workspace, JSON on stdin.
fn run_documented(sandbox: &Sandbox, name: &str, input: &Value) -> std::process::Output {
    use std::io::Write;
    let path = sandbox.workspace().join(".pith/hooks").join(name);
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&path)
        .current_dir(sandbox.workspace())
        .env("PITH_PROJECT_DIR", sandbox.workspace())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
#[ignore = "needs jq and rustfmt (the documented examples use them)"]
fn the_documented_examples_work() {
    let sandbox = Sandbox::new();
    let scripts = documented_scripts();
    let names: Vec<&str> = scripts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["guard-rm.sh", "fmt.sh"]);
    for (name, body) in &scripts {
        use std::os::unix::fs::PermissionsExt;
        let path = sandbox.workspace().join(".pith/hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Block `rm -rf` outside the workspace.
    for (command, code) in [
        ("rm -rf /tmp/elsewhere", 2),
        ("cargo clean && rm -fr ~/.cache", 2),
        ("rm -rf ../sibling", 2),
        ("rm -Rf $HOME/x", 2),
        ("rm -rf build", 0),
        ("rm -rf target/debug src/generated", 0),
        ("ls -la", 0),
    ] {
        let input = json!({"hook_event_name": "PreToolUse", "tool_name": "bash",
                           "tool_input": {"command": command}});
        let output = run_documented(&sandbox, "guard-rm.sh", &input);
        assert_eq!(
            output.status.code(),
            Some(code),
            "{command}: {}",
            stderr(&output)
        );
        if code == 2 {
            assert!(stderr(&output).contains("refused"), "{}", stderr(&output));
        }
    }
    // Run rustfmt after each edit.
    std::fs::create_dir_all(sandbox.workspace().join("src")).unwrap();
    std::fs::write(sandbox.workspace().join("src/lib.rs"), "fn  main( ){}").unwrap();
    let input = json!({"hook_event_name": "PostToolUse", "tool_name": "write",
                       "tool_input": {"path": "src/lib.rs"}});
    let output = run_documented(&sandbox, "fmt.sh", &input);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("Formatted src/lib.rs"));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("src/lib.rs")).unwrap(),
        "fn main() {}\n"
    );
    let input = json!({"tool_input": {"path": "notes.md"}});
    let output = run_documented(&sandbox, "fmt.sh", &input);
    assert_eq!(
        (output.status.code(), stdout(&output)),
        (Some(0), String::new())
    );
}

#[test]
fn post_compact_cat_agents_md_reinjects_the_rules_after_a_compaction() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    std::fs::write(
        sandbox.workspace().join("AGENTS.md"),
        "Never push to main.\n",
    )
    .unwrap();
    config(&sandbox, &hook("PostCompact", None, "cat AGENTS.md", None));
    let server = TestServer::start(compacting_script()).unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(&server, &["--model", MODEL, "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let after = &server.requests()[2].body["messages"];
    assert_eq!(after.as_array().unwrap().len(), 1, "the replacement only");
    assert!(
        after[0].to_string().contains(
            "<hook_context event=\\\"PostCompact\\\">\\nNever push to main.\\n</hook_context>"
        ),
        "{after}"
    );
}
