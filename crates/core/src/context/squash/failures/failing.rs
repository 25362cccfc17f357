//! The failing tests a test runner's output names, with the line that says what went
//! wrong: what the session ledger keeps of a test run.

use std::sync::LazyLock;

use regex::Regex;

use super::blocks::{find_blocks, re, BlockKind};

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
