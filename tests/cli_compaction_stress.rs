//! The compaction stress suite: servers that over-report, under-report or report no
//! usage, a tokenizer bias, a prompt and an AGENTS.md larger than the window, summaries
//! that ignore their limit or call tools, a context-length error right after a
//! compaction, a history heavy with images, and a model that repeats itself — each through
//! the real binary, on a 32,000-token window with a model that always calls a tool.
//!
//! Every scenario checks the governor's promises: a bounded number of LLM compactions,
//! no request larger than the input budget (counted on the wire with pith's tokenizer),
//! notices that come true, and (where the run ends normally) a transcript that holds what
//! was sent. `PITH_STRESS_REPORT=FILE` appends one JSON line per scenario with its
//! figures, for `cargo xtask bench`.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::stress::{FrontEnd, Outcome, Prompt, Reads, Scenario, SHORT_SUMMARY};
use pith_testkit::{Fault, Protocol, Responder, Turn, UsageMode};

/// Writes the scenario's figures for `cargo xtask bench` when asked to.
fn report(name: &str, outcome: &Outcome) {
    let Ok(path) = std::env::var("PITH_STRESS_REPORT") else {
        return;
    };
    use std::io::Write;
    let line = serde_json::json!({
        "scenario": name,
        "tool_turns": outcome.tool_turns(),
        "compaction_attempts": outcome.compaction_attempts(),
        "wasted_attempts": outcome.wasted_attempts(),
        "attempts_per_100_tool_turns": outcome.attempts_per_100_tool_turns(),
        "wasted_per_100_tool_turns":
            outcome.wasted_attempts() as f64 * 100.0 / outcome.tool_turns().max(1) as f64,
        "largest_request_share_of_window": outcome.largest_request_share(),
    });
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("the report file opens");
    writeln!(file, "{line}").expect("the report is written");
}

/// The checks every normally ending scenario makes.
fn check(name: &str, outcome: &Outcome, max_attempts: usize) {
    assert_eq!(
        outcome.output.status.code(),
        Some(0),
        "{name}: {}",
        outcome.describe()
    );
    assert!(
        outcome.compaction_attempts() <= max_attempts,
        "{name}: more than {max_attempts} LLM compactions: {}",
        outcome.describe()
    );
    outcome.assert_within_budget();
    outcome.assert_truthful();
    report(name, outcome);
}

fn log_of(tokens: usize) -> String {
    // About 9 tokens a line.
    (0..tokens / 9)
        .map(|i| format!("2026-12-01 10:{i:05} worker {i} finished a step\n"))
        .collect()
}

#[test]
fn an_over_reporting_server_gets_at_most_3_compactions_in_30_tool_turns() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::Constant(30_000);
    let outcome = scenario.run();
    check("over-reporting (30,000 always)", &outcome, 3);
    assert_eq!(outcome.tool_turns(), 30, "{}", outcome.describe());
    assert_eq!(
        outcome.governor("usage_implausible").len(),
        1,
        "the implausible report is named once: {}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn an_under_reporting_server_never_gets_a_request_over_the_budget() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::Constant(100);
    scenario.tool_turns = 60;
    let outcome = scenario.run();
    check("under-reporting (100 always)", &outcome, 8);
    assert!(
        outcome.compaction_attempts() >= 2,
        "it compacts by its own count: {}",
        outcome.describe()
    );
    assert!(
        outcome.max_request_tokens() as f64 <= 1.25 * scenario.window as f64,
        "{}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn without_usage_pith_counts_and_compacts_as_the_context_fills() {
    let mut scenario = Scenario::new(Protocol::Anthropic);
    scenario.usage = UsageMode::None;
    let outcome = scenario.run();
    check("no usage reported", &outcome, 3);
    assert!(outcome.compaction_attempts() >= 1, "{}", outcome.describe());
    assert!(outcome.governor("usage_implausible").is_empty());
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn a_tokenizer_that_counts_30_percent_more_or_less_is_calibrated() {
    for bias_percent in [30, -30] {
        let mut scenario = Scenario::new(Protocol::Anthropic);
        scenario.usage = UsageMode::Counted { bias_percent };
        let outcome = scenario.run();
        check(&format!("tokenizer bias {bias_percent:+}%"), &outcome, 4);
        assert!(outcome.compaction_attempts() >= 1, "{}", outcome.describe());
        assert!(
            outcome.governor("usage_implausible").is_empty(),
            "a 30% difference is plausible: {}",
            outcome.describe()
        );
        outcome.assert_transcript_is_what_was_sent();
    }
}

#[test]
fn a_62000_token_prompt_reaches_the_model_as_head_tail_and_a_readable_file() {
    let prompt = format!(
        "Find why step 3 fails.\n{}The last line says: STEP-3-FAILED",
        log_of(62_000)
    );
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::None;
    scenario.tool_turns = 10;
    scenario.file_bytes = 200;
    scenario.prompt = Prompt::Stdin(prompt.clone());
    let outcome = scenario.run();
    check("a 62,000-token prompt", &outcome, 1);
    let first = outcome.requests[0].body.to_string();
    assert!(first.contains("Find why step 3 fails."), "the head");
    assert!(first.contains("STEP-3-FAILED"), "the tail");
    assert!(
        first.contains("[full output: $PITH_SPILL_DIR/"),
        "the file to read the rest from"
    );
    let spilled: Vec<String> = std::fs::read_dir(
        common::transcripts(&outcome.sandbox.pith_home())[0]
            .parent()
            .unwrap()
            .join("spill"),
    )
    .unwrap()
    .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
    .collect();
    assert!(
        spilled.contains(&prompt),
        "the whole message is stored beside the transcript"
    );
    assert!(
        outcome
            .notices()
            .iter()
            .any(|n| n.starts_with("your message is")),
        "{}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn an_agents_md_larger_than_the_window_is_cut_warned_and_compacts_at_most_twice_in_20_turns() {
    let rules: String = (0..11_000)
        .map(|i| format!("Rule {i}: run the linters before every commit.\n"))
        .collect();
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::None;
    scenario.tool_turns = 20;
    scenario.agents_md = Some(rules);
    let outcome = scenario.run();
    check("an AGENTS.md of 100,000 tokens", &outcome, 2);
    let warned = |text: &str| text.contains("AGENTS.md is") && text.contains("32,000-token window");
    assert!(
        outcome.notices().iter().any(|n| warned(n)),
        "stream-json carries the warning: {}",
        outcome.describe()
    );
    assert!(
        warned(&common::stderr(&outcome.output)),
        "so does stderr: {}",
        common::stderr(&outcome.output)
    );
    let system = outcome.requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("Rule 0: run the linters"));
    assert!(system.contains("AGENTS.md continues beyond its share"));
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn summaries_that_ignore_the_word_limit_cost_at_most_3_attempts_in_30_tool_turns() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::None;
    scenario.summary = Turn::text(format!("## Goal\n{}", "word ".repeat(30_000)));
    let outcome = scenario.run();
    check("summaries of 30,000 words", &outcome, 3);
    assert!(
        outcome.applied_compactions() >= 1,
        "a summary cut off is kept, so the compaction applies: {}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn a_summary_request_answered_with_tool_calls_compacts_without_the_models_summary() {
    let mut scenario = Scenario::new(Protocol::Anthropic);
    scenario.usage = UsageMode::None;
    scenario.summary = Turn::tool_call("read", serde_json::json!({"path": "f000.txt"}));
    let outcome = scenario.run();
    check("a summary request answered with tool calls", &outcome, 3);
    assert_eq!(outcome.tool_turns(), 30, "{}", outcome.describe());
    assert!(outcome.applied_compactions() >= 1, "{}", outcome.describe());
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn a_context_length_error_right_after_a_compaction_is_recalibrated_and_sent_once_more() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::None;
    // The first request after the first compaction carries the replacement last (a
    // compaction in place: a summary prepared ahead keeps the messages after its mark
    // after the replacement).
    scenario.config = Some("[context]\nprepare_summary_percent = 0\n".to_owned());
    scenario.responders = vec![Responder {
        when_last_message_contains: "</last_user_message>".to_owned(),
        turn: Turn::fault(Fault::ContextLength),
        times: Some(1),
    }];
    let outcome = scenario.run();
    check("a context-length error after a compaction", &outcome, 4);
    assert!(
        outcome
            .notices()
            .iter()
            .any(|n| n.contains("refused a request") && n.contains("sends the request again")),
        "{}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn a_history_heavy_with_images_stays_within_the_budget() {
    let mut scenario = Scenario::new(Protocol::Anthropic);
    scenario.usage = UsageMode::None;
    scenario.reads = Reads::Images;
    scenario.config = Some("[models.\"anthropic/testkit-model\"]\nimages = true\n".to_owned());
    let outcome = scenario.run();
    check("a history heavy with images", &outcome, 4);
    assert!(
        outcome
            .requests
            .iter()
            .any(|r| r.body.to_string().contains("image/png")),
        "the images reached the model: {}",
        outcome.describe()
    );
    assert!(outcome.compaction_attempts() >= 1, "{}", outcome.describe());
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn the_same_call_repeated_gets_a_note_at_3_and_stops_pith_run_at_6() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.reads = Reads::SameFile;
    scenario.tool_turns = 10;
    let outcome = scenario.run();
    assert_eq!(
        outcome.output.status.code(),
        Some(6),
        "the doom-loop exit code: {}",
        outcome.describe()
    );
    assert_eq!(outcome.tool_turns(), 6, "{}", outcome.describe());
    assert_eq!(outcome.requests.len(), 6, "no request after the sixth call");
    // Requests 4..6 carry the 3rd..5th result, each with the note.
    for (index, times) in [(3, 3), (4, 4), (5, 5)] {
        let body = outcome.requests[index].body.to_string();
        assert!(
            body.contains(&format!("these same arguments {times} times in a row")),
            "request {index}: {body}"
        );
    }
    assert!(!outcome.requests[2]
        .body
        .to_string()
        .contains("times in a row"));
    assert!(
        common::stderr(&outcome.output).contains("doom-loop guard"),
        "{}",
        outcome.describe()
    );
    report("the same call repeated", &outcome);
}

#[test]
fn the_repl_over_an_over_reporting_server_stays_bounded() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::Constant(30_000);
    scenario.front_end = FrontEnd::Repl;
    scenario.then = vec!["/context".to_owned()];
    let outcome = scenario.run();
    assert_eq!(
        outcome.output.status.code(),
        Some(0),
        "{}",
        outcome.describe()
    );
    assert_eq!(outcome.tool_turns(), 30, "{}", outcome.describe());
    assert!(outcome.compaction_attempts() <= 3, "{}", outcome.describe());
    outcome.assert_within_budget();
    let out = common::stdout(&outcome.output);
    assert!(
        out.contains("outside the band pith believes"),
        "the REPL names the implausible report: {out}"
    );
    // /context reports what compaction did and cost, and that the server is not believed.
    let attempts = outcome.compaction_attempts();
    assert!(
        out.contains(&format!("Compactions: {attempts} automatic (")),
        "{out}"
    );
    assert!(out.contains("usage reports are not believed"), "{out}");
    outcome.assert_transcript_is_what_was_sent();
    report("over-reporting, REPL", &outcome);
}

#[test]
fn the_repl_stores_a_huge_pasted_message_and_sends_its_head_and_tail() {
    let mut scenario = Scenario::new(Protocol::Anthropic);
    scenario.usage = UsageMode::None;
    scenario.front_end = FrontEnd::Repl;
    scenario.tool_turns = 3;
    let pasted = format!("START {} END", "pasted words ".repeat(25_000));
    scenario.prompt = Prompt::Arg(pasted);
    let outcome = scenario.run();
    assert_eq!(
        outcome.output.status.code(),
        Some(0),
        "{}",
        outcome.describe()
    );
    let first = outcome.requests[0].body.to_string();
    assert!(first.contains("START") && first.contains("END"));
    assert!(first.contains("[full output: $PITH_SPILL_DIR/"));
    assert!(
        common::stdout(&outcome.output).contains("your message is"),
        "{}",
        common::stdout(&outcome.output)
    );
    outcome.assert_within_budget();
    outcome.assert_transcript_is_what_was_sent();
}

#[test]
fn the_repl_with_nobody_to_ask_stops_a_doom_loop_and_takes_the_next_prompt() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.reads = Reads::SameFile;
    scenario.tool_turns = 10;
    scenario.front_end = FrontEnd::Repl;
    scenario.then = vec!["/context".to_owned()];
    let outcome = scenario.run();
    assert_eq!(
        outcome.output.status.code(),
        Some(0),
        "{}",
        outcome.describe()
    );
    let out = common::stdout(&outcome.output);
    assert!(
        out.contains("the model wants to go on") && out.contains("no terminal to ask: refused"),
        "{out}"
    );
    assert!(out.contains("doom-loop guard"), "{out}");
    assert!(out.contains("Context:"), "the REPL went on: {out}");
    assert_eq!(outcome.requests.len(), 6, "{}", outcome.describe());
}

#[test]
fn a_subagent_over_an_over_reporting_server_stays_bounded() {
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.usage = UsageMode::Constant(30_000);
    scenario.front_end = FrontEnd::Subagent;
    let outcome = scenario.run();
    check("over-reporting, a subagent", &outcome, 3);
    assert_eq!(
        outcome.tool_turns(),
        30,
        "the child's calls: {}",
        outcome.describe()
    );
    let parents: Vec<_> = outcome
        .of_type("compaction_started")
        .into_iter()
        .map(|e| e.get("parent").is_some())
        .collect();
    assert!(
        parents.iter().all(|child| *child),
        "only the child compacts: {}",
        outcome.describe()
    );
}

#[test]
fn short_summaries_on_an_honest_server_compact_once_per_refill() {
    // The normal path: the governor adds nothing to a conversation that behaves.
    let mut scenario = Scenario::new(Protocol::OpenAiChat);
    scenario.summary = Turn::text(SHORT_SUMMARY);
    scenario.tool_turns = 60;
    let outcome = scenario.run();
    check("an honest server (baseline)", &outcome, 4);
    assert!(outcome.compaction_attempts() >= 2, "{}", outcome.describe());
    assert_eq!(outcome.wasted_attempts(), 0, "{}", outcome.describe());
    assert!(
        outcome.governor("paused").is_empty(),
        "{}",
        outcome.describe()
    );
    outcome.assert_transcript_is_what_was_sent();
}
