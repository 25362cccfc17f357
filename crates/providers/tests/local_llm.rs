//! Real-server tests against a local llama.cpp server (llama-cpp-python + SmolLM2-135M).
//!
//! Ignored by default: they need the server, which `.ci/run` starts with `cargo xtask
//! local-llm` before running them with `--ignored` and `PITH_LOCAL_LLM_URL` set (e.g.
//! `http://127.0.0.1:8077/v1`). Run without that variable they fail, never pass silently.
//! They pin how the real server deviates from the OpenAI documentation (no usage in
//! streams, `content: null` rejected, tool-call names repeated in every delta).
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::sync::Arc;
use std::time::Duration;

use pith_core::InMemory;
use pith_core::{AutoCompaction, ContextBudget, LoopEvent, Message, ToolCall, ToolRegistry};
use pith_core::{BpeCounter, Encoding, RequestEstimator};
use pith_providers::wire::openai_chat::OpenAiChat;
use pith_providers::Timeouts;
use pith_providers::{AgentLoop, LoopError, LoopOptions};
use serde_json::json;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_util::sync::CancellationToken;

/// llama-cpp-python interrupts a running request when a new one arrives (unless started
/// with `--interrupt_requests False`), so these tests take turns.
static SERVER_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The server's base URL; a test run without it fails saying how to start one.
fn server() -> String {
    match std::env::var("PITH_LOCAL_LLM_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "PITH_LOCAL_LLM_URL is not set: start the server with `cargo xtask local-llm` and export PITH_LOCAL_LLM_URL=http://127.0.0.1:8077/v1"
        ),
    }
}

fn agent(url: &str, window: u64) -> AgentLoop {
    let adapter = OpenAiChat::new(url, None).expect("adapter");
    AgentLoop::new(pith_providers::LoopSetup {
        adapter: Arc::new(adapter),
        model: "smollm2".into(),
        budget: ContextBudget::for_window(window),
        system_prompt: "You are a helpful assistant. Answer briefly.".into(),
        tools: ToolRegistry::default(),
        estimator: RequestEstimator::new(std::sync::Arc::new(BpeCounter::new(Encoding::O200kBase))),
        options: LoopOptions {
            max_output_tokens: Some(96),
            temperature: Some(0.0),
            timeouts: Timeouts {
                request: Duration::from_secs(60),
                idle: Duration::from_secs(60),
                ..Timeouts::default()
            },
            ..LoopOptions::default()
        },
    })
}

fn drain(rx: &mut UnboundedReceiver<LoopEvent>) -> Vec<LoopEvent> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

fn text(events: &[LoopEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn streams_text_and_falls_back_to_local_estimates_without_usage() {
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    let mut agent = agent(&url, 4096);
    let (tx, mut rx) = unbounded_channel();
    let summary = agent
        .run_turn(
            Message::user("Say hello."),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("turn completes");
    let events = drain(&mut rx);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, LoopEvent::TextDelta(_)))
        .count();
    assert!(
        deltas >= 2,
        "the answer streams in several deltas ({deltas})"
    );
    assert!(!text(&events).trim().is_empty());
    // llama-cpp-python ignores stream_options.include_usage: no usage is reported, so
    // the estimate is the local count, never a stale anchor.
    assert_eq!(summary.usage.input_tokens, 0);
    assert!(!events.iter().any(|e| matches!(e, LoopEvent::Usage(_))));
    assert!(!agent.estimate().anchored_on_reported_usage);
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn a_history_with_a_tool_call_and_its_result_round_trips() {
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    let mut agent = agent(&url, 4096);
    agent.set_history(vec![
        Message::user("Read notes.txt"),
        Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: "call_1".into(),
                name: "read".into(),
                arguments: json!({"path": "notes.txt"}),
            }],
        ),
        Message::tool_result("call_1", "The meeting is on Tuesday.", false),
    ]);
    let (tx, mut rx) = unbounded_channel();
    // Before the fix the server rejected `content: null` with an HTTP 500.
    agent
        .run_turn(
            Message::user("When is the meeting?"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the server accepts the assistant tool call and the tool result");
    assert!(!text(&drain(&mut rx)).trim().is_empty());
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn a_full_history_is_compacted_by_the_real_model() {
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    let mut agent = agent(&url, 4096); // input budget 2048, automatic threshold 1843
    let filler = "The event store keeps raw events for ninety days and daily aggregates forever. "
        .repeat(32);
    let mut history = Vec::new();
    for i in 0..4 {
        history.push(Message::user(format!("Note {i}: {filler}")));
        history.push(Message::assistant(format!("Noted {i}.")));
    }
    agent.set_history(history);
    let (tx, mut rx) = unbounded_channel();
    agent
        .run_turn(
            Message::user("How long are raw events kept?"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes after compacting");
    let events = drain(&mut rx);
    let applied = events.iter().find_map(|e| match e {
        LoopEvent::AutoCompaction(AutoCompaction::Applied {
            summary, figures, ..
        }) => Some((summary.clone(), figures.tokens_before, figures.tokens_after)),
        _ => None,
    });
    let (summary, before, after) =
        applied.unwrap_or_else(|| panic!("no compaction was applied: {events:?}"));
    assert!(!summary.trim().is_empty(), "the model wrote the summary");
    assert!(after < before, "{before} -> {after}");
    assert!(agent.history()[0]
        .text_content()
        .starts_with("<compacted_context>"));
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn manual_compaction_through_the_real_model() {
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    let mut agent = agent(&url, 4096);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    agent
        .run_turn(
            Message::user("My name is Ada and I like SQLite."),
            &mut InMemory::new(tx.clone()),
            &cancel,
        )
        .await
        .expect("turn");
    drain(&mut rx);
    let result = agent
        .compact(
            Some("keep the user's name"),
            &mut InMemory::new(tx.clone()),
            &cancel,
        )
        .await
        .expect("manual compaction");
    assert!(!result.summary.is_empty());
    assert_eq!(
        text(&drain(&mut rx)).trim(),
        result.summary,
        "the manual summary is streamed visibly"
    );
    // One user message: the model's summary, then the session ledger, which keeps the
    // user's words whatever the small model wrote.
    let history = agent.history();
    assert_eq!(history.len(), 1);
    let replacement = history[0].text_content();
    assert!(
        replacement.starts_with(&format!(
            "<compacted_context>{}</compacted_context>",
            result.summary
        )),
        "{replacement}"
    );
    assert!(
        replacement.contains("<session_ledger>")
            && replacement.contains("My name is Ada and I like SQLite."),
        "{replacement}"
    );
    assert!(result.ledger_tokens > 0);
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn cancelling_mid_stream_stops_promptly() {
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    let mut agent = agent(&url, 4096);
    agent.options_mut().max_output_tokens = Some(1000);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let watcher = tokio::spawn(async move {
        while let Some(event) = rx.recv().await {
            if matches!(event, LoopEvent::TextDelta(_)) {
                canceller.cancel();
            }
        }
    });
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        agent.run_turn(
            Message::user("Write a very long story about a lighthouse keeper."),
            &mut InMemory::new(tx.clone()),
            &cancel,
        ),
    )
    .await
    .expect("cancellation must not hang");
    drop(tx);
    let _ = watcher.await;
    assert!(matches!(outcome, Err(failure) if matches!(failure.error, LoopError::Cancelled)));
}

#[tokio::test]
#[ignore = "needs a local llama.cpp server: cargo xtask local-llm, PITH_LOCAL_LLM_URL"]
async fn the_built_in_local_provider_caps_output_as_configured() {
    use pith_providers::models::resolve::resolve_model;
    use pith_providers::models::tables::{ModelConfig, ModelTables};
    let url = server();
    let _turn = SERVER_TURN.lock().await;
    // The built-in `local` provider, as a user configures it: its own output-cap field.
    let mut config = ModelTables::default();
    config.models.insert(
        "local/smollm2".into(),
        ModelConfig {
            max_output_tokens: Some(8),
            ..ModelConfig::default()
        },
    );
    let lookup = |name: &str| (name == "PITH_LOCAL_BASE_URL").then(|| url.clone());
    let model = resolve_model("local/smollm2", &config, &lookup).expect("resolves");
    assert_eq!(model.max_output_tokens, Some(8));
    let counter = std::sync::Arc::new(BpeCounter::new(Encoding::O200kBase));
    let mut agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: model.adapter().expect("adapter"),
        model: "smollm2".into(),
        budget: ContextBudget::for_window(4096),
        system_prompt: "You are a helpful assistant.".into(),
        tools: ToolRegistry::default(),
        estimator: RequestEstimator::new(counter.clone()),
        options: LoopOptions {
            max_output_tokens: model.max_output_tokens,
            temperature: Some(0.0),
            timeouts: Timeouts {
                request: Duration::from_secs(60),
                idle: Duration::from_secs(60),
                ..Timeouts::default()
            },
            ..LoopOptions::default()
        },
    });
    let (tx, mut rx) = unbounded_channel();
    agent
        .run_turn(
            Message::user("Write a long story about a lighthouse keeper, at least 300 words."),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the turn completes");
    let events = drain(&mut rx);
    let answer = text(&events);
    // The server stopped at the cap and said so (`finish_reason: "length"`); pith's own
    // guard (cap + 256) never had to cut.
    let truncated = events.iter().find_map(|e| match e {
        LoopEvent::OutputTruncated { reason } => Some(reason.clone()),
        _ => None,
    });
    let reason = truncated.unwrap_or_else(|| panic!("the server did not cap: {answer:?}"));
    assert!(
        !reason.contains("output cap ("),
        "the server capped, not pith: {reason}"
    );
    let tokens = pith_core::TokenCounter::count(counter.as_ref(), &answer);
    // SmolLM2's tokenizer is not o200k: allow for the difference, far below uncapped.
    assert!(tokens <= 16, "{tokens} tokens: {answer:?}");
    assert!(!answer.trim().is_empty());
}
