//! What the checkpoint rows share: the jobs' calls, the spread of figures, and how the
//! report writes sizes, verdicts and the disk-use target.

use anyhow::{Context, Result};
use pith_testkit::Turn;
use serde_json::json;

use crate::bench::stats::Spread;

/// Target: the store's blocks on disk over the bytes it holds.
pub const DISK_TARGET_RATIO: f64 = 3.0;

/// `n` bash calls of `true`, numbered (`true 1`, `true 2`…: the same call six times in
/// a row would stop the job, the doom-loop guard).
pub fn bash_true(n: usize) -> Vec<Turn> {
    (1..=n)
        .map(|i| Turn::tool_call("bash", json!({"command": format!("true {i}")})))
        .collect()
}

/// The spread of `values`, or an error naming `what` had no figures.
pub fn spread(values: &[f64], what: &str) -> Result<Spread> {
    Spread::of(values).with_context(|| format!("no figures for {what}"))
}

/// `bytes` in MB, one decimal.
pub fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The targets table's verdict.
pub fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**not met**"
    }
}
