//! Test-runner output (pytest, unittest / django runtests, sympy bin/test, cargo test,
//! go test, jest / vitest / mocha): keep what identifies and explains each failure, drop
//! passing-test noise.
//!
//! Failure blocks ([`super::failures`]) are kept by block: the first
//! `failure_blocks_max` blocks keep their header, details, last frames and captured
//! output tail within `failure_block_max_lines` lines (whole when they fit); later blocks
//! keep their header only (it names the test). Outside blocks, always kept verbatim:
//! every failing test identifier line, every error / assertion line (the eval's
//! error-line pattern, pytest `E` and `>` lines, go `_test.go:N:` messages, jest
//! `Expected` / `Received`), the first project `file:line` frame and the last frame of
//! each traceback (with its source line), and the summary lines. Progress dots,
//! `PASSED` / `ok` lines, database setup chatter, lines already shown earlier in the
//! output (repeated frames and exceptions) and runs of identical lines go. What budget
//! is left (`test_context_budget_bytes`) goes to lines next to the kept ones.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use super::config::SquashConfig;
use super::failures::{self, is_project_frame, Pick};
use super::lines::{mark_runs, priority, shorten, KeepPlan};
use super::scan::mark_matching_lines;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant pattern compiles")
}

/// Lines naming a failing test, or a failure section header.
static FAILING_ID: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?m)^(?:(?:FAILED|ERROR|FAIL|XPASS)\b.*",
        r"|.*\s(?:FAILED|ERROR|FAIL)(?:\s.*)?",
        r"|\s*--- FAIL:.*",
        r"|_{3,} .+ _{3,}",
        r"|\s*● .*",
        r"|---- .+ ----",
        r"|.*panicked at.*)$"
    ))
});

/// Summary lines of the common runners.
static SUMMARY: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?m)^(?:=+ .* =+",
        r"|Ran \d+ tests? in .*",
        r"|(?:OK|FAILED)(?: \(.*\))?",
        r"|test result: .*",
        r"|(?:ok|FAIL)\s.*|PASS",
        r"|Tests?:\s.*|Test Suites:\s.*|Snapshots:\s.*",
        r"|.*tests finished:.*",
        r"|collected \d+ items?.*",
        r"|\d+ (?:passed|failed).*)$"
    ))
});

/// Assertion detail lines and exception lines (`ValueError: …`, `UnicodeEncodeError`).
static ASSERTION: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"(?m)^(?:>\s.*",
        r"|[\w.]*(?:Error|Exception|Exit|Interrupt|Warning)\b.*",
        r"|\s+\S+_test\.go:\d+:.*",
        r"|\s*(?:Expected|Received|expected|received|left|right)\b.*:.*",
        r"|\s*assert.*)$"
    ))
});

/// A traceback frame: Python `File "x", line N`, pytest `path:N: in f`, JS `at f (x:N:M)`.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r#"(?m)^(?:\s*File "[^"]+", line \d+.*|[\w./<>-]+:\d+: in .*|\s+at .*\(?[\w./-]+:\d+:\d+\)?)$"#,
    )
});

/// A pytest location line after the `E` block: `path.py:142: ExcType`.
static LOCATION: LazyLock<Regex> = LazyLock::new(|| re(r"^[\w./-]+:\d+: \S"));

/// Lines that are pure noise in a test run.
static NOISE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(?:[\w/.:\[\]-]*\s*[.sSxX]+\s*(?:\[\s*\d+%\])?",
        r"|.*\s(?:PASSED|passed|ok|OK)(?:\s+\[\s*\d+%\])?",
        r"|.*\.\.\. (?:ok|skipped.*|expected failure)",
        r"|(?:_ )+_?\s*",
        r"|(?:Creating|Cloning|Destroying) test database.*",
        r"|\s*)$"
    ))
});

/// Kept lines longer than this are shortened, unless they are error or detail lines.
const LINE_CAP_CHARS: usize = 500;
/// Error and detail lines are shortened only beyond this.
const DETAIL_LINE_CAP_CHARS: usize = 2_000;

/// Failure blocks: the first ones in detail, the rest by their header; a line already
/// `shown` is not shown again. Which lines are in a block, and which were kept as
/// details.
fn keep_failure_blocks<'a>(
    text: &str,
    lines: &[&'a str],
    config: &SquashConfig,
    plan: &mut KeepPlan,
    run_start: &[usize],
    shown: &mut HashSet<&'a str>,
) -> (Vec<bool>, Vec<bool>) {
    let n = lines.len();
    let blocks = failures::find_blocks(text, lines);
    let mut in_block = vec![false; n];
    let mut detail = vec![false; n];
    for (k, block) in blocks.iter().enumerate() {
        in_block[block.start..block.end].fill(true);
        if k >= config.failure_blocks_max {
            plan.keep_at(run_start[block.start], priority::MUST);
            continue;
        }
        let mut skip_source = false;
        for (i, pick) in failures::select(lines, *block, config.failure_block_max_lines) {
            let first_time = shown.insert(lines[i]);
            let keep = match pick {
                Pick::Header | Pick::LastDetail => true,
                Pick::FrameSource => !skip_source,
                Pick::Frame => {
                    skip_source = !first_time;
                    first_time
                }
                Pick::Detail | Pick::Context => first_time,
            };
            if pick != Pick::Frame {
                skip_source = false;
            }
            if keep {
                plan.keep_at(run_start[i], pick.priority());
                detail[i] = pick.priority() <= priority::DETAIL;
            }
        }
    }
    (in_block, detail)
}

/// Plans test-runner output.
pub(crate) fn plan(text: &str, lines: &[&str], errors: &[bool], config: &SquashConfig) -> KeepPlan {
    let n = lines.len();
    let failing = mark_matching_lines(text, lines, &FAILING_ID);
    let summary = mark_matching_lines(text, lines, &SUMMARY);
    let assertion = mark_matching_lines(text, lines, &ASSERTION);
    let frame = mark_matching_lines(text, lines, &FRAME);

    let mut plan = KeepPlan::none(n);
    let run_start = mark_runs(lines, &mut plan, |a, b| lines[a] == lines[b]);

    // A line already shown earlier (a repeated frame, the same exception for every
    // parametrised case) is not shown again; identifiers and summaries always are.
    let mut shown: HashSet<&str> = HashSet::new();

    let (in_block, detail) =
        keep_failure_blocks(text, lines, config, &mut plan, &run_start, &mut shown);

    let mut mandatory = vec![false; n];
    for i in 0..n {
        // Ids, summaries and error lines count everywhere (inside blocks too: captured
        // output may hold a nested test run); the other patterns only outside blocks,
        // where no block says which of their lines matter.
        if errors[i] || failing[i] || summary[i] || (!in_block[i] && assertion[i]) {
            mandatory[i] = true;
        }
    }
    keep_assertion_blocks(lines, errors, &in_block, &mut mandatory);
    // pytest location right after an `E` block.
    for i in 1..n {
        if !in_block[i]
            && (1..=3).any(|d| i >= d && lines[i - d].starts_with('E'))
            && LOCATION.is_match(lines[i])
        {
            mandatory[i] = true;
        }
    }
    keep_traceback_ends(lines, &frame, &in_block, &mut mandatory);

    for i in 0..n {
        if !mandatory[i] {
            continue;
        }
        let first_time = shown.insert(lines[i]) || plan.keep[run_start[i]];
        if failing[i] || summary[i] {
            plan.keep_at(run_start[i], priority::MUST);
        } else if first_time {
            plan.keep_at(run_start[i], priority::DETAIL);
        } else {
            mandatory[i] = false;
        }
    }
    // Spend the context budget on neighbours of kept failure lines (not of ids and
    // summaries: next to a session header are only platform and plugin versions).
    let mut budget = config.test_context_budget_bytes;
    'fill: for distance in 1..=2usize {
        for i in 0..n {
            if !mandatory[i] || failing[i] || summary[i] {
                continue;
            }
            for j in [i.checked_sub(distance), Some(i + distance)]
                .into_iter()
                .flatten()
            {
                if j >= n
                    || plan.keep[j]
                    || in_block[j]
                    || run_start[j] != j
                    || NOISE.is_match(lines[j])
                {
                    continue;
                }
                let cost = lines[j].len() + 1;
                if cost > budget {
                    break 'fill;
                }
                budget -= cost;
                plan.keep_at(j, priority::CONTEXT);
            }
        }
    }
    for i in 0..n {
        if plan.keep[i] {
            let cap = if errors[i] || detail[i] {
                DETAIL_LINE_CAP_CHARS
            } else {
                LINE_CAP_CHARS
            };
            if let Some(short) = shorten(lines[i], cap) {
                plan.shortened.push((i, short));
            }
        }
    }
    plan
}

/// pytest `E` blocks: the first lines (the assertion itself) and the last line of each
/// block are kept, and every line in it that matches the error pattern; the middle of a
/// long block (echoed captured output, huge diffs) goes.
fn keep_assertion_blocks(
    lines: &[&str],
    errors: &[bool],
    in_block: &[bool],
    mandatory: &mut [bool],
) {
    const HEAD: usize = 3;
    let is_e = |l: &str| l == "E" || l.starts_with("E ");
    let n = lines.len();
    let mut i = 0;
    while i < n {
        if !is_e(lines[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < n && is_e(lines[i]) {
            i += 1;
        }
        for j in start..i {
            if !in_block[j] && (j < start + HEAD || j + 1 == i || errors[j]) {
                mandatory[j] = true;
            }
        }
    }
}

/// In every block of consecutive frames (frames and their indented source lines), keeps
/// the first project frame and the last frame, each with its source line.
fn keep_traceback_ends(lines: &[&str], frame: &[bool], in_block: &[bool], mandatory: &mut [bool]) {
    let n = lines.len();
    let mut i = 0;
    while i < n {
        if !frame[i] || in_block[i] {
            i += 1;
            continue;
        }
        let mut frames = vec![i];
        let mut j = i + 1;
        while j < n {
            if frame[j] {
                frames.push(j);
                j += 1;
            } else if lines[j].starts_with(char::is_whitespace)
                && !lines[j].trim().is_empty()
                && !frame[j]
                && j > 0
                && (frame[j - 1] || lines[j - 1].starts_with(char::is_whitespace))
                && frames.last().is_some_and(|f| j - f <= 3)
            {
                j += 1;
            } else {
                break;
            }
        }
        let first = frames
            .iter()
            .copied()
            .find(|f| is_project_frame(lines[*f]))
            .unwrap_or(frames[0]);
        let last = frames[frames.len() - 1];
        // The exception line right after the block ends the traceback.
        if j < n && !lines[j].trim().is_empty() && !in_block[j] {
            mandatory[j] = true;
        }
        for f in [first, last] {
            if in_block[f] {
                continue;
            }
            mandatory[f] = true;
            if f + 1 < n
                && !in_block[f + 1]
                && !frame[f + 1]
                && lines[f + 1].starts_with(char::is_whitespace)
                && !lines[f + 1].trim().is_empty()
            {
                mandatory[f + 1] = true;
            }
        }
        i = j.max(i + 1);
    }
}
