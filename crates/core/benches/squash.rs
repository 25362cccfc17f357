//! Squash throughput on logs, JSON, grep and test-runner output, a 1 MB CI log of two
//! test sessions (multi-step) and a 1 MB `cat` of it (a view above the cap) (target:
//! ≥ 100 MB/s on logs in release builds). Run with `cargo bench -p pith-core --bench
//! squash`.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[path = "../tests/support/ci_log.rs"]
mod ci_log;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pith_core::context::squash::{self, SquashConfig};

fn build_log(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 200);
    let mut i = 0u64;
    while out.len() < bytes {
        let line = match i % 50 {
            7 => format!("2026-11-29T10:{:02}:{:02}Z WARN pool: connection timeout after {}ms, retrying\n", i % 60, i % 59, i % 1000),
            23 => format!("2026-11-29T10:{:02}:{:02}Z ERROR worker-{}: request failed: upstream returned 502\n", i % 60, i % 59, i % 8),
            24 => "    at handler (src/server/handler.rs:118:9)\n".to_owned(),
            _ => format!("2026-11-29T10:{:02}:{:02}Z INFO worker-{}: processed batch {} in {}ms (queue depth {})\n", i % 60, i % 59, i % 8, i, i % 97, i % 13),
        };
        out.push_str(&line);
        i += 1;
    }
    out
}

fn build_json(items: usize) -> String {
    let values: Vec<serde_json::Value> = (0..items)
        .map(|i| {
            serde_json::json!({
                "id": format!("550e8400-e29b-41d4-a716-{i:012}"),
                "title": format!("Issue number {i}"),
                "body": "This is a long description of the problem that repeats itself. ".repeat(4),
                "labels": ["bug", "triage"],
                "state": if i % 17 == 0 { "error" } else { "open" },
            })
        })
        .collect();
    serde_json::to_string_pretty(&values).unwrap_or_default()
}

fn build_grep(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 200);
    let mut i = 0u64;
    while out.len() < bytes {
        out.push_str(&format!(
            "src/module_{}/file_{}.rs:{}:    let result = compute_value(input, {});\n",
            i / 40,
            i / 8,
            i % 500,
            i
        ));
        i += 1;
    }
    out
}

fn build_pytest(bytes: usize) -> String {
    let mut out = String::from(
        "============================= test session starts ==============================\n",
    );
    let mut i = 0u64;
    while out.len() < bytes {
        if i % 100 == 99 {
            out.push_str(&format!("tests/test_mod.py::test_case_{i} FAILED [ 50%]\n"));
            out.push_str("    def test_case():\n>       assert compute() == 3\nE       assert 2 == 3\n\ntests/test_mod.py:42: AssertionError\n");
        } else {
            out.push_str(&format!("tests/test_mod.py::test_case_{i} PASSED [ 50%]\n"));
        }
        i += 1;
    }
    out.push_str("=========================== short test summary info ============================\nFAILED tests/test_mod.py::test_case_99 - assert 2 == 3\n= 10 failed, 990 passed in 3.21s =\n");
    out
}

fn bench_squash(c: &mut Criterion) {
    let config = SquashConfig::default();
    let cases = [
        ("log_4mb", Some("make build"), build_log(4 << 20)),
        ("json_1mb", None, build_json(2_500)),
        (
            "grep_2mb",
            Some("grep -rn compute_value src"),
            build_grep(2 << 20),
        ),
        ("pytest_2mb", Some("pytest tests"), build_pytest(2 << 20)),
        ("ci_log_1mb", Some("bash ci.sh"), ci_log::ci_log(1 << 20)),
        (
            "cat_ci_log_1mb",
            Some("cat ci.log"),
            ci_log::ci_log(1 << 20),
        ),
    ];
    let mut group = c.benchmark_group("squash");
    group.sample_size(20);
    for (name, command, input) in &cases {
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| squash::apply("bash", *command, Some(1), black_box(input), &config))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_squash);
criterion_main!(benches);
