//! Observation masking: what an old tool result becomes when micro-compaction clears it.
//! Not a blank placeholder but a one-line stub that keeps what the session ledger keeps
//! of that output — the command or the file, its size, its exit code, the failing tests
//! and the error line of a failing run — and says how to see it again: the spill file
//! holding the full output when there is one, else the call to make again.
//!
//! ```text
//! [masked to save context: `python -m pytest tests/test_parser.py` — 212 lines, exit code 1; failing: tests/test_parser.py::test_neg; error: AssertionError: -1 != 1; full output: $PITH_SPILL_DIR/7.txt]
//! [masked to save context: read src/parser.rs — 180 lines; read it again to see it]
//! ```
//!
//! Masking is the JetBrains observation masking (arXiv 2508.21433) made safe: the model
//! keeps the facts and the way back, and pith's ledger holds the same facts across
//! compactions. Which results are masked, and when, is prune's rule
//! ([`crate::context::prune`]) and the compaction policy's ([`crate::context::policy`]).

use crate::context::ledger::{error_line, exit_code, shell_command, spill_path};
use crate::context::squash::failing_tests;
use crate::protocol::message::{ToolCall, ToolResult};

/// What a pruned tool result's content became before masked stubs; still recognised in
/// older transcripts.
pub const PRUNE_PLACEHOLDER: &str = "[Old tool result content cleared]";

/// How every stub starts: how prune tells a masked result from one to mask.
pub const MASKED_PREFIX: &str = "[masked to save context: ";

/// Longest command or path shown in a stub, in characters.
const SHOWN_CHARS: usize = 160;

/// Most failing test ids a stub names.
const MAX_FAILING: usize = 5;

/// True when `content` is already a masked stub (or the older blank placeholder).
pub fn is_masked(content: &str) -> bool {
    content.starts_with(MASKED_PREFIX) || content == PRUNE_PLACEHOLDER
}

/// The stub of `result`, made by `call` when it is known.
pub fn mask_stub(call: Option<&ToolCall>, result: &ToolResult) -> String {
    let content = &result.content;
    let command = call.and_then(shell_command);
    let what = match (&command, call) {
        (Some(command), _) => format!("`{}`", one_line(command)),
        (None, Some(call)) => describe_call(call),
        (None, None) => "a tool result".to_owned(),
    };
    let lines = content.lines().count();
    let mut facts = vec![match lines {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }];
    let code = exit_code(content);
    if let Some(code) = code {
        facts.push(format!("exit code {code}"));
    }
    let failed = code.is_some_and(|c| c != 0) || result.is_error;
    let failing: Vec<String> = failing_tests(content)
        .into_iter()
        .take(MAX_FAILING)
        .map(|test| test.id)
        .collect();
    let mut stub = format!("{MASKED_PREFIX}{what} — {}", facts.join(", "));
    if !failing.is_empty() {
        stub.push_str(&format!("; failing: {}", failing.join(", ")));
    }
    if failed {
        if let Some(line) = error_line(content) {
            stub.push_str(&format!("; error: {}", one_line(&line)));
        }
    }
    match spill_path(content) {
        Some(path) => stub.push_str(&format!("; full output: {path}]")),
        None if command.is_some() => stub.push_str("; run it again to see the output]"),
        None => stub.push_str("; call it again to see the output]"),
    }
    stub
}

/// `read PATH`, `grep PATTERN PATH`, … for a tool call without a shell command.
fn describe_call(call: &ToolCall) -> String {
    let field = |key: &str| call.arguments.get(key).and_then(|v| v.as_str());
    let mut words = vec![call.name.clone()];
    for key in ["path", "pattern", "file_path", "query", "url"] {
        if let Some(value) = field(key) {
            words.push(one_line(value));
        }
    }
    words.join(" ")
}

/// `text` on one line, cut to [`SHOWN_CHARS`] characters.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(SHOWN_CHARS) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn a_failing_test_run_keeps_its_command_failures_error_and_spill_file() {
        let output = "collected 3 items\n\ntests/test_parser.py .F.\n\n=== FAILURES ===\n\
                      ___ test_neg ___\nE   AssertionError: -1 != 1\n\
                      === short test summary info ===\n\
                      FAILED tests/test_parser.py::test_neg - AssertionError: -1 != 1\n\
                      [exit code: 1]\n[full output: $PITH_SPILL_DIR/7.txt]";
        let stub = mask_stub(
            Some(&call(
                "bash",
                json!({"command": "python -m pytest tests/test_parser.py"}),
            )),
            &ToolResult::new("c1", output, true),
        );
        assert!(stub.starts_with(MASKED_PREFIX), "{stub}");
        assert!(
            stub.contains("`python -m pytest tests/test_parser.py`"),
            "{stub}"
        );
        assert!(stub.contains("exit code 1"), "{stub}");
        assert!(
            stub.contains("failing: tests/test_parser.py::test_neg"),
            "{stub}"
        );
        assert!(stub.contains("error: "), "{stub}");
        assert!(
            stub.ends_with("full output: $PITH_SPILL_DIR/7.txt]"),
            "{stub}"
        );
        assert_eq!(stub.lines().count(), 1);
        assert!(is_masked(&stub));
    }

    #[test]
    fn a_read_names_its_file_and_how_to_see_it_again() {
        let stub = mask_stub(
            Some(&call("read", json!({"path": "src/parser.rs"}))),
            &ToolResult::new("c1", "fn a() {}\nfn b() {}\n", false),
        );
        assert_eq!(
            stub,
            "[masked to save context: read src/parser.rs — 2 lines; call it again to see the output]"
        );
        let passing = mask_stub(
            Some(&call("bash", json!({"command": "cat a.py\n| head"}))),
            &ToolResult::new("c1", "x\n[exit code: 0]", false),
        );
        assert!(passing.contains("`cat a.py | head` — 2 lines, exit code 0; run it again"));
        assert!(!passing.contains("error:"));
    }

    #[test]
    fn the_older_blank_placeholder_counts_as_masked() {
        assert!(is_masked(PRUNE_PLACEHOLDER));
        assert!(!is_masked("ordinary output"));
    }
}
