//! Provider faults played by the testkit, through the real adapters and the loop, for
//! every wire protocol: each is retried (with the provider's `retry-after` honoured) or
//! surfaces as a typed [`ProviderError`]; nothing panics and nothing hangs (the harness
//! fails a turn that runs 20 s; the loop's idle timeout here is 500 ms).
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::time::{Duration, Instant};

use common::*;
use pith_core::{LoopEvent, Role};
use pith_providers::{LoopError, ProviderError};
use pith_testkit::{Fault, Protocol, Turn};
use serde_json::json;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    a_rate_limit_is_retried_after_the_providers_retry_after,
    server_errors_and_overload_are_retried_with_backoff,
    persistent_http_faults_surface_as_typed_errors_after_the_retries,
    a_context_length_error_is_typed_sent_once_more_and_never_starts_a_compaction,
    a_context_length_error_on_the_summary_request_fails_only_the_compaction,
    a_hanging_stream_hits_the_idle_timeout_and_is_retried,
    a_stream_that_keeps_hanging_surfaces_as_an_idle_timeout,
    broken_streams_before_any_visible_output_are_retried,
    broken_streams_after_visible_text_fail_the_turn_and_keep_the_text,
    a_summary_stream_that_breaks_is_retried_because_nothing_was_shown,
    cancelling_a_visible_answer_mid_stream_stops_at_once_and_keeps_the_shown_text,
    cancelling_during_a_retry_wait_stops_at_once,
    a_slow_stream_that_keeps_sending_events_is_not_cut_by_the_idle_timeout,
    a_stream_broken_after_complete_but_unexecuted_tool_calls_is_retried,
);

fn provider_error(run: &TurnRun) -> ProviderError {
    match &run.outcome {
        Err(failure) => match &failure.error {
            LoopError::Provider(error) => error.clone(),
            other => panic!("expected a provider error, got {other:?}"),
        },
        Ok(summary) => panic!("expected a failure, the turn completed: {summary:?}"),
    }
}

async fn a_rate_limit_is_retried_after_the_providers_retry_after(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::fault(Fault::Http429).with_retry_after_s(1),
            Turn::text("Recovered."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.as_ref().expect("the retried request succeeds");
    let retries = retries(&run.events);
    assert_eq!(retries.len(), 1, "{retries:?}");
    let (attempt, delay_ms, reason) = &retries[0];
    assert_eq!(*attempt, 1);
    assert_eq!(
        *delay_ms, 1_000,
        "retry-after: 1 must win over the 10 ms backoff"
    );
    assert!(reason.contains("429"), "{reason}");
    assert_eq!(visible_text(&run.events), "Recovered.");
    assert_eq!(h.server.request_count(), 2);
}

async fn server_errors_and_overload_are_retried_with_backoff(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::fault(Fault::Http500),
            Turn::fault(Fault::Overloaded),
            Turn::text("Recovered."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.as_ref().expect("the second retry succeeds");
    let retries = retries(&run.events);
    let delays: Vec<u64> = retries.iter().map(|r| r.1).collect();
    assert_eq!(delays, vec![10, 20], "exponential backoff from 10 ms");
    assert!(retries[0].2.contains("500"), "{retries:?}");
    let overload_status = if protocol == Protocol::Anthropic {
        "529"
    } else {
        "503"
    };
    assert!(
        retries[1].2.contains(overload_status) && retries[1].2.contains("overloaded"),
        "{retries:?}"
    );
    assert_eq!(visible_text(&run.events), "Recovered.");
    assert_eq!(h.server.request_count(), 3);
}

async fn persistent_http_faults_surface_as_typed_errors_after_the_retries(protocol: Protocol) {
    for fault in [Fault::Http429, Fault::Http500, Fault::Overloaded] {
        let mut h = harness(protocol, vec![Turn::fault(fault); 3]);
        let run = h.turn("go").await;
        let error = provider_error(&run);
        match (fault, &error) {
            (Fault::Http429, ProviderError::RateLimited { message, .. }) => {
                assert!(!message.is_empty())
            }
            (Fault::Http500, ProviderError::Http { status: 500, .. }) => {}
            (Fault::Overloaded, ProviderError::Overloaded { status, .. }) => assert_eq!(
                *status,
                if protocol == Protocol::Anthropic {
                    529
                } else {
                    503
                }
            ),
            _ => panic!("{fault:?} surfaced as {error:?}"),
        }
        assert_eq!(
            h.server.request_count(),
            3,
            "{fault:?}: first try + 2 retries"
        );
        assert_eq!(h.agent.history().len(), 1, "only the user message remains");
    }
}

async fn a_context_length_error_is_typed_sent_once_more_and_never_starts_a_compaction(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::fault(Fault::ContextLength).with_usage(250_000, 0),
            Turn::fault(Fault::ContextLength).with_usage(250_000, 0),
            Turn::text(SUMMARY),
        ],
    );
    let run = h.turn("go").await;
    match provider_error(&run) {
        ProviderError::ContextLengthExceeded { message } => {
            // The provider's own wording is kept (Chat and Anthropic quote the size).
            let wording = match protocol {
                Protocol::OpenAiChat => "maximum context length",
                Protocol::OpenAiResponses => "context window",
                Protocol::Anthropic | Protocol::Bedrock => "prompt is too long: 250000 tokens",
                Protocol::Gemini => "exceeds the maximum number of tokens allowed",
            };
            assert!(message.contains(wording), "{message}")
        }
        other => panic!("not typed: {other:?}"),
    }
    assert_eq!(
        h.server.request_count(),
        2,
        "sent once more after recalibrating, no compaction request"
    );
    assert!(compaction_events(&run.events).is_empty());
    assert!(retries(&run.events).is_empty());
    assert!(
        run.events.iter().any(|e| matches!(e,
            pith_core::LoopEvent::Notice(n) if n.contains("refused a request") && n.contains("too long"))),
        "the user is told why the request went again"
    );
}

async fn a_context_length_error_on_the_summary_request_fails_only_the_compaction(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::fault(Fault::ContextLength),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.as_ref().expect("the parent turn goes on");
    assert_eq!(compaction_events(&run.events), vec!["started", "failed"]);
    assert_eq!(
        h.server.request_count(),
        3,
        "no retry of the rejected summary request"
    );
    assert_eq!(h.agent.history().len(), 4);
}

async fn a_hanging_stream_hits_the_idle_timeout_and_is_retried(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![Turn::fault(Fault::Hang), Turn::text("Recovered.")],
    );
    h.agent.options_mut().timeouts.idle = Duration::from_millis(200);
    let run = h.turn("go").await;
    run.outcome.as_ref().expect("the retry succeeds");
    let retries = retries(&run.events);
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0].2.contains("idle") || retries[0].2.contains("did not answer"),
        "{retries:?}"
    );
    assert_eq!(visible_text(&run.events), "Recovered.");
}

async fn a_stream_that_keeps_hanging_surfaces_as_an_idle_timeout(protocol: Protocol) {
    let mut h = harness(protocol, vec![Turn::fault(Fault::Hang); 3]);
    h.agent.options_mut().timeouts.idle = Duration::from_millis(200);
    let run = h.turn("go").await;
    let error = provider_error(&run);
    assert!(
        matches!(
            error,
            ProviderError::IdleTimeout(_) | ProviderError::Timeout(_)
        ),
        "{error:?}"
    );
    assert_eq!(h.server.request_count(), 3);
}

/// A stream that breaks while it carried only part of a tool call showed nothing: the loop
/// retries it and the turn goes on with the next answer.
async fn broken_streams_before_any_visible_output_are_retried(protocol: Protocol) {
    for fault in [
        Fault::DropMidStream,
        Fault::MalformedSse,
        Fault::StreamError,
    ] {
        let mut h = harness(
            protocol,
            vec![
                Turn::tool_call("read", json!({"path": "broken.rs"})).with_fault(fault),
                Turn::tool_call("read", json!({"path": "whole.rs"})),
                Turn::text("Done."),
            ],
        );
        let run = h.turn("go").await;
        run.outcome
            .as_ref()
            .unwrap_or_else(|f| panic!("{fault:?}: {:?}", f.error));
        assert_eq!(retries(&run.events).len(), 1, "{fault:?} is retried once");
        let requests = h.requests();
        assert_eq!(requests.len(), 3, "{fault:?}");
        let outputs = requests[2].tool_outputs();
        assert_eq!(outputs.len(), 1, "{fault:?}: the broken call never ran");
        assert_eq!(outputs[0].content, "contents of whole.rs");
        assert_eq!(h.tool.runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}

/// Once text was shown, a replay would show it twice: the turn fails with a typed error
/// and keeps the text the user saw.
async fn broken_streams_after_visible_text_fail_the_turn_and_keep_the_text(protocol: Protocol) {
    let text = "This answer streams in several pieces before it breaks off.";
    for fault in [
        Fault::DropMidStream,
        Fault::MalformedSse,
        Fault::StreamError,
    ] {
        let mut h = harness(
            protocol,
            vec![Turn::text(text).with_fault(fault), Turn::text("never")],
        );
        let run = h.turn("go").await;
        let error = provider_error(&run);
        match fault {
            Fault::DropMidStream | Fault::MalformedSse => assert!(
                matches!(
                    error,
                    ProviderError::Stream(_) | ProviderError::Connection(_)
                ),
                "{fault:?} surfaced as {error:?}"
            ),
            _ => assert!(
                matches!(
                    error,
                    ProviderError::Overloaded { .. } | ProviderError::Provider(_)
                ),
                "{fault:?} surfaced as {error:?}"
            ),
        }
        assert_eq!(h.server.request_count(), 1, "{fault:?}: not replayed");
        let shown = visible_text(&run.events);
        assert!(
            !shown.is_empty() && text.starts_with(&shown),
            "{fault:?}: {shown:?}"
        );
        let last = h.agent.history().last().unwrap();
        assert_eq!(
            last.role,
            Role::Assistant,
            "{fault:?}: the shown text is kept"
        );
        assert_eq!(last.text_content(), shown);
    }
}

/// The automatic summary is private: nothing of it was shown, so a broken summary stream
/// can be replayed without the user seeing anything twice.
async fn a_summary_stream_that_breaks_is_retried_because_nothing_was_shown(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(OVER_THRESHOLD, 40),
            Turn::text(SUMMARY).with_fault(Fault::DropMidStream),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.as_ref().expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
    assert_eq!(
        visible_text(&run.events),
        "Let me look.Done.",
        "no summary text is shown"
    );
    assert_eq!(h.server.request_count(), 4);
    assert_eq!(
        h.agent.history()[0].text_content(),
        pith_core::summary::compacted_user_text(SUMMARY, "go")
    );
}

/// Runs a turn whose token is cancelled when `trigger` first matches an event; returns
/// the outcome, the events and how long the turn took.
async fn cancel_on(h: &mut Harness, trigger: fn(&LoopEvent) -> bool) -> (TurnRun, Duration) {
    let (tx, mut rx) = unbounded_channel();
    let turn = CancellationToken::new();
    let for_watcher = turn.clone();
    let watcher = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = rx.recv().await {
            if trigger(&event) {
                for_watcher.cancel();
            }
            seen.push(event);
        }
        seen
    });
    let started = Instant::now();
    let outcome = h.turn_with("go", &tx, &turn).await;
    let elapsed = started.elapsed();
    drop(tx);
    let events = watcher.await.unwrap();
    (TurnRun { outcome, events }, elapsed)
}

async fn cancelling_a_visible_answer_mid_stream_stops_at_once_and_keeps_the_shown_text(
    protocol: Protocol,
) {
    // About 40 chunks, 200 ms apart: 8 s if the cancellation were not honoured.
    let text = "A long answer that streams slowly. ".repeat(16);
    let mut h = harness(
        protocol,
        vec![
            Turn::text(text.clone()).with_chunk_delay_ms(200),
            Turn::text("never"),
        ],
    );
    let (run, elapsed) = cancel_on(&mut h, |e| matches!(e, LoopEvent::TextDelta(_))).await;
    let failure = run.outcome.as_ref().expect_err("the turn is cancelled");
    assert!(
        matches!(failure.error, LoopError::Cancelled),
        "{:?}",
        failure.error
    );
    assert!(
        elapsed < Duration::from_secs(4),
        "cancellation took {elapsed:?}"
    );
    let shown = visible_text(&run.events);
    assert!(!shown.is_empty() && shown.len() < text.len() && text.starts_with(&shown));
    assert_eq!(h.agent.history().last().unwrap().text_content(), shown);
    assert_eq!(h.server.request_count(), 1);
}

async fn cancelling_during_a_retry_wait_stops_at_once(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::fault(Fault::Http429).with_retry_after_s(30),
            Turn::text("never"),
        ],
    );
    h.agent.options_mut().retry.max_delay = Duration::from_secs(60);
    let (run, elapsed) = cancel_on(&mut h, |e| matches!(e, LoopEvent::Retrying { .. })).await;
    let failure = run.outcome.as_ref().expect_err("the turn is cancelled");
    assert!(
        matches!(failure.error, LoopError::Cancelled),
        "{:?}",
        failure.error
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "the 30 s retry wait was not interrupted"
    );
    assert_eq!(h.server.request_count(), 1);
}

/// The idle timeout (250 ms here) measures silence on the wire. Every event arrives 150 ms
/// after the previous one, and each protocol sends several content-free events (Chat's
/// role chunk, Responses' lifecycle events, Anthropic's message_start and ping) before the
/// first text: more than 250 ms without content, never 250 ms without an event.
async fn a_slow_stream_that_keeps_sending_events_is_not_cut_by_the_idle_timeout(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![Turn::text("Slow but alive.").with_chunk_delay_ms(150)],
    );
    h.agent.options_mut().timeouts.idle = Duration::from_millis(250);
    let run = h.turn("go").await;
    assert!(
        retries(&run.events).is_empty(),
        "{:?}",
        retries(&run.events)
    );
    run.outcome.as_ref().expect("the slow stream completes");
    assert_eq!(visible_text(&run.events), "Slow but alive.");
    assert_eq!(h.server.request_count(), 1);
}

/// Tool calls are shown only when they run, after the stream completed: a stream that
/// breaks after some calls arrived complete (Anthropic and Responses report each call as
/// soon as its block ends) showed nothing, and is replayed rather than failing the turn.
async fn a_stream_broken_after_complete_but_unexecuted_tool_calls_is_retried(protocol: Protocol) {
    let calls = |turn: Turn| {
        turn.with_tool_call("read", json!({"path": "1.rs"}))
            .with_tool_call("read", json!({"path": "2.rs"}))
            .with_tool_call("read", json!({"path": "3.rs"}))
            .with_tool_call("read", json!({"path": "4.rs"}))
    };
    let mut h = harness(
        protocol,
        vec![
            calls(Turn::default()).with_fault(Fault::DropMidStream),
            calls(Turn::default()),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome
        .as_ref()
        .unwrap_or_else(|f| panic!("the turn failed: {:?}", f.error));
    assert_eq!(retries(&run.events).len(), 1);
    assert_eq!(
        h.tool.runs.load(std::sync::atomic::Ordering::SeqCst),
        4,
        "only the complete answer's calls ran"
    );
}
