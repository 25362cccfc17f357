//! Issue 21's case: a 1 MB CI log of a script that runs two pytest sessions, the first
//! with three failures (its FAILURES section and short summary in the middle of the log),
//! the second passing. Squash must keep every failing id, every failure detail and both
//! summaries, in at most 4 KB when the script ran it and at most 8 KB when the log is
//! `cat` (a file view above the cap).
//!
//! The log is generated (`support/ci_log.rs`), not committed.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[path = "support/ci_log.rs"]
mod fixture;

use fixture::{assert_keeps_everything, ci_log, DETAILS, FAILING_IDS, SUMMARIES};
use pith_core::context::squash::{self, Family, SquashConfig};

#[test]
fn the_generated_log_is_what_the_issue_describes() {
    let log = ci_log(1 << 20);
    assert!(
        (1 << 20) - 2_000 <= log.len() && log.len() <= (1 << 20) + 2_000,
        "{}",
        log.len()
    );
    let failures = log.find("= FAILURES =").expect("a FAILURES section");
    assert!(
        failures > log.len() / 3 && failures < log.len() * 2 / 3,
        "in the middle"
    );
    assert_keeps_everything(&log, "the raw log");
}

#[test]
fn a_ci_script_s_one_megabyte_log_keeps_failures_and_both_summaries_in_four_kilobytes() {
    let log = ci_log(1 << 20);
    let out = squash::apply(
        "bash",
        Some("bash ci.sh"),
        Some(1),
        &log,
        &SquashConfig::default(),
    );
    assert_eq!(out.stats.family, Family::MultiStep);
    assert_keeps_everything(&out.text, "bash ci.sh");
    assert!(
        out.text.len() <= 4_096,
        "{} bytes:\n{}",
        out.text.len(),
        out.text
    );
}

#[test]
fn a_one_megabyte_cat_of_the_log_keeps_failures_within_the_view_budget() {
    let log = ci_log(1 << 20);
    let config = SquashConfig::default();
    let out = squash::apply("bash", Some("cat big.log"), Some(0), &log, &config);
    assert_keeps_everything(&out.text, "cat big.log");
    assert!(
        out.text.len() <= config.view_budget_bytes,
        "{} bytes:\n{}",
        out.text.len(),
        out.text
    );
}

#[test]
fn the_same_log_run_by_its_test_command_keeps_the_same() {
    // A single `pytest` command whose output holds both sessions (no traces).
    let log = ci_log(300_000).replace("+ python -m pytest tests/integration -v\n", "");
    let out = squash::apply(
        "bash",
        Some("python -m pytest tests"),
        Some(1),
        &log,
        &SquashConfig::default(),
    );
    for detail in DETAILS.iter().chain(&SUMMARIES).chain(&FAILING_IDS) {
        assert!(out.text.contains(detail), "lost {detail:?}:\n{}", out.text);
    }
}
