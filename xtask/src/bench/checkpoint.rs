//! What the session's change tracker and the checkpointer cost per tool call, from
//! `crates/checkpoint/benches/checkpoint.rs` (criterion), on a tiny tree and on a
//! generated 60,000-file tree. Targets (issue 32): the tracker's question on the 60k tree
//! within 5 ms of the tiny one, an observation within 10 ms. These are the crate's own
//! costs; a bash turn through the binary adds the loop's.

use super::criterion::{median_ms, section_of, CriterionResult};

/// The criterion group of the bench.
pub const GROUP: &str = "checkpoint";
const TRACKER: (&str, &str) = ("checkpoint/tracker_tiny", "checkpoint/tracker_60k");
const OBSERVE: (&str, &str) = ("checkpoint/observe_tiny", "checkpoint/observe_60k");
const TRACKER_TARGET_MS: f64 = 5.0;
const OBSERVE_TARGET_MS: f64 = 10.0;

fn row(results: &[CriterionResult], ids: (&str, &str), what: &str, target: f64) -> Option<String> {
    let tiny = median_ms(results, ids.0)?;
    let large = median_ms(results, ids.1)?;
    let extra = large - tiny;
    Some(format!(
        "| {what} on 60k files within {target:.0} ms of a tiny tree | +{extra:.2} ms ({large:.2} ms vs {tiny:.2} ms) | {} |",
        if extra < target { "met" } else { "**not met**" }
    ))
}

/// The rows of the targets table, for the figures that were measured.
pub fn target_rows(results: &[CriterionResult]) -> Vec<String> {
    [
        row(
            results,
            TRACKER,
            "change tracker question",
            TRACKER_TARGET_MS,
        ),
        row(
            results,
            OBSERVE,
            "checkpoint observation",
            OBSERVE_TARGET_MS,
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The report's section (empty when the bench was not run).
pub fn section(results: &[CriterionResult]) -> String {
    section_of(
        results,
        &[TRACKER.0, TRACKER.1, OBSERVE.0, OBSERVE.1],
        "Checkpoints and the change tracker",
        "`crates/checkpoint/benches/checkpoint.rs` (criterion): `tracker_*` is a bash call's question (mark, one small write, changed_since), `observe_*` one small write then an observation (the new content stored); on a tiny tree and on a generated 60,000-file tree (3,000 directories × 20 files). The bench also prints the first snapshot's time and the store's size. See `docs/rewind.md`.",
        "| figure | median |\n|---|---:|",
        |r| format!("| {} | {:.3} ms |", r.id, r.seconds.median * 1e3),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::Spread;

    fn result(id: &str, ms: f64) -> CriterionResult {
        CriterionResult {
            id: id.into(),
            seconds: Spread::of(&[ms / 1e3]).unwrap(),
            bytes: None,
        }
    }

    #[test]
    fn rows_compare_the_large_tree_with_the_tiny_one() {
        let results = [
            result(TRACKER.0, 0.5),
            result(TRACKER.1, 1.0),
            result(OBSERVE.0, 0.5),
            result(OBSERVE.1, 12.0),
        ];
        let rows = target_rows(&results);
        assert_eq!(rows.len(), 2);
        assert!(
            rows[0].contains("+0.50 ms") && rows[0].ends_with("| met |"),
            "{}",
            rows[0]
        );
        assert!(rows[1].contains("**not met**"), "{}", rows[1]);
        assert!(section(&results).contains("| checkpoint/observe_60k | 12.000 ms |"));
        assert!(target_rows(&results[..1]).is_empty());
        assert_eq!(section(&[]), "");
    }
}
