//! Session store benches: append with and without fsync, `append_batch` on 1, 10 and
//! 50 MB transcripts (the copy-and-rename cost curve), and replay throughput (read +
//! decode, and read + decode + both projections).
//!
//! Targets (issue 4): replay ≥ 100 MB/s; `append_batch` on a 50 MB transcript < 0.5 s.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pith_core::{Message, ToolCall, Usage};
use pith_session::parse_transcript;
use pith_session::{
    project_model_owned, project_ui, CompactionTrigger, Durability, Event, NewSession, ReadOptions,
    Session, SessionStore,
};

/// A realistic assistant turn of about 4 KB: text, a tool call and a code-like result
/// (newlines, quotes and backslashes to escape).
fn typical_turn(i: usize) -> Event {
    let code: String = (0..60)
        .map(|n| format!("    let value_{n} = parse(\"field {i}\\t{n}\")?; // step {n}\n"))
        .collect();
    Event::AssistantTurn {
        messages: vec![
            Message::assistant_with_calls(
                format!("Reading the parser (step {i})."),
                vec![ToolCall {
                    id: format!("call_{i}"),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "src/parser.rs", "offset": i}),
                }],
            ),
            Message::tool_result(format!("call_{i}"), code, false),
        ],
        items: vec![],
        usage: Some(Usage {
            input_tokens: 12_000,
            cached_input_tokens: 10_000,
            output_tokens: 300,
            ..Default::default()
        }),
        interrupted: false,
        error: None,
        compaction_model_usage: None,
    }
}

fn compaction_pair(i: usize) -> Vec<Event> {
    vec![
        typical_turn(i),
        Event::CompactionApplied {
            trigger: CompactionTrigger::Auto,
            messages: vec![Message::user(
                "<compacted_context>## Goal\nfix the parser</compacted_context>",
            )],
            summary: "## Goal\nfix the parser".into(),
            tokens_before: 180_000,
            tokens_after: 9_000,
            usage: None,
            ledger: None,
            ledger_tokens: 0,
            restored_files: Vec::new(),
            model: None,
        },
    ]
}

fn session_of_size(store: &SessionStore, cwd: &Path, bytes: u64) -> Session {
    let mut session = store
        .create(NewSession {
            cwd: cwd.to_path_buf(),
            provider: "bench".into(),
            model: "bench".into(),
        })
        .expect("create session");
    session.set_durability(Durability::Manual);
    let mut i = 0;
    while std::fs::metadata(session.transcript_path())
        .map(|m| m.len())
        .unwrap_or(0)
        < bytes
    {
        for _ in 0..64 {
            session.append(typical_turn(i)).expect("append");
            i += 1;
        }
    }
    session.sync().expect("sync");
    session
}

fn bench_append(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let mut group = c.benchmark_group("append");
    group.throughput(Throughput::Elements(1));
    for (name, durability) in [
        ("no_fsync", Durability::Manual),
        ("fsync_every_record", Durability::EveryAppend),
    ] {
        let mut session = session_of_size(&store, cwd.path(), 0);
        session.set_durability(durability);
        let mut i = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                session.append(typical_turn(i)).expect("append")
            })
        });
    }
    group.finish();
}

fn bench_append_batch(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let mut group = c.benchmark_group("append_batch");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    for mb in [1u64, 10, 50] {
        let mut session = session_of_size(&store, cwd.path(), mb * 1024 * 1024);
        let mut i = 0;
        group.bench_with_input(BenchmarkId::new("transcript_mb", mb), &mb, |b, _| {
            b.iter(|| {
                i += 1;
                session.append_batch(compaction_pair(i)).expect("batch")
            })
        });
    }
    group.finish();
}

fn bench_replay(c: &mut Criterion) {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let store = SessionStore::at(home.path());
    let session = session_of_size(&store, cwd.path(), 10 * 1024 * 1024);
    let bytes = std::fs::read(session.transcript_path()).unwrap();
    let mut group = c.benchmark_group("replay");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("decode_10mb", |b| {
        b.iter(|| {
            parse_transcript(
                black_box(&bytes),
                Path::new("bench"),
                ReadOptions::default(),
            )
            .expect("parse")
        })
    });
    group.bench_function("ui_view_10mb", |b| {
        b.iter(|| {
            let transcript = parse_transcript(
                black_box(&bytes),
                Path::new("bench"),
                ReadOptions::default(),
            )
            .expect("parse");
            project_ui(&transcript.records).len()
        })
    });
    group.bench_function("model_view_10mb", |b| {
        b.iter(|| {
            let transcript = parse_transcript(
                black_box(&bytes),
                Path::new("bench"),
                ReadOptions::default(),
            )
            .expect("parse");
            project_model_owned(transcript.records).len()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_append, bench_append_batch, bench_replay);
criterion_main!(benches);
