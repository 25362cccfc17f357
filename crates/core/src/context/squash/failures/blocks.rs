//! Where each failure block of a test runner's output starts and ends (the table in
//! [`super`]'s docs).

use std::sync::LazyLock;

use regex::Regex;

/// A constant pattern, compiled.
pub(super) fn re(pattern: &str) -> Regex {
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

pub(super) fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

pub(super) fn is_blank(line: &str) -> bool {
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
