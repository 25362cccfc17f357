//! Capture hot paths: feeding runaway command output through the bounded buffer (memory
//! must stay at the cap whatever the volume) and squash + spill of a large result.
//!
//! `cargo bench -p pith-tools --bench capture`
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pith_tools::OutputBuffer;
use pith_tools::{Capture, RawOutput, SpillDir};

const MEMORY_CAP: usize = 512 * 1024;
const OUTPUT_BYTES: usize = 32 * 1024 * 1024;

fn runaway_output(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let chunk = b"y\n".repeat(32 * 1024);
    let mut group = c.benchmark_group("bash_output_buffer");
    group.throughput(Throughput::Bytes(OUTPUT_BYTES as u64));
    group.sample_size(10);
    group.bench_function("yes_32MiB_in_64KiB_chunks_cap_512KiB", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let path = dir.path().join("spill.txt");
                let mut buffer = OutputBuffer::new(
                    MEMORY_CAP,
                    u64::MAX,
                    Box::new(move || {
                        let file = std::fs::File::create(&path)?;
                        Ok((path, file))
                    }),
                );
                for _ in 0..OUTPUT_BYTES / chunk.len() {
                    buffer.push(&chunk).await;
                }
                let out = buffer.finish().await;
                assert!(
                    out.peak_memory_bytes <= MEMORY_CAP,
                    "memory {} above cap",
                    out.peak_memory_bytes
                );
                black_box(out.total_bytes)
            })
        })
    });
    group.finish();
}

fn squash_and_spill(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let capture = Capture::new(SpillDir::new(dir.path().join("spill")), Default::default());
    let raw: String = (0..20_000)
        .map(|i| format!("test module::case_{i} ... ok\n"))
        .collect();
    let mut group = c.benchmark_group("capture_finish");
    group.throughput(Throughput::Bytes(raw.len() as u64));
    group.bench_function("bash_20k_lines_squash_and_spill", |b| {
        b.iter(|| {
            black_box(capture.finish(
                "bench",
                RawOutput {
                    command: Some("cargo test"),
                    exit_code: Some(0),
                    ..RawOutput::plain("bash", &raw)
                },
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, runaway_output, squash_and_spill);
criterion_main!(benches);
