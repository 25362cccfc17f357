//! Multi-step outputs: CI scripts, `make`, tox and nox run several tools in sequence, and
//! each step is squashed by its own family.
//!
//! A step starts at a command trace — `+ cmd` (`set -x`, any depth of `+`), `$ cmd`,
//! `make[N]: Entering directory`, `##[group]`, tox `env: commands[N]> cmd` /
//! `env run-test: commands[N] | cmd`, `nox > Running session` — or at the start of a test
//! session (`=== test session starts ===`, cargo `running N tests` and `Running
//! unittests … (…)`) unless a trace opened the step at most three lines before. Lines
//! inside a failure block never open a step (pytest's own tests print nested sessions in
//! their captured output). Output that looks like a diff (`@@ ` hunks, `diff --git`) has
//! no trace boundaries (its added lines start with `+`).
//!
//! Each step is planned on its own: one with a test runner's signature or a failure
//! block (traceback, panic) as test-runner output, one with error lines as a log, any
//! other (a quiet, passing step) by its first and last three lines. The trace line that
//! opens a step is always kept: it names the command that produced what follows.

use std::sync::LazyLock;

use regex::Regex;

use super::config::SquashConfig;
use super::detect::looks_like_test_output;
use super::failures;
use super::lines::{priority, KeepPlan};
use super::{log, test_runner};

/// Command traces (checked only on lines whose first byte can start one).
static TRACE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"^(?:\++ [A-Za-z_./~][^\s]*(?:[ \t].*)?",
        r"|\$ [A-Za-z_./~]\S*(?:[ \t].*)?",
        r"|make(?:\[\d+\])?: Entering directory .*",
        r"|##\[group\].*",
        r"|\S+: commands\[\d+\]> .*",
        r"|\S+ run-test: commands\[\d+\] \| .*",
        r"|nox > Running session .*)$"
    ))
    .expect("constant pattern compiles")
});

/// True when `line` is a command trace: a step always starts here. The first byte
/// decides whether the pattern is tried at all, so logs without traces cost one byte
/// test per line.
///
/// `tox` says whether the whole text holds `commands[` at all (tox's traces start with the
/// environment's name, so only they need a search inside the line).
fn is_trace(line: &str, tox: bool) -> bool {
    let candidate = match line.as_bytes().first() {
        Some(b'+' | b'$' | b'm' | b'#' | b'n') => true,
        Some(_) => tox && line.contains("commands["),
        None => false,
    };
    candidate && TRACE.is_match(line)
}

/// True when `line` starts a test session: a step starts here unless a trace just
/// opened one.
fn is_session_start(line: &str) -> bool {
    match line.as_bytes().first() {
        Some(b'=') => line.contains("= test session starts ="),
        Some(b'r') => line
            .strip_prefix("running ")
            .and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test")))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
        Some(b' ') => {
            let t = line.trim_start();
            t.starts_with("Running ") && t.ends_with(')') && t.contains(" (")
        }
        _ => false,
    }
}

/// A session start this many lines or fewer after a trace belongs to the trace's step.
const TRACE_REACH: usize = 3;
/// Lines a quiet step keeps at its start (its trace line included) and at its end.
const QUIET_HEAD: usize = 3;
const QUIET_TAIL: usize = 3;

/// Diff headers and hunks after a newline: output holding one is a diff. Plain literals,
/// so the search is a SIMD substring scan (a `(?m)^` anchor would make it a full
/// automaton pass).
static DIFF: LazyLock<Regex> =
    LazyLock::new(|| Regex::new("\ndiff --git |\n@@ -").expect("constant pattern compiles"));

/// tox's trace marker (a literal search, memchr-fast).
static TOX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"commands\[").expect("constant pattern compiles"));

fn looks_like_diff(text: &str) -> bool {
    text.starts_with("diff --git ") || text.starts_with("@@ -") || DIFF.is_match(text)
}

/// The line ranges of the steps of `text`; one range when it has a single step.
pub(crate) fn split(text: &str, lines: &[&str]) -> Vec<std::ops::Range<usize>> {
    let n = lines.len();
    let diff = looks_like_diff(text);
    let tox = TOX.is_match(text);
    let traces: Vec<bool> = lines.iter().map(|l| !diff && is_trace(l, tox)).collect();
    let sessions: Vec<bool> = lines.iter().map(|l| is_session_start(l)).collect();
    // A session printed inside a failure block (pytest's own tests capture nested runs)
    // is part of that failure, not a step.
    let mut in_block = vec![false; n];
    if sessions.iter().chain(&traces).any(|b| *b) {
        for block in failures::find_blocks(text, lines) {
            in_block[block.start + 1..block.end].fill(true);
        }
    }
    let mut starts = vec![0usize];
    let mut last_trace: Option<usize> = None;
    for i in 0..n {
        if in_block[i] {
            continue;
        }
        if traces[i] {
            last_trace = Some(i);
            if i > 0 {
                starts.push(i);
            }
        } else if sessions[i] && i > 0 {
            let opened_by_trace = last_trace.is_some_and(|t| i - t <= TRACE_REACH)
                && starts.last() == last_trace.as_ref();
            if !opened_by_trace {
                starts.push(i);
            }
        }
    }
    starts.dedup();
    let mut ranges: Vec<std::ops::Range<usize>> = starts
        .windows(2)
        .map(|w| w[0]..w[1])
        .filter(|r| !r.is_empty())
        .collect();
    if let Some(&last) = starts.last() {
        if last < n {
            ranges.push(last..n);
        }
    }
    ranges
}

/// Byte range in `text` of the lines `range` (lines are slices of `text`).
fn byte_span(text: &str, lines: &[&str], range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
    let base = text.as_ptr() as usize;
    let start = lines[range.start].as_ptr() as usize - base;
    let last = lines[range.end - 1];
    let end = last.as_ptr() as usize - base + last.len();
    start..end
}

/// The plan of a multi-step output, or `None` when it has a single step.
pub(crate) fn plan(
    text: &str,
    lines: &[&str],
    errors: &[bool],
    config: &SquashConfig,
) -> Option<KeepPlan> {
    let steps = split(text, lines);
    if steps.len() < 2 {
        return None;
    }
    let diff = looks_like_diff(text);
    let tox = TOX.is_match(text);
    let mut plan = KeepPlan::none(lines.len());
    for range in steps {
        let span = byte_span(text, lines, &range);
        let step_text = &text[span];
        let step_lines = &lines[range.clone()];
        let step_errors = &errors[range.clone()];
        let sub = if looks_like_test_output(step_text)
            || !failures::find_blocks(step_text, step_lines).is_empty()
        {
            test_runner::plan(step_text, step_lines, step_errors, config)
        } else if step_errors.iter().any(|e| *e) {
            log::plan(step_text, step_lines, step_errors, config)
        } else {
            quiet(step_lines)
        };
        plan.absorb(range.start, sub);
        if !diff && is_trace(lines[range.start], tox) {
            plan.keep_at(range.start, priority::MUST);
        }
    }
    Some(plan)
}

/// A step without errors or tests: its first and last lines.
fn quiet(lines: &[&str]) -> KeepPlan {
    let n = lines.len();
    let mut plan = KeepPlan::none(n);
    for i in (0..n.min(QUIET_HEAD)).chain(n.saturating_sub(QUIET_TAIL)..n) {
        plan.keep(i);
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::squash::lines::split_lines;

    fn steps_of(text: &str) -> Vec<String> {
        let lines = split_lines(text);
        split(text, &lines)
            .into_iter()
            .map(|r| lines[r.start].to_owned())
            .collect()
    }

    #[test]
    fn traces_and_session_starts_open_steps() {
        let text = "\
preamble
+ pip install -e .
Successfully installed x
+ python -m pytest tests/unit
============================= test session starts ==============================
collected 3 items
===== 3 passed in 0.1s =====
============================= test session starts ==============================
collected 1 item
make[1]: Entering directory '/src/docs'
";
        assert_eq!(
            steps_of(text),
            [
                "preamble",
                "+ pip install -e .",
                "+ python -m pytest tests/unit",
                "============================= test session starts ==============================",
                "make[1]: Entering directory '/src/docs'",
            ]
        );
    }

    #[test]
    fn a_session_captured_inside_a_failure_block_is_not_a_step() {
        let text = "\
============================= test session starts ==============================
collected 1 item
=================================== FAILURES ===================================
__________________________________ test_inner __________________________________
E       Failed: nomatch: 'x'
----------------------------- Captured stdout call -----------------------------
============================= test session starts ==============================
collected 2 items
============================== 2 passed in 0.01s ===============================
=========================== short test summary info ============================
";
        assert_eq!(steps_of(text).len(), 1);
    }

    #[test]
    fn a_diff_has_no_trace_steps() {
        let text = "diff --git a/x b/x\n@@ -1,2 +1,2 @@\n+ added line\n- removed\n+ another\n";
        assert_eq!(steps_of(text).len(), 1);
    }
}
