//! Measure (docs/benchmarks.md, "Subagents"): the same scripted exploration — 20 greps
//! and reads, then an answer — done by the parent itself, and delegated to one `task`
//! call. What each adds to the parent's history is counted with the request estimate's
//! own rules (o200k, `count_message`). Run with `--nocapture` to see the table.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{records, stderr, stdout, transcripts, Sandbox};
use pith_core::tokens::count_message;
use pith_core::{BpeCounter, Encoding, Message, TokenCounter};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";
const FILES: usize = 10;

/// Ten source files of ≈ 3 KB, each defining items the greps find.
fn workspace(sandbox: &Sandbox) {
    let src = sandbox.workspace().join("src");
    std::fs::create_dir_all(&src).unwrap();
    for file in 0..FILES {
        let mut text = format!("//! Module {file}: handlers of the order pipeline.\n\n");
        for item in 0..24 {
            text.push_str(&format!(
                "/// Validates order {item} of stage {file} before it is queued.\npub fn handle_{file}_{item}(order: &Order) -> Result<u32, PipelineError> {{\n    order.check({item})?;\n    Ok({item} * {file})\n}}\n\n"
            ));
        }
        std::fs::write(src.join(format!("stage_{file}.rs")), text).unwrap();
    }
}

/// The 20 exploration calls: for each file a grep, then a read.
fn exploration() -> Vec<Turn> {
    let mut turns = Vec::new();
    for file in 0..FILES {
        turns.push(Turn::text("").with_tool_call(
            "grep",
            json!({"pattern": format!("handle_{file}_1"), "path": "src"}),
        ));
        turns.push(
            Turn::text("").with_tool_call("read", json!({"path": format!("src/stage_{file}.rs")})),
        );
    }
    turns
}

const ANSWER: &str = "Orders are validated by `handle_<stage>_<n>` in src/stage_<stage>.rs \
(e.g. src/stage_3.rs:3-6); each calls `order.check(n)` and returns `n * stage`.";

/// Tokens of the messages a transcript's turns added (user message excluded).
fn added_tokens(path: &std::path::Path) -> usize {
    let counter = BpeCounter::new(Encoding::O200kBase);
    records(path)
        .iter()
        .filter(|r| r["kind"] == "assistant_turn")
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .map(|m| serde_json::from_value::<Message>(m).unwrap())
        .map(|m| count_message(&counter, &m))
        .sum()
}

/// Runs the job; returns its result and the tokens of the `task` tool's definition in
/// the first request.
fn run(sandbox: &Sandbox, script: Vec<Turn>) -> (Value, usize) {
    // A summary prepared in the background (the long exploration passes the mark) is
    // answered apart from the script, whose turns answer the job in order.
    let server = TestServer::start(Script::anthropic(script).responding(
        "This is a context compaction request",
        Turn::text("## Goal\nFind how orders are validated."),
    ))
    .unwrap();
    let output = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--format",
            "json",
            "How are orders validated?",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let definition = server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "task")
        .map(|t| BpeCounter::new(Encoding::O200kBase).count(&t.to_string()))
        .unwrap();
    (serde_json::from_str(&stdout(&output)).unwrap(), definition)
}

fn transcript(sandbox: &Sandbox, id: &str) -> std::path::PathBuf {
    transcripts(&sandbox.pith_home())
        .into_iter()
        .find(|path| records(path)[0]["session_id"] == id)
        .unwrap()
}

#[test]
fn a_delegated_exploration_adds_a_fraction_of_what_doing_it_adds_to_the_parent() {
    let direct = Sandbox::new();
    workspace(&direct);
    let mut script = exploration();
    script.push(Turn::text(ANSWER));
    let (result, definition) = run(&direct, script);
    let by_itself = added_tokens(&transcript(&direct, result["session_id"].as_str().unwrap()));

    let delegated = Sandbox::new();
    workspace(&delegated);
    let mut script = vec![Turn::default().with_tool_call(
        "task",
        json!({"description": "find validation", "prompt": "How are orders validated? Cite paths and lines."}),
    )];
    script.extend(exploration());
    script.push(Turn::text(ANSWER));
    script.push(Turn::text(ANSWER));
    let (result, _) = run(&delegated, script);
    let parent = added_tokens(&transcript(
        &delegated,
        result["session_id"].as_str().unwrap(),
    ));
    let child_id = result["children"][0]["session_id"].as_str().unwrap();
    let child = added_tokens(&transcript(&delegated, child_id));
    assert_eq!(result["children"][0]["tool_calls"], 20);

    println!("| the parent's turn | tokens added to the parent's history |");
    println!("|---|---:|");
    println!("| does the 20 calls itself | {by_itself} |");
    println!("| delegates them to one `task` | {parent} |");
    println!("| (the child's own history) | {child} |");
    println!("ratio: {:.1}x", by_itself as f64 / parent as f64);
    println!("the task tool's definition: {definition} tokens in every request");
    assert!(
        parent * 10 < by_itself,
        "delegating should add under a tenth: {parent} vs {by_itself}"
    );
    assert!(
        child >= by_itself,
        "the child did the same work: {child} vs {by_itself}"
    );
}
