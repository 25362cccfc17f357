//! Dedup and prune on a 200k-token history (micro-compaction cost). Run with
//! `cargo bench -p pith-core --bench pipeline`.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use pith_core::context::{dedup, prune};
use pith_core::message::{Message, ToolCall};
use pith_core::{BpeCounter, Encoding, TokenCounter};

/// About 200k o200k tokens: 200 turns of ~1k-token tool results, a quarter of them
/// repeated reads of the same files.
fn history(counter: &dyn TokenCounter) -> Vec<Message> {
    let mut h = vec![Message::system("You are a coding agent.")];
    let body: String = (0..60)
        .map(|i| format!("    let value_{i} = compute(input, {i}); // step {i}\n"))
        .collect();
    for turn in 0..200 {
        if turn % 20 == 0 {
            h.push(Message::user(format!(
                "Next task {turn}: fix the failing test."
            )));
        }
        let path = format!("src/file_{}.rs", turn % 150);
        let id = format!("call_{turn}");
        h.push(Message::assistant_with_calls(
            "Reading the file.",
            vec![ToolCall {
                id: id.clone(),
                name: "read".into(),
                arguments: serde_json::json!({"path": path}),
            }],
        ));
        h.push(Message::tool_result(
            id,
            format!("// {path}\n{body}"),
            false,
        ));
    }
    let tokens: usize = h
        .iter()
        .flat_map(|m| m.tool_results())
        .map(|r| counter.count(&r.content))
        .sum();
    assert!(tokens > 150_000, "history too small: {tokens} tokens");
    h
}

fn bench_pipeline(c: &mut Criterion) {
    let counter = BpeCounter::new(Encoding::O200kBase);
    let h = history(&counter);
    let mut group = c.benchmark_group("micro_compaction_200k_tokens");
    group.sample_size(10);
    group.bench_function("dedup_collapse", |b| {
        b.iter(|| dedup::collapse(black_box(&h), |name| name == "read"))
    });
    group.bench_function("prune_old_tool_outputs", |b| {
        b.iter(|| {
            prune::prune_old_tool_outputs(black_box(&h), &counter, &prune::PruneConfig::default())
        })
    });
    group.finish();
}

criterion_group!(benches, bench_pipeline);
criterion_main!(benches);
