//! Failure blocks of test runners: where each failing test's explanation starts and ends,
//! and which of its lines a developer needs to fix it.
//!
//! A block starts at a header and runs to the next header or to the end of its section:
//!
//! | runner | header | ends before |
//! |---|---|---|
//! | pytest | `____ test_a ____` | next header, a `===` section line (not a nested `test session starts`) |
//! | unittest / django | `FAIL: test_x (mod.Class)`, `ERROR: …` | next header, a `======` line, the `------` line above `Ran N tests` |
//! | cargo test | `---- tests::a stdout ----` | next header, `failures:`, `test result:` |
//! | go test | `--- FAIL: TestA (0.00s)` | next header, the first line not indented deeper than the header |
//! | jest / vitest | `● Suite › test` (not `● Console`) | next header, `PASS` / `FAIL` file lines, `Tests:` / `Test Suites:` |
//! | mocha | `  1) suite` after `N failing` | next header, the first non-indented line |
//! | Python traceback | `Traceback (most recent call last):` outside a block | its exception line (included) |
//! | Rust panic | `thread '…' panicked at` outside a block | a blank or `note:` line, at most 8 lines |
//!
//! Within a block, [`select`] keeps the header, the failure details (pytest `E` lines and
//! the last `>` line, the `path:line: ErrorType` line, the exception line that ends each
//! traceback, exception lines, `panicked at` with its message and `left` / `right`, go
//! `_test.go:N:` messages, jest `Expected` / `Received` and the code-frame line), the
//! first and last project frames and the last frame with their source lines (and the
//! first `>` line, in the test), the captured output's header and last lines, and the
//! two code lines above the last `>` line; within `failure_block_max_lines`, most
//! important first. The caller drops what an earlier block already showed.

use std::sync::LazyLock;

use regex::Regex;

use super::lines::{priority, KeepPlan};
use super::SquashConfig;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant pattern compiles")
}

/// What kind of header opened a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// pytest `____ test_a ____`.
    Pytest,
    /// unittest / django `FAIL: test_x (mod.Class)`.
    Unittest,
    /// cargo test `---- name stdout ----`.
    Cargo,
    /// go test `--- FAIL: TestA`.
    Go,
    /// jest / vitest `● Suite › test`.
    Jest,
    /// mocha `1) suite` in the failing list.
    Mocha,
    /// A Python traceback outside any other block.
    Traceback,
    /// A Rust panic outside any other block.
    Panic,
}

/// One failure block: lines `start..end`, `start` being its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    /// The header line.
    pub start: usize,
    /// One past the last line.
    pub end: usize,
    /// The runner that printed it.
    pub kind: BlockKind,
}

/// Rust's panic line (found by one literal search before any line is looked at).
static PANIC: LazyLock<Regex> = LazyLock::new(|| re("panicked at"));

/// The block a header line opens, if `line` is one. Decided from the line's first bytes
/// (a log without failures costs a byte test per line); `panics` says whether the text
/// holds `panicked at` at all.
fn header_kind(line: &str, in_mocha_list: bool, panics: bool) -> Option<BlockKind> {
    let bytes = line.as_bytes();
    let kind = match bytes.first()? {
        b'_' => {
            // `____ test_a ____`, not a bare rule of underscores.
            let inner = line.trim_matches('_');
            (line.starts_with("___")
                && line.ends_with("___")
                && inner.len() > 2
                && inner.starts_with(' ')
                && inner.ends_with(' '))
            .then_some(BlockKind::Pytest)
        }
        b'F' | b'E' => {
            // `FAIL: test_x (mod.Class)` / `ERROR: …`.
            let rest = line
                .strip_prefix("FAIL: ")
                .or_else(|| line.strip_prefix("ERROR: "))?;
            let (name, class) = rest.split_once(' ')?;
            (!name.is_empty() && class.starts_with('(') && class.ends_with(')'))
                .then_some(BlockKind::Unittest)
        }
        b'-' if line.starts_with("---- ") && line.ends_with(" stdout ----") => {
            Some(BlockKind::Cargo)
        }
        b'-' if line.starts_with("--- FAIL: ") => Some(BlockKind::Go),
        b'T' if line.starts_with("Traceback (most recent call last):") => {
            Some(BlockKind::Traceback)
        }
        b' ' | b'\t' | 0xE2 => {
            let t = line.trim_start();
            if t.starts_with("--- FAIL: ") {
                Some(BlockKind::Go)
            } else if t.starts_with("● ") && !t.starts_with("● Console") {
                Some(BlockKind::Jest)
            } else if in_mocha_list
                && t.len() < line.len()
                && t.split_once(") ")
                    .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                Some(BlockKind::Mocha)
            } else {
                None
            }
        }
        _ => None,
    };
    kind.or_else(|| (panics && line.contains("panicked at")).then_some(BlockKind::Panic))
}

fn is_mocha_failing_line(line: &str) -> bool {
    let t = line.trim();
    t.strip_suffix(" failing")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Where a block of `kind` starting at `start` ends (exclusive); `headers` marks the
/// lines that open a block of a runner (any of them ends the current block).
fn block_end(lines: &[&str], start: usize, kind: BlockKind, headers: &[bool]) -> usize {
    let n = lines.len();
    let primary_header = |j: usize| headers[j] && !is_secondary(lines[j]);
    match kind {
        // A nested session's start (captured output of pytest's own tests) stays inside.
        BlockKind::Pytest => (start + 1..n)
            .find(|&j| {
                primary_header(j)
                    || (lines[j].starts_with("===") && !lines[j].contains(" test session starts "))
            })
            .unwrap_or(n),
        BlockKind::Unittest => (start + 1..n)
            .find(|&j| {
                primary_header(j)
                    || (lines[j].len() >= 20 && lines[j].bytes().all(|b| b == b'='))
                    || (lines[j].len() >= 20
                        && lines[j].bytes().all(|b| b == b'-')
                        && lines[j + 1..]
                            .iter()
                            .find(|l| !is_blank(l))
                            .is_some_and(|l| l.starts_with("Ran ")))
            })
            .unwrap_or(n),
        BlockKind::Cargo => (start + 1..n)
            .find(|&j| {
                primary_header(j) || lines[j] == "failures:" || lines[j].starts_with("test result:")
            })
            .unwrap_or(n),
        BlockKind::Go => {
            let base = indent(lines[start]);
            (start + 1..n)
                .find(|&j| primary_header(j) || (!is_blank(lines[j]) && indent(lines[j]) <= base))
                .unwrap_or(n)
        }
        BlockKind::Jest => (start + 1..n)
            .find(|&j| {
                let t = lines[j].trim_start();
                primary_header(j)
                    || t.starts_with("PASS ")
                    || t.starts_with("FAIL ")
                    || t.starts_with("Tests:")
                    || t.starts_with("Test Suites:")
            })
            .unwrap_or(n),
        BlockKind::Mocha => (start + 1..n)
            .find(|&j| primary_header(j) || (!is_blank(lines[j]) && indent(lines[j]) == 0))
            .unwrap_or(n),
        BlockKind::Traceback => {
            let mut j = start + 1;
            while j < n {
                if !is_blank(lines[j]) && indent(lines[j]) == 0 {
                    return j + 1;
                }
                j += 1;
            }
            n
        }
        BlockKind::Panic => {
            let mut j = start + 1;
            while j < n && j < start + 8 {
                let t = lines[j].trim_start();
                if t.is_empty() || t.starts_with("note:") || headers[j] {
                    break;
                }
                j += 1;
            }
            j
        }
    }
}

/// Tracebacks and panics open a block only outside a runner's block.
fn is_secondary(line: &str) -> bool {
    line.starts_with("Traceback (most recent call last):") || line.contains("panicked at")
}

/// The failure blocks of a test-runner output, in order, never overlapping.
pub(crate) fn find_blocks(text: &str, lines: &[&str]) -> Vec<Block> {
    let n = lines.len();
    let panics = PANIC.is_match(text);
    let mut in_mocha_list = false;
    let mut headers = vec![false; n];
    let mut kinds: Vec<Option<BlockKind>> = vec![None; n];
    for i in 0..n {
        if lines[i].ends_with(" failing") && is_mocha_failing_line(lines[i]) {
            in_mocha_list = true;
            continue;
        }
        kinds[i] = header_kind(lines[i], in_mocha_list, panics);
        headers[i] = kinds[i].is_some();
    }
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < n {
        let Some(kind) = kinds[i] else {
            i += 1;
            continue;
        };
        let end = block_end(lines, i, kind, &headers).max(i + 1);
        blocks.push(Block {
            start: i,
            end,
            kind,
        });
        i = end;
    }
    blocks
}

/// Lines that explain a failure (see the module docs).
static DETAIL: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(?:E(?:\s.*)?",
        r"|>\s.*",
        r"|[^\s:]+:\d+: (?:[A-Za-z_]\w*\.)*[A-Z]\w*",
        r"|\s*[\w.]*(?:Error|Exception|Failure|Failed)\b(?:\s*\[\w+\])?:.*",
        r"|.*panicked at.*",
        r"|\s*(?:left|right|expected|actual|Expected|Received)(?: value| length| substring| string| object)?\s*:.*",
        r"|\s+\S+_test\.go:\d+: .*",
        r"|\s*expect\(.*",
        r"|\s*> \d+ \|.*",
        r"|\s*\+ expected - actual.*)$"
    ))
});

/// A traceback frame: Python `File "x", line N`, pytest `path:N: in f` / `path:N: `, JS
/// `at f (x:N:M)`.
static FRAME: LazyLock<Regex> = LazyLock::new(|| {
    re(r#"^(?:\s*File "[^"]+", line \d+.*|[^\s:]+:\d+: (?:in \S.*)?|\s+at .*:\d+:\d+\)?)$"#)
});

/// A frame outside the interpreter, site-packages and node_modules.
pub(crate) fn is_project_frame(line: &str) -> bool {
    !(line.contains("/lib/python")
        || line.contains("site-packages")
        || line.contains("<frozen")
        || line.contains("/usr/lib/")
        || line.contains("node_modules"))
}

/// A pytest captured-output section header inside a block.
fn is_captured_header(line: &str) -> bool {
    line.starts_with("---") && line.contains(" Captured ")
}

/// Lines of captured output whose tail is kept.
const CAPTURED_TAIL: usize = 5;
/// Code lines kept above the last `>` line of a pytest block.
const CONTEXT_LINES: usize = 2;

/// What a kept line of a block is; the caller drops repeats of some kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pick {
    /// The header (names the test).
    Header,
    /// A failure detail.
    Detail,
    /// The block's last detail (its exception or assertion): kept even when repeated.
    LastDetail,
    /// A traceback frame.
    Frame,
    /// The source line under the frame before it.
    FrameSource,
    /// Captured output, its header or context.
    Context,
}

impl Pick {
    /// The [`priority`] of the kind.
    pub fn priority(self) -> u8 {
        match self {
            Pick::Header => priority::MUST,
            Pick::Detail | Pick::LastDetail => priority::DETAIL,
            Pick::Frame | Pick::FrameSource => priority::FRAME,
            Pick::Context => priority::CONTEXT,
        }
    }
}

/// The lines of `block` worth keeping, with their kind, in order, at most `cap` (at
/// least the header): the header, the details, the first and last project frames and
/// the last frame with their source lines, the captured output's header and last lines,
/// and a few lines next to the details. When these exceed the cap, the most important
/// kinds win and a kind that does not fit whole keeps its first and last lines.
pub(crate) fn select(lines: &[&str], block: Block, cap: usize) -> Vec<(usize, Pick)> {
    let range = block.start..block.end;
    let len = range.len();
    let at = |i: usize| i - block.start;
    let mut pick: Vec<Option<Pick>> = vec![None; len];
    pick[0] = Some(Pick::Header);
    let set = |pick: &mut Vec<Option<Pick>>, k: usize, p: Pick| {
        let stronger = match pick[k] {
            None => true,
            Some(old) => p.priority() < old.priority(),
        };
        if stronger {
            pick[k] = Some(p);
        }
    };
    // pytest marks the executing line of each frame with `>`: the first (in the test)
    // and the last (where it failed) matter, the ones between are context.
    let arrows: Vec<usize> = range
        .clone()
        .skip(1)
        .filter(|&i| lines[i].starts_with("> ") || lines[i] == ">")
        .collect();
    for i in range.clone() {
        let line = lines[i];
        if line
            .trim_start()
            .starts_with("Traceback (most recent call last)")
        {
            if let Some(tail) =
                (i + 1..block.end).find(|&j| !is_blank(lines[j]) && indent(lines[j]) == 0)
            {
                set(&mut pick, at(tail), Pick::Detail);
            }
        }
        if line.contains("panicked at") {
            for j in i + 1..(i + 4).min(block.end) {
                let t = lines[j].trim_start();
                if t.is_empty() || t.starts_with("note:") {
                    break;
                }
                set(&mut pick, at(j), Pick::Detail);
            }
        }
        if i != block.start && !line.starts_with('>') && DETAIL.is_match(line) {
            set(&mut pick, at(i), Pick::Detail);
        }
    }
    if let Some(&last) = arrows.last() {
        set(&mut pick, at(last), Pick::Detail);
    }
    if let Some(&first) = arrows.first() {
        set(&mut pick, at(first), Pick::Frame);
    }
    if let Some(k) = (0..len).rev().find(|&k| pick[k] == Some(Pick::Detail)) {
        pick[k] = Some(Pick::LastDetail);
    }
    // Frames: the first and last project frames (the test's line, the culprit) and the
    // last frame, each with its source line.
    let frames: Vec<usize> = range
        .clone()
        .skip(1)
        .filter(|&i| FRAME.is_match(lines[i]))
        .collect();
    let first_project = frames.iter().copied().find(|&f| is_project_frame(lines[f]));
    let last_project = frames
        .iter()
        .copied()
        .rev()
        .find(|&f| is_project_frame(lines[f]));
    for f in [first_project, last_project, frames.last().copied()]
        .into_iter()
        .flatten()
    {
        set(&mut pick, at(f), Pick::Frame);
        let source = f + 1;
        if source < block.end
            && !FRAME.is_match(lines[source])
            && !is_blank(lines[source])
            && lines[source].starts_with(char::is_whitespace)
            && pick[at(source)].is_none()
        {
            pick[at(source)] = Some(Pick::FrameSource);
        }
    }
    // Captured output: its header and last lines.
    let mut i = block.start + 1;
    while i < block.end {
        if !is_captured_header(lines[i]) {
            i += 1;
            continue;
        }
        set(&mut pick, at(i), Pick::Context);
        let end = (i + 1..block.end)
            .find(|&j| is_captured_header(lines[j]))
            .unwrap_or(block.end);
        let body: Vec<usize> = (i + 1..end).filter(|&j| !is_blank(lines[j])).collect();
        for &j in body.iter().rev().take(CAPTURED_TAIL) {
            set(&mut pick, at(j), Pick::Context);
        }
        i = end;
    }
    // The lines just above the last `>` line: the code that led to the failure.
    if let Some(&last) = arrows.last() {
        for j in (last.saturating_sub(CONTEXT_LINES).max(block.start + 1)..last).rev() {
            if pick[at(j)].is_some() || is_blank(lines[j]) {
                break;
            }
            pick[at(j)] = Some(Pick::Context);
        }
    }
    // Within the cap: the most important kinds first.
    let cap = cap.max(1);
    let mut chosen = vec![false; len];
    let mut room = cap;
    for class in [
        priority::MUST,
        priority::DETAIL,
        priority::FRAME,
        priority::CONTEXT,
    ] {
        let members: Vec<usize> = (0..len)
            .filter(|&k| pick[k].is_some_and(|p| p.priority() == class))
            .collect();
        if members.len() <= room {
            room -= members.len();
            for k in members {
                chosen[k] = true;
            }
            continue;
        }
        let head = room.div_ceil(2);
        let tail = room - head;
        for &k in members.iter().take(head) {
            chosen[k] = true;
        }
        for &k in members.iter().rev().take(tail) {
            chosen[k] = true;
        }
        break;
    }
    (0..len)
        .filter(|&k| chosen[k])
        .filter_map(|k| pick[k].map(|p| (block.start + k, p)))
        .collect()
}

/// Adds to a log or generic plan what the failure blocks of `text` (tracebacks, panics,
/// a test runner's blocks in a script's output) need, as a test run keeps them: a
/// failure is worth its lines wherever it is printed.
pub(crate) fn keep_blocks(text: &str, lines: &[&str], config: &SquashConfig, plan: &mut KeepPlan) {
    for block in find_blocks(text, lines)
        .into_iter()
        .take(config.failure_blocks_max)
    {
        for (i, pick) in select(lines, block, config.failure_block_max_lines) {
            plan.keep_at(i, pick.priority());
        }
    }
}

/// One failing test as a test runner reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailingTest {
    /// The test's id as the runner prints it (`tests/test_a.py::test_x`,
    /// `test_x (mod.Class)`, `tests::a`, `TestA`, `Suite › test`).
    pub id: String,
    /// The first line that says what went wrong (exception, assertion, panic), when one
    /// was found.
    pub error: Option<String>,
}

/// pytest's short summary: `FAILED tests/test_a.py::test_x - AssertionError: …`.
static SUMMARY_LINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^(?:FAILED|ERROR) (\S+)(?: - (.+))?$"));

/// A line that says what went wrong, in a failure block.
static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^\s*(?:E\s+)?(?:[\w.]*(?:Error|Exception|Failure|Failed|Interrupt|Exit)\b(?:\s*\[\w+\])?:?.*",
        r"|.*panicked at.*|assert.*|\s*(?:left|right|expected|Expected|Received)\b.*:.*",
        r"|\s+\S+_test\.go:\d+: .*)$"
    ))
});

/// Most failing tests reported for one output.
const MAX_FAILING_TESTS: usize = 200;

/// The test id a block's header names, for runner blocks (not bare tracebacks or panics).
fn header_id(line: &str, kind: BlockKind) -> Option<String> {
    let t = line.trim();
    let id = match kind {
        BlockKind::Pytest => t.trim_matches('_').trim(),
        BlockKind::Unittest => t
            .strip_prefix("FAIL: ")
            .or_else(|| t.strip_prefix("ERROR: "))?,
        BlockKind::Cargo => t.strip_prefix("---- ")?.strip_suffix(" stdout ----")?,
        BlockKind::Go => {
            let rest = t.strip_prefix("--- FAIL: ")?;
            rest.split_once(" (").map_or(rest, |(name, _)| name)
        }
        BlockKind::Jest => t.strip_prefix("● ")?,
        BlockKind::Mocha => t.split_once(") ")?.1,
        BlockKind::Traceback | BlockKind::Panic => return None,
    };
    (!id.is_empty()).then(|| id.to_owned())
}

/// The failing tests of a test runner's output, in the order it printed them: from
/// pytest's short summary lines when there are any, and from the failure blocks' headers
/// (see the module docs). Each carries the first line of its block that says what went
/// wrong. A test named by both is reported once, with the summary's fuller id.
pub fn failing_tests(text: &str) -> Vec<FailingTest> {
    let lines: Vec<&str> = text.lines().collect();
    let mut tests: Vec<FailingTest> = Vec::new();
    for line in &lines {
        if let Some(captures) = SUMMARY_LINE.captures(line.trim_end()) {
            let id = captures[1].to_owned();
            // A node id (`path::test`, `path.py`), not unittest's `FAILED (failures=1)`.
            let node_id = !id.starts_with('(') && (id.contains("::") || id.contains('.'));
            if node_id && !tests.iter().any(|t| t.id == id) && tests.len() < MAX_FAILING_TESTS {
                tests.push(FailingTest {
                    id,
                    error: captures.get(2).map(|m| m.as_str().trim().to_owned()),
                });
            }
        }
    }
    for block in find_blocks(text, &lines) {
        let Some(id) = header_id(lines[block.start], block.kind) else {
            continue;
        };
        let error = lines[block.start + 1..block.end]
            .iter()
            .find(|l| ERROR_LINE.is_match(l))
            .map(|l| l.trim().trim_start_matches("E ").trim().to_owned());
        // pytest headers name `test_x` or `Class.test_x`; the summary names the node id.
        let short = id.replace('.', "::");
        let known = tests
            .iter()
            .position(|t| t.id == id || t.id.ends_with(&format!("::{short}")));
        match known {
            Some(index) if tests[index].error.is_none() => tests[index].error = error,
            Some(_) => {}
            None if tests.len() < MAX_FAILING_TESTS => tests.push(FailingTest { id, error }),
            None => {}
        }
    }
    tests
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::squash::lines::split_lines;

    fn blocks_of(text: &str) -> (Vec<&str>, Vec<Block>) {
        let lines = split_lines(text);
        let blocks = find_blocks(text, &lines);
        (lines, blocks)
    }

    #[test]
    fn pytest_blocks_run_from_header_to_the_next_header_or_section() {
        let text = "\
=================================== FAILURES ===================================
___________________________________ test_a ___________________________________

>       assert 41 == 42
E       assert 41 == 42

tests/test_x.py:17: AssertionError
___________________________________ test_b ___________________________________
E       KeyError: 'user_id'
=========================== short test summary info ============================
FAILED tests/test_x.py::test_a - assert 41 == 42
";
        let (lines, blocks) = blocks_of(text);
        assert_eq!(blocks.len(), 2, "{blocks:?}");
        assert_eq!((blocks[0].start, blocks[0].end), (1, 7));
        assert_eq!((blocks[1].start, blocks[1].end), (7, 9));
        assert!(lines[blocks[1].end].starts_with("===="));
    }

    #[test]
    fn unittest_cargo_go_jest_and_mocha_headers_open_blocks() {
        let text = "\
======================================================================
FAIL: test_parse (pkg.tests.ParserTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/src/pkg/tests.py\", line 12, in test_parse
    self.assertEqual(parse('x'), 2)
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 3 tests in 0.01s
---- tests::adds stdout ----
thread 'tests::adds' panicked at src/lib.rs:9:5:
assertion `left == right` failed
failures:
--- FAIL: TestParse (0.00s)
    parse_test.go:12: got 1, want 2
FAIL
  ● math › adds
    Expected: 3
    Received: 2
Tests:       1 failed, 1 total
  1 failing
  1) Array
       #indexOf():
     AssertionError: expected -1 to equal 0
done
";
        let (lines, blocks) = blocks_of(text);
        let kinds: Vec<BlockKind> = blocks.iter().map(|b| b.kind).collect();
        assert_eq!(
            kinds,
            [
                BlockKind::Unittest,
                BlockKind::Cargo,
                BlockKind::Go,
                BlockKind::Jest,
                BlockKind::Mocha
            ]
        );
        // The traceback and the panic belong to their runner's block.
        assert_eq!(
            lines[blocks[0].end],
            "----------------------------------------------------------------------"
        );
        assert_eq!(lines[blocks[0].end - 2], "AssertionError: 1 != 2");
        assert_eq!(lines[blocks[1].end], "failures:");
        assert_eq!(lines[blocks[2].end], "FAIL");
        assert_eq!(lines[blocks[4].end], "done");
    }

    #[test]
    fn a_standalone_traceback_ends_at_its_exception_line_and_keeps_it() {
        let text = "starting\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    d['user_id']\npkg.Missing: user_id\nafter\n";
        let (lines, blocks) = blocks_of(text);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].kind, BlockKind::Traceback);
        assert_eq!(lines[blocks[0].end - 1], "pkg.Missing: user_id");
        let picked = select(&lines, blocks[0], 40);
        assert!(
            picked.contains(&(blocks[0].end - 1, Pick::LastDetail)),
            "{picked:?}"
        );
    }

    #[test]
    fn a_standalone_panic_keeps_its_message() {
        let text = "running\nthread 'main' panicked at src/main.rs:4:5:\nindex out of bounds: the len is 3 but the index is 7\nnote: run with `RUST_BACKTRACE=1`\n";
        let (lines, blocks) = blocks_of(text);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].kind, BlockKind::Panic);
        let picked: Vec<usize> = select(&lines, blocks[0], 40)
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(picked, [1, 2]);
    }

    #[test]
    fn a_long_block_keeps_header_details_frames_and_captured_tail_only() {
        let mut text = String::from("____ test_deep ____\n");
        for i in 0..60 {
            text.push_str(&format!("    line_{i} = compute({i})\n"));
        }
        text.push_str(">       assert total == 42\nE       assert 41 == 42\nE        +  where 41 = f()\n\nsrc/calc.py:88: AssertionError\n");
        text.push_str(
            "----------------------------- Captured stdout call -----------------------------\n",
        );
        for i in 0..50 {
            text.push_str(&format!("log {i}\n"));
        }
        let (lines, blocks) = blocks_of(&text);
        assert_eq!(blocks.len(), 1);
        let kept = select(&lines, blocks[0], 40);
        assert!(kept.len() <= 20, "{}", kept.len());
        let shown: Vec<&str> = kept.iter().map(|(i, _)| lines[*i]).collect();
        for must in [
            "____ test_deep ____",
            ">       assert total == 42",
            "E       assert 41 == 42",
            "E        +  where 41 = f()",
            "src/calc.py:88: AssertionError",
            "log 49",
            "log 45",
        ] {
            assert!(shown.contains(&must), "lost {must:?}: {shown:#?}");
        }
        assert!(!shown.contains(&"    line_3 = compute(3)"));
        // A larger cap does not make the block whole: the traceback middle never matters.
        assert_eq!(select(&lines, blocks[0], 1000).len(), kept.len());
        let few = select(&lines, blocks[0], 3);
        assert_eq!(few.len(), 3);
        assert_eq!(few[0].1, Pick::Header);
    }

    #[test]
    fn failing_tests_come_from_the_summary_and_the_block_headers() {
        let pytest = "\
============================= FAILURES =============================
____________________________ test_one ____________________________

    def test_one():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:3: AssertionError
___________________________ Klass.test_two ___________________________
E   ValueError: bad value
=========================== short test summary info ============================
FAILED tests/test_a.py::test_one - assert 1 == 2
FAILED tests/test_a.py::Klass::test_two
========================= 2 failed, 3 passed in 0.12s ==========================";
        let tests = failing_tests(pytest);
        assert_eq!(
            tests,
            vec![
                FailingTest {
                    id: "tests/test_a.py::test_one".into(),
                    error: Some("assert 1 == 2".into())
                },
                FailingTest {
                    id: "tests/test_a.py::Klass::test_two".into(),
                    error: Some("ValueError: bad value".into())
                },
            ]
        );
        let unittest = "\
======================================================================
FAIL: test_x (app.tests.ModelTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/app/tests.py\", line 9, in test_x
    self.assertEqual(a, b)
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 4 tests in 0.010s

FAILED (failures=1)";
        assert_eq!(
            failing_tests(unittest),
            vec![FailingTest {
                id: "test_x (app.tests.ModelTests)".into(),
                error: Some("AssertionError: 1 != 2".into())
            }]
        );
        let cargo = "---- tests::adds stdout ----\nthread 'tests::adds' panicked at src/lib.rs:9:5:\nassertion failed\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 0 passed; 1 failed";
        let tests = failing_tests(cargo);
        assert_eq!(tests.len(), 1);
        assert_eq!(tests[0].id, "tests::adds");
        assert!(tests[0].error.as_deref().unwrap().contains("panicked at"));
        assert!(failing_tests("Traceback (most recent call last):\nValueError: x").is_empty());
        assert!(failing_tests("all 12 passed").is_empty());
    }
}
