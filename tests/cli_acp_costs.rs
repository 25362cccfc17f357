//! End-to-end: the cost `pith acp` reports adds up. A session with an automatic
//! compaction and a subagent reports, live and after `session/load` in a new process,
//! the cost of every request the server answered (turns, the summary, the child's) at
//! the model's prices — the one count of `pith_session::spend`.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::acp::Agent;
use common::Sandbox;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY_REQUEST_MARKER: &str = "Write the summary now.";

/// (input, cached input, output) of each request the script answers, in order.
const REQUESTS: [(u64, u64, u64); 6] = [
    (180_000, 0, 40),        // the first turn's read: the context passes the threshold
    (150_000, 120_000, 300), // the automatic compaction's summary
    (20_000, 0, 50),         // delegating
    (5_000, 0, 10),          // the child's read
    (6_000, 4_000, 20),      // the child's report
    (21_000, 19_000, 30),    // the answer
];

/// Claude Sonnet 4.5 in pith's catalog: $3 input, $0.30 cached input, $15 output per M.
fn expected_cost() -> f64 {
    REQUESTS
        .iter()
        .map(|(input, cached, output)| {
            ((input - cached) as f64 * 3.0 + *cached as f64 * 0.3 + *output as f64 * 15.0) / 1e6
        })
        .sum()
}

fn script() -> Script {
    let usage = |i: usize, turn: Turn| {
        let (input, cached, output) = REQUESTS[i];
        turn.with_usage(input, output).with_cached_input(cached)
    };
    Script::anthropic([
        usage(
            0,
            Turn::text("Reading.").with_tool_call("read", json!({"path": "a.txt"})),
        ),
        usage(
            2,
            Turn::text("Delegating.").with_tool_call(
                "task",
                json!({"description": "read the notes", "prompt": "Read a.txt."}),
            ),
        ),
        usage(
            3,
            Turn::text("").with_tool_call("read", json!({"path": "a.txt"})),
        ),
        usage(4, Turn::text("The file says a.")),
        usage(5, Turn::text("Done.")),
        // The `pith run` job after the load.
        Turn::text("Nothing more.").with_usage(22_000, 5),
    ])
    .responding(
        SUMMARY_REQUEST_MARKER,
        usage(1, Turn::text("## Goal\nRead.\n## Key Instructions\nNone.")),
    )
}

fn start(sandbox: &Sandbox, server: &TestServer) -> Agent {
    let mut command = sandbox.pith(Some(server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.until_response(json!(1));
    agent
}

/// The cost of the last `usage_update` among `messages`.
fn last_cost(messages: &[Value]) -> f64 {
    messages
        .iter()
        .rev()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == json!("usage_update"))
        .find_map(|m| m["params"]["update"]["cost"]["amount"].as_f64())
        .unwrap_or_else(|| panic!("no usage_update with a cost: {messages:#?}"))
}

fn assert_close(what: &str, actual: f64, expected: f64) {
    assert!(
        (actual - expected).abs() <= expected * 0.01,
        "{what}: ${actual:.6}, the requests cost ${expected:.6}"
    );
}

#[test]
fn live_and_loaded_costs_equal_what_the_requests_cost() {
    let sandbox = Sandbox::new();
    sandbox.believe_scripted_usage();
    std::fs::write(sandbox.workspace().join("a.txt"), "a\n").unwrap();
    let server = TestServer::start(script()).unwrap();

    let mut agent = start(&sandbox, &server);
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    let turn = agent.until_response(json!(3));
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{turn:#?}"
    );
    assert_eq!(server.requests().len(), REQUESTS.len(), "{turn:#?}");
    // The compaction happened, and the cost before it counted only the first request.
    let compacted = turn.iter().position(|m| {
        m["params"]["update"]["sessionUpdate"] == json!("agent_thought_chunk")
            && m.to_string().contains("compact")
            || m["params"]["update"]["sessionUpdate"] == json!("compaction_update")
    });
    assert!(compacted.is_some(), "no compaction: {turn:#?}");
    let first = (REQUESTS[0].0 as f64 * 3.0 + REQUESTS[0].2 as f64 * 15.0) / 1e6;
    let before_compaction = &turn[..compacted.unwrap()];
    assert_close("before the compaction", last_cost(before_compaction), first);
    assert_close("live", last_cost(&turn), expected_cost());
    let (code, _, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");

    // A new process loads the session: the same figure.
    let mut agent = start(&sandbox, &server);
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/load",
        "params": {"sessionId": session, "cwd": sandbox.workspace(), "mcpServers": []}}));
    let mut loaded = agent.until_response(json!(2));
    // The usage_update follows the response.
    loaded.push(agent.until_next());
    assert_close("loaded", last_cost(&loaded), expected_cost());
    let (code, _, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");

    // And `pith run`'s JSON result for the same session (its `session` totals), after
    // one more job: every request, this job's too.
    let mut run = sandbox.pith(Some(&server));
    run.args([
        "run",
        "--model",
        MODEL,
        "--session",
        session.as_str().unwrap(),
        "--format",
        "json",
        "and now?",
    ]);
    let output = run.output().unwrap();
    let result: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    let job = result["cost"].as_f64().unwrap();
    assert_close(
        "the session in pith run's result",
        result["session"]["cost"].as_f64().unwrap(),
        expected_cost() + job,
    );

    // `pith sessions` lists the same figure (its listing reads only what spent).
    let mut list = sandbox.pith(None);
    list.args(["sessions", "--json"]);
    let listed: Value = serde_json::from_slice(&list.output().unwrap().stdout).unwrap();
    let entry = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == session)
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_close(
        "pith sessions",
        entry["cost"].as_f64().unwrap(),
        expected_cost() + job,
    );
    assert!(entry["cache_hit_rate"].as_f64().unwrap() > 0.3, "{entry}");
}

#[test]
fn the_first_usage_update_is_a_count_not_the_byte_bound() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("Hi.")])).unwrap();
    let mut agent = start(&sandbox, &server);
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let mut opened = agent.until_response(json!(2));
    opened.push(agent.until_next());
    let first = opened
        .iter()
        .find(|m| m["params"]["update"]["sessionUpdate"] == json!("usage_update"))
        .unwrap_or_else(|| panic!("{opened:#?}"));
    let used = first["params"]["update"]["used"].as_u64().unwrap();
    let session = opened[opened.len() - 2]["result"]["sessionId"].clone();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}}),
    );
    agent.until_response(json!(3));
    agent.finish();
    // The first request is the empty session plus "hi": within a few tokens of the
    // figure shown before it, nowhere near its size in bytes (about 4× more).
    let request = &server.requests()[0].body;
    let counted = pith_testkit::request_tokens(request);
    let bytes = request.to_string().len() as u64;
    assert!(
        used.abs_diff(counted) * 10 < counted,
        "first figure {used}, the first request counts {counted} tokens ({bytes} bytes)"
    );
}
