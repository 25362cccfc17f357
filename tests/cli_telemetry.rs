//! End-to-end: OpenTelemetry export of a `pith run` session — a compaction, tool calls, a
//! hook and a subagent — over OTLP/HTTP (protobuf) to the testkit's receiver, which
//! decodes it with `opentelemetry-proto`, on every protocol. Plus: off by default, content
//! only when asked for and never a key, and a collector that is down or hung never holds
//! the job up for more than the flush bound.
//!
//! (No `otelcol-contrib` collector installs here from a package registry — the one PyPI
//! wheel that ships a binary was built without an OTLP receiver — so the receiver is the
//! testkit's.)
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::{Duration, Instant};

use common::{model_of, stderr, stdout, write_user_config, Sandbox};
use pith_testkit::{OtlpReceiver, Protocol, ReceivedSpan, Script, TestServer, Turn};
use serde_json::{json, Value};

const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";

/// Parent: a tool call and a `task` call (over the threshold), the child's answer, the
/// private summary, the parent's answer.
fn script(protocol: Protocol) -> Script {
    Script::new(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "notes.txt"}))
                .with_tool_call(
                    "task",
                    json!({"description": "find alpha", "prompt": "Where is alpha defined?"}),
                )
                .with_usage(180_000, 40),
            Turn::text("alpha is in src/lib.rs").with_usage(2_000, 10),
            Turn::text(SUMMARY),
            Turn::text("Done.").with_usage(3_000, 5),
        ],
    )
}

fn hook_script(sandbox: &Sandbox) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = sandbox.root.path().join("after-tool.sh");
    std::fs::write(&path, "#!/bin/sh\ncat > /dev/null\nexit 0\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn run_traced(
    sandbox: &Sandbox,
    server: &TestServer,
    endpoint: &str,
    prompt: &str,
) -> std::process::Output {
    sandbox
        .pith(Some(server))
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .args([
            "run",
            "--model",
            model_of(server.protocol()),
            "--context-window",
            "200000",
            "--format",
            "json",
            prompt,
        ])
        .output()
        .expect("pith runs")
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [ReceivedSpan], name: &str) -> &'a ReceivedSpan {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span: {:#?}", names(spans));
    found[0]
}

fn names(spans: &[ReceivedSpan]) -> Vec<&str> {
    spans.iter().map(|s| s.name.as_str()).collect()
}

fn int(span: &ReceivedSpan, key: &str) -> i64 {
    span.attribute(key)
        .as_i64()
        .unwrap_or_else(|| panic!("{} has no integer {key}: {:?}", span.name, span.attributes))
}

fn a_traced_session_with_a_compaction_reaches_the_receiver(protocol: Protocol) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    write_user_config(
        &sandbox,
        &format!(
            "[[hooks.PostToolUse]]\nmatcher = \"read\"\ncommand = {:?}\n",
            hook_script(&sandbox)
        ),
    );
    // The compaction is driven by scripted usage.
    sandbox.believe_scripted_usage();
    let receiver = OtlpReceiver::start().unwrap();
    let server = TestServer::start(script(protocol)).unwrap();
    let output = run_traced(&sandbox, &server, receiver.endpoint(), "read the notes");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    let session_id = result["session_id"].as_str().unwrap();
    assert_eq!(result["compactions"].as_array().unwrap().len(), 1);

    // The flush happened before the process exited.
    let spans = receiver.spans();
    let turn = one(&spans, "turn");
    assert_eq!(turn.parent_span_id, "", "the turn is the root");
    assert_eq!(turn.resource["session.id"], json!(session_id));
    assert_eq!(turn.resource["service.name"], json!("pith"));
    assert_eq!(turn.attribute("session.id"), &json!(session_id));
    assert_eq!(int(turn, "pith.exit_code"), 0);
    assert_eq!(int(turn, "pith.turn.requests"), 2);
    assert!(int(turn, "gen_ai.usage.input_tokens") >= 185_000);
    assert!(
        spans.iter().all(|s| s.trace_id == turn.trace_id),
        "one trace"
    );

    // Requests: the parent's two turn requests and the summary under the turn; the
    // child's under its subagent span.
    let chats: Vec<&ReceivedSpan> = spans
        .iter()
        .filter(|s| s.name.starts_with("chat "))
        .collect();
    assert_eq!(chats.len(), 4, "{:#?}", names(&spans));
    for chat in &chats {
        assert_eq!(chat.attribute("gen_ai.operation.name"), &json!("chat"));
        assert!(chat.attribute("gen_ai.provider.name").is_string());
        assert!(chat.end_unix_nano >= chat.start_unix_nano);
    }
    let first = chats
        .iter()
        .find(|c| int(c, "gen_ai.usage.input_tokens") == 180_000)
        .expect("the first request's usage");
    assert_eq!(first.parent_span_id, turn.span_id);
    assert_eq!(first.attribute("pith.request.purpose"), &json!("turn"));

    // The compaction, with its trigger, sizes, ledger, duration and outcome; its summary
    // request is its child.
    let compaction = one(&spans, "compaction auto");
    assert_eq!(compaction.parent_span_id, turn.span_id);
    assert_eq!(
        compaction.attribute("pith.compaction.trigger"),
        &json!("auto")
    );
    assert!(int(compaction, "pith.compaction.tokens_before") >= 171_000);
    let after = int(compaction, "pith.compaction.tokens_after");
    assert!(after > 0 && after < 20_000, "{after}");
    assert!(int(compaction, "pith.compaction.ledger_tokens") > 0);
    assert!(compaction
        .attributes
        .contains_key("pith.compaction.duration_ms"));
    assert_eq!(
        compaction.attribute("pith.compaction.outcome"),
        &json!("applied")
    );
    let summary = chats
        .iter()
        .find(|c| c.attribute("pith.request.purpose") == &json!("compaction"))
        .expect("the summary request");
    assert_eq!(summary.parent_span_id, compaction.span_id);

    // Tool calls, the hook, the subagent.
    let read = one(&spans, "execute_tool read");
    assert_eq!(read.parent_span_id, turn.span_id);
    assert_eq!(read.attribute("gen_ai.tool.name"), &json!("read"));
    assert_eq!(read.attribute("pith.tool.is_error"), &json!(false));
    assert!(int(read, "pith.tool.output_bytes") > 0);
    let task = one(&spans, "execute_tool task");
    let hook = one(&spans, "hook PostToolUse");
    assert_eq!(hook.attribute("pith.hook.outcome"), &json!("proceed"));
    assert_eq!(hook.attribute("pith.hook.matcher"), &json!("read"));
    let agent = result["children"][0]["agent"].as_str().unwrap();
    let subagent = one(&spans, &format!("invoke_agent {agent}"));
    assert_eq!(subagent.parent_span_id, task.span_id);
    assert_eq!(
        subagent.attribute("pith.subagent.session_id"),
        &result["children"][0]["session_id"]
    );
    let child_chat = chats
        .iter()
        .find(|c| c.parent_span_id == subagent.span_id)
        .expect("the child's request is under the subagent");
    assert_eq!(int(child_chat, "gen_ai.usage.input_tokens"), 2_000);

    // Without the opt-in no content leaves: no prompt, no tool output.
    for span in &spans {
        let text = serde_json::to_string(&span.attributes).unwrap();
        assert!(
            !text.contains("read the notes") && !text.contains("remember the milk"),
            "{}: {text}",
            span.name
        );
    }

    // Metrics: tokens, cost, compactions.
    let metrics = receiver.metrics();
    let sum = |name: &str, filter: &dyn Fn(&serde_json::Map<String, Value>) -> bool| -> f64 {
        metrics
            .iter()
            .filter(|m| m.name == name && filter(&m.attributes))
            .map(|m| m.value)
            .sum()
    };
    assert!(sum("pith.tokens", &|a| a["pith.token.type"] == "input") >= 185_000.0);
    assert!(sum("pith.cost", &|_| true) > 0.0);
    assert_eq!(
        sum("pith.compactions", &|a| a["pith.compaction.trigger"]
            == "auto"),
        1.0
    );
    assert!(metrics
        .iter()
        .all(|m| m.resource["session.id"] == json!(session_id)));
    assert!(receiver
        .requests()
        .iter()
        .all(|(_, content_type)| content_type == "application/x-protobuf"));
}

every_protocol!(a_traced_session_with_a_compaction_reaches_the_receiver);

#[test]
fn without_configuration_nothing_is_exported() {
    let sandbox = Sandbox::new();
    let receiver = OtlpReceiver::start().unwrap();
    let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
    let output = sandbox.run(&server, &["--model", model_of(Protocol::Anthropic), "hi"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(receiver.requests().is_empty());
}

/// `[telemetry] include_content = true` adds the prompt, the answer and tool output —
/// with the API key that appears in them replaced.
#[test]
fn content_only_on_request_and_never_a_key() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let receiver = OtlpReceiver::start().unwrap();
    write_user_config(
        &sandbox,
        &format!(
            "[telemetry]\notlp_endpoint = {:?}\ninclude_content = true\n",
            receiver.endpoint()
        ),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::text("Let me look.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    // The sandbox's Anthropic key is `sk-ant-test-key`.
    let output = sandbox.run(
        &server,
        &[
            "--model",
            model_of(Protocol::Anthropic),
            "read the notes; my key is sk-ant-test-key",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let spans = receiver.spans();
    let turn = one(&spans, "turn");
    let prompt = turn.attribute("pith.prompt").as_str().unwrap();
    assert!(
        prompt.starts_with("read the notes; my key is [redacted]"),
        "{prompt}"
    );
    assert_eq!(turn.attribute("pith.answer"), &json!("Let me look.\nDone."));
    let read = one(&spans, "execute_tool read");
    assert!(read
        .attribute("gen_ai.tool.call.result")
        .as_str()
        .unwrap()
        .contains("remember the milk"));
    assert_eq!(
        read.attribute("gen_ai.tool.call.arguments"),
        &json!(r#"{"path":"notes.txt"}"#)
    );
    let all = format!("{spans:?}");
    assert!(!all.contains("sk-ant-test-key"), "the key never leaves");
}

/// A collector that is not there, and one that accepts connections but never answers:
/// the job's output and exit code are unchanged, and it ends within the flush bound.
#[test]
fn a_down_or_hung_collector_never_holds_the_job_up() {
    // Connections queue in the backlog of a listener nobody accepts from: a hung server.
    let hung = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hung_url = format!("http://{}", hung.local_addr().unwrap());
    let down = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    for endpoint in [down, hung_url] {
        let sandbox = Sandbox::new();
        write_user_config(
            &sandbox,
            &format!("[telemetry]\notlp_endpoint = {endpoint:?}\nflush_timeout_ms = 1000\n"),
        );
        let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
        let started = Instant::now();
        let output = sandbox.run(&server, &["--model", model_of(Protocol::Anthropic), "hi"]);
        let took = started.elapsed();
        assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
        assert_eq!(stdout(&output), "Hi.\n");
        assert!(
            took < Duration::from_secs(6),
            "{endpoint}: the job took {took:?} with a flush bound of 1 s"
        );
    }
}

#[test]
fn a_project_cannot_send_the_session_anywhere() {
    let sandbox = Sandbox::new();
    let receiver = OtlpReceiver::start().unwrap();
    let project = sandbox.workspace().join(".pith");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("config.toml"),
        format!("[telemetry]\notlp_endpoint = {:?}\n", receiver.endpoint()),
    )
    .unwrap();
    let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
    let output = sandbox.run(&server, &["--model", model_of(Protocol::Anthropic), "hi"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("[telemetry] is ignored"),
        "{}",
        stderr(&output)
    );
    assert!(receiver.requests().is_empty());
}
