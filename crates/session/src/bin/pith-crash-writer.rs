//! Crash-harness child: appends to a session forever until it is killed.
//!
//! Usage: `pith-crash-writer <sessions-root> <cwd> [<session-id>]`; with
//! `PITH_CRASH_DURABILITY=manual` it skips per-turn fsyncs, so more of its time is spent
//! inside `write` calls (where a kill can tear a line). Creates a session (or
//! opens the given one, which runs recovery), prints `session <id>`, then loops through a
//! fixed mix of operations — `user_message`, a single `assistant_turn`, an atomic
//! `append_batch` of a checkpoint plus its `compaction_applied`, and a
//! `micro_compaction_applied` — printing `ack <last seq>` after each one returns. The
//! harness (`crates/session/tests/crash_recovery.rs`, `cargo xtask crash`) SIGKILLs it at
//! random instants and checks the transcript; acked sequence numbers must survive.
//!
//! Checkpoints written in a batch carry the notice [`CHECKPOINT_NOTICE`]; their
//! compaction's summary is `pairs with <checkpoint seq>`, so the checker can pair them.
// A test helper: it talks to its test on stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use pith_core::{Message, ToolCall, Usage};
use pith_session::{
    CompactionTrigger, Durability, Event, NewSession, SessionStore, TranscriptItem,
};

/// Notice text marking a checkpoint written by `append_batch`.
const CHECKPOINT_NOTICE: &str = "crash-harness checkpoint";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (root, cwd) = match (args.first(), args.get(1)) {
        (Some(root), Some(cwd)) => (PathBuf::from(root), PathBuf::from(cwd)),
        _ => {
            eprintln!("usage: pith-crash-writer <sessions-root> <cwd> [<session-id>]");
            return ExitCode::from(2);
        }
    };
    let store = SessionStore::at(root);
    let session = match args.get(2) {
        Some(id) => store.open(id),
        None => store.create(NewSession {
            cwd,
            provider: "crash".into(),
            model: "harness".into(),
        }),
    };
    let mut session = match session {
        Ok(session) => session,
        Err(err) => {
            eprintln!("pith-crash-writer: {err}");
            return ExitCode::from(1);
        }
    };
    if std::env::var("PITH_CRASH_DURABILITY").as_deref() == Ok("manual") {
        session.set_durability(Durability::Manual);
    }
    let mut stdout = std::io::stdout().lock();
    if writeln!(stdout, "session {}", session.id())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    for step in 0u64.. {
        let seq = session.next_seq();
        let outcome = match step % 4 {
            0 => session.append(Event::user_text(format!("request {seq}"))),
            1 => session.append(turn(seq, false)),
            2 => session
                .append_batch(vec![
                    turn(seq, true),
                    Event::CompactionApplied {
                        trigger: CompactionTrigger::Auto,
                        messages: vec![Message::user(format!(
                            "<compacted_context>state at {seq}</compacted_context>"
                        ))],
                        summary: format!("pairs with {seq}"),
                        tokens_before: seq * 100,
                        tokens_after: seq,
                        usage: None,
                        ledger: None,
                        ledger_tokens: 0,
                        restored_files: Vec::new(),
                        model: None,
                    },
                ])
                .map(|seqs| seqs.last().copied().unwrap_or(seq)),
            _ => session.append(Event::MicroCompactionApplied {
                reason: Default::default(),
                messages: vec![Message::user(format!("pruned at {seq}"))],
                tokens_reclaimed: seq,
                tokens_before: seq * 2,
                tokens_after: seq,
            }),
        };
        match outcome {
            Ok(last) => {
                if writeln!(stdout, "ack {last}")
                    .and_then(|()| stdout.flush())
                    .is_err()
                {
                    return ExitCode::from(1);
                }
            }
            Err(err) => {
                eprintln!("pith-crash-writer: {err}");
                return ExitCode::from(1);
            }
        }
    }
    ExitCode::SUCCESS
}

/// An assistant turn with a tool call and a result whose size varies with `seq`; every
/// 16th is large (~2 MB), so its single `write` spans many pages and a kill can tear it.
fn turn(seq: u64, checkpoint: bool) -> Event {
    let lines = if seq % 16 == 1 {
        160_000
    } else {
        (seq * 7919) % 500 + 10
    };
    let output: String = "output line\n".repeat(lines as usize);
    let call = ToolCall {
        id: format!("call-{seq}"),
        name: "bash".into(),
        arguments: serde_json::json!({"command": format!("step {seq}")}),
    };
    let mut items = vec![TranscriptItem::AssistantText {
        text: format!("working on {seq}"),
    }];
    if checkpoint {
        items.push(TranscriptItem::Notice {
            text: CHECKPOINT_NOTICE.into(),
        });
    }
    Event::AssistantTurn {
        messages: vec![
            Message::assistant_with_calls(format!("working on {seq}"), vec![call]),
            Message::tool_result(format!("call-{seq}"), output, false),
        ],
        items,
        usage: Some(Usage {
            input_tokens: seq,
            cached_input_tokens: 0,
            output_tokens: 1,
            ..Default::default()
        }),
        interrupted: false,
        error: None,
        compaction_model_usage: None,
    }
}
