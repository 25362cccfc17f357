//! The first snapshot outside git: the larger generated tree (100,000 small files) in a
//! directory that is no git repository, so that no pre-image comes from git and every
//! file is copied (packed) into the store. Jobs of one bash call, spawn → its
//! `tool_result`: with an empty store, then a later session with the store (and stat
//! index) of the first; the store's disk use against the bytes it holds.

use std::path::Path;

use anyhow::{Context, Result};

use super::figures::{bash_true, megabytes, spread, verdict, DISK_TARGET_RATIO};
use super::job::{self, Home};
use super::trees::{self, StoreUsage, Tree};
use crate::bench::stats::Spread;

/// The figures of the tree outside git.
#[derive(Debug, Clone)]
pub struct OutsideGitRow {
    /// How the report names the workspace.
    pub label: String,
    /// Its files.
    pub files: usize,
    /// Their size, bytes: what the store holds once they are copied.
    pub bytes: u64,
    /// Spawn → first `tool_result`, ms, empty store.
    pub first_cold: Spread,
    /// The same in a later session (the store and stat index of the first).
    pub first_warm: Spread,
    /// Peak resident memory of the cold jobs, MiB.
    pub rss_on: Spread,
    /// The store after the first snapshot and one later session (the last home's).
    pub store: StoreUsage,
}

/// Measures `cold_runs` pairs of jobs (a first session with an empty store, then a
/// later one with its store) in a generated tree outside git.
pub fn measure(binary: &Path, cold_runs: usize) -> Result<OutsideGitRow> {
    let tree = trees::generated_outside_git(trees::LARGER_DIRS, trees::GENERATED_FILES_PER_DIR)?;
    measure_in(binary, &tree, cold_runs)
}

fn measure_in(binary: &Path, tree: &Tree, cold_runs: usize) -> Result<OutsideGitRow> {
    let (mut cold, mut warm, mut rss) = (Vec::new(), Vec::new(), Vec::new());
    let mut store = None;
    for _ in 0..cold_runs.max(1) {
        let home = Home::new(true)?;
        let first = job::run(binary, &home, tree.path(), bash_true(1))?;
        let later = job::run(binary, &home, tree.path(), bash_true(1))?;
        cold.push(*first.result_ms.first().context("no result")?);
        warm.push(*later.result_ms.first().context("no result")?);
        rss.push(first.peak_rss_kib as f64 / 1024.0);
        store = Some(trees::store_usage(&home.checkpoints_dir())?);
    }
    let what = |figure: &str| format!("{figure} in {}", tree.label);
    Ok(OutsideGitRow {
        label: tree.label.clone(),
        files: tree.files,
        bytes: tree.bytes,
        first_cold: spread(&cold, &what("first snapshots"))?,
        first_warm: spread(&warm, &what("later sessions"))?,
        rss_on: spread(&rss, &what("first snapshots"))?,
        store: store.context("no run")?,
    })
}

/// The store's blocks on disk over the bytes of the files it holds.
fn ratio(row: &OutsideGitRow) -> f64 {
    row.store.disk_bytes as f64 / row.bytes.max(1) as f64
}

/// The targets table's row: the store's disk use outside git.
pub fn target_row(row: &OutsideGitRow) -> String {
    format!(
        "| store on disk at most {DISK_TARGET_RATIO:.0}× the bytes it holds, outside git ({}) | {} on disk for {} of files ({:.2}×; {} files of {} in the store, the stat index included); first snapshot {:.0} ms, later session {:.0} ms | {} |",
        row.label,
        megabytes(row.store.disk_bytes),
        megabytes(row.bytes),
        ratio(row),
        row.store.files,
        megabytes(row.store.bytes),
        row.first_cold.median,
        row.first_warm.median,
        verdict(ratio(row) <= DISK_TARGET_RATIO)
    )
}

/// The section's paragraph.
pub fn paragraph(row: &OutsideGitRow, cold_runs: usize) -> String {
    format!(
        "\n**Outside git.** {} ({}, {}) in a directory that is no git repository: every file is copied into the store (small blobs packed). {cold_runs} pairs of one-call jobs: spawn → first `tool_result` with an empty store {} ms, in a later session with its store {} ms; peak memory {:.1} MiB. The store after both: {} files, {} ({} on disk, {:.2}× the files' bytes).\n",
        row.label,
        trees::group_thousands(row.files),
        megabytes(row.bytes),
        row.first_cold.show(0),
        row.first_warm.show(0),
        row.rss_on.median,
        row.store.files,
        megabytes(row.store.bytes),
        megabytes(row.store.disk_bytes),
        ratio(row),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(disk_bytes: u64) -> OutsideGitRow {
        let one = |v: f64| Spread::of(&[v]).unwrap();
        OutsideGitRow {
            label: "100,000 small files outside git".into(),
            files: 100_001,
            bytes: 34_000_000,
            first_cold: one(1_100.0),
            first_warm: one(320.0),
            rss_on: one(60.0),
            store: StoreUsage {
                files: 3,
                bytes: 45_000_000,
                disk_bytes,
            },
        }
    }

    #[test]
    fn the_row_compares_disk_use_with_the_bytes_held() {
        let met = target_row(&row(45_900_000));
        assert!(
            met.contains("45.9 MB on disk for 34.0 MB of files (1.35×;"),
            "{met}"
        );
        assert!(met.contains("first snapshot 1100 ms, later session 320 ms | met |"));
        assert!(target_row(&row(110_000_000)).ends_with("| **not met** |"));
        let text = paragraph(&row(45_900_000), 2);
        assert!(text.contains("(100,001, 34.0 MB)"), "{text}");
        assert!(text.contains("1100 (1100 – 1100) ms"), "{text}");
    }
}
