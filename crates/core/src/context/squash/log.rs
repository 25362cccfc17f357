//! Logs and build output: keep errors and warnings by score with context, collapse
//! repeated lines.
//!
//! Each line is classified (error, warning, info, debug, stack frame, summary) and
//! scored: level (error 1.0, warn 0.5, info 0.1, debug 0.05) + 0.3 for a stack frame +
//! 0.4 for a summary line. The `log_max_error_lines` best errors and
//! `log_max_warning_lines` best warnings are kept with `context_lines` lines on each
//! side, plus every summary line and the last lines of the output. Runs of lines that
//! are identical once numbers, timestamps and hex are masked become one line with a
//! count (`(×14)`).

use std::sync::LazyLock;

use regex::Regex;

use super::lines::{mark_runs, render, shorten, KeepPlan};
use super::{mark_matching_lines, Outcome, SquashConfig};

static WARN_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i-u)\bwarn(ing)?s?\b").expect("constant pattern compiles"));
static SUMMARY_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(\b\d+ (passed|failed|errors?|warnings?|tests?)\b|\b(summary|finished|total)\b)",
    )
    .expect("constant pattern compiles")
});
static EXTRA_ERROR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?im-u)(\b(panicked|fail|err|critical)\b|^E\s)")
        .expect("constant pattern compiles")
});

const TAIL_LINES: usize = 3;
const LINE_CAP_CHARS: usize = 600;

fn is_stack_frame(line: &str) -> bool {
    let t = line.trim_start();
    (t.len() < line.len() && (t.starts_with("at ") || t.starts_with("File \"")))
        || t.starts_with("File \"")
}

fn is_debug(line: &str) -> bool {
    let head: String = line
        .chars()
        .take(40)
        .collect::<String>()
        .to_ascii_lowercase();
    head.contains("debug") || head.contains("trace")
}

/// Splits a line into its masked tokens: digit runs (and hex digits following them)
/// become one `#`, so lines differing only in counters, timestamps or addresses compare
/// equal. Yields bytes; `None` marks a masked number.
fn masked(line: &str) -> impl Iterator<Item = Option<u8>> + '_ {
    let bytes = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *bytes.get(i)?;
        if b.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                i += 1;
            }
            return Some(None);
        }
        i += 1;
        Some(Some(b))
    })
}

/// True when two lines are identical once numbers are masked (no allocation).
pub(crate) fn same_masked(a: &str, b: &str) -> bool {
    a == b || masked(a).eq(masked(b))
}

/// Squashes a log-shaped output.
pub(crate) fn squash(
    text: &str,
    lines: &[&str],
    errors: &[bool],
    config: &SquashConfig,
) -> Outcome {
    let n = lines.len();
    let warns = mark_matching_lines(text, lines, &WARN_LINE);
    let summaries = mark_matching_lines(text, lines, &SUMMARY_LINE);
    let extra = mark_matching_lines(text, lines, &EXTRA_ERROR);

    let mut plan = KeepPlan::none(n);
    let run_start = mark_runs(lines, &mut plan, same_masked);

    let score = |i: usize, level: f32| -> f32 {
        level
            + if is_stack_frame(lines[i]) { 0.3 } else { 0.0 }
            + if summaries[i] { 0.4 } else { 0.0 }
    };
    let mut error_idx: Vec<(usize, f32)> = Vec::new();
    let mut warn_idx: Vec<(usize, f32)> = Vec::new();
    for i in 0..n {
        if run_start[i] != i {
            continue;
        }
        if errors[i] || extra[i] {
            error_idx.push((i, score(i, 1.0)));
        } else if warns[i] {
            warn_idx.push((i, score(i, 0.5)));
        }
    }
    let pick = |mut v: Vec<(usize, f32)>, max: usize| -> Vec<usize> {
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v.truncate(max);
        v.into_iter().map(|(i, _)| i).collect()
    };
    let mut anchors = pick(error_idx, config.log_max_error_lines);
    anchors.extend(pick(warn_idx, config.log_max_warning_lines));
    let ctx = config.context_lines;
    for &i in &anchors {
        // Context counts runs as one line each.
        let mut lo = i;
        let mut steps = 0;
        while steps < ctx && lo > 0 {
            lo = run_start[lo - 1];
            steps += 1;
        }
        let mut hi = i + plan.run[i].max(1) as usize - 1;
        steps = 0;
        while steps < ctx && hi + 1 < n {
            hi += plan.run[hi + 1].max(1) as usize;
            steps += 1;
        }
        for j in lo..=hi.min(n - 1) {
            if run_start[j] == j {
                plan.keep(j);
            }
        }
    }
    for i in 0..n {
        if summaries[i] && !is_debug(lines[i]) && run_start[i] == i {
            plan.keep(i);
        }
    }
    for i in n.saturating_sub(TAIL_LINES)..n {
        plan.keep(run_start[i]);
    }
    for i in 0..n {
        if plan.keep[i] {
            if let Some(short) = shorten(lines[i], LINE_CAP_CHARS) {
                plan.shortened.push((i, short));
            }
        }
    }
    render(lines, &plan).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masking_makes_counters_and_timestamps_equal() {
        assert!(same_masked(
            "12:00:01 retry 3 at 0x7ffe12",
            "12:00:09 retry 4 at 0x7ffe99"
        ));
        assert!(!same_masked("retry a", "retry b"));
        assert!(same_masked("héllo 12", "héllo 7"));
    }
}
