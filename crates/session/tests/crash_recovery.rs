//! Crash harness: SIGKILL a writer at random instants and check the transcript after each
//! kill.
//!
//! The child is `pith-crash-writer` (src/bin), which appends user messages, assistant
//! turns, micro-compaction records and atomic checkpoint + `compaction_applied` batches
//! in a loop and prints `ack <seq>` after each call returns. After every kill this test
//! checks:
//! 1. the transcript reads strictly (only a torn last line is tolerated), first record
//!    `session_started`, sequence numbers consecutive from 1;
//! 2. every batch checkpoint is immediately followed by its `compaction_applied` and
//!    every `compaction_applied` immediately follows its checkpoint (both or neither);
//! 3. every acknowledged record is in the transcript (nothing acked is lost);
//! 4. the session can be reopened for writing at once (the kernel released the lock),
//!    the torn tail is quarantined byte for byte, stale batch temp files are gone, and the
//!    transcript then reads with no finding at all.
//!
//! Consecutive trials continue the same session (exercising recovery by the writer
//! itself) for [`TRIALS_PER_SESSION`] kills, then start a new one.
//!
//! `PITH_CRASH_TRIALS` (default 200) and `PITH_CRASH_SEED` tune a run; `cargo xtask crash
//! --trials N` sets them.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pith_session::{
    read_transcript, Event, ReadOptions, Record, Session, SessionError, TranscriptItem,
};

const DEFAULT_TRIALS: usize = 200;
const TRIALS_PER_SESSION: usize = 8;
/// Kill delays are drawn uniformly from 0 to this many microseconds after spawn.
const MAX_KILL_DELAY_US: u64 = 60_000;
const CHECKPOINT_NOTICE: &str = "crash-harness checkpoint";

#[derive(Debug, Default)]
struct Stats {
    trials: usize,
    trials_with_acks: usize,
    sum_of_last_acks: u64,
    torn_tails: usize,
    stale_batch_files: usize,
    committed_batches: usize,
    killed_before_transcript: usize,
    killed_before_first_record: usize,
}

#[test]
fn sigkill_at_any_instant_leaves_a_consistent_transcript() {
    let trials = std::env::var("PITH_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_TRIALS);
    let seed = std::env::var("PITH_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("crash harness: {trials} trials, PITH_CRASH_SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let root = home.path().join("sessions");
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut current: Option<String> = None;
    for trial in 0..trials {
        if trial % TRIALS_PER_SESSION == 0 {
            current = None;
        }
        let delay = Duration::from_micros(rng.u64(0..=MAX_KILL_DELAY_US));
        // Every other session skips per-turn fsyncs: its writer spends more time inside
        // `write` calls, where a kill can tear a line.
        let manual_fsync = (trial / TRIALS_PER_SESSION) % 2 == 1;
        let outcome = run_and_kill(&root, cwd.path(), current.as_deref(), delay, manual_fsync);
        stats.trials += 1;
        if outcome.session_id.is_some() {
            current = outcome.session_id.clone();
        }
        if let Some(acked) = outcome.acked {
            stats.trials_with_acks += 1;
            stats.sum_of_last_acks += acked;
        }
        let Some(id) = current.clone() else {
            continue; // killed before the session existed; the final sweep checks it
        };
        let dir = find_session_dir(&root, &id);
        if let Err(problem) = check_after_kill(&dir, outcome.acked, &mut stats) {
            panic!(
                "trial {trial} (seed {seed}, kill after {delay:?}) broke an invariant in {}: {problem}",
                dir.display()
            );
        }
    }
    // Sessions whose creation was killed before the id was printed are checked too.
    let mut sweep = Stats::default();
    for project in fs::read_dir(&root).into_iter().flatten().flatten() {
        for session in fs::read_dir(project.path()).into_iter().flatten().flatten() {
            let dir = session.path();
            if !dir.join("transcript.jsonl").exists() {
                stats.killed_before_transcript += 1;
                continue;
            }
            if let Err(problem) = check_after_kill(&dir, None, &mut sweep) {
                panic!(
                    "final sweep (seed {seed}): {} broke an invariant: {problem}",
                    dir.display()
                );
            }
        }
    }
    stats.killed_before_first_record = sweep.killed_before_first_record;
    println!(
        "crash harness: {stats:?} in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        stats.trials_with_acks * 4 >= stats.trials,
        "the writer was killed before acknowledging anything in most trials ({stats:?}): \
         the harness exercised too little"
    );
}

struct Outcome {
    session_id: Option<String>,
    acked: Option<u64>,
}

/// Runs the writer, SIGKILLs it after `delay`, and collects what it acknowledged.
fn run_and_kill(
    root: &Path,
    cwd: &Path,
    session: Option<&str>,
    delay: Duration,
    manual_fsync: bool,
) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pith-crash-writer"));
    command.arg(root).arg(cwd);
    if manual_fsync {
        command.env("PITH_CRASH_DURABILITY", "manual");
    }
    if let Some(id) = session {
        command.arg(id);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start pith-crash-writer");
    let stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    std::thread::sleep(delay);
    let exited_early = child.try_wait().expect("cannot poll the writer");
    if let Some(status) = exited_early {
        let mut stderr = String::new();
        if let Some(mut err) = child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut stderr);
        }
        panic!("the writer stopped by itself ({status}) instead of being killed: {stderr}");
    }
    child.kill().expect("cannot SIGKILL the writer");
    child.wait().expect("cannot reap the writer");
    let lines = reader.join().expect("stdout reader panicked");
    let mut outcome = Outcome {
        session_id: None,
        acked: None,
    };
    for line in lines {
        if let Some(id) = line.strip_prefix("session ") {
            outcome.session_id = Some(id.to_owned());
        } else if let Some(seq) = line.strip_prefix("ack ") {
            outcome.acked = seq.parse().ok();
        }
    }
    outcome
}

fn find_session_dir(root: &Path, id: &str) -> PathBuf {
    for project in fs::read_dir(root).expect("sessions root exists").flatten() {
        let candidate = project.path().join(id);
        if candidate.is_dir() {
            return candidate;
        }
    }
    panic!("session {id} has no directory under {}", root.display());
}

fn check_after_kill(dir: &Path, acked: Option<u64>, stats: &mut Stats) -> Result<(), String> {
    let path = dir.join("transcript.jsonl");
    let before = read_transcript(&path, ReadOptions::default())
        .map_err(|e| format!("transcript does not read after the kill: {e}"))?;
    check_records(&before.records)?;
    if before.records.is_empty() {
        // Killed inside `create` before `session_started` was committed: such a session
        // must be refused for writing with a clear reason, never continued without its
        // first record.
        stats.killed_before_first_record += 1;
        return match Session::open_dir(dir) {
            Err(SessionError::NotContinuable { .. }) => Ok(()),
            Err(other) => Err(format!("an empty session was refused oddly: {other}")),
            Ok(_) => Err("an empty session was opened for writing".into()),
        };
    }
    let last = before.records.last().map_or(0, |r| r.seq);
    if let Some(acked) = acked {
        if acked > last {
            return Err(format!(
                "record {acked} was acknowledged but the transcript ends at {last}"
            ));
        }
    }
    if !before.report.skipped.is_empty() || !before.report.unknown.is_empty() {
        return Err(format!("unexpected findings: {:?}", before.report));
    }
    let stale = fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .count();
    stats.stale_batch_files += stale;
    let torn_bytes = fs::read(&path).map_err(|e| e.to_string())?[before
        .report
        .torn_tail
        .as_ref()
        .map_or(0, |t| t.offset as usize)..]
        .to_vec();
    let session = Session::open_dir(dir)
        .map_err(|e| format!("cannot reopen for writing after the kill: {e}"))?;
    match (&before.report.torn_tail, session.quarantine()) {
        (None, None) => {}
        (Some(_), Some(quarantine)) => {
            stats.torn_tails += 1;
            let moved = fs::read(&quarantine.path).map_err(|e| e.to_string())?;
            if moved != torn_bytes {
                return Err("the quarantined bytes differ from the torn tail".into());
            }
        }
        (tail, quarantine) => {
            return Err(format!(
                "torn tail {tail:?} but quarantine {quarantine:?} on reopen"
            ))
        }
    }
    if session.next_seq() != last + 1 {
        return Err(format!(
            "reopened session would continue at {} after {last}",
            session.next_seq()
        ));
    }
    let leftover = fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
    if leftover {
        return Err("batch temp files survived the reopen".into());
    }
    let after = session
        .read(ReadOptions::default())
        .map_err(|e| format!("transcript does not read after recovery: {e}"))?;
    if after.report != Default::default() || after.records != before.records {
        return Err(format!(
            "recovery changed committed records or left findings: {:?}",
            after.report
        ));
    }
    stats.committed_batches += after
        .records
        .iter()
        .filter(|r| matches!(r.event, Event::CompactionApplied { .. }))
        .count();
    Ok(())
}

fn is_batch_checkpoint(record: &Record) -> bool {
    matches!(&record.event, Event::AssistantTurn { items, .. }
        if items.iter().any(|i| matches!(i, TranscriptItem::Notice { text } if text == CHECKPOINT_NOTICE)))
}

fn check_records(records: &[Record]) -> Result<(), String> {
    for (index, record) in records.iter().enumerate() {
        if record.seq != index as u64 + 1 {
            return Err(format!(
                "record {index} has seq {} (not consecutive from 1)",
                record.seq
            ));
        }
        if index == 0 && !matches!(record.event, Event::SessionStarted { .. }) {
            return Err("the first record is not session_started".into());
        }
        if is_batch_checkpoint(record) {
            let expected = format!("pairs with {}", record.seq);
            match records.get(index + 1).map(|r| &r.event) {
                Some(Event::CompactionApplied { summary, .. }) if *summary == expected => {}
                other => {
                    return Err(format!(
                        "checkpoint {} is not followed by its compaction_applied (next: {other:?})",
                        record.seq
                    ))
                }
            }
        }
        if let Event::CompactionApplied { summary, .. } = &record.event {
            let paired = index
                .checked_sub(1)
                .and_then(|i| records.get(i))
                .filter(|prev| is_batch_checkpoint(prev))
                .is_some_and(|prev| *summary == format!("pairs with {}", prev.seq));
            if !paired {
                return Err(format!(
                    "compaction_applied {} has no checkpoint right before it",
                    record.seq
                ));
            }
        }
    }
    Ok(())
}
