//! The cost per tool call of the change tracker and the checkpointer, on a tiny tree and
//! on a generated 60,000-file tree (3,000 directories × 20 files of a few hundred bytes):
//! - `checkpoint/tracker_{tiny,60k}`: a bash call's question (mark, one small write,
//!   changed_since);
//! - `checkpoint/observe_{tiny,60k}`: one small write, then `observe` (the new content
//!   stored).
//!
//! `cargo xtask bench` reads these (xtask/src/bench/checkpoint.rs).
//!
//! Target (issue 32): the 60k tree within 5 ms of the tiny one for the tracker, 10 ms with
//! the checkpointer. Also prints the first snapshot's time and the store's size for the
//! 60k tree, first with an empty store and then as a second session (index reused).
#![allow(
    clippy::unwrap_used,
    missing_docs,
    clippy::print_stdout,
    clippy::print_stderr
)] // bench code: it reports what it measured

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use pith_checkpoint::{CheckpointConfig, Checkpointer, Tracker, TrackerConfig};
use pith_core::ChangeFeed;

fn generate(root: &Path, dirs: usize, files_per_dir: usize) {
    for d in 0..dirs {
        let dir = root.join(format!("pkg{}/mod{}", d / 100, d));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..files_per_dir {
            let body = format!(
                "// file {d}/{f}\n{}\n",
                "let x = 1; ".repeat(20 + (d + f) % 20)
            );
            fs::write(dir.join(format!("file{f}.rs")), body).unwrap();
        }
    }
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn bench_tree(
    c: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    root: &Path,
    rt: &tokio::runtime::Runtime,
) {
    let tracker = Tracker::start(root, TrackerConfig::default()).unwrap();
    let probe = root.join("probe.txt");
    let mut n = 0u64;
    c.bench_function(format!("tracker_{name}"), |b| {
        b.iter(|| {
            rt.block_on(async {
                let mark = tracker.mark().await;
                n += 1;
                fs::write(&probe, n.to_string()).unwrap();
                let changed = tracker.changed_since(mark).await.unwrap();
                assert_eq!(changed, ["probe.txt"]);
                black_box(changed);
            })
        })
    });
    drop(tracker);

    let store = tempfile::tempdir().unwrap();
    let checkpointer =
        Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
    rt.block_on(checkpointer.snapshot_report()).unwrap();
    c.bench_function(format!("observe_{name}"), |b| {
        b.iter(|| {
            rt.block_on(async {
                n += 1;
                fs::write(&probe, n.to_string()).unwrap();
                let observation = checkpointer.observe().await.unwrap();
                assert_eq!(observation.changes.len(), 1);
                black_box(observation);
            })
        })
    });
}

fn first_snapshot(root: &Path, rt: &tokio::runtime::Runtime) {
    let store = tempfile::tempdir().unwrap();
    for session in [
        "first session (empty store)",
        "second session (index reused)",
    ] {
        let started = Instant::now();
        let checkpointer =
            Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
        let report = rt.block_on(checkpointer.snapshot_report()).unwrap();
        let total = started.elapsed();
        let size = checkpointer.store().size_bytes().unwrap();
        let on_disk = du(store.path());
        println!(
            "snapshot of the 60k tree, {session}: {} files, {} bytes, {} reused, {:?} in the snapshot ({total:?} with the tracker's set-up); store {size} bytes of blobs, {on_disk} bytes on disk",
            report.files, report.bytes, report.reused, report.elapsed
        );
    }
}

/// Disk usage of a directory (allocated blocks), in bytes.
fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            total += meta.blocks() * 512;
            if meta.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    total
}

fn benches(c: &mut Criterion) {
    let rt = runtime();
    let tiny = tempfile::tempdir().unwrap();
    generate(tiny.path(), 2, 5);
    let large = tempfile::tempdir().unwrap();
    let started = Instant::now();
    generate(large.path(), 3000, 20);
    println!("generated the 60k tree in {:?}", started.elapsed());
    first_snapshot(large.path(), &rt);
    let mut group = c.benchmark_group("checkpoint");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    bench_tree(&mut group, "tiny", tiny.path(), &rt);
    bench_tree(&mut group, "60k", large.path(), &rt);
    group.finish();
}

criterion_group!(checkpoint, benches);
criterion_main!(checkpoint);
