//! End-to-end: subagents (the `task` tool) through the real `pith run` binary against the
//! testkit provider server. Each test scripts the parent's and the children's requests in
//! the order the server receives them.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{kinds, records, stderr, stdout, transcripts, Sandbox};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000

fn task(prompt: &str) -> Value {
    json!({"description": "look around", "prompt": prompt})
}

/// The stream-json lines of `output`.
fn lines(output: &std::process::Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect()
}

/// The transcript of session `id` under the sandbox's store.
fn transcript_of(sandbox: &Sandbox, id: &str) -> PathBuf {
    transcripts(&sandbox.pith_home())
        .into_iter()
        .find(|path| records(path)[0]["session_id"] == id)
        .unwrap_or_else(|| panic!("no transcript for session {id}"))
}

/// The tool results of every `assistant_turn` of a transcript, in order.
fn tool_results(path: &Path) -> Vec<Value> {
    records(path)
        .iter()
        .filter(|r| r["kind"] == "assistant_turn")
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["type"] == "tool_result")
        .collect()
}

/// A child's answer long enough to stream for about a second (≈ 16 characters a chunk).
fn slow_report(name: &str) -> Turn {
    Turn::text(format!(
        "{name}: {}",
        "found it in src/lib.rs:1. ".repeat(8)
    ))
    .with_chunk_delay_ms(60)
}

fn write_config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn result_line(lines: &[Value]) -> &Value {
    lines
        .last()
        .filter(|l| l["type"] == "result")
        .expect("a result line")
}

#[test]
fn two_task_calls_in_one_turn_run_their_children_concurrently_and_only_the_reports_return() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Delegating.")
            .with_tool_call("task", task("Where is alpha defined?"))
            .with_tool_call("task", task("Where is beta defined?"))
            .with_usage(500, 20),
        slow_report("report one").with_usage(1_000, 50),
        slow_report("report two").with_usage(2_000, 60),
        Turn::text("Both found.").with_usage(3_000, 10),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "stream-json",
            "find alpha and beta",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = lines(&output);

    // Concurrency: both children started before either finished its request.
    let started: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l["type"] == "notice"
                && l["parent"].is_object()
                && l["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("subagent explore started")
        })
        .map(|(i, _)| i)
        .collect();
    let first_child_request = lines
        .iter()
        .position(|l| l["type"] == "request" && l["parent"].is_object())
        .expect("a child's request line");
    assert_eq!(started.len(), 2, "{lines:#?}");
    assert!(
        started[1] < first_child_request,
        "the second child started only after the first finished a request: {lines:#?}"
    );
    let parents: Vec<&str> = lines
        .iter()
        .filter(|l| l["parent"].is_object())
        .map(|l| l["parent"]["session_id"].as_str().unwrap())
        .collect();
    let mut children: Vec<&str> = parents.clone();
    children.sort();
    children.dedup();
    assert_eq!(children.len(), 2, "two child sessions");

    // The parent's context grew by the reports only, each linked to its child.
    let result = result_line(&lines);
    assert_eq!(result["text"], "Delegating.\nBoth found.");
    let reported: Vec<&Value> = result["children"].as_array().unwrap().iter().collect();
    assert_eq!(reported.len(), 2);
    let child_input: u64 = reported
        .iter()
        .map(|c| c["usage"]["input_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(child_input, 3_000, "each child's usage is reported");
    assert_eq!(
        result["usage"]["input_tokens"], 6_500,
        "the children's usage is in the totals"
    );
    let parent = transcript_of(&sandbox, result["session_id"].as_str().unwrap());
    let results = tool_results(&parent);
    assert_eq!(results.len(), 2);
    for tool_result in &results {
        let content = tool_result["content"].as_str().unwrap();
        assert!(content.starts_with("report "), "{content}");
        assert!(content.contains("[subagent explore · 1 request · 0 tool calls"));
        let child_id = tool_result["child_session"]["session_id"].as_str().unwrap();
        assert!(content.contains(child_id), "the footer names the session");
        let child = records(&transcript_of(&sandbox, child_id));
        assert_eq!(
            child[0]["parent_session"], result["session_id"],
            "the child's session names its parent"
        );
        assert_eq!(
            kinds(&child),
            ["session_started", "user_message", "assistant_turn"]
        );
        assert_eq!(
            child[2]["messages"][0]["parts"][0]["text"]
                .as_str()
                .unwrap(),
            content.split("\n\n[subagent").next().unwrap(),
            "the parent got the child's answer"
        );
    }

    // The children were told their job and ran the explore agent with read-only tools.
    let requests = server.requests();
    let child_requests: Vec<_> = requests
        .iter()
        .filter(|r| {
            r.body["system"]
                .to_string()
                .contains("You are an exploration agent")
        })
        .collect();
    assert_eq!(child_requests.len(), 2);
    for request in child_requests {
        let tools: Vec<&str> = request.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tools,
            ["read", "grep", "glob", "ls"],
            "no task tool at depth 1"
        );
    }
    let parent_tools = requests[0].body["tools"].to_string();
    assert!(parent_tools.contains("\"task\""));
    assert!(parent_tools.contains("- explore: Read-only investigation"));
}

#[test]
fn max_parallel_one_runs_the_children_one_after_the_other() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "[agents]\nmax_parallel = 1\n");
    let server = TestServer::start(Script::anthropic([
        Turn::text("")
            .with_tool_call("task", task("one"))
            .with_tool_call("task", task("two")),
        slow_report("report one"),
        slow_report("report two"),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "go"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = lines(&output);
    let started: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l["type"] == "notice"
                && l["text"]
                    .as_str()
                    .unwrap()
                    .starts_with("subagent explore started")
        })
        .map(|(i, _)| i)
        .collect();
    let first_child_request = lines
        .iter()
        .position(|l| l["type"] == "request" && l["parent"].is_object())
        .unwrap();
    assert_eq!(started.len(), 2);
    assert!(
        started[0] < first_child_request && first_child_request < started[1],
        "with one slot the second child waits for the first: {lines:#?}"
    );
}

/// The requests whose system prompt is the explore agent's.
fn child_requests(server: &TestServer) -> Vec<pith_testkit::RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| {
            r.body["system"]
                .to_string()
                .contains("You are an exploration agent")
        })
        .collect()
}

#[test]
fn a_child_cannot_start_children_and_is_told_why() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call("task", task("dig")),
        Turn::default().with_tool_call("task", task("dig deeper")),
        Turn::text("I dug myself."),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--format", "json", "dig"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        result["children"].as_array().unwrap().len(),
        1,
        "no grandchild"
    );
    let child_id = result["children"][0]["session_id"].as_str().unwrap();
    let refused = tool_results(&transcript_of(&sandbox, child_id));
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["is_error"], true);
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("a subagent cannot start subagents (depth limit 1)"),
        "{refused:?}"
    );
    let first = &child_requests(&server)[0];
    assert!(
        !first.body["tools"].to_string().contains("\"task\""),
        "the child is not offered task"
    );
    assert_eq!(transcripts(&sandbox.pith_home()).len(), 2);
}

#[test]
fn a_childs_failure_is_a_tool_error_and_the_parent_goes_on() {
    let sandbox = Sandbox::new();
    let agents = sandbox.workspace().join(".pith").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("ghost.md"),
        "---\nname: ghost\ndescription: runs a model that does not exist\nmodel: nosuch/model\n---\nYou haunt.\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("brief.md"),
        "---\nname: brief\ndescription: one request only\ntools: Read\nmax_turns: 1\n---\nYou are brief.\n",
    )
    .unwrap();
    std::fs::write(sandbox.workspace().join("notes.txt"), "milk\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call(
            "task",
            json!({"description": "d", "prompt": "p", "agent": "ghost"}),
        ),
        Turn::default().with_tool_call(
            "task",
            json!({"description": "d", "prompt": "p", "agent": "brief"}),
        ),
        // The brief child reads, and would need a second request to answer.
        Turn::text("Reading.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::text("Both helpers failed; here is what I know."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--trust-project",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(result["text"], "Both helpers failed; here is what I know.");
    let results = tool_results(&transcript_of(
        &sandbox,
        result["session_id"].as_str().unwrap(),
    ));
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["is_error"], true);
    let ghost = results[0]["content"].as_str().unwrap();
    assert!(ghost.contains("cannot start the `ghost` agent"), "{ghost}");
    assert!(
        results[0].get("child_session").is_none(),
        "it never started"
    );
    assert_eq!(results[1]["is_error"], true);
    let brief = results[1]["content"].as_str().unwrap();
    assert!(
        brief.contains("The subagent failed: stopped after 1 model requests"),
        "{brief}"
    );
    assert!(brief.contains("Reading."), "what it said is kept: {brief}");
    let child_id = results[1]["child_session"]["session_id"].as_str().unwrap();
    let child = records(&transcript_of(&sandbox, child_id));
    assert!(child.last().unwrap()["error"]
        .as_str()
        .unwrap()
        .contains("stopped after 1"));
}

#[test]
fn a_child_compacts_its_own_context_and_the_parent_does_not() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call("task", task("read the notes")),
        Turn::text("Reading.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text("## Goal\nRead the notes.\n## Key Instructions\nNone."),
        Turn::text("The notes say: remember the milk (notes.txt:1)."),
        Turn::text("Milk."),
    ]))
    .unwrap();
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "stream-json", "notes?"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let lines = lines(&output);
    let compaction = lines
        .iter()
        .find(|l| l["type"] == "compaction")
        .expect("a compaction line");
    assert_eq!(compaction["trigger"], "auto");
    assert_eq!(
        compaction["parent"]["agent"], "explore",
        "it was the child's"
    );
    let result = result_line(&lines);
    assert!(result["compactions"].as_array().unwrap().is_empty());
    let child_id = result["children"][0]["session_id"].as_str().unwrap();
    assert!(kinds(&records(&transcript_of(&sandbox, child_id)))
        .contains(&"compaction_applied".to_owned()));
    let parent = records(&transcript_of(
        &sandbox,
        result["session_id"].as_str().unwrap(),
    ));
    assert!(!kinds(&parent).contains(&"compaction_applied".to_owned()));
    let results = tool_results(&transcript_of(
        &sandbox,
        result["session_id"].as_str().unwrap(),
    ));
    assert!(results[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("The notes say: remember the milk (notes.txt:1).\n\n[subagent explore"));
    assert!(
        result["children"][0]["usage"]["input_tokens"]
            .as_u64()
            .unwrap()
            >= 180_000,
        "the child's compaction is in its usage"
    );
}

#[test]
fn sigint_mid_child_cancels_it_and_both_transcripts_say_so() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call("task", task("wait forever")),
        Turn::fault(Fault::Hang),
    ]))
    .unwrap();
    let child = sandbox
        .pith(Some(&server))
        .args(["run", "--model", MODEL, "--format", "json", "go"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    server
        .wait_for_requests_blocking(2, Duration::from_secs(30))
        .expect("the child's request arrives");
    std::thread::sleep(Duration::from_millis(200));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "stderr: {}",
        stderr(&output)
    );
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let parent = transcript_of(&sandbox, result["session_id"].as_str().unwrap());
    let last = records(&parent).last().cloned().unwrap();
    assert_eq!(last["interrupted"], true);
    let results = tool_results(&parent);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["is_error"], true);
    let child_id = results[0]["child_session"]["session_id"].as_str().unwrap();
    let child_records = records(&transcript_of(&sandbox, child_id));
    assert_eq!(child_records.last().unwrap()["interrupted"], true);
    assert_eq!(
        server.request_count(),
        2,
        "nothing was sent after the cancel"
    );
}

#[test]
fn replay_links_the_childs_transcript_collapsed_and_expand_nests_it() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("lib.rs"), "fn alpha() {}\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Asking a helper.").with_tool_call("task", task("find alpha")),
        Turn::text("Searching.").with_tool_call("grep", json!({"pattern": "alpha"})),
        Turn::text("alpha is at lib.rs:1."),
        Turn::text("It is in lib.rs."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--format", "json", "where is alpha?"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let parent = result["session_id"].as_str().unwrap();
    let child = result["children"][0]["session_id"].as_str().unwrap();

    let replay = |args: &[&str]| {
        let output = sandbox
            .pith(None)
            .arg("replay")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
        stdout(&output)
    };
    let collapsed = replay(&[parent]);
    assert!(
        collapsed.contains(&format!(
            "↳ subagent session {child} (collapsed; --expand shows it)"
        )),
        "{collapsed}"
    );
    assert!(
        !collapsed.contains("Searching."),
        "the child's work is not shown"
    );
    let expanded = replay(&[parent, "--expand"]);
    assert!(
        expanded.contains(&format!("↳ subagent session {child}:")),
        "{expanded}"
    );
    assert!(expanded.contains("    │   Searching.\n"), "{expanded}");
    assert!(
        expanded.contains("    │   * grep {\"pattern\":\"alpha\"}\n"),
        "{expanded}"
    );
    assert!(
        expanded.contains("    │   alpha is at lib.rs:1.\n"),
        "{expanded}"
    );
    // The child's transcript replays on its own too.
    let alone = replay(&[child]);
    assert!(alone.contains("> user"), "{alone}");
    assert!(alone.contains("find alpha"), "{alone}");
}

#[test]
fn a_child_never_exceeds_the_parents_approval_mode() {
    let sandbox = Sandbox::new();
    let agents = sandbox.workspace().join(".pith").join("agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(
        agents.join("writer.md"),
        "---\nname: writer\ndescription: writes files\ntools: Write, Read\n---\nYou write.\n",
    )
    .unwrap();
    let script = || {
        Script::anthropic([
            Turn::default().with_tool_call(
                "task",
                json!({"description": "d", "prompt": "write it", "agent": "writer"}),
            ),
            Turn::default()
                .with_tool_call("write", json!({"path": "out.txt", "content": "written\n"})),
            Turn::text("Tried."),
            Turn::text("Done."),
        ])
    };
    // `pith run` defaults to read-only: the writer's write is refused.
    let server = TestServer::start(script()).unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--trust-project",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        !sandbox.workspace().join("out.txt").exists(),
        "the child wrote"
    );
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let child_id = result["children"][0]["session_id"].as_str().unwrap();
    let refused = tool_results(&transcript_of(&sandbox, child_id));
    assert_eq!(refused[0]["is_error"], true, "{refused:?}");
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("permission denied"),
        "{refused:?}"
    );
    // With the parent in auto-edit, the same child may write.
    let server = TestServer::start(script()).unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "--trust-project",
            "--approval",
            "auto-edit",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("out.txt")).unwrap(),
        "written\n"
    );
}

#[test]
fn a_large_report_is_squashed_and_spilled_like_any_tool_output() {
    let sandbox = Sandbox::new();
    let report: String = (0..3_000)
        .map(|i| format!("Finding {i}: the handler validates order {i} before it is queued.\n"))
        .collect();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call("task", task("list every finding")),
        Turn::text(report.clone()),
        Turn::text("Too many findings."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--format", "json", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let parent = transcript_of(&sandbox, result["session_id"].as_str().unwrap());
    let content = tool_results(&parent)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        content.len() * 10 < report.len(),
        "the parent got {} of {} bytes",
        content.len(),
        report.len()
    );
    assert!(content.contains("Finding 0: "), "the head is kept");
    assert!(
        content.contains("[subagent explore"),
        "the footer is kept: {content}"
    );
    let spill = std::fs::read_dir(parent.parent().unwrap().join("spill"))
        .expect("a spill directory")
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .find(|text| text.contains("Finding 2999: "))
        .expect("the whole report is spilled");
    assert_eq!(spill.trim_end(), report.trim_end());
}
