//! Automatic compaction through the real adapters against the testkit server, for every
//! wire protocol: the trigger, the byte-level prefix parity of the summary request, the
//! replacement the next request carries, child and parent cancellation, failures, and
//! tool calls attempted while compacting.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::time::Duration;

use common::*;
use pith_core::prompts::TOOLS_DISABLED_DURING_COMPACTION;
use pith_core::summary::{auto_prompt, compacted_user_text};
use pith_core::{AutoCompaction, LoopEvent};
use pith_providers::LoopError;
use pith_testkit::{Fault, Protocol, Turn};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    crossing_the_threshold_compacts_once_with_prefix_parity_and_the_turn_continues,
    cancelling_the_child_token_mid_summary_keeps_history_and_the_parent_finishes,
    cancelling_the_turn_mid_summary_stops_both_and_sends_nothing_more,
    failed_and_empty_summaries_leave_history_unchanged_and_pause_until_the_context_grows,
    a_tool_call_during_compaction_is_refused_with_the_tool_error_and_never_runs,
    a_second_crossing_in_the_same_turn_compacts_again_and_keeps_the_user_message,
    a_history_already_over_the_threshold_is_compacted_before_the_first_request,
    an_enormous_tool_result_is_fitted_into_well_formed_requests,
    cached_input_counts_toward_the_threshold_and_the_summary_reasoning_stays_private,
);

/// The id the testkit gives the K-th tool call of a script.
fn call_id(protocol: Protocol, k: usize) -> String {
    format!("{}{k}", protocol.tool_call_id_prefix())
}

/// The conversation of a compaction request without its compaction prompt: what the next
/// parent request must carry when the compaction did not apply. Anthropic merges the
/// prompt into the last user message (after the tool results), so there it is the last
/// block that goes; the cache marker the adapter puts on the last block moves with it, so
/// Anthropic items are compared without `cache_control`. Gemini merges it the same way
/// (into the last user content, after the function responses), with no marker.
fn without_prompt(wire: &Wire) -> Vec<Value> {
    let mut conversation = wire.conversation();
    assert!(wire.is_auto_compaction(), "not a compaction request");
    match wire.protocol {
        Protocol::OpenAiChat | Protocol::OpenAiResponses => {
            conversation.pop();
            conversation
        }
        Protocol::Anthropic => {
            let last = conversation.last_mut().unwrap();
            let blocks = last["content"].as_array_mut().unwrap();
            blocks.pop();
            if blocks.is_empty() {
                conversation.pop();
            }
            conversation.iter().map(without_cache_control).collect()
        }
        Protocol::Gemini => {
            let last = conversation.last_mut().unwrap();
            let parts = last["parts"].as_array_mut().unwrap();
            parts.pop();
            if parts.is_empty() {
                conversation.pop();
            }
            conversation
        }
        // Bedrock's cache point is a block of its own after the prompt: it goes first.
        Protocol::Bedrock => {
            let mut conversation: Vec<Value> =
                conversation.iter().map(without_cache_control).collect();
            let last = conversation.last_mut().unwrap();
            let blocks = last["content"].as_array_mut().unwrap();
            blocks.pop();
            if blocks.is_empty() {
                conversation.pop();
            }
            conversation
        }
    }
}

/// The conversation as compared across requests (see [`without_prompt`]).
fn comparable(wire: &Wire) -> Vec<Value> {
    match wire.protocol {
        Protocol::Anthropic | Protocol::Bedrock => wire
            .conversation()
            .iter()
            .map(without_cache_control)
            .collect(),
        _ => wire.conversation(),
    }
}

async fn crossing_the_threshold_compacts_once_with_prefix_parity_and_the_turn_continues(
    protocol: Protocol,
) {
    let summary_turn = Turn::text(SUMMARY);
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "src/lib.rs"})),
            Turn::text("And the tests.")
                .with_tool_call("read", json!({"path": "tests/parser.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            summary_turn.clone(),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("fix the parser").await;
    let summary = run
        .outcome
        .expect("the turn completes after the compaction");
    assert_eq!(
        compaction_events(&run.events),
        vec!["started", "applied"],
        "exactly one compaction, applied"
    );
    assert_eq!(summary.requests, 3, "three parent requests");
    assert_eq!(h.tool.runs.load(std::sync::atomic::Ordering::SeqCst), 2);

    let requests = h.requests();
    assert_eq!(requests.len(), 4, "parent, parent, compaction, parent");
    let (parent, compaction, after) = (&requests[1], &requests[2], &requests[3]);
    assert!(
        compaction.is_auto_compaction(),
        "request 3 ends with the auto prompt"
    );
    assert!(!parent.is_auto_compaction() && !after.is_auto_compaction());

    // Prompt-cache parity with the previous parent request: system prompt and tools byte for
    // byte (Anthropic's cache markers on them included).
    assert_eq!(
        bytes(&compaction.system()),
        bytes(&parent.system()),
        "system prompt differs"
    );
    assert_eq!(
        bytes(&compaction.tools()),
        bytes(&parent.tools()),
        "tools differ"
    );
    // The message prefix byte for byte. Anthropic moves its one `cache_control` marker to
    // the last block of every request (incremental caching as Anthropic documents it: the
    // cache is looked up at earlier block boundaries), so there the marker alone may differ:
    // the items are compared without it, and the marker must be on the last block only.
    let prefix_len = parent.conversation().len();
    let compaction_items = compaction.conversation();
    match protocol {
        Protocol::Anthropic | Protocol::Bedrock => {
            assert_eq!(
                bytes(&Value::Array(comparable(compaction)[..prefix_len].to_vec())),
                bytes(&Value::Array(comparable(parent))),
                "message prefix differs beyond the cache marker"
            );
            for wire in [parent, compaction] {
                let marked = bytes(&wire.body()["messages"])
                    .matches("cache_control")
                    .count();
                if protocol == Protocol::Bedrock {
                    let points = bytes(&wire.body()["messages"])
                        .matches("cachePoint")
                        .count();
                    assert_eq!(points, 1, "one message cache point, the last block");
                    let last = wire.conversation().last().unwrap().clone();
                    assert!(
                        last["content"].as_array().unwrap().last().unwrap()["cachePoint"]
                            .is_object()
                    );
                    continue;
                }
                assert_eq!(marked, 1, "one message cache marker, on the last block");
                let last = wire.conversation().last().unwrap().clone();
                assert!(
                    last["content"].as_array().unwrap().last().unwrap()["cache_control"]
                        .is_object()
                );
            }
        }
        _ => assert_eq!(
            bytes(&Value::Array(compaction_items[..prefix_len].to_vec())),
            bytes(&Value::Array(parent.conversation())),
            "message prefix differs"
        ),
    }
    // After the prefix: the second assistant turn, its tool result, and the prompt last.
    assert_eq!(compaction.last_user_text(), auto_prompt());
    let outputs = compaction.tool_outputs();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[1].call_id, call_id(protocol, 2));
    assert_eq!(outputs[1].content, "contents of tests/parser.rs");

    // The next parent request: system + the compacted user message, tools re-attached.
    assert_eq!(bytes(&after.system()), bytes(&parent.system()));
    assert_eq!(after.system_text(), SYSTEM);
    assert_eq!(bytes(&after.tools()), bytes(&parent.tools()));
    let compacted = compacted_user_text(SUMMARY, "fix the parser");
    assert_eq!(after.conversation().len(), 1, "{:#?}", after.conversation());
    assert_eq!(after.conversation()[0]["role"], "user");
    assert_eq!(after.user_texts(), vec![compacted.clone()]);

    // The summary stayed private; the parent's text and usage continued.
    assert_eq!(visible_text(&run.events), "Let me look.And the tests.Done.");
    let applied_usage = run.events.iter().find_map(|e| match e {
        LoopEvent::AutoCompaction(AutoCompaction::Applied { usage, summary, .. }) => {
            assert_eq!(summary, SUMMARY);
            Some(*usage)
        }
        _ => None,
    });
    let expected = summary_turn.effective_usage();
    assert_eq!(
        applied_usage,
        Some(Some(pith_core::Usage {
            input_tokens: expected.input_tokens,
            cached_input_tokens: 0,
            output_tokens: expected.output_tokens,
            ..Default::default()
        })),
        "the compaction's usage is reported with Applied"
    );
    let history = h.agent.history();
    assert_eq!(history.len(), 2, "compacted user message + final answer");
    assert_eq!(history[0].text_content(), compacted);
    assert_eq!(history[1].text_content(), "Done.");
}

/// A summary long enough to stream for seconds with `chunk_delay_ms`.
fn slow_summary() -> Turn {
    Turn::text(SUMMARY.repeat(4)).with_chunk_delay_ms(150)
}

async fn cancelling_the_child_token_mid_summary_keeps_history_and_the_parent_finishes(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            slow_summary(),
            Turn::text("Parent answer."),
        ],
    );
    let (tx, mut rx) = unbounded_channel();
    let turn = CancellationToken::new();
    let server = h.server.clone();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if let LoopEvent::AutoCompaction(AutoCompaction::Started { cancel, .. }) = &event {
                let (server, cancel) = (server.clone(), cancel.clone());
                tokio::spawn(async move {
                    // Esc once the summary is streaming: its request arrived and chunks flow.
                    server
                        .wait_for_requests(2, Duration::from_secs(5))
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    cancel.cancel();
                });
            }
            seen.push(event);
        }
        seen
    });
    let outcome = h.turn_with("go", &tx, &turn).await;
    drop(tx);
    let events = watcher.await.unwrap();
    outcome.expect("the parent turn completes");
    assert!(!turn.is_cancelled(), "Esc must not cancel the turn");
    assert_eq!(compaction_events(&events), vec!["started", "cancelled"]);

    let requests = h.requests();
    assert_eq!(requests.len(), 3, "parent, cancelled compaction, parent");
    assert!(requests[1].is_auto_compaction());
    assert!(!requests[2].is_auto_compaction());
    // Unchanged history: the parent continues with exactly the conversation the
    // compaction was given, minus its prompt.
    assert_eq!(
        bytes(&Value::Array(comparable(&requests[2]))),
        bytes(&Value::Array(without_prompt(&requests[1]))),
    );
    assert_eq!(visible_text(&events), "Let me look.Parent answer.");
    assert_eq!(h.agent.history().len(), 4, "user, call, result, answer");
}

async fn cancelling_the_turn_mid_summary_stops_both_and_sends_nothing_more(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            slow_summary(),
            Turn::text("must never be requested"),
        ],
    );
    let (tx, mut rx) = unbounded_channel();
    let turn = CancellationToken::new();
    let (server, turn_for_watcher) = (h.server.clone(), turn.clone());
    let watcher = tokio::spawn(async move {
        let mut child = None;
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if let LoopEvent::AutoCompaction(AutoCompaction::Started { cancel, .. }) = &event {
                child = Some(cancel.clone());
                let (server, turn) = (server.clone(), turn_for_watcher.clone());
                tokio::spawn(async move {
                    server
                        .wait_for_requests(2, Duration::from_secs(5))
                        .await
                        .unwrap();
                    tokio::time::sleep(Duration::from_millis(300)).await;
                    turn.cancel(); // Ctrl+C
                });
            }
            seen.push(event);
        }
        (child, seen)
    });
    let outcome = h.turn_with("go", &tx, &turn).await;
    drop(tx);
    let (child, events) = watcher.await.unwrap();
    let failure = outcome.expect_err("a cancelled turn fails");
    assert!(
        matches!(failure.error, LoopError::Cancelled),
        "{:?}",
        failure.error
    );
    assert!(
        child.expect("compaction started").is_cancelled(),
        "the compactor stops too"
    );
    assert_eq!(
        compaction_events(&events),
        vec!["started", "cancelled"],
        "the compaction's lifecycle is closed"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        h.server.request_count(),
        2,
        "no request after the cancellation"
    );
    assert_eq!(
        h.agent.history().len(),
        3,
        "history unchanged: user, call, result"
    );
}

async fn failed_and_empty_summaries_leave_history_unchanged_and_pause_until_the_context_grows(
    protocol: Protocol,
) {
    // Retries: 2, so one failed compaction is three HTTP 500 answers.
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::fault(Fault::Http500),
            Turn::fault(Fault::Http500),
            Turn::fault(Fault::Http500),
            // 1,000 tokens of growth: the pause (a tenth of the budget, 19,000) holds.
            Turn::text("Next file.")
                .with_tool_call("read", json!({"path": "b.rs"}))
                .with_usage(OVER_THRESHOLD + 1_000, 40),
            // About 21,000 tokens of real growth (the result of `words/21000`): attempted
            // again. Reports alone do not lift the pause; the content must grow.
            Turn::text("And one more.")
                .with_tool_call("read", json!({"path": "words/21000"}))
                .with_usage(OVER_THRESHOLD + 19_500, 40),
            Turn::default(), // an empty summary
            Turn::text("Final."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome
        .expect("the turn completes despite both failures");
    assert_eq!(
        compaction_events(&run.events),
        vec!["started", "failed", "started", "failed"]
    );
    let reasons: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }) => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert!(reasons[0].contains("500"), "{reasons:?}");
    assert!(reasons[1].contains("empty"), "{reasons:?}");

    let requests = h.requests();
    let kinds: Vec<bool> = requests.iter().map(Wire::is_auto_compaction).collect();
    assert_eq!(
        kinds,
        vec![false, true, true, true, false, false, true, false],
        "after a failure the next requests are the parent's; a new attempt waits until the context has grown by a tenth of the budget"
    );
    for (compaction, parent) in [(3, 4), (6, 7)] {
        assert_eq!(
            bytes(&Value::Array(comparable(&requests[parent]))),
            bytes(&Value::Array(without_prompt(&requests[compaction]))),
            "request {parent} must carry the unchanged history"
        );
    }
    let paused = run
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                LoopEvent::Governor(pith_core::context::GovernorNotice::Paused { .. })
            )
        })
        .count();
    assert_eq!(
        paused, 2,
        "each failure pauses automatic compaction and says so"
    );
    assert_eq!(h.agent.history().len(), 8, "history never shrank");
    assert_eq!(
        visible_text(&run.events),
        "Let me look.Next file.And one more.Final."
    );
}

async fn a_tool_call_during_compaction_is_refused_with_the_tool_error_and_never_runs(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text("I should check once more.")
                .with_tool_call("read", json!({"path": "secret.rs"})),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
    assert_eq!(
        h.tool.runs.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "only the parent's call ran"
    );
    let denied_id = call_id(protocol, 2);
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, LoopEvent::ToolCallStarted(c) if c.id == denied_id)),
        "the private compactor's tool activity is never shown"
    );

    let requests = h.requests();
    assert_eq!(requests.len(), 4);
    let retry = &requests[2];
    let denial = retry.tool_outputs().pop().expect("a tool output");
    assert_eq!(denial.call_id, denied_id);
    assert_eq!(denial.content, TOOLS_DISABLED_DURING_COMPACTION);
    if matches!(
        protocol,
        Protocol::Anthropic | Protocol::Gemini | Protocol::Bedrock
    ) {
        assert_eq!(
            denial.is_error,
            Some(true),
            "Anthropic, Gemini and Bedrock mark the denial as an error"
        );
    }
    // The repeated compaction request extends the first one.
    let first = comparable(&requests[1]);
    assert_eq!(
        bytes(&Value::Array(comparable(retry)[..first.len()].to_vec())),
        bytes(&Value::Array(first)),
    );
    // The summary is the text after the last tool activity only.
    assert_eq!(
        requests[3].user_texts(),
        vec![compacted_user_text(SUMMARY, "go")]
    );
}

async fn a_second_crossing_in_the_same_turn_compacts_again_and_keeps_the_user_message(
    protocol: Protocol,
) {
    let second_summary = "## Goal\nFix the parser.\n## Accomplished\nRead a.rs and b.rs.";
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text(SUMMARY),
            // The first report after the compaction verifies it: under the threshold.
            Turn::text("One more.").with_tool_call("read", json!({"path": "b.rs"})),
            Turn::text("And the last.")
                .with_tool_call("read", json!({"path": "c.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text(second_summary),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("fix the parser").await;
    let summary = run.outcome.expect("the turn completes");
    assert_eq!(
        compaction_events(&run.events),
        vec!["started", "applied", "started", "applied"]
    );
    let requests = h.requests();
    let kinds: Vec<bool> = requests.iter().map(Wire::is_auto_compaction).collect();
    assert_eq!(kinds, vec![false, true, false, false, true, false]);
    // The second summary request starts from the first replacement.
    let first_replacement = compacted_user_text(SUMMARY, "fix the parser");
    assert_eq!(requests[4].user_texts()[0], first_replacement);
    assert_eq!(
        comparable(&requests[4])[..comparable(&requests[3]).len()],
        comparable(&requests[3])[..],
        "the second compaction extends the request before it"
    );
    // The user's message survives both compactions verbatim, outside the summary.
    assert_eq!(
        requests[5].user_texts(),
        vec![compacted_user_text(second_summary, "fix the parser")]
    );
    // Turn usage counts every request, the two summary requests included.
    let expected_input = OVER_THRESHOLD * 2 + 4 * pith_testkit::Usage::DEFAULT_INPUT_TOKENS;
    assert_eq!(summary.usage.input_tokens, expected_input);
    assert_eq!(
        summary.requests, 4,
        "compaction requests are not parent requests"
    );
}

async fn a_history_already_over_the_threshold_is_compacted_before_the_first_request(
    protocol: Protocol,
) {
    let mut h = harness_with(
        protocol,
        vec![Turn::text(SUMMARY), Turn::text("Answer.")],
        8_192,
        fast_options(),
    );
    let long: Vec<pith_core::Message> = (0..40)
        .flat_map(|i| {
            [
                pith_core::Message::user(format!("question {i} {}", "detail ".repeat(100))),
                pith_core::Message::assistant("ok ".repeat(20)),
            ]
        })
        .collect();
    h.agent.set_history(long);
    let run = h.turn("next question").await;
    run.outcome.expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
    let requests = h.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].is_auto_compaction(),
        "the summary request comes first"
    );
    assert!(
        requests[0]
            .user_texts()
            .contains(&"next question".to_owned()),
        "the new user message is part of what is summarised"
    );
    assert_eq!(
        requests[1].user_texts(),
        vec![compacted_user_text(SUMMARY, "next question")]
    );
    assert_eq!(visible_text(&run.events), "Answer.");
}

/// One tool result larger than the whole window: with automatic compaction the summary
/// request is fitted, without it the parent request is; either way what goes on the wire
/// fits the window and is well formed (every call answered, roles alternating).
async fn an_enormous_tool_result_is_fitted_into_well_formed_requests(protocol: Protocol) {
    let huge = (0..4_000)
        .map(|i| format!("log line {i}"))
        .collect::<Vec<_>>()
        .join("\n");
    let history = vec![
        pith_core::Message::user("build it"),
        pith_core::Message::assistant_with_calls(
            "Building.",
            vec![pith_core::ToolCall {
                id: "call_build".into(),
                name: "read".into(),
                arguments: json!({"path": "build.log"}),
            }],
        ),
        pith_core::Message::tool_result("call_build", huge, false),
    ];
    for auto in [true, false] {
        let mut options = fast_options();
        options.auto_compaction = auto;
        let turns = if auto {
            vec![Turn::text(SUMMARY), Turn::text("It failed at line 3.")]
        } else {
            vec![Turn::text("It failed at line 3.")]
        };
        let mut h = harness_with(protocol, turns, 8_192, options);
        h.agent.set_history(history.clone());
        let run = h.turn("what failed?").await;
        run.outcome.expect("the turn completes");
        let requests = h.requests(); // checks every request is well formed
        if auto {
            assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
            assert!(requests[0].is_auto_compaction());
        } else {
            assert!(run
                .events
                .iter()
                .any(|e| matches!(e, LoopEvent::Notice(n) if n.contains("too large"))));
            assert_eq!(requests[0].last_user_text(), "what failed?");
        }
        for request in &requests {
            // A 4 096-token input budget is far below 30 000 bytes; the raw log alone is ~55 000.
            let size = bytes(request.body()).len();
            assert!(size < 30_000, "auto={auto}: a {size}-byte request was sent");
        }
    }
}

/// With a warm prompt cache almost all input is cached; Anthropic then reports a tiny
/// `input_tokens` next to a large `cache_read_input_tokens`. The threshold is about the
/// whole prompt, so the compaction must still start. The summary's reasoning is as
/// private as its text.
async fn cached_input_counts_toward_the_threshold_and_the_summary_reasoning_stays_private(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40)
                .with_cached_input(OVER_THRESHOLD - 500),
            Turn::text(SUMMARY).with_reasoning("Deciding what the summary keeps."),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, LoopEvent::ReasoningDelta(_))),
        "the summary's reasoning must not be shown"
    );
    let first_usage = run.events.iter().find_map(|e| match e {
        LoopEvent::Usage(usage) => Some(*usage),
        _ => None,
    });
    assert_eq!(
        first_usage,
        Some(pith_core::Usage {
            input_tokens: OVER_THRESHOLD,
            cached_input_tokens: OVER_THRESHOLD - 500,
            output_tokens: 40,
            ..Default::default()
        })
    );
}
