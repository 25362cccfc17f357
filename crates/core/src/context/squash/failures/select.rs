//! Which lines of a failure block a developer needs to fix it (see [`super`]'s docs),
//! and how a log or generic plan keeps them.

use std::sync::LazyLock;

use regex::Regex;

use super::blocks::{find_blocks, indent, is_blank, re, Block};
use crate::context::squash::config::SquashConfig;
use crate::context::squash::lines::{priority, KeepPlan};

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
    let len = block.end - block.start;
    let mut pick: Vec<Option<Pick>> = vec![None; len];
    pick[0] = Some(Pick::Header);
    // pytest marks the executing line of each frame with `>`: the first (in the test)
    // and the last (where it failed) matter, the ones between are context.
    let arrows: Vec<usize> = (block.start + 1..block.end)
        .filter(|&i| lines[i].starts_with("> ") || lines[i] == ">")
        .collect();
    mark_details(lines, block, &arrows, &mut pick);
    mark_frames(lines, block, &mut pick);
    mark_captured_output(lines, block, &mut pick);
    // The lines just above the last `>` line: the code that led to the failure.
    let at = |i: usize| i - block.start;
    if let Some(&last) = arrows.last() {
        for j in (last.saturating_sub(CONTEXT_LINES).max(block.start + 1)..last).rev() {
            if pick[at(j)].is_some() || is_blank(lines[j]) {
                break;
            }
            pick[at(j)] = Some(Pick::Context);
        }
    }
    let chosen = within_cap(&pick, cap);
    (0..len)
        .filter(|&k| chosen[k])
        .filter_map(|k| pick[k].map(|p| (block.start + k, p)))
        .collect()
}

/// Marks line `k` of the block as `p`, unless it already holds a more important kind.
fn set(pick: &mut [Option<Pick>], k: usize, p: Pick) {
    let stronger = match pick[k] {
        None => true,
        Some(old) => p.priority() < old.priority(),
    };
    if stronger {
        pick[k] = Some(p);
    }
}

/// The details: a traceback's final line, a panic's message, lines that read as the
/// failure's detail, and the last `>` line; the last detail is marked as such, the first
/// `>` line as a frame.
fn mark_details(lines: &[&str], block: Block, arrows: &[usize], pick: &mut [Option<Pick>]) {
    let at = |i: usize| i - block.start;
    let range = block.start..block.end;
    for i in range.clone() {
        let line = lines[i];
        if line
            .trim_start()
            .starts_with("Traceback (most recent call last)")
        {
            if let Some(tail) =
                (i + 1..block.end).find(|&j| !is_blank(lines[j]) && indent(lines[j]) == 0)
            {
                set(pick, at(tail), Pick::Detail);
            }
        }
        if line.contains("panicked at") {
            for j in i + 1..(i + 4).min(block.end) {
                let t = lines[j].trim_start();
                if t.is_empty() || t.starts_with("note:") {
                    break;
                }
                set(pick, at(j), Pick::Detail);
            }
        }
        if i != block.start && !line.starts_with('>') && DETAIL.is_match(line) {
            set(pick, at(i), Pick::Detail);
        }
    }
    if let Some(&last) = arrows.last() {
        set(pick, at(last), Pick::Detail);
    }
    if let Some(&first) = arrows.first() {
        set(pick, at(first), Pick::Frame);
    }
    if let Some(k) = (0..pick.len())
        .rev()
        .find(|&k| pick[k] == Some(Pick::Detail))
    {
        pick[k] = Some(Pick::LastDetail);
    }
}

/// Frames: the first and last project frames (the test's line, the culprit) and the
/// last frame, each with its source line.
fn mark_frames(lines: &[&str], block: Block, pick: &mut [Option<Pick>]) {
    let at = |i: usize| i - block.start;
    let range = block.start..block.end;
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
        set(pick, at(f), Pick::Frame);
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
}

/// Captured output: its header and last lines.
fn mark_captured_output(lines: &[&str], block: Block, pick: &mut [Option<Pick>]) {
    let at = |i: usize| i - block.start;
    let mut i = block.start + 1;
    while i < block.end {
        if !is_captured_header(lines[i]) {
            i += 1;
            continue;
        }
        set(pick, at(i), Pick::Context);
        let end = (i + 1..block.end)
            .find(|&j| is_captured_header(lines[j]))
            .unwrap_or(block.end);
        let body: Vec<usize> = (i + 1..end).filter(|&j| !is_blank(lines[j])).collect();
        for &j in body.iter().rev().take(CAPTURED_TAIL) {
            set(pick, at(j), Pick::Context);
        }
        i = end;
    }
}

/// Which marked lines fit in `cap` (at least one): the most important kinds first; a
/// kind that does not fit whole keeps its first and last lines.
fn within_cap(pick: &[Option<Pick>], cap: usize) -> Vec<bool> {
    let len = pick.len();
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
    chosen
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
