//! What checkpoints and the change tracker cost a bash turn through the real binary
//! (issue 32): `pith run` against the testkit, 20 bash calls of `true` in one job, in a
//! tiny git repository, a generated 60,000-file one and a copy of this repository, each
//! with checkpoints on and off (`[checkpoints] enabled = false`: no tracker either).
//!
//! - **Per bash turn:** the median gap between consecutive `tool_started` lines of the
//!   job's stream-json, timed as they arrive, from the second call on ([`job`]). The
//!   first gap, which waits for the first snapshot, is left out.
//! - **The first snapshot:** jobs of one call with an empty store. It runs in the
//!   background from the start; the first call waits for it. So the time from spawn to the
//!   first `tool_result`, against the same with checkpoints off, is what it costs the
//!   user, and the store's size after it is what it takes.
//! - **Outside git** ([`outside_git`]): the 100,000-file tree in a directory that is no
//!   git repository, every file copied: first and later session, the store's disk use.
//! - **A 100-turn session** in the copy of this repository (bash appends to four files,
//!   `write` creates a note), and the store's size before and after.
//!
//! The checkpoint homes are kept across the per-turn jobs, as a user's `$PITH_HOME` is,
//! so those jobs' snapshots reuse the stat index (their "second session" figure).

pub mod figures;
pub mod job;
pub mod outside_git;
pub mod trees;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use pith_testkit::Turn;
use serde_json::json;

use super::stats::Spread;
pub use figures::DISK_TARGET_RATIO;
use figures::{bash_true, megabytes, spread, verdict};
use job::{Home, JobTimes};
use trees::{StoreUsage, Tree};

/// Bash calls of `true` per job.
pub const CALLS: usize = 20;
/// Turns of the session whose store is measured.
pub const SESSION_TURNS: usize = 100;
/// Target: a bash turn with the tracker and checkpoints, on the 60k tree, at most this
/// much slower than in the tiny repository (ms).
pub const CHECKPOINTS_TARGET_MS: f64 = 10.0;
/// Target: the tracker alone (ms), bounded here by the tracker with checkpoints.
pub const TRACKER_TARGET_MS: f64 = 5.0;
/// Files the session's bash calls append to (they must exist in this repository).
const SESSION_FILES: [&str; 4] = [
    "docs/architecture.md",
    "README.md",
    "docs/rewind.md",
    "src/main.rs",
];

/// The figures of one workspace.
#[derive(Debug, Clone)]
pub struct TreeRow {
    /// How the report names the workspace.
    pub label: String,
    /// Its files (outside `.git`).
    pub files: usize,
    /// Their size, bytes.
    pub bytes: u64,
    /// ms per bash turn (each job's median gap), checkpoints on.
    pub turn_on: Spread,
    /// The same, checkpoints off.
    pub turn_off: Spread,
    /// Each job's mean gap, checkpoints on.
    pub mean_on: Spread,
    /// Each job's mean gap, checkpoints off.
    pub mean_off: Spread,
    /// Spawn → first `tool_result`, ms, checkpoints on, empty store.
    pub first_cold: Spread,
    /// The same with the store of an earlier session (stat index reused).
    pub first_warm: Spread,
    /// The same, checkpoints off.
    pub first_off: Spread,
    /// The store after the first snapshot (the last cold job).
    pub snapshot_store: StoreUsage,
    /// Peak resident memory of the cold first-snapshot jobs, MiB, checkpoints on.
    pub rss_on: Spread,
    /// The same, checkpoints off.
    pub rss_off: Spread,
}

/// The 100-turn session's store.
#[derive(Debug, Clone)]
pub struct SessionRow {
    /// Turns (tool calls that changed files).
    pub turns: usize,
    /// `checkpoint` events the job printed.
    pub checkpoints: usize,
    /// The store before the session (after earlier sessions' snapshots).
    pub before: StoreUsage,
    /// The store after it.
    pub after: StoreUsage,
    /// The last `checkpoint` event's `store_bytes`.
    pub reported_store_bytes: Option<u64>,
}

/// Everything this module measured.
#[derive(Debug, Clone)]
pub struct CheckpointRunSection {
    /// Per-turn jobs per workspace and mode.
    pub runs: usize,
    /// Cold first-snapshot jobs per workspace.
    pub cold_runs: usize,
    /// Rows: the tiny repository first, then the generated one (60,000 files), this
    /// repository, and the larger generated one (100,000 files).
    pub trees: Vec<TreeRow>,
    /// The 100-turn session.
    pub session: SessionRow,
    /// The larger generated tree outside git (every file copied).
    pub outside_git: Option<outside_git::OutsideGitRow>,
    /// Wall time of the whole measurement, s.
    pub seconds: f64,
}

fn gaps(job: &JobTimes) -> Result<(f64, f64)> {
    let median = job
        .turn_gaps_ms()
        .context("a job with too few calls")?
        .median;
    let mean = job.mean_turn_ms().context("a job with too few calls")?;
    Ok((median, mean))
}

/// Measures everything: `runs` per-turn jobs per workspace and mode, `cold_runs`
/// first-snapshot jobs per workspace, and the session. `root` is this repository.
pub fn measure(
    binary: &Path,
    root: &Path,
    runs: usize,
    cold_runs: usize,
) -> Result<CheckpointRunSection> {
    let started = Instant::now();
    let log = |what: &str| {
        eprintln!(
            "bench: checkpoints ({:.0} s): {what}",
            started.elapsed().as_secs_f64()
        )
    };
    log("generating the workspaces");
    let trees = [
        trees::tiny()?,
        trees::generated(trees::GENERATED_DIRS, trees::GENERATED_FILES_PER_DIR)?,
        trees::this_repository(root)?,
        trees::generated(trees::LARGER_DIRS, trees::GENERATED_FILES_PER_DIR)?,
    ];
    let mut homes = Vec::new();
    let mut cold = Vec::new();
    for tree in &trees {
        log(&format!("first snapshots of {}", tree.label));
        let off = Home::new(false)?;
        let (mut first_cold, mut first_off) = (Vec::new(), Vec::new());
        let (mut rss_on, mut rss_off) = (Vec::new(), Vec::new());
        let mut kept = None;
        for _ in 0..cold_runs.max(1) {
            let home = Home::new(true)?;
            let with = job::run(binary, &home, tree.path(), bash_true(1))?;
            let without = job::run(binary, &off, tree.path(), bash_true(1))?;
            first_cold.push(with.result_ms[0]);
            first_off.push(without.result_ms[0]);
            rss_on.push(with.peak_rss_kib as f64 / 1024.0);
            rss_off.push(without.peak_rss_kib as f64 / 1024.0);
            kept = Some(home); // the previous one (and its store) is removed here
        }
        let on = kept.context("no cold run")?;
        let snapshot_store = trees::store_usage(&on.checkpoints_dir())?;
        cold.push((first_cold, first_off, snapshot_store, rss_on, rss_off));
        homes.push((on, off));
    }

    log(&format!(
        "{runs} × {CALLS} bash turns per workspace, on and off"
    ));
    let mut samples: Vec<[Vec<f64>; 5]> = vec![Default::default(); trees.len()];
    for _ in 0..runs.max(1) {
        for ((tree, (on, off)), figures) in trees.iter().zip(&homes).zip(&mut samples) {
            let with = job::run(binary, on, tree.path(), bash_true(CALLS))?;
            let without = job::run(binary, off, tree.path(), bash_true(CALLS))?;
            let (turn_on, mean_on) = gaps(&with)?;
            let (turn_off, mean_off) = gaps(&without)?;
            for (list, value) in
                figures
                    .iter_mut()
                    .zip([turn_on, turn_off, mean_on, mean_off, with.result_ms[0]])
            {
                list.push(value);
            }
        }
    }

    let mut rows = Vec::new();
    for ((tree, (first_cold, first_off, snapshot_store, rss_on, rss_off)), figures) in
        trees.iter().zip(cold).zip(&samples)
    {
        let what = |figure: &str| format!("{figure} in {}", tree.label);
        rows.push(TreeRow {
            label: tree.label.clone(),
            files: tree.files,
            bytes: tree.bytes,
            turn_on: spread(&figures[0], &what("bash turns with checkpoints"))?,
            turn_off: spread(&figures[1], &what("bash turns without checkpoints"))?,
            mean_on: spread(&figures[2], &what("bash turns with checkpoints"))?,
            mean_off: spread(&figures[3], &what("bash turns without checkpoints"))?,
            first_cold: spread(&first_cold, &what("first snapshots"))?,
            first_warm: spread(&figures[4], &what("second sessions"))?,
            first_off: spread(&first_off, &what("jobs without checkpoints"))?,
            snapshot_store,
            rss_on: spread(&rss_on, &what("first snapshots"))?,
            rss_off: spread(&rss_off, &what("jobs without checkpoints"))?,
        });
    }

    log(&format!(
        "a {SESSION_TURNS}-turn session in this repository"
    ));
    let repository = &trees[2];
    let session = session(binary, &homes[2].0, repository)?;
    log("the larger tree outside git");
    let outside_git = Some(outside_git::measure(binary, cold_runs)?);
    Ok(CheckpointRunSection {
        runs: runs.max(1),
        cold_runs: cold_runs.max(1),
        trees: rows,
        session,
        outside_git,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The session's calls: even turns append a line to one of [`SESSION_FILES`] with bash,
/// odd turns write a new note of about 1 KB with the `write` tool.
fn session_turns(turns: usize) -> Vec<Turn> {
    (0..turns)
        .map(|i| {
            if i.is_multiple_of(2) {
                let file = SESSION_FILES[(i / 2) % SESSION_FILES.len()];
                Turn::tool_call(
                    "bash",
                    json!({"command": format!("echo 'turn {i}: one more line' >> {file}")}),
                )
            } else {
                Turn::tool_call(
                    "write",
                    json!({
                        "path": format!("notes/turn-{i}.md"),
                        "content": format!("# Turn {i}\n\n{}", "A note the agent wrote. ".repeat(40)),
                    }),
                )
            }
        })
        .collect()
}

fn session(binary: &Path, home: &Home, repository: &Tree) -> Result<SessionRow> {
    for file in SESSION_FILES {
        if !repository.path().join(file).is_file() {
            bail!("the 100-turn session edits {file}, which this repository no longer has");
        }
    }
    let before = trees::store_usage(&home.checkpoints_dir())?;
    let times = job::run(
        binary,
        home,
        repository.path(),
        session_turns(SESSION_TURNS),
    )?;
    let after = trees::store_usage(&home.checkpoints_dir())?;
    Ok(SessionRow {
        turns: SESSION_TURNS,
        checkpoints: times.checkpoints,
        before,
        after,
        reported_store_bytes: times.store_bytes,
    })
}

/// The tiny row and the generated (large) row, when both were measured.
fn tiny_and_large(section: &CheckpointRunSection) -> Option<(&TreeRow, &TreeRow)> {
    Some((section.trees.first()?, section.trees.get(1)?))
}

/// The rows of the report's targets table.
pub fn target_rows(section: &CheckpointRunSection) -> Vec<String> {
    let Some((tiny, large)) = tiny_and_large(section) else {
        return Vec::new();
    };
    let on = large.turn_on.median - tiny.turn_on.median;
    let off = large.turn_off.median - tiny.turn_off.median;
    let files = trees::group_thousands(large.files);
    let mut rows = vec![
        format!(
            "| `pith run` bash turn, tracker + checkpoints: {files} files within {CHECKPOINTS_TARGET_MS:.0} ms of a tiny repository | {on:+.2} ms ({:.2} ms vs {:.2} ms; checkpoints off: {off:+.2} ms) | {} |",
            large.turn_on.median,
            tiny.turn_on.median,
            verdict(on <= CHECKPOINTS_TARGET_MS)
        ),
        format!(
            "| `pith run` bash turn, tracker alone: {files} files within {TRACKER_TARGET_MS:.0} ms of a tiny repository | at most {on:+.2} ms (the tracker with checkpoints bounds it) | {} |",
            if on <= TRACKER_TARGET_MS { "met" } else { "not shown here (see the crate's tracker row)" }
        ),
    ];
    rows.push(format!(
        "| first snapshot in the background, time and size reported | {files} files: first bash result {:.0} ms after start ({:.0} ms without checkpoints, {:.0} ms with the previous session's index); store {} ({} on disk) | reported |",
        large.first_cold.median,
        large.first_off.median,
        large.first_warm.median,
        megabytes(large.snapshot_store.bytes),
        megabytes(large.snapshot_store.disk_bytes),
    ));
    if let Some(larger) = section.trees.get(3) {
        rows.extend(first_snapshot_rows(larger));
    }
    rows.extend(section.outside_git.as_ref().map(outside_git::target_row));
    let s = &section.session;
    rows.push(format!(
        "| store size after a {}-turn session reported | {} ({} on disk), {} more than before it | reported |",
        s.turns,
        megabytes(s.after.bytes),
        megabytes(s.after.disk_bytes),
        megabytes(s.after.bytes.saturating_sub(s.before.bytes)),
    ));
    rows
}

/// Target: the first bash result of a first session in the larger repository, ms.
pub const FIRST_SESSION_TARGET_MS: f64 = 1_500.0;
/// Target: the same for a later session (the store of an earlier one), ms.
pub const LATER_SESSION_TARGET_MS: f64 = 300.0;
/// Target: peak memory with checkpoints over without, MiB.
pub const RSS_TARGET_MIB: f64 = 30.0;
/// A store this small on disk meets the ratio whatever it holds: a few files in 4 KiB
/// blocks cannot be within 3× of a few hundred bytes, and cost nothing.
const DISK_FLOOR_BYTES: u64 = 1 << 20;

/// The rows of issue 41's first-snapshot targets, in the larger repository.
fn first_snapshot_rows(larger: &TreeRow) -> Vec<String> {
    let files = trees::group_thousands(larger.files);
    let rss = larger.rss_on.median - larger.rss_off.median;
    let store = &larger.snapshot_store;
    let ratio = store.disk_bytes as f64 / store.bytes.max(1) as f64;
    vec![
        format!(
            "| first session in a {files}-file git repository: first bash result within {FIRST_SESSION_TARGET_MS:.0} ms | {:.0} ms ({:.0} ms without checkpoints) | {} |",
            larger.first_cold.median,
            larger.first_off.median,
            verdict(larger.first_cold.median <= FIRST_SESSION_TARGET_MS)
        ),
        format!(
            "| later session in a {files}-file git repository: first bash result within {LATER_SESSION_TARGET_MS:.0} ms | {:.0} ms | {} |",
            larger.first_warm.median,
            verdict(larger.first_warm.median <= LATER_SESSION_TARGET_MS)
        ),
        format!(
            "| peak memory with checkpoints at most {RSS_TARGET_MIB:.0} MiB over without ({files} files) | {rss:+.1} MiB ({:.1} vs {:.1} MiB) | {} |",
            larger.rss_on.median,
            larger.rss_off.median,
            verdict(rss <= RSS_TARGET_MIB)
        ),
        format!(
            "| store on disk at most {DISK_TARGET_RATIO:.0}× the bytes it holds, or under 1 MiB ({files} files) | {} on disk for {} ({ratio:.1}×, {} files) | {} |",
            megabytes(store.disk_bytes),
            megabytes(store.bytes),
            store.files,
            verdict(ratio <= DISK_TARGET_RATIO || store.disk_bytes <= DISK_FLOOR_BYTES)
        ),
    ]
}

/// The report's part; `with_heading` adds the section's heading (when the crate's
/// criterion part, which has it, was not run).
pub fn section(section: &CheckpointRunSection, with_heading: bool) -> String {
    let mut out = String::new();
    if with_heading {
        let _ = writeln!(out, "\n## Checkpoints and the change tracker");
    }
    let _ = writeln!(out, "\n### A bash turn through `pith run`\n");
    let _ = writeln!(
        out,
        "The release binary, `pith run --approval full --format stream-json` against the testkit (Anthropic protocol, zero latency), {CALLS} bash calls of `true N` per job, default sandbox. A bash turn is the gap between two consecutive `tool_started` lines, timed by the bench as they arrive: the call (its tracker mark and question), the checkpoint after it, its result sent and the next answer. Each job's median gap from the second call on is one figure (the first gap waits for the first snapshot); {} jobs per workspace and mode, alternating. Checkpoints off is `[checkpoints] enabled = false`, which also leaves bash without a tracker. The workspaces are committed git repositories under the temp directory; the store (`$PITH_HOME/checkpoints/`) is kept between jobs, as a user's is.\n",
        section.runs
    );
    let _ = writeln!(
        out,
        "| workspace | files | checkpoints on: ms per bash turn | off | on − off | mean gap on / off |\n|---|---:|---:|---:|---:|---:|"
    );
    for row in &section.trees {
        let _ = writeln!(
            out,
            "| {} | {} ({}) | {} | {} | {:+.2} | {:.2} / {:.2} |",
            row.label,
            trees::group_thousands(row.files),
            megabytes(row.bytes),
            row.turn_on.show(2),
            row.turn_off.show(2),
            row.turn_on.median - row.turn_off.median,
            row.mean_on.median,
            row.mean_off.median,
        );
    }
    if let Some(tiny) = section.trees.first() {
        let _ = writeln!(
            out,
            "\nDifference from the tiny repository (medians): {}.",
            section
                .trees
                .iter()
                .skip(1)
                .map(|row| format!(
                    "{} {:+.2} ms with checkpoints, {:+.2} ms without",
                    row.label,
                    row.turn_on.median - tiny.turn_on.median,
                    row.turn_off.median - tiny.turn_off.median
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let _ = writeln!(
        out,
        "\n**The first snapshot.** It starts with the session, in the background; the first bash call waits for it. Jobs of one call, spawn → its `tool_result` ({} jobs each; \"empty store\" is a fresh `$PITH_HOME`, \"index reused\" the per-turn jobs, whose store holds an earlier session's stat index). The store is measured after a cold snapshot: its files' bytes, and the blocks they take.\n",
        section.cold_runs
    );
    let _ = writeln!(
        out,
        "| workspace | first result, empty store (ms) | index reused (ms) | checkpoints off (ms) | peak memory on / off (MiB) | store files | store bytes | on disk |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in &section.trees {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} / {:.1} | {} | {} | {} |",
            row.label,
            row.first_cold.show(0),
            row.first_warm.show(0),
            row.first_off.show(0),
            row.rss_on.median,
            row.rss_off.median,
            trees::group_thousands(row.snapshot_store.files as usize),
            megabytes(row.snapshot_store.bytes),
            megabytes(row.snapshot_store.disk_bytes),
        );
    }
    if let Some(row) = &section.outside_git {
        out.push_str(&outside_git::paragraph(row, section.cold_runs));
    }
    let s = &section.session;
    let grown = s.after.bytes.saturating_sub(s.before.bytes);
    let _ = writeln!(
        out,
        "\n**A {}-turn session** in the copy of this repository: even turns append a line with bash to one of {} (each a new version of the whole file), odd turns `write` a new 1 KB note. {} `checkpoint` events. Store: {} ({} on disk, {} files) before, {} ({} on disk, {} files) after: {} more, {:.1} KB per turn. The last event's `store_bytes`: {}.",
        s.turns,
        SESSION_FILES.map(|f| format!("`{f}`")).join(", "),
        s.checkpoints,
        megabytes(s.before.bytes),
        megabytes(s.before.disk_bytes),
        s.before.files,
        megabytes(s.after.bytes),
        megabytes(s.after.disk_bytes),
        s.after.files,
        megabytes(grown),
        grown as f64 / 1e3 / s.turns.max(1) as f64,
        s.reported_store_bytes.map_or("none".to_owned(), megabytes),
    );
    let _ = writeln!(
        out,
        "\n(`cargo xtask bench --checkpoints-only` took {:.0} s.)",
        section.seconds
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(v: f64) -> Spread {
        Spread::of(&[v]).unwrap()
    }

    fn row(label: &str, files: usize, on: f64, off: f64) -> TreeRow {
        TreeRow {
            label: label.into(),
            files,
            bytes: 1_000_000,
            turn_on: one(on),
            turn_off: one(off),
            mean_on: one(on + 0.5),
            mean_off: one(off + 0.5),
            first_cold: one(3000.0),
            first_warm: one(600.0),
            first_off: one(40.0),
            snapshot_store: StoreUsage {
                files: 60_001,
                bytes: 20_000_000,
                disk_bytes: 265_000_000,
            },
            rss_on: one(40.0),
            rss_off: one(22.0),
        }
    }

    fn measured(large_on: f64) -> CheckpointRunSection {
        CheckpointRunSection {
            runs: 3,
            cold_runs: 2,
            trees: vec![
                row("a tiny git repository", 2, 12.0, 11.0),
                row(
                    "a generated git repository of 60,000 files",
                    60_000,
                    large_on,
                    11.5,
                ),
            ],
            session: SessionRow {
                turns: 100,
                checkpoints: 100,
                before: StoreUsage {
                    files: 500,
                    bytes: 8_000_000,
                    disk_bytes: 10_000_000,
                },
                after: StoreUsage {
                    files: 600,
                    bytes: 9_000_000,
                    disk_bytes: 11_000_000,
                },
                reported_store_bytes: Some(8_990_000),
            },
            outside_git: None,
            seconds: 90.0,
        }
    }

    #[test]
    fn targets_compare_the_large_repository_with_the_tiny_one() {
        let rows = target_rows(&measured(14.0));
        assert_eq!(rows.len(), 4);
        assert!(
            rows[0].contains("+2.00 ms (14.00 ms vs 12.00 ms; checkpoints off: +0.50 ms) | met |"),
            "{}",
            rows[0]
        );
        assert!(rows[1].ends_with("| met |"), "{}", rows[1]);
        assert!(
            rows[2].contains(
                "first bash result 3000 ms after start (40 ms without checkpoints, 600 ms"
            ),
            "{}",
            rows[2]
        );
        assert!(
            rows[3].contains("9.0 MB (11.0 MB on disk), 1.0 MB more"),
            "{}",
            rows[3]
        );

        let slow = target_rows(&measured(23.0));
        assert!(slow[0].ends_with("| **not met** |"), "{}", slow[0]);
        assert!(slow[1].contains("not shown here"), "{}", slow[1]);

        let mut alone = measured(14.0);
        alone.trees.truncate(1);
        assert!(target_rows(&alone).is_empty());
    }

    #[test]
    fn the_larger_repository_has_the_first_snapshot_targets() {
        let mut figures = measured(14.0);
        assert_eq!(
            target_rows(&figures).len(),
            4,
            "no larger repository, no rows"
        );
        let mut larger = row(
            "a generated git repository of 100,000 files",
            100_000,
            14.0,
            12.0,
        );
        larger.first_cold = one(1_200.0);
        larger.first_warm = one(450.0);
        larger.snapshot_store = StoreUsage {
            files: 3,
            bytes: 2_000_000,
            disk_bytes: 5_000_000,
        };
        figures.trees.push(row("this repository", 600, 12.0, 11.0));
        figures.trees.push(larger);
        let rows = target_rows(&figures);
        assert_eq!(rows.len(), 8);
        assert!(
            rows[3].contains("| 1200 ms (40 ms without checkpoints) | met |"),
            "{}",
            rows[3]
        );
        assert!(rows[4].contains("| 450 ms | **not met** |"), "{}", rows[4]);
        assert!(
            rows[5].contains("+18.0 MiB (40.0 vs 22.0 MiB) | met |"),
            "{}",
            rows[5]
        );
        assert!(rows[6].contains("(2.5×, 3 files) | met |"), "{}", rows[6]);
        let mut packed_badly = figures.clone();
        packed_badly.trees[3].snapshot_store.disk_bytes = 8_000_000;
        assert!(target_rows(&packed_badly)[6].ends_with("| **not met** |"));
        let mut tiny_store = figures;
        tiny_store.trees[3].snapshot_store = StoreUsage {
            files: 1,
            bytes: 60,
            disk_bytes: 4096,
        };
        assert!(target_rows(&tiny_store)[6].ends_with("(68.3×, 1 files) | met |"));
    }

    #[test]
    fn the_section_shows_every_workspace_and_the_session() {
        let text = section(&measured(14.0), true);
        assert!(text.starts_with("\n## Checkpoints and the change tracker\n"));
        assert!(!section(&measured(14.0), false).contains("## Checkpoints"));
        assert!(
            text.contains("| a generated git repository of 60,000 files | 60,000 (1.0 MB) | 14.00 (14.00 – 14.00) | 11.50 (11.50 – 11.50) | +2.50 | 14.50 / 12.00 |"),
            "{text}"
        );
        assert!(
            text.contains("60,000 files +2.00 ms with checkpoints, +0.50 ms without"),
            "{text}"
        );
        assert!(text.contains("| 60,001 | 20.0 MB | 265.0 MB |"), "{text}");
        assert!(text.contains("1.0 MB more, 10.0 KB per turn"), "{text}");
    }

    #[test]
    fn the_session_appends_with_bash_and_writes_notes() {
        let turns = session_turns(4);
        assert_eq!(turns.len(), 4);
        let text = serde_json::to_string(
            &turns
                .iter()
                .map(|t| serde_json::to_value(t).unwrap())
                .collect::<Vec<_>>(),
        )
        .unwrap();
        assert!(
            text.contains(">> docs/architecture.md") && text.contains(">> README.md"),
            "{text}"
        );
        assert!(
            text.contains("notes/turn-1.md") && text.contains("notes/turn-3.md"),
            "{text}"
        );
    }
}
