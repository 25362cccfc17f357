//! A model for summaries, through the binary: `[context] compaction_model` (and
//! `--compaction-model`) sends the summary requests to another model, with its own window
//! and prices, and `pith run` reports its usage and cost apart (docs/context-pipeline.md,
//! "A model for summaries").

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{records, stderr, stdout, write_user_config, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MAIN: &str = "anthropic/claude-sonnet-4-5";
const CHEAP: &str = "anthropic/claude-haiku-4-5";
const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";

/// Prices in dollars per million tokens: the main model at ten times the compaction
/// model's.
const CONFIG: &str = r#"
[models."anthropic/claude-sonnet-4-5"]
pricing = { input = 10.0, cached_input = 1.0, output = 50.0 }

[models."anthropic/claude-haiku-4-5"]
pricing = { input = 1.0, cached_input = 0.1, output = 5.0 }
"#;

/// A job whose first request reports usage above the automatic threshold: the summary,
/// then the answer.
fn compacting_script() -> Script {
    Script::anthropic([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40),
        Turn::text(SUMMARY).with_usage(20_000, 500),
        Turn::text("Done.").with_usage(2_000, 30),
    ])
}

/// A sandbox with [`CONFIG`] (`cheap` lines added to the compaction model's table),
/// `context` lines in its `[context]` section (where the scripted usage is believed, as
/// `Sandbox::believe_scripted_usage` does), and a note.
fn sandbox(context: &str, cheap: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    write_user_config(
        &sandbox,
        &format!(
            "{CONFIG}{cheap}\n[context]\nusage_ratio_min = 0.0\nusage_ratio_max = 1e12\n{context}\n"
        ),
    );
    sandbox
}

/// The stream-json lines of `output`, each checked against docs/stream-json.schema.json.
fn documented_lines(output: &std::process::Output) -> Vec<Value> {
    let schema: Value =
        serde_json::from_str(include_str!("../docs/stream-json.schema.json")).unwrap();
    let url = schema["$id"].as_str().unwrap().to_owned();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource(&url, schema).unwrap();
    let index = compiler.compile(&url, &mut schemas).unwrap();
    let lines: Vec<Value> = stdout(output)
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line is JSON"))
        .collect();
    for line in &lines {
        if let Err(error) = schemas.validate(line, index) {
            panic!("{line} does not match docs/stream-json.schema.json: {error:#}");
        }
    }
    lines
}

fn result_of(output: &std::process::Output) -> Value {
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(output));
    serde_json::from_str(stdout(output).trim()).expect("--format json prints one object")
}

fn close(value: &Value, expected: f64) -> bool {
    value.as_f64().is_some_and(|v| (v - expected).abs() < 1e-9)
}

/// `usage`'s cost at `(input, cached_input, output)` dollars per million tokens.
fn priced(usage: &Value, (input, cached, output): (f64, f64, f64)) -> f64 {
    let field = |name: &str| usage[name].as_u64().unwrap_or(0) as f64;
    let cached_tokens = field("cached_input_tokens");
    ((field("input_tokens") - cached_tokens) * input
        + cached_tokens * cached
        + field("output_tokens") * output)
        / 1e6
}

const MAIN_PRICES: (f64, f64, f64) = (10.0, 1.0, 50.0);
const CHEAP_PRICES: (f64, f64, f64) = (1.0, 0.1, 5.0);

#[test]
fn summaries_go_to_the_compaction_model_and_are_priced_and_reported_apart() {
    let sandbox = sandbox(&format!("compaction_model = \"{CHEAP}\""), "");
    let server = TestServer::start(compacting_script()).unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MAIN, "--format", "json", "read the notes"],
    );
    let result = result_of(&output);
    assert_eq!(result["text"], json!("Let me look.\nDone."));

    // (a) The summary request went to the compaction model, the others to the main one.
    let sent: Vec<(String, bool)> = server
        .requests()
        .iter()
        .map(|r| {
            (
                r.body["model"].as_str().unwrap().to_owned(),
                r.body
                    .to_string()
                    .contains("This is a context compaction request"),
            )
        })
        .collect();
    assert_eq!(
        sent,
        [
            ("claude-sonnet-4-5".to_owned(), false),
            ("claude-haiku-4-5".to_owned(), true),
            ("claude-sonnet-4-5".to_owned(), false),
        ]
    );

    // (b) The result reports the summary's usage and cost apart, at the compaction
    // model's prices, and the total prices each request at its own model's.
    let requests = result["requests"].as_array().unwrap();
    assert_eq!(requests[1]["purpose"], json!("compaction"));
    assert_eq!(requests[1]["model"], json!("claude-haiku-4-5"));
    let compaction = &result["compaction"];
    let apart = &compaction["compaction_model"];
    assert_eq!(apart["model"], json!(CHEAP));
    assert_eq!(apart["usage"]["input_tokens"], json!(20_000));
    assert_eq!(apart["usage"]["output_tokens"], json!(500));
    assert_eq!(compaction["usage"], apart["usage"]);
    let summary_cost = priced(&apart["usage"], CHEAP_PRICES);
    assert!(close(&apart["cost"], summary_cost), "{compaction}");
    assert!(close(&compaction["cost"], summary_cost), "{compaction}");
    let main_cost: f64 = [&requests[0], &requests[2]]
        .iter()
        .map(|r| priced(r, MAIN_PRICES))
        .sum();
    assert!(main_cost > 1.8, "180k input tokens at $10/M: {main_cost}");
    let total = main_cost + summary_cost;
    assert!(
        close(&result["cost"], total),
        "{} vs {total}",
        result["cost"]
    );
    // At the main model's prices the summary would have cost ten times as much.
    assert!((priced(&apart["usage"], MAIN_PRICES) - 10.0 * summary_cost).abs() < 1e-9);

    // The session's spend, read back from its records, agrees: the transcript says which
    // model the compaction's usage came from.
    assert!(
        close(&result["session"]["cost"], total),
        "{}",
        result["session"]
    );
    let records = records(&sandbox.only_transcript());
    let applied = records
        .iter()
        .find(|r| r["kind"] == "compaction_applied")
        .unwrap();
    assert_eq!(applied["model"], json!(CHEAP));
    assert_eq!(applied["usage"]["input_tokens"], json!(20_000));

    // A resumed session prices it the same way.
    let session = result["session_id"].as_str().unwrap().to_owned();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Again.").with_usage(1_000, 10)
    ]))
    .unwrap();
    let again = result_of(&sandbox.run(
        &server,
        &["--session", &session, "--format", "json", "once more"],
    ));
    let expected = total + (1_000.0 * 10.0 + 10.0 * 50.0) / 1e6;
    assert!(
        close(&again["session"]["cost"], expected),
        "{} vs {expected}",
        again["session"]
    );
}

#[test]
fn the_flag_names_the_compaction_model_and_a_history_too_large_for_it_goes_to_the_main_model() {
    // The compaction model's window is too small for the history to summarise (its
    // input budget is 1,000 tokens).
    let sandbox = sandbox("", "context_window = 2000");
    let server = TestServer::start(compacting_script()).unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MAIN,
            "--compaction-model",
            CHEAP,
            "--format",
            "stream-json",
            "read the notes",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, vec![json!("claude-sonnet-4-5"); 3]);
    let lines = documented_lines(&output);
    let notice = lines
        .iter()
        .find(|line| {
            line.to_string()
                .contains("input budget of the compaction model")
        })
        .unwrap_or_else(|| panic!("a notice says why: {lines:#?}"));
    assert!(notice.to_string().contains(CHEAP), "{notice}");
    let result = lines.last().unwrap();
    let compaction = &result["compaction"];
    assert_eq!(compaction["compaction_model"]["model"], json!(CHEAP));
    assert_eq!(
        compaction["compaction_model"]["usage"]["input_tokens"],
        json!(0)
    );
    // The summary is charged at the main model's prices.
    assert!(close(
        &compaction["cost"],
        priced(&compaction["usage"], MAIN_PRICES)
    ));
}

#[test]
fn a_bad_compaction_model_is_a_clear_error_naming_it() {
    let sandbox = sandbox("", "");
    let server = TestServer::start(Script::anthropic([Turn::text("never")])).unwrap();
    let flagged = sandbox.run(
        &server,
        &[
            "--model",
            MAIN,
            "--compaction-model",
            "nowhere/model-x",
            "hi",
        ],
    );
    assert_eq!(
        flagged.status.code(),
        Some(2),
        "stderr: {}",
        stderr(&flagged)
    );
    assert!(
        stderr(&flagged).contains("--compaction-model `nowhere/model-x`"),
        "{}",
        stderr(&flagged)
    );

    let configured = Sandbox::new();
    write_user_config(&configured, "[context]\ncompaction_model = \"haiku\"\n");
    let output = configured.run(&server, &["--model", MAIN, "hi"]);
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("[context] compaction_model `haiku`"),
        "{}",
        stderr(&output)
    );
    assert!(server.requests().is_empty(), "nothing was sent");
}
