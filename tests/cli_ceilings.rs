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
    // The parent's first request spends $0.30; the smallest useful answer of the child's
    // first request alone (1,024 tokens at $15/M, $0.015) is over the $0.01 left.
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--format",
            "json",
            "--max-cost",
            "0.31",
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

/// Prose of `sentences` different sentences: no line or sentence repeats, so only an
/// output cap can cut it.
fn prose(sentences: usize) -> String {
    (1..=sentences)
        .map(|i| format!("Step {i} checks entry {i} of the list and notes what it finds. "))
        .collect()
}

/// Text of `words` words, each a single token of four characters (" the", " and", …) for
/// pith's tokenizer, and no sentence ends: pith's count of it, delta by delta, is the
/// testkit's (four characters a token), so a cap the server honours is never reached by
/// pith's own count first.
fn four_char_words(words: usize) -> String {
    const WORDS: [&str; 33] = [
        " the", " and", " for", " you", " not", " but", " all", " can", " one", " out", " day",
        " get", " has", " him", " his", " how", " man", " new", " now", " old", " see", " two",
        " way", " who", " boy", " did", " its", " let", " put", " say", " she", " too", " use",
    ];
    (0..words)
        .map(|i| WORDS[(i * 7 + i / WORDS.len()) % WORDS.len()])
        .collect()
}

/// The dollar figure right after `marker` in `text` (`"about $0.0123"`).
fn dollars_after(text: &str, marker: &str) -> f64 {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {text}"))
        + marker.len();
    let number: String = text[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    number.parse().unwrap()
}

/// Runs `pith run --format json` on `server` in `sandbox`, with `--max-cost` when given.
fn run_job(
    sandbox: &Sandbox,
    server: &TestServer,
    model: &str,
    max_cost: Option<&str>,
) -> std::process::Output {
    let mut args = vec!["--model", model, "--format", "json"];
    if let Some(max_cost) = max_cost {
        args.extend(["--max-cost", max_cost]);
    }
    args.push("read the notes and explain them");
    sandbox.run(server, &args)
}

/// What the job's requests reported, as the json result lists them.
fn reported(result: &Value, index: usize) -> Usage {
    let request = &result["requests"][index];
    Usage {
        input_tokens: request["input_tokens"].as_u64().unwrap(),
        cached_input_tokens: request["cached_input_tokens"].as_u64().unwrap(),
        output_tokens: request["output_tokens"].as_u64().unwrap(),
        ..Usage::default()
    }
}

/// `--max-cost` is a guarantee: a job whose ceiling runs out in the middle of its answer
/// is sent that request with its output cap lowered to what the rest pays for (the server
/// honours it and cuts the answer there), spends no more than the ceiling and no less
/// than the ceiling minus the request it then refuses, and ends with exit code 5.
#[test]
fn the_job_spends_up_to_its_ceiling_and_its_last_answer_is_capped_to_what_is_left() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    // An honest server (usage counted from each request) that honours the output cap.
    let script = || {
        Script::openai_chat([
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "notes.txt"})),
            Turn::text(four_char_words(6_000)),
        ])
        .accepting_only("max_completion_tokens")
    };
    let model = model_of(Protocol::OpenAiChat);
    let prices = prices(Protocol::OpenAiChat);
    // Without a ceiling: what the first request costs and how long the second is.
    let server = TestServer::start(script()).unwrap();
    let free = run_job(&sandbox, &server, model, None);
    assert_eq!(free.status.code(), Some(0), "stderr: {}", stderr(&free));
    let free = result(&free);
    let first = prices.cost(&reported(&free, 0));
    let second_input = reported(&free, 1).input_tokens;
    let full_answer = reported(&free, 1).output_tokens;
    assert!(full_answer > 5_000, "{full_answer}");

    // The ceiling pays for the first request, the second's input and 1,500 tokens of its
    // answer.
    let ceiling = first
        + prices.cost(&Usage {
            input_tokens: second_input,
            output_tokens: 1_500,
            ..Usage::default()
        });
    let ceiling_text = format!("{ceiling:.8}");
    let ceiling: f64 = ceiling_text.parse().unwrap();
    let server = TestServer::start(script()).unwrap();
    let output = run_job(&sandbox, &server, model, Some(&ceiling_text));
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    let result = result(&output);

    // The second request asked for no more than the rest pays for (pith prices the
    // prompt with a 2% margin), and its answer was cut there.
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the third request was refused, not sent");
    let cap = requests[1].body["max_completion_tokens"].as_u64().unwrap();
    assert!((1_400..1_500).contains(&cap), "sent cap {cap}");
    assert_eq!(reported(&result, 1).output_tokens, cap, "cut at the cap");
    assert!(result["text"].as_str().unwrap().starts_with("Let me look."));

    // Spent no more than the ceiling, and no less than the ceiling minus the refused
    // request's estimate (its input and the smallest useful answer).
    let cost = result["cost"].as_f64().unwrap();
    let session = result["session"]["cost"].as_f64().unwrap();
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("cost ceiling"), "{error}");
    let refused = dollars_after(error, "about $");
    eprintln!(
        "ceiling ${ceiling:.6}: spent ${cost:.6} (session ${session:.6}), left ${:.6}; the second request was sent with a cap of {cap} tokens (its full answer: {full_answer}); the refused request was estimated at ${refused:.4}",
        ceiling - cost
    );
    assert!(cost <= ceiling + 1e-12, "spent {cost} over {ceiling}");
    assert!(
        session <= ceiling + 1e-12,
        "session {session} over {ceiling}"
    );
    assert!(
        cost >= ceiling - refused,
        "spent {cost}: stopped early (refused ${refused})"
    );
    assert!((session - cost).abs() < 1e-9, "{session} vs {cost}");
    let last = &result["requests"][2];
    assert_eq!(last["usage_reported"], json!(false));
    assert!(last["error"].as_str().unwrap().contains("cost ceiling"));
}

/// Claude Sonnet answers up to 64,000 tokens ($0.96). The request near the ceiling is
/// sent with `max_tokens` lowered to what is left — the old output reservation (the
/// largest answer so far, at least 2,048 tokens) let it ask for all 64,000 and the long
/// answer crossed the ceiling. This server does not honour the cap; pith cuts the answer
/// there itself, charges what it counted, and the job ends at the ceiling.
#[test]
fn a_large_model_cap_is_clamped_so_one_answer_cannot_cross_the_ceiling() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let script = || {
        Script::anthropic([
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "notes.txt"})),
            Turn::text(prose(700)),
        ])
    };
    let model = model_of(Protocol::Anthropic);
    let prices = prices(Protocol::Anthropic);
    let write = prices.cache_write.unwrap_or(prices.input);
    let server = TestServer::start(script()).unwrap();
    let free = run_job(&sandbox, &server, model, None);
    assert_eq!(free.status.code(), Some(0), "stderr: {}", stderr(&free));
    let free = result(&free);
    let first = prices.cost(&reported(&free, 0));
    let second_input = reported(&free, 1).input_tokens;
    let full_answer = prices.output_cost(reported(&free, 1).output_tokens);

    // Room for the second request's prompt (even all written to the cache, with pith's
    // margin) and about 3,000 tokens of answer: more than the old 2,048-token
    // reservation, far less than the answer the server sends.
    let ceiling = first + second_input as f64 * write / 1e6 * 1.03 + prices.output_cost(3_000);
    assert!(
        first
            + prices.input_cost(pith_core::InputEstimate {
                tokens: second_input,
                likely_cached: 0,
            })
            + full_answer
            > ceiling + 0.05,
        "the whole answer would cross the ceiling"
    );
    let ceiling_text = format!("{ceiling:.8}");
    let ceiling: f64 = ceiling_text.parse().unwrap();
    let server = TestServer::start(script()).unwrap();
    let output = run_job(&sandbox, &server, model, Some(&ceiling_text));
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the third request was refused, not sent");
    let cap = requests[1].body["max_tokens"].as_u64().unwrap();
    assert!((2_500..=3_100).contains(&cap), "sent max_tokens {cap}");
    // On the wire: even the whole prompt written to the cache and an answer to the cap
    // stay within the ceiling.
    let worst = first + second_input as f64 * write / 1e6 + prices.output_cost(cap);
    assert!(worst <= ceiling, "worst case {worst} over {ceiling}");

    let result = result(&output);
    let cost = result["cost"].as_f64().unwrap();
    let error = result["error"].as_str().unwrap();
    // What the meter charged, the cut answer included (the provider reported no usage
    // for it: pith dropped the stream at the cut).
    let spent = dollars_after(error, "from $");
    let refused = dollars_after(error, "about $");
    eprintln!(
        "ceiling ${ceiling:.6}: charged ${spent:.4} (reported cost ${cost:.6}); max_tokens {cap} of 64,000; the whole answer would have cost ${full_answer:.4}; the refused request was estimated at ${refused:.4}"
    );
    assert!(cost <= ceiling, "spent {cost} over {ceiling}");
    assert!(spent <= ceiling + 5e-5, "charged {spent} over {ceiling}");
    assert!(
        spent >= ceiling - refused - 5e-5,
        "charged {spent}: stopped early"
    );
    assert!(
        stderr(&output).contains("cost ceiling"),
        "{}",
        stderr(&output)
    );
}

/// A subagent's request is clamped on the job's account like its parent's.
#[test]
fn a_subagent_request_is_capped_to_what_the_job_has_left() {
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
    let prices = prices(Protocol::Anthropic);
    let first = prices.cost(&Usage {
        input_tokens: FIRST_INPUT,
        output_tokens: 20,
        ..Usage::default()
    });
    // The parent's first request spends $0.30; $0.06 is left for the child's request.
    let ceiling = 0.36;
    let output = sandbox.run(
        &server,
        &[
            "--model",
            model_of(Protocol::Anthropic),
            "--format",
            "json",
            "--max-cost",
            "0.36",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(5), "stderr: {}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the parent's next request was refused");
    let child = &requests[1].body;
    assert!(child.to_string().contains("Where is alpha?"), "{child}");
    let cap = child["max_tokens"].as_u64().unwrap();
    let input = pith_testkit::request_tokens(child);
    let worst = first
        + input as f64 * prices.cache_write.unwrap_or(prices.input) / 1e6
        + prices.output_cost(cap);
    eprintln!("subagent: max_tokens {cap}, worst case ${worst:.4} of ${ceiling}");
    assert!((1_024..64_000).contains(&cap), "{cap}");
    assert!(worst <= ceiling, "{worst}");
}

/// The automatic compaction's summary request is clamped too.
#[test]
fn a_compaction_request_is_capped_to_what_the_job_has_left() {
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
    let prices = prices(Protocol::Anthropic);
    let first = prices.cost(&Usage {
        input_tokens: 180_000,
        output_tokens: 40,
        ..Usage::default()
    });
    // The summary request carries the 180,000 tokens again ($0.675 if all written to the
    // cache); the ceiling leaves about 2,000 tokens of summary on top.
    let ceiling = first + 180_100.0 * 3.75 / 1e6 * 1.03 + prices.output_cost(2_000);
    write_user_config(&sandbox, &format!("[limits]\nmax_cost = {ceiling:.6}\n"));
    sandbox.believe_scripted_usage();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            model_of(Protocol::Anthropic),
            "--format",
            "stream-json",
            "go",
        ],
    );
    let lines = json_lines(&output);
    assert!(
        lines.iter().any(|l| l["type"] == "compaction"),
        "the summary was written: {lines:?}"
    );
    let requests = server.requests();
    assert!(requests.len() >= 2, "{requests:?}");
    let summary = &requests[1].body;
    assert!(summary.to_string().contains("summary"), "{summary}");
    let cap = summary["max_tokens"].as_u64().unwrap();
    eprintln!("compaction: max_tokens {cap} under a ceiling of ${ceiling:.4}");
    assert!((1_024..64_000).contains(&cap), "{cap}");
    assert!(
        first + 180_000.0 * 3.75 / 1e6 + prices.output_cost(cap) <= ceiling,
        "{cap}"
    );
}
