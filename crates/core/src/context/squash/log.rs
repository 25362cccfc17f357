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

use super::config::SquashConfig;
use super::lines::{mark_runs, shorten, KeepPlan};

/// Every keyword the log classifier looks at, found in one pass over the output.
static LOG_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?im-u)^E\s|\b(?:errors?|exception|traceback|failed|failure|fatal|panic|panicked",
        r"|fail|err|critical|warn|warns|warning|warnings|passed|tests?|summary|finished|total)\b"
    ))
    .expect("constant pattern compiles")
});

/// Per-line flags of the log classifier.
struct LineMarks {
    error: Vec<bool>,
    warn: Vec<bool>,
    summary: Vec<bool>,
}

/// Classifies every line from one scan of [`LOG_WORDS`]; lines are slices of `text`.
fn classify_lines(text: &str, lines: &[&str]) -> LineMarks {
    let n = lines.len();
    let mut marks = LineMarks {
        error: vec![false; n],
        warn: vec![false; n],
        summary: vec![false; n],
    };
    let base = text.as_ptr() as usize;
    let mut line = 0usize;
    for m in LOG_WORDS.find_iter(text) {
        while line + 1 < n && lines[line + 1].as_ptr() as usize - base <= m.start() {
            line += 1;
        }
        if line >= n {
            break;
        }
        let word = m.as_str().to_ascii_lowercase();
        let after_count = {
            let before = &text.as_bytes()[..m.start()];
            before.ends_with(b" ") && before.len() >= 2 && before[before.len() - 2].is_ascii_digit()
        };
        match word.as_str() {
            "warn" | "warns" | "warning" | "warnings" => {
                marks.warn[line] = true;
                marks.summary[line] |= after_count;
            }
            "summary" | "finished" | "total" => marks.summary[line] = true,
            "passed" | "test" | "tests" => marks.summary[line] |= after_count,
            _ => {
                marks.error[line] = true;
                marks.summary[line] |= after_count;
            }
        }
    }
    marks
}

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

/// A hash of the line with every number masked (see [`same_masked`]); lines equal under
/// masking have equal hashes, so runs are found by comparing integers.
pub(crate) fn masked_hash(line: &str) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let bytes = line.as_bytes();
    let mut h: u64 = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let token = if b.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_hexdigit() {
                i += 1;
            }
            u64::from(b'#') | 0x100
        } else {
            i += 1;
            u64::from(b)
        };
        h = (h.rotate_left(5) ^ token).wrapping_mul(K);
    }
    h
}

/// True when two lines are identical once numbers are masked: a digit run (with the hex
/// digits that follow it, e.g. `0x7ffe12`, `12:00:01`) compares equal to any other.
/// Allocation-free; this runs on every pair of neighbouring lines.
#[cfg(test)]
pub(crate) fn same_masked(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    loop {
        match (a.get(i), b.get(j)) {
            (None, None) => return true,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                while i < a.len() && a[i].is_ascii_hexdigit() {
                    i += 1;
                }
                while j < b.len() && b[j].is_ascii_hexdigit() {
                    j += 1;
                }
            }
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            _ => return false,
        }
    }
}

/// Plans a log-shaped output.
pub(crate) fn plan(text: &str, lines: &[&str], errors: &[bool], config: &SquashConfig) -> KeepPlan {
    let n = lines.len();
    let LineMarks {
        error: extra,
        warn: warns,
        summary: summaries,
    } = classify_lines(text, lines);

    let mut plan = KeepPlan::none(n);
    let masked: Vec<u64> = lines.iter().map(|l| masked_hash(l)).collect();
    // 64-bit hashes of the masked lines: a false match has probability 2^-64 per pair.
    let run_start = mark_runs(lines, &mut plan, |a, b| masked[a] == masked[b]);

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
    plan
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
        assert_eq!(
            masked_hash("12:00:01 retry 3 at 0x7ffe12"),
            masked_hash("12:00:09 retry 4 at 0x7ffe99")
        );
        assert_ne!(masked_hash("retry a"), masked_hash("retry b"));
    }
}
