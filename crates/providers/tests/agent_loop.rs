//! The tool loop's compaction behaviour, driven through a scripted in-memory adapter.
//! (The same scenarios run against the real wire formats in the testkit suites.)

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod mock_adapter;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mock_adapter::{MockAdapter, Reply};
use pith_core::context::{GovernorNotice, PauseReason};
use pith_core::prompts::TOOLS_DISABLED_DURING_COMPACTION;
use pith_core::summary::{auto_prompt, manual_prompt};
use pith_core::InMemory;
use pith_core::{
    AutoCompaction, BpeCounter, ContextBudget, Encoding, LoopEvent, Message, RequestEstimator,
    Role, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use pith_providers::RetryPolicy;
use pith_providers::Timeouts;
use pith_providers::{
    AgentLoop, LedgerOptions, LoopError, LoopOptions, ProviderError, StreamChunk,
};
use serde_json::json;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio_util::sync::CancellationToken;

const SYSTEM: &str = "You are pith, a coding agent.";

struct ReadTool {
    runs: AtomicUsize,
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Read a file"
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn run(
        &self,
        arguments: serde_json::Value,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let path = arguments["path"].as_str().unwrap_or("?");
        // `words/N` stands for a file of N words (about N tokens): real growth of the
        // conversation, which the governor measures from content, not from reports.
        if let Some(words) = path.strip_prefix("words/").and_then(|n| n.parse().ok()) {
            return Ok(ToolOutput::ok("word ".repeat(words)));
        }
        Ok(ToolOutput::ok(format!("contents of {path}")))
    }
}

struct Harness {
    agent: AgentLoop,
    adapter: MockAdapter,
    tool: Arc<ReadTool>,
}

fn harness(replies: Vec<Reply>, window: u64) -> Harness {
    harness_with(MockAdapter::new(replies), window)
}

fn harness_with(adapter: MockAdapter, window: u64) -> Harness {
    let tool = Arc::new(ReadTool {
        runs: AtomicUsize::new(0),
    });
    let registry = ToolRegistry::new(vec![tool.clone()]);
    let options = LoopOptions {
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(50),
        },
        timeouts: Timeouts {
            request: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            ..Timeouts::default()
        },
        // The exact prompts and replacements without a ledger; tests/ledger.rs covers the ledger.
        ledger: LedgerOptions::off(),
        // The replies' scripted usage stands for the conversation's size (180,000 tokens
        // for a request of a few hundred): believe every report. tests/governor.rs keeps
        // the default band.
        usage_band: pith_core::context::calibration::Band {
            min: 0.0,
            max: 1e12,
        },
        ..LoopOptions::default()
    };
    let agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: Arc::new(adapter.clone()),
        model: "test-model".into(),
        budget: ContextBudget::for_window(window),
        system_prompt: SYSTEM.into(),
        tools: registry,
        estimator: RequestEstimator::new(Arc::new(BpeCounter::new(Encoding::O200kBase))),
        options,
    });
    Harness {
        agent,
        adapter,
        tool,
    }
}

fn drain(rx: &mut UnboundedReceiver<LoopEvent>) -> Vec<LoopEvent> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

fn compaction_events(events: &[LoopEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Started { .. }) => Some("started"),
            LoopEvent::AutoCompaction(AutoCompaction::Applied { .. }) => Some("applied"),
            LoopEvent::AutoCompaction(AutoCompaction::Cancelled) => Some("cancelled"),
            LoopEvent::AutoCompaction(AutoCompaction::Failed { .. }) => Some("failed"),
            _ => None,
        })
        .collect()
}

fn text_of(events: &[LoopEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

const SUMMARY: &str = "## Goal\nFix the parser.\n## Key Instructions\nKeep the API.";

#[tokio::test]
async fn requests_share_the_history_instead_of_copying_it() {
    // Every request carries the whole history; the loop hands it over shared and appends
    // in place, so a long session does not copy its conversation once per tool turn.
    let replies = (0..5)
        .map(|i| Reply::tool_call(&format!("c{i}"), "read", json!({"path": "a.rs"}), 1_000, 10))
        .chain([Reply::text("Done.")])
        .collect();
    let mut h = harness_with(MockAdapter::recording_addresses(replies), 200_000);
    let (tx, _rx) = unbounded_channel();
    let summary = h
        .agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("turn completes");
    assert_eq!(summary.requests, 6);
    let addresses = h.adapter.addresses();
    assert_eq!(addresses.len(), 6);
    assert!(
        addresses.iter().all(|a| *a == addresses[0]),
        "the history was copied between requests: {addresses:?}"
    );
    assert_eq!(
        h.agent.history().len(),
        12,
        "user, 5 × (call, result), answer"
    );
}

#[tokio::test]
async fn crossing_the_threshold_compacts_once_and_the_turn_continues_from_the_replacement() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "src/lib.rs"}), 180_000, 40),
            Reply::text(SUMMARY),
            Reply::text("Done."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let outcome = h
        .agent
        .run_turn(
            Message::user("fix the parser"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await;
    let summary = outcome.expect("turn completes");
    let events = drain(&mut rx);
    assert_eq!(compaction_events(&events), vec!["started", "applied"]);
    assert_eq!(summary.requests, 2, "two parent requests");

    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 3);
    let (parent, compaction, after) = (&requests[0], &requests[1], &requests[2]);
    // The compaction request is the parent request plus the turn's new activity plus the
    // prompt: same system prompt, same tools, same message prefix.
    assert_eq!(compaction.system, parent.system);
    assert_eq!(compaction.tools, parent.tools);
    assert_eq!(
        &compaction.messages[..parent.messages.len()],
        &parent.messages[..]
    );
    assert_eq!(
        compaction.messages.last().unwrap(),
        &Message::user(auto_prompt())
    );
    assert_eq!(
        compaction.messages.len(),
        parent.messages.len() + 3,
        "assistant call + tool result + prompt"
    );
    // The next parent request starts from system + the compacted user message.
    assert_eq!(after.system, SYSTEM);
    assert_eq!(after.messages.len(), 1);
    assert_eq!(after.messages[0].role, Role::User);
    assert_eq!(
        after.messages[0].text_content(),
        format!("<compacted_context>{SUMMARY}</compacted_context>\n<last_user_message>fix the parser</last_user_message>")
    );
    // The private summary never reached the visible text.
    assert_eq!(text_of(&events), "Let me look.Done.");
    let applied = events.iter().find_map(|e| match e {
        LoopEvent::AutoCompaction(AutoCompaction::Applied {
            replacement,
            figures,
            ..
        }) => Some((
            replacement.clone(),
            figures.tokens_before,
            figures.tokens_after,
        )),
        _ => None,
    });
    let (replacement, before, after_tokens) = applied.unwrap();
    assert_eq!(
        replacement,
        after.messages[..],
        "the event carries the installed (system-free) replacement"
    );
    assert!(
        before >= 171_000 && after_tokens < 1_000,
        "{before} -> {after_tokens}"
    );
    assert_eq!(
        h.agent.history().len(),
        2,
        "compacted user message + final answer"
    );
}

#[tokio::test]
async fn cancelling_the_child_token_keeps_history_and_the_parent_finishes() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::slow_text(
                &["## Goal", "\nnever", " applied"],
                Duration::from_millis(300),
            ),
            Reply::text("Parent answer."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let turn = CancellationToken::new();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if let LoopEvent::AutoCompaction(AutoCompaction::Started { cancel, .. }) = &event {
                cancel.cancel(); // Esc
            }
            seen.push(event);
        }
        seen
    });
    let outcome = h
        .agent
        .run_turn(Message::user("go"), &mut InMemory::new(tx.clone()), &turn)
        .await;
    drop(tx);
    let events = watcher.await.unwrap();
    outcome.expect("the parent turn still completes");
    assert!(!turn.is_cancelled(), "Esc must not cancel the turn");
    assert_eq!(compaction_events(&events), vec!["started", "cancelled"]);
    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 3);
    // History unchanged: the parent request after the cancelled compaction carries the
    // full conversation, exactly the compaction request minus its prompt.
    assert_eq!(
        &requests[2].messages[..],
        &requests[1].messages[..requests[1].messages.len() - 1]
    );
    assert_eq!(text_of(&events), "Let me look.Parent answer.");
}

#[tokio::test]
async fn cancelling_the_turn_stops_the_compactor_and_the_turn() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::slow_text(&["## Goal", "\nslow"], Duration::from_millis(300)),
            Reply::text("must not be requested"),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let turn = CancellationToken::new();
    let turn_for_watcher = turn.clone();
    let watcher = tokio::spawn(async move {
        let mut child = None;
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if let LoopEvent::AutoCompaction(AutoCompaction::Started { cancel, .. }) = &event {
                turn_for_watcher.cancel(); // Ctrl+C
                child = Some(cancel.clone());
            }
            seen.push(event);
        }
        (child, seen)
    });
    let outcome = h
        .agent
        .run_turn(Message::user("go"), &mut InMemory::new(tx.clone()), &turn)
        .await;
    drop(tx);
    let (child, events) = watcher.await.unwrap();
    let child = child.expect("compaction started");
    assert_eq!(
        compaction_events(&events),
        vec!["started", "cancelled"],
        "a Started compaction always gets its terminal event"
    );
    assert!(
        child.is_cancelled(),
        "cancelling the turn cancels the compactor"
    );
    assert!(matches!(outcome.unwrap_err().error, LoopError::Cancelled));
    assert_eq!(
        h.adapter.requests().len(),
        2,
        "no request after the cancellation"
    );
}

#[tokio::test]
async fn a_failed_summary_leaves_history_and_pauses_until_the_context_has_grown() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::text("   \n "), // empty summary
            // 5,000 tokens of growth: less than the tenth of the budget the pause waits for.
            Reply::tool_call("c2", "read", json!({"path": "b.rs"}), 185_000, 40),
            // About 21,000 tokens of real growth (the result of `words/21000`): attempted
            // again. Reports alone do not lift the pause; the content must grow.
            Reply::tool_call("c3", "read", json!({"path": "words/21000"}), 199_500, 40),
            Reply::Error(ProviderError::Http {
                status: 400,
                message: "nope".into(),
            }),
            Reply::text("Final."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("turn completes");
    let events = drain(&mut rx);
    assert_eq!(
        compaction_events(&events),
        vec!["started", "failed", "started", "failed"]
    );
    let reasons: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(reasons[0].contains("empty"), "{reasons:?}");
    // Each failure paused automatic compaction until a tenth of the budget (19,000) more,
    // and said so.
    let pauses: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Governor(GovernorNotice::Paused {
                reason: PauseReason::Failed { .. },
                tokens,
                until_tokens,
            }) => Some((*tokens, *until_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(pauses.len(), 2, "{events:#?}");
    assert_eq!(pauses[0].1, pauses[0].0 + 19_000);
    let requests = h.adapter.requests();
    assert_eq!(
        requests.len(),
        6,
        "parent, summary, parent, parent, summary, parent"
    );
    // After the first failure the next two requests are the parent's, not attempts.
    for index in [2, 3] {
        assert_ne!(
            requests[index].messages.last().unwrap(),
            &Message::user(auto_prompt())
        );
    }
    assert_eq!(
        &requests[2].messages[..],
        &requests[1].messages[..requests[1].messages.len() - 1]
    );
    assert_eq!(
        requests[4].messages.last().unwrap(),
        &Message::user(auto_prompt())
    );
    // History never shrank.
    assert_eq!(h.agent.history().len(), 8);
}

#[tokio::test]
async fn tool_calls_during_compaction_are_refused_and_nothing_runs() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::tool_call("c2", "read", json!({"path": "secret.rs"}), 0, 0),
            Reply::text(SUMMARY),
            Reply::text("Done."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = drain(&mut rx);
    assert_eq!(compaction_events(&events), vec!["started", "applied"]);
    assert_eq!(
        h.tool.runs.load(Ordering::SeqCst),
        1,
        "only the parent's call ran"
    );
    let requests = h.adapter.requests();
    let retry = &requests[2];
    let denial = retry
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(denial.content, TOOLS_DISABLED_DURING_COMPACTION);
    assert!(denial.is_error);
    // The private compactor's tool activity is never shown.
    assert!(!events
        .iter()
        .any(|e| matches!(e, LoopEvent::ToolCallStarted(c) if c.id == "c2")));
}

#[tokio::test]
async fn a_context_length_error_is_typed_sent_once_more_and_never_starts_a_compaction() {
    let mut h = harness(
        vec![
            Reply::Error(ProviderError::ContextLengthExceeded {
                message: "prompt is too long".into(),
            }),
            Reply::Error(ProviderError::ContextLengthExceeded {
                message: "prompt is too long".into(),
            }),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let failure = h
        .agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        failure.error,
        LoopError::Provider(ProviderError::ContextLengthExceeded { .. })
    ));
    assert_eq!(
        h.adapter.requests().len(),
        2,
        "sent once more after recalibrating; no compaction"
    );
    assert!(compaction_events(&drain(&mut rx)).is_empty());
}

#[tokio::test]
async fn a_full_history_is_compacted_before_the_first_request_of_a_user_turn() {
    let mut h = harness(vec![Reply::text(SUMMARY), Reply::text("Answer.")], 8_192);
    let long: Vec<Message> = (0..40)
        .flat_map(|i| {
            [
                Message::user(format!("question {i} {}", "detail ".repeat(100))),
                Message::assistant("ok ".repeat(20)),
            ]
        })
        .collect();
    h.agent.set_history(long);
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("next question"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        compaction_events(&drain(&mut rx)),
        vec!["started", "applied"]
    );
    let requests = h.adapter.requests();
    assert_eq!(
        requests[0].messages.last().unwrap(),
        &Message::user(auto_prompt())
    );
    assert!(requests[1].messages[0]
        .text_content()
        .ends_with("<last_user_message>next question</last_user_message>"));
}

#[tokio::test]
async fn auto_compaction_can_be_disabled() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::text("Done."),
        ],
        200_000,
    );
    h.agent.options_mut().auto_compaction = false;
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(compaction_events(&drain(&mut rx)).is_empty());
    assert_eq!(h.adapter.requests().len(), 2);
}

#[tokio::test]
async fn manual_compaction_streams_the_summary_and_replaces_history() {
    let mut h = harness(vec![Reply::text("Hello."), Reply::text(SUMMARY)], 200_000);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    h.agent
        .run_turn(Message::user("hi"), &mut InMemory::new(tx.clone()), &cancel)
        .await
        .unwrap();
    drain(&mut rx);
    let result = h
        .agent
        .compact(
            Some("keep the API changes"),
            &mut InMemory::new(tx.clone()),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(result.summary, SUMMARY);
    assert_eq!(
        text_of(&drain(&mut rx)),
        SUMMARY,
        "the manual summary is visible"
    );
    assert_eq!(h.agent.history(), &[Message::user(SUMMARY)]);
    let request = h.adapter.requests().pop().unwrap();
    assert_eq!(
        request.messages.last().unwrap(),
        &Message::user(manual_prompt(Some("keep the API changes")))
    );
    assert!(request
        .messages
        .last()
        .unwrap()
        .text_content()
        .contains("keep the API changes"));
    assert_eq!(
        request.tools.len(),
        1,
        "tools stay advertised for cache parity"
    );
}

#[tokio::test]
async fn a_manual_summary_cut_off_by_the_output_limit_shows_the_marker_it_keeps() {
    let cut = Reply::Chunks {
        chunks: vec![
            StreamChunk::Text("## Goal\nKeep the API".into()),
            StreamChunk::Done {
                stop_reason: Some("length".into()),
            },
        ],
        delay: Duration::ZERO,
    };
    let mut h = harness(vec![Reply::text("Hello."), cut], 200_000);
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    h.agent
        .run_turn(Message::user("hi"), &mut InMemory::new(tx.clone()), &cancel)
        .await
        .unwrap();
    drain(&mut rx);
    let result = h
        .agent
        .compact(None, &mut InMemory::new(tx.clone()), &cancel)
        .await
        .expect("a summary cut off is kept");
    assert!(
        result
            .summary
            .starts_with("## Goal\nKeep the API\n[pith: the summary was cut off here: "),
        "{}",
        result.summary
    );
    assert_eq!(
        text_of(&drain(&mut rx)),
        result.summary,
        "what the user saw is what was kept, marker included"
    );
}

#[tokio::test]
async fn a_failed_manual_compaction_leaves_history_unchanged() {
    let mut h = harness(vec![Reply::text("Hello."), Reply::text("")], 200_000);
    let (tx, _rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    h.agent
        .run_turn(Message::user("hi"), &mut InMemory::new(tx.clone()), &cancel)
        .await
        .unwrap();
    let before = h.agent.history().to_vec();
    let err = h
        .agent
        .compact(None, &mut InMemory::new(tx.clone()), &cancel)
        .await
        .unwrap_err();
    assert!(matches!(err, LoopError::Compaction(_)));
    assert_eq!(h.agent.history(), &before[..]);
}

#[tokio::test]
async fn transient_errors_are_retried_with_a_notice() {
    let mut h = harness(
        vec![
            Reply::Error(ProviderError::RateLimited {
                message: "slow down".into(),
                retry_after: Some(Duration::from_millis(20)),
            }),
            Reply::text("Recovered."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = drain(&mut rx);
    assert!(events.iter().any(|e| matches!(
        e,
        LoopEvent::Retrying {
            attempt: 1,
            delay_ms: 20,
            ..
        }
    )));
    assert_eq!(text_of(&events), "Recovered.");
}

#[tokio::test]
async fn retries_give_up_with_the_last_error() {
    let error = ProviderError::Http {
        status: 500,
        message: "boom".into(),
    };
    let mut h = harness(
        vec![
            Reply::Error(error.clone()),
            Reply::Error(error.clone()),
            Reply::Error(error),
        ],
        200_000,
    );
    let (tx, _rx) = unbounded_channel();
    let failure = h
        .agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        failure.error,
        LoopError::Provider(ProviderError::Http { status: 500, .. })
    ));
    assert_eq!(h.adapter.requests().len(), 3, "first try + 2 retries");
}

#[tokio::test]
async fn an_oversized_request_is_fitted_instead_of_sent_to_fail() {
    let huge = (0..20_000)
        .map(|i| format!("log line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut h = harness(vec![Reply::text("ok")], 8_192);
    h.agent.options_mut().auto_compaction = false;
    h.agent.set_history(vec![
        Message::user("build"),
        Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({}),
            }],
        ),
        Message::tool_result("c", huge, false),
    ]);
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("what failed?"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(drain(&mut rx)
        .iter()
        .any(|e| matches!(e, LoopEvent::Notice(n) if n.contains("too large"))));
    let sent = &h.adapter.requests()[0];
    let counter = BpeCounter::new(Encoding::O200kBase);
    let estimate =
        pith_core::tokens::estimate_request(&counter, &sent.system, &sent.messages, &sent.tools);
    assert!(estimate.total as u64 <= ContextBudget::for_window(8_192).input_budget);
    assert_eq!(
        h.agent.history().len(),
        5,
        "history itself is not rewritten"
    );
}

#[tokio::test]
async fn crossing_the_micro_threshold_prunes_old_tool_output_without_an_llm_call() {
    let mut h = harness(vec![Reply::text("ok")], 32_768);
    h.agent.options_mut().prune = pith_core::context::PruneConfig {
        protect: 4_000,
        minimum: 2_000,
        min_user_turns: 2,
        ..Default::default()
    };
    let output = |n: usize| {
        (0..540)
            .map(|i| format!("line {i}: value {}", i * n))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut history = vec![Message::user("first task")];
    for i in 0..5 {
        history.push(Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: json!({"path": format!("f{i}.rs")}),
            }],
        ));
        history.push(Message::tool_result(format!("c{i}"), output(i + 1), false));
    }
    h.agent.set_history(history);
    let before = h.agent.estimate().total as u64;
    let budget = ContextBudget::for_window(32_768);
    assert!(
        budget.reaches_micro(before) && !budget.reaches_auto(before),
        "fixture must sit between the thresholds: {before}"
    );

    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("second task"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = drain(&mut rx);
    let micro = events
        .iter()
        .find_map(|e| match e {
            LoopEvent::MicroCompaction(m) => Some(m.clone()),
            _ => None,
        })
        .expect("a micro-compaction event");
    assert!(micro.tokens_reclaimed >= 2_000);
    assert!(micro.tokens_after < micro.tokens_before);
    assert!(
        compaction_events(&events).is_empty(),
        "no LLM compaction was needed"
    );
    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 1, "no summary request");
    let contents: Vec<String> = requests[0]
        .messages
        .iter()
        .flat_map(|m| {
            m.tool_results()
                .map(|r| r.content.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        pith_core::context::masking::is_masked(&contents[0]),
        "{}",
        contents[0]
    );
    assert!(
        contents[0].contains("read "),
        "the stub names the call: {}",
        contents[0]
    );
    assert!(
        !pith_core::context::masking::is_masked(&contents[4]),
        "the newest output is protected"
    );
    assert_eq!(
        micro.replacement,
        h.agent.history()[..micro.replacement.len()].to_vec()
    );
}

/// A history of `turns` read calls whose results make about `lines` lines each.
fn read_history(turns: usize, lines: usize) -> Vec<Message> {
    let output = |n: usize| {
        (0..lines)
            .map(|i| format!("line {i}: value {}", i * n))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut history = vec![Message::user("first task")];
    for i in 0..turns {
        history.push(Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: format!("c{i}"),
                name: "read".into(),
                arguments: json!({"path": format!("f{i}.rs")}),
            }],
        ));
        history.push(Message::tool_result(format!("c{i}"), output(i + 1), false));
    }
    history
}

#[tokio::test]
async fn an_automatic_compaction_that_cannot_be_written_is_a_failure_and_the_turn_goes_on_unchanged(
) {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::text(SUMMARY),
            Reply::text("Done."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let mut sink = InMemory::failing(tx.clone(), "No space left on device (os error 28)");
    h.agent
        .run_turn(Message::user("go"), &mut sink, &CancellationToken::new())
        .await
        .expect("the turn completes");
    let events = drain(&mut rx);
    assert_eq!(compaction_events(&events), vec!["started", "failed"]);
    let reason = events
        .iter()
        .find_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }) => Some(reason.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        reason.contains("cannot write the transcript") && reason.contains("os error 28"),
        "{reason}"
    );
    assert!(sink.persisted.is_empty());
    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 3, "parent, summary, parent");
    assert_eq!(
        requests[2].messages.len(),
        3,
        "the last request carries the full history: user, call, result"
    );
    assert_eq!(
        h.agent.history(),
        &[
            &requests[2].messages[..],
            &[Message::assistant("Done.")][..]
        ]
        .concat()[..],
        "the live history is what the model was sent, nothing compacted"
    );
}

#[tokio::test]
async fn a_written_automatic_compaction_is_persisted_before_it_is_applied() {
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            Reply::text(SUMMARY),
            Reply::text("Done."),
        ],
        200_000,
    );
    let (tx, mut rx) = unbounded_channel();
    let mut sink = InMemory::new(tx.clone());
    h.agent
        .run_turn(Message::user("go"), &mut sink, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(sink.persisted.len(), 1);
    let pith_core::HistoryRewrite::Compaction(compaction) = &sink.persisted[0] else {
        panic!("expected a compaction, got {:?}", sink.persisted[0]);
    };
    assert_eq!(compaction.trigger, pith_core::CompactionTrigger::Auto);
    assert_eq!(compaction.summary, SUMMARY);
    assert_eq!(
        compaction.replacement,
        h.adapter.requests()[2].messages[..],
        "what was persisted is what the model was sent next"
    );
    assert_eq!(
        compaction_events(&drain(&mut rx)),
        vec!["started", "applied"]
    );
}

#[tokio::test]
async fn a_micro_compaction_that_cannot_be_written_leaves_the_history_as_it_was() {
    let mut h = harness(vec![Reply::text("ok")], 32_768);
    h.agent.options_mut().prune = pith_core::context::PruneConfig {
        protect: 4_000,
        minimum: 2_000,
        min_user_turns: 2,
        ..Default::default()
    };
    let history = read_history(5, 540);
    h.agent.set_history(history.clone());
    let (tx, mut rx) = unbounded_channel();
    let mut sink = InMemory::failing(tx.clone(), "disk full");
    h.agent
        .run_turn(
            Message::user("second task"),
            &mut sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = drain(&mut rx);
    assert!(!events
        .iter()
        .any(|e| matches!(e, LoopEvent::MicroCompaction(_))));
    assert!(events.iter().any(
        |e| matches!(e, LoopEvent::Notice(n) if n.contains("not cleared") && n.contains("disk full"))
    ));
    assert_eq!(
        &h.agent.history()[..history.len()],
        &history[..],
        "old outputs are still there"
    );
    assert_eq!(
        h.adapter.requests()[0].messages[..history.len()],
        history[..],
        "and the model was sent them"
    );
}

#[tokio::test]
async fn a_manual_compaction_that_cannot_be_written_fails_and_leaves_the_history() {
    let mut h = harness(vec![Reply::text("hello"), Reply::text(SUMMARY)], 200_000);
    let (tx, _rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    h.agent
        .run_turn(Message::user("hi"), &mut InMemory::new(tx.clone()), &cancel)
        .await
        .unwrap();
    let before = h.agent.history().to_vec();
    let error = h
        .agent
        .compact(
            None,
            &mut InMemory::failing(tx.clone(), "disk full"),
            &cancel,
        )
        .await
        .unwrap_err();
    assert!(matches!(error, LoopError::Persist(_)), "{error:?}");
    assert!(error.to_string().contains("disk full"));
    assert_eq!(h.agent.history(), &before[..]);
}

#[tokio::test]
async fn a_compaction_whose_model_keeps_calling_tools_is_applied_with_pith_s_own_summary() {
    let call = || Reply::tool_call("x", "read", json!({"path": "again.rs"}), 10, 5);
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 180_000, 40),
            call(),
            call(),
            call(),
            Reply::text("Done."),
        ],
        200_000,
    );
    h.agent.set_history(vec![
        Message::user("never touch the public API"),
        Message::assistant("ok"),
    ]);
    let (tx, mut rx) = unbounded_channel();
    let mut sink = InMemory::new(tx.clone());
    h.agent
        .run_turn(
            Message::user("now fix the parser"),
            &mut sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let events = drain(&mut rx);
    assert_eq!(compaction_events(&events), vec!["started", "applied"]);
    assert!(events
        .iter()
        .any(|e| matches!(e, LoopEvent::Notice(n) if n.contains("kept calling tools"))));
    assert_eq!(
        h.tool.runs.load(Ordering::SeqCst),
        1,
        "only the turn's own call ran"
    );
    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 5, "parent, 3 summary rounds, parent");
    let compacted = requests[4].messages[0].text_content();
    assert!(
        compacted.contains("No model summary") && compacted.contains("never touch the public API"),
        "{compacted}"
    );
    assert!(compacted.contains("<last_user_message>now fix the parser</last_user_message>"));
}

#[tokio::test]
async fn an_overflow_fit_is_persisted_and_the_next_request_builds_on_it() {
    let huge = (0..20_000)
        .map(|i| format!("log line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut h = harness(
        vec![
            Reply::tool_call("c1", "read", json!({"path": "a.rs"}), 3_000, 10),
            Reply::text("ok"),
        ],
        8_192,
    );
    h.agent.options_mut().auto_compaction = false;
    h.agent.set_history(vec![
        Message::user("build"),
        Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({}),
            }],
        ),
        Message::tool_result("c", huge, false),
    ]);
    let (tx, _rx) = unbounded_channel();
    let mut sink = InMemory::new(tx.clone());
    h.agent
        .run_turn(
            Message::user("what failed?"),
            &mut sink,
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    // The fit was persisted before it was installed: the transcript holds what was sent.
    let fits: Vec<&pith_core::events::MicroCompaction> = sink
        .persisted
        .iter()
        .filter_map(|r| match r {
            pith_core::HistoryRewrite::Micro(step)
                if step.reason == pith_core::events::MicroReason::Overflow =>
            {
                Some(step)
            }
            _ => None,
        })
        .collect();
    assert_eq!(fits.len(), 1, "one fit; the next request fits as it is");
    let requests = h.adapter.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages[..], fits[0].replacement[..]);
    // The second request extends the first: a stable prefix for the prompt cache.
    assert_eq!(
        requests[1].messages[..requests[0].messages.len()],
        requests[0].messages[..]
    );
    let estimate = h.agent.estimate();
    assert!(
        estimate.total as u64 <= h.agent.budget().input_budget,
        "the history is the fitted one: {}",
        estimate.total
    );
}

#[tokio::test]
async fn a_manual_compaction_of_an_over_budget_history_fits_its_request() {
    let huge = (0..20_000)
        .map(|i| format!("log line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut h = harness(vec![Reply::text(SUMMARY)], 8_192);
    h.agent.set_history(vec![
        Message::user("build"),
        Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: json!({}),
            }],
        ),
        Message::tool_result("c", huge, false),
    ]);
    let (tx, _rx) = unbounded_channel();
    let done = h
        .agent
        .compact(
            None,
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the compaction succeeds");
    assert_eq!(done.summary, SUMMARY);
    let sent = &h.adapter.requests()[0];
    let counter = BpeCounter::new(Encoding::O200kBase);
    let estimate =
        pith_core::tokens::estimate_request(&counter, &sent.system, &sent.messages, &sent.tools);
    assert!(
        estimate.total as u64 <= ContextBudget::for_window(8_192).input_budget,
        "{}",
        estimate.total
    );
    assert_eq!(
        sent.messages.last().unwrap(),
        &Message::user(manual_prompt(None)),
        "the prompt survives the fitting"
    );
}

#[tokio::test]
async fn an_answer_past_the_output_cap_is_cut_kept_marked_and_the_model_told() {
    let pieces: Vec<String> = (0..400).map(|i| format!("word{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let mut h = harness(
        vec![Reply::slow_text(&pieces, Duration::ZERO), Reply::text("ok")],
        200_000,
    );
    h.agent.options_mut().output_cap = 100;
    let (tx, mut rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("write a lot"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("a cut answer still ends the turn");
    let events = drain(&mut rx);
    let reason = events
        .iter()
        .find_map(|e| match e {
            LoopEvent::OutputTruncated { reason } => Some(reason.clone()),
            _ => None,
        })
        .expect("the cut is reported");
    assert_eq!(reason, "output cap (100 tokens)");
    let kept = text_of(&events);
    assert!(kept.starts_with("word0 word1"), "{kept}");
    assert!(!kept.contains("word399"), "nothing past the cap: {kept}");
    let history = h.agent.history();
    assert_eq!(history.len(), 3, "user, the cut answer, pith's note");
    assert_eq!(history[1].text_content(), kept);
    assert!(history[2]
        .text_content()
        .starts_with("[pith] Your previous answer was cut off: output cap (100 tokens)"));
}

#[tokio::test]
async fn a_tool_call_still_arriving_at_the_cut_is_not_run_but_complete_ones_are() {
    let mut h = harness(
        vec![
            Reply::Chunks {
                chunks: vec![
                    pith_providers::StreamChunk::ToolCall(pith_core::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a.rs"}),
                    }),
                    pith_providers::StreamChunk::ArgumentBytes {
                        call: 2,
                        bytes: 4_000,
                    },
                    pith_providers::StreamChunk::Done { stop_reason: None },
                ],
                delay: Duration::ZERO,
            },
            Reply::text("done"),
        ],
        200_000,
    );
    h.agent.options_mut().output_cap = 500;
    let (tx, _rx) = unbounded_channel();
    h.agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        h.tool.runs.load(Ordering::SeqCst),
        1,
        "the complete call ran"
    );
    let history = h.agent.history();
    // user, assistant(call c1), result c1, pith's note, final answer
    assert_eq!(history.len(), 5, "{history:#?}");
    assert_eq!(history[2].role, Role::Tool);
    assert!(history[3]
        .text_content()
        .starts_with("[pith] Your previous answer was cut off"));
    assert_eq!(h.adapter.requests().len(), 2, "the loop went on");
}
