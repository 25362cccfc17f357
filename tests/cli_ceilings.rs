//! End-to-end: the job's ceilings (`--max-cost`, `--max-duration`, `[limits]`) through
//! the real `pith run` binary against the testkit, on every protocol.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::time::{Duration, Instant};

use common::{json_lines, model_of, records, stderr, stdout, write_user_config, Sandbox};
use pith_core::{Pricing, Usage};
use pith_testkit::{Fault, Protocol, Script, TestServer, Turn};
use serde_json::{json, Value};

/// Input tokens the first answer reports: enough to make the next request expensive.
const FIRST_INPUT: u64 = 100_000;

fn prices(protocol: Protocol) -> Pricing {
    let model = model_of(protocol).split_once('/').unwrap().1;
    let entry = match protocol {
        Protocol::Bedrock => pith_providers::models::catalog::lookup_bedrock(model),
        _ => pith_providers::models::catalog::lookup(model),
    };
    entry
        .and_then(|e| e.pricing)
        .expect("a priced catalog model")
}

/// What the first answer costs at the model's prices.
fn first_cost(protocol: Protocol) -> f64 {
    prices(protocol).cost(&Usage {
        input_tokens: FIRST_INPUT,
        output_tokens: 40,
        ..Usage::default()
    })
}

fn result(output: &std::process::Output) -> Value {
    serde_json::from_str(stdout(output).trim()).expect("the json result is printed")
}

/// A job whose first answer (a tool call) costs about two thirds of the ceiling: the next
/// request, which carries the whole context again, would cross it. It is refused before
/// it is sent; the tool result and the partial answer are in the transcript.
fn a_cost_ceiling_stops_the_job_before_the_request_that_would_cross_it(protocol: Protocol) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(Script::new(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "notes.txt"}))
                .with_usage(FIRST_INPUT, 40),
            Turn::text("Done: remember the milk."),
        ],
    ))
    .unwrap();
    let cap = first_cost(protocol) * 1.5;
    let cap_text = format!("{cap:.6}");
    let output = sandbox.run(
        &server,
        &[
            "--model",
            model_of(protocol),
            "--format",
            "json",
            "--max-cost",
            &cap_text,
            "read the notes",
        ],
    );
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    assert_eq!(
        server.request_count(),
        1,
        "the request that would cross the ceiling was never sent"
    );
    let result = result(&output);
    assert_eq!(result["text"], json!("Let me look."), "the partial result");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("cost ceiling"), "{error}");
    let cost = result["cost"].as_f64().unwrap();
    assert!(
        cost > 0.0 && cost <= cap,
        "spent {cost} under the ceiling {cap}"
    );
    assert!(
        stderr(&output).contains("cost ceiling"),
        "{}",
        stderr(&output)
    );
    // The refusal is reported as a request that was never sent.
    let requests = result["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(requests[1]["usage_reported"], json!(false));
    assert!(requests[1]["error"]
        .as_str()
        .unwrap()
        .contains("cost ceiling"));

    // The transcript holds everything up to the refusal, and ends with it.
    let records = records(&sandbox.only_transcript());
    assert!(
        records
            .iter()
            .any(|r| r.to_string().contains("remember the milk")),
        "the tool ran and its result is recorded"
    );
    let last = records.last().unwrap();
    assert_eq!(last["kind"], json!("assistant_turn"));
    assert!(
        last["error"].as_str().unwrap().contains("cost ceiling"),
        "{last}"
    );
    assert_ne!(last["interrupted"], json!(true));
}

/// The same job under a ceiling it never reaches completes normally.
fn a_job_under_its_cost_ceiling_completes(protocol: Protocol) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::new(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "notes.txt"}))
                .with_usage(FIRST_INPUT, 40),
            Turn::text("Done.").with_usage(FIRST_INPUT + 100, 5),
        ],
    ))
    .unwrap();
    let cap = format!("{:.6}", first_cost(protocol) * 4.0);
    write_user_config(&sandbox, &format!("[limits]\nmax_cost = {cap}\n"));
    let output = sandbox.run(&server, &["--model", model_of(protocol), "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Let me look.\nDone.\n");
}

every_protocol!(
    a_cost_ceiling_stops_the_job_before_the_request_that_would_cross_it,
    a_job_under_its_cost_ceiling_completes,
);

/// `[limits] max_cost` applies like the flag, and the automatic compaction's request is
/// held to it too: its refusal is a failed compaction, then the turn's next request is
/// refused and the job ends at the ceiling.
#[test]
fn a_compaction_request_counts_against_the_ceiling() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text("## Goal\nRead the notes."),
        Turn::text("Done."),
    ]))
    .unwrap();
    // The first request costs about $0.54; the summary request would be as large again.
    write_user_config(&sandbox, "[limits]\nmax_cost = 0.8\n");
    // The compaction is driven by scripted usage.
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "stream-json",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    assert_eq!(server.request_count(), 1);
    let lines = json_lines(&output);
    let failed = lines
        .iter()
        .find(|l| l["type"] == "compaction_failed")
        .expect("the refused compaction is reported");
    assert!(failed["reason"].as_str().unwrap().contains("cost ceiling"));
    let refused: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "request" && l["error"].is_string())
        .collect();
    assert_eq!(
        refused.len(),
        2,
        "the compaction's and the turn's: {lines:?}"
    );
    assert_eq!(refused[0]["purpose"], json!("compaction"));
    assert_eq!(refused[1]["purpose"], json!("turn"));
}

/// A subagent spends from the job's account: its request that would cross the ceiling is
/// refused, its `task` call fails, and the parent's next request is refused too.
#[test]
fn a_subagent_request_counts_against_the_ceiling() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Delegating.")
            .with_tool_call(
                "task",
                json!({"description": "look", "prompt": "Where is alpha?"}),
            )
            .with_usage(FIRST_INPUT, 20),
        Turn::text("alpha is in src/lib.rs").with_usage(1_000, 10),
        Turn::text("Found it."),
    ]))
    .unwrap();
    // The parent's first request spends $0.30; the child's first request is estimated at
    // about $0.04 (a small prompt plus the 2,048-token output reservation): over $0.32.
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "--max-cost",
            "0.32",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    assert_eq!(
        server.request_count(),
        1,
        "neither the child's request nor the parent's next one was sent"
    );
    let result = result(&output);
    assert_eq!(result["children"].as_array().unwrap().len(), 1);
    assert!(result["error"].as_str().unwrap().contains("cost ceiling"));
}

#[test]
fn a_cost_ceiling_for_a_model_without_prices_is_an_error_at_start() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::openai_chat([Turn::text("never")])).unwrap();
    let output = sandbox
        .pith(None)
        .env("OPENROUTER_API_KEY", "sk-test")
        .env("OPENROUTER_BASE_URL", server.base_url())
        .args([
            "run",
            "--model",
            "openrouter/some/unpriced-model",
            "--context-window",
            "64000",
            "--max-cost",
            "1",
            "go",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    assert!(stderr(&output).contains("pricing"), "{}", stderr(&output));
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !r.path.ends_with("/chat/completions")),
        "no model request was sent (only the window probe)"
    );
    for bad in ["0", "-1", "abc"] {
        let output = sandbox
            .pith(None)
            .args(["run", "--max-cost", bad, "go"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "--max-cost {bad}");
    }
    let output = sandbox
        .pith(None)
        .args(["run", "--max-duration", "0", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// A request that hangs is stopped at the time ceiling: the job ends with 124, well
/// before the request's own timeouts, and its transcript names the ceiling.
#[test]
fn a_time_ceiling_stops_a_hung_request_with_its_own_exit_code() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "x\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Let me look.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::fault(Fault::Hang),
    ]))
    .unwrap();
    let started = Instant::now();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "--max-duration",
            "2",
            "go",
        ],
    );
    let took = started.elapsed();
    assert_eq!(
        output.status.code(),
        Some(124),
        "stderr: {}",
        stderr(&output)
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    let result = result(&output);
    assert_eq!(result["text"], json!("Let me look."));
    assert!(result["error"].as_str().unwrap().contains("time ceiling"));
    let last = records(&sandbox.only_transcript()).pop().unwrap();
    assert_eq!(last["kind"], json!("assistant_turn"));
    assert!(
        last["error"].as_str().unwrap().contains("time ceiling"),
        "{last}"
    );
}
