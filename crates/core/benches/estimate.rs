//! The per-request estimate on a ~200k-token history: the tool loop's cached
//! [`RequestEstimator`] after one new message vs a full recount with
//! [`estimate_request`]. Target: the cached estimate under 1 ms. Run with
//! `cargo bench -p pith-core --bench estimate` (or `cargo xtask bench`).
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use pith_core::message::{Message, ToolCall};
use pith_core::tokens::estimate_request;
use pith_core::{BpeCounter, Encoding, RequestEstimator, TokenCounter, ToolDefinition};

const SYSTEM: &str = "You are pith, a coding agent. Work in small verified steps.";

/// A tool result of a few hundred tokens that differs per turn.
fn tool_output(turn: usize) -> String {
    (0..24)
        .map(|i| {
            format!(
                "src/module_{turn}/file_{i}.py:{}: def handler_{i}(request, limit={}): return process(request, {turn})\n",
                i * 7 + turn,
                i * 3
            )
        })
        .collect()
}

/// About 200k o200k tokens of agent history: assistant calls and tool results.
fn history(counter: &dyn TokenCounter) -> Vec<Message> {
    let mut h = vec![Message::user("Fix the failing request handler tests.")];
    let mut turn = 0;
    loop {
        let id = format!("call_{turn}");
        h.push(Message::assistant_with_calls(
            format!("THOUGHT: look at module {turn} for the handler."),
            vec![ToolCall {
                id: id.clone(),
                name: "grep".into(),
                arguments: serde_json::json!({"pattern": "def handler", "path": format!("src/module_{turn}")}),
            }],
        ));
        h.push(Message::tool_result(id, tool_output(turn), false));
        turn += 1;
        if turn % 50 == 0 && estimate_request(counter, SYSTEM, &h, &[]).total >= 200_000 {
            return h;
        }
    }
}

fn bench_estimate(c: &mut Criterion) {
    let counter = Arc::new(BpeCounter::new(Encoding::O200kBase));
    let tools = vec![ToolDefinition {
        name: "grep".into(),
        description: "Search file contents".into(),
        parameters: serde_json::json!({"type": "object", "properties": {"pattern": {"type": "string"}}}),
    }];
    let h = history(counter.as_ref());
    let mut grown = h.clone();
    grown.push(Message::tool_result("call_new", tool_output(99_999), false));

    let mut group = c.benchmark_group("estimate_200k_tokens");
    group.sample_size(20);
    group.bench_function("full_recount", |b| {
        b.iter(|| estimate_request(counter.as_ref(), SYSTEM, black_box(&grown), &tools))
    });
    let mut estimator = RequestEstimator::new(counter.clone());
    estimator.estimate(SYSTEM, &h, &tools);
    group.bench_function("cached_one_new_message", |b| {
        // Each iteration rewinds to the primed history (a cache truncation) and then
        // estimates the history grown by one message: an upper bound of the loop's cost.
        b.iter(|| {
            estimator.estimate(SYSTEM, black_box(&h), &tools);
            estimator.estimate(SYSTEM, black_box(&grown), &tools)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_estimate);
criterion_main!(benches);
