//! The first request does not wait for the exact token counter, and a session that
//! crosses the threshold still decides on exact counts.
//!
//! A loop whose counter never becomes ready (the worst case: its tables never come)
//! estimates far below the threshold by an upper bound, and near it by the exact count.
//! Its decisions are checked against the same session with a ready counter: the same
//! requests, the same compactions, at the same points, from the same token counts.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pith_core::context::GovernorNotice;
use pith_core::prompts::CLOSING_LINE;
use pith_core::tokens::estimate_request;
use pith_core::{
    AutoCompaction, BpeCounter, ContextBudget, Encoding, InMemory, LoopEvent, Message,
    RequestEstimator, TokenCounter, Tool, ToolCall, ToolContext, ToolError, ToolOutput,
    ToolRegistry, Usage,
};
use pith_providers::Timeouts;
use pith_providers::{
    AgentLoop, ChunkStream, LoopOptions, ModelRequest, ProviderAdapter, ProviderError, StreamChunk,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A small window: micro threshold 9,216 tokens, automatic threshold 11,059.
const WINDOW: u64 = 16_384;
/// Tool turns of the session: enough to cross the automatic threshold more than once.
const TOOL_TURNS: usize = 24;

/// The exact o200k counter, claiming its tables are never ready; it counts every text
/// it is asked to (as the real one does once it has waited for them).
struct NeverReady {
    exact: BpeCounter,
    counted: AtomicUsize,
}

impl TokenCounter for NeverReady {
    fn count(&self, text: &str) -> usize {
        self.counted.fetch_add(1, Ordering::SeqCst);
        self.exact.count(text)
    }
    fn is_ready(&self) -> bool {
        false
    }
}

/// A read-only tool whose output is ≈ 700 tokens (≈ 2 kB).
struct BigRead;

#[async_trait]
impl Tool for BigRead {
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
        let path = arguments["path"].as_str().unwrap_or("?").to_owned();
        Ok(ToolOutput::ok(
            (0..60)
                .map(|line| format!("{path}:{line}: let value = {};", line * 37))
                .collect::<Vec<_>>()
                .join("\n"),
        ))
    }
}

/// Answers a summary request with a summary and every other request with the next tool
/// call (reporting no usage, as some local servers do not, unless `honest`: then the exact
/// o200k count of each request); records each request and how many texts the counter had
/// been asked to count when it was sent.
#[derive(Clone, Default)]
struct Scripted {
    honest: bool,
    calls: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<(ModelRequest, usize)>>>,
    counter: Arc<Mutex<Option<Arc<NeverReady>>>>,
}

#[async_trait]
impl ProviderAdapter for Scripted {
    fn protocol_name(&self) -> &'static str {
        "scripted"
    }

    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError> {
        let counted = self
            .counter
            .lock()
            .unwrap()
            .as_ref()
            .map_or(0, |c| c.counted.load(Ordering::SeqCst));
        self.requests
            .lock()
            .unwrap()
            .push((request.clone(), counted));
        let summary_request = request
            .messages
            .last()
            .is_some_and(|m| m.text_content().contains(CLOSING_LINE));
        let chunks = if summary_request {
            vec![
                StreamChunk::Text(
                    "## Goal\nRead the files.\n## Discoveries\nThey are long.".into(),
                ),
                StreamChunk::Done {
                    stop_reason: Some("stop".into()),
                },
            ]
        } else {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if call < TOOL_TURNS {
                vec![
                    StreamChunk::ToolCall(ToolCall {
                        id: format!("c{call}"),
                        name: "read".into(),
                        arguments: json!({"path": format!("src/file{call}.rs")}),
                    }),
                    StreamChunk::Done {
                        stop_reason: Some("tool_calls".into()),
                    },
                ]
            } else {
                vec![
                    StreamChunk::Text("Done.".into()),
                    StreamChunk::Done {
                        stop_reason: Some("stop".into()),
                    },
                ]
            }
        };
        let mut chunks = chunks;
        if self.honest {
            let exact = BpeCounter::new(Encoding::O200kBase);
            let input =
                estimate_request(&exact, &request.system, &request.messages, &request.tools);
            chunks.insert(
                0,
                StreamChunk::Usage(Usage {
                    input_tokens: input.total as u64,
                    output_tokens: 20,
                    ..Usage::default()
                }),
            );
        }
        Ok(Box::pin(futures::stream::iter(chunks.into_iter().map(Ok))))
    }
}

/// What one run of the session did.
struct Run {
    /// Every request sent, with the counter's texts counted when it was sent.
    requests: Vec<(ModelRequest, usize)>,
    events: Vec<LoopEvent>,
    /// The loop's calibration at the end.
    calibration: f64,
}

async fn run_session(counter: Option<Arc<NeverReady>>) -> Run {
    run_session_reporting(counter, false).await
}

async fn run_session_reporting(counter: Option<Arc<NeverReady>>, honest: bool) -> Run {
    let adapter = Scripted {
        honest,
        ..Scripted::default()
    };
    *adapter.counter.lock().unwrap() = counter.clone();
    let budget = ContextBudget::for_window(WINDOW);
    let counter: Arc<dyn TokenCounter> = match counter {
        Some(never_ready) => never_ready,
        None => Arc::new(BpeCounter::new(Encoding::O200kBase)),
    };
    let options = LoopOptions {
        timeouts: Timeouts {
            request: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            ..Timeouts::default()
        },
        ..LoopOptions::default()
    };
    let mut agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: Arc::new(adapter.clone()),
        model: "test-model".into(),
        budget,
        system_prompt: "You are pith, a coding agent.".into(),
        tools: ToolRegistry::new(vec![Arc::new(BigRead)]),
        estimator: RequestEstimator::new(counter).with_upper_bounds_below(budget.micro_threshold),
        options,
    });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    agent
        .run_turn(
            Message::user("Read every file."),
            &mut InMemory::new(tx),
            &CancellationToken::new(),
        )
        .await
        .expect("the session runs to its end");
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    let requests = adapter.requests.lock().unwrap().clone();
    Run {
        requests,
        events,
        calibration: agent.calibration().factor(),
    }
}

/// The compactions of a run: (kind, tokens before).
fn compactions(events: &[LoopEvent]) -> Vec<(&'static str, u64)> {
    events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::AutoCompaction(AutoCompaction::Applied { figures, .. }) => {
                Some(("llm", figures.tokens_before))
            }
            LoopEvent::MicroCompaction(micro) => Some(("micro", micro.tokens_before)),
            LoopEvent::AutoCompaction(AutoCompaction::Failed { .. }) => Some(("failed", 0)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_session_crossing_the_threshold_decides_on_exact_counts_without_a_ready_counter() {
    let ready = run_session(None).await;
    let never_ready = Arc::new(NeverReady {
        exact: BpeCounter::new(Encoding::O200kBase),
        counted: AtomicUsize::new(0),
    });
    let bounded = run_session(Some(never_ready)).await;

    // The session does cross the threshold, and compacts.
    let expected = compactions(&ready.events);
    assert!(
        expected.iter().filter(|(kind, _)| *kind == "llm").count() >= 1,
        "the fixture must cross the automatic threshold: {expected:?}"
    );
    let threshold = ContextBudget::for_window(WINDOW).auto_threshold;
    assert!(expected
        .iter()
        .all(|(kind, before)| *kind != "llm" || *before >= threshold));

    // The first requests went out without a single exact count: nothing waited.
    assert_eq!(
        bounded.requests[0].1, 0,
        "the first request waited for counting"
    );
    assert_eq!(
        bounded.requests[1].1, 0,
        "the second request waited for counting"
    );
    // Far from the threshold, the exact counts began before it was reached.
    let first_exact = bounded
        .requests
        .iter()
        .position(|(_, counted)| *counted > 0)
        .expect("the session counted exactly");
    let first_compaction = bounded
        .requests
        .iter()
        .position(|(request, _)| {
            request
                .messages
                .last()
                .is_some_and(|m| m.text_content().contains(CLOSING_LINE))
        })
        .expect("a summary request");
    assert!(
        first_exact + 3 < first_compaction,
        "exact counting began at request {first_exact}, the first compaction at {first_compaction}"
    );

    // The same decisions, at the same points, from the same (exact) counts.
    assert_eq!(compactions(&bounded.events), expected);
    assert_eq!(bounded.requests.len(), ready.requests.len());
    for (index, ((sent, _), (reference, _))) in
        bounded.requests.iter().zip(&ready.requests).enumerate()
    {
        assert_eq!(sent.messages, reference.messages, "request {index}");
        assert_eq!(sent.system, reference.system, "request {index}");
    }
}

#[tokio::test]
async fn usage_reported_for_a_request_sent_on_an_upper_bound_is_weighed_against_the_exact_count() {
    // The first requests go out on byte bounds (about four times the count); the server
    // reports the exact count. Weighed against the bound, that report would read as a
    // server reporting a quarter of the request: implausible, or a calibration of 0.25.
    let never_ready = Arc::new(NeverReady {
        exact: BpeCounter::new(Encoding::O200kBase),
        counted: AtomicUsize::new(0),
    });
    let run = run_session_reporting(Some(never_ready), true).await;
    assert_eq!(
        run.requests[0].1, 0,
        "the first request waited for counting"
    );
    let implausible: Vec<&LoopEvent> = run
        .events
        .iter()
        .filter(|e| {
            matches!(
                e,
                LoopEvent::Governor(GovernorNotice::UsageImplausible { .. })
            )
        })
        .collect();
    assert!(implausible.is_empty(), "{implausible:?}");
    assert!(
        (0.95..=1.05).contains(&run.calibration),
        "calibration {}",
        run.calibration
    );
    let reference = run_session_reporting(None, true).await;
    assert_eq!(compactions(&run.events), compactions(&reference.events));
}
