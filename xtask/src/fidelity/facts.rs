//! The reference answers of the fidelity probes, extracted from a corpus session up to a
//! point. Written independently of the session ledger's own parser
//! (`pith_core::context::ledger::shell`) and of the squash failure detectors, from the
//! raw outputs, so that the probes measure the ledger instead of agreeing with it.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use pith_core::message::{Part, Role};
use regex::Regex;

use crate::corpus::CorpusSession;

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant pattern compiles")
}

/// Tool turns whose reads probe c asks about.
pub const RECENT_TOOL_TURNS: usize = 5;

/// What the model must still be able to see after a compaction at one point.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// a. Every user message so far.
    pub user_messages: Vec<String>,
    /// b. Every file written or edited so far.
    pub written_files: BTreeSet<String>,
    /// c. The files read in the last [`RECENT_TOOL_TURNS`] tool turns.
    pub recent_reads: BTreeSet<String>,
    /// d. The failing test ids of the latest test run (each as the substrings that
    ///    identify it).
    pub failing_tests: Vec<Vec<String>>,
    /// e. The last error line of the latest failing command.
    pub last_error: Option<String>,
}

/// The facts of `session` up to and including message `upto`.
pub fn facts_at(session: &CorpusSession, upto: usize) -> Facts {
    let mut facts = Facts::default();
    let mut tool_turns: Vec<Vec<String>> = Vec::new();
    let mut latest_test: Option<String> = None;
    let mut latest_failure: Option<String> = None;
    let messages = &session.messages[..=upto.min(session.messages.len().saturating_sub(1))];
    for message in messages {
        match message.role {
            Role::User => facts.user_messages.push(message.text_content()),
            Role::Assistant => {
                let calls: Vec<String> = message.tool_calls().map(|c| c.id.clone()).collect();
                if !calls.is_empty() {
                    tool_turns.push(calls);
                }
            }
            Role::Tool => {
                for part in &message.parts {
                    let Part::ToolResult(result) = part else {
                        continue;
                    };
                    let command = session
                        .commands
                        .get(&result.call_id)
                        .map_or("", String::as_str);
                    let code = session.exit_codes.get(&result.call_id).copied();
                    facts.written_files.extend(written_files(command));
                    if is_test_command(command) {
                        latest_test = Some(result.content.clone());
                    }
                    if code.is_some_and(|c| c != 0) {
                        latest_failure = Some(result.content.clone());
                    }
                }
            }
            Role::System => {}
        }
    }
    let recent: BTreeSet<&String> = tool_turns
        .iter()
        .rev()
        .take(RECENT_TOOL_TURNS)
        .flatten()
        .collect();
    for id in recent {
        if session.exit_codes.get(id).is_some_and(|c| *c != 0) {
            continue;
        }
        if let Some(command) = session.commands.get(id) {
            facts.recent_reads.extend(read_files(command));
        }
    }
    if let Some(output) = latest_test {
        facts.failing_tests = failing_test_ids(&output);
    }
    facts.last_error = latest_failure.as_deref().and_then(last_error_line);
    facts
}

/// A command that runs a test suite.
pub fn is_test_command(command: &str) -> bool {
    static TEST: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?:^|[\s/;&|(])(?:pytest|py\.test|tox)(?:\s|$)|-m (?:pytest|unittest)\b|runtests\.py|bin/test\b|manage\.py test|cargo test|go test|npm test",
        )
    });
    TEST.is_match(command)
}

/// Heredoc bodies removed: the lines after `<<WORD` up to the line `WORD`.
fn without_heredocs(command: &str) -> String {
    static OPEN: LazyLock<Regex> = LazyLock::new(|| re(r#"<<-?\s*['"]?(\w+)['"]?"#));
    let mut out = String::new();
    let mut closing: Option<String> = None;
    for line in command.lines() {
        if let Some(delimiter) = &closing {
            if line.trim() == delimiter {
                closing = None;
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
        if let Some(captures) = OPEN.captures(line) {
            closing = Some(captures[1].to_owned());
        }
    }
    out
}

/// Quoted strings blanked, so `>` inside `python -c "…"` is not a redirection.
fn without_quotes(text: &str) -> String {
    static QUOTED: LazyLock<Regex> = LazyLock::new(|| re(r#"'[^']*'|"(?:[^"\\]|\\.)*""#));
    QUOTED.replace_all(text, "''").into_owned()
}

fn clean_path(word: &str) -> Option<String> {
    let word = word.trim_matches(|c| c == '\'' || c == '"' || c == ';' || c == ')');
    let word = word.strip_prefix("./").unwrap_or(word);
    let ignored = word.is_empty()
        || word.starts_with('-')
        || word.starts_with('&')
        || word.starts_with("/dev/")
        || word.starts_with('$')
        || word.contains('*');
    (!ignored).then(|| word.to_owned())
}

/// The files a command writes or edits, as a reader of the command sees them:
/// redirections, `tee`, `sed -i`, `cp` / `mv` targets, Python `open(…, 'w')`.
pub fn written_files(command: &str) -> BTreeSet<String> {
    static REDIRECT: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?:^|[^<>&0-9])[12]?>>?\s*([^\s;|&<>()]+)"));
    static TEE: LazyLock<Regex> = LazyLock::new(|| re(r"\btee\s+(?:-a\s+)?([^\s;|&<>]+)"));
    static SED_I: LazyLock<Regex> = LazyLock::new(|| re(r"\bsed\s+(?:-\w+\s+)*-i"));
    static COPY: LazyLock<Regex> =
        LazyLock::new(|| re(r"\b(?:cp|mv)\s+(?:-\w+\s+)*\S+\s+([^\s;|&<>]+)"));
    static OPEN_WRITE: LazyLock<Regex> =
        LazyLock::new(|| re(r#"open\(\s*['"]([^'"]+)['"]\s*,\s*['"][wa]"#));
    let mut files = BTreeSet::new();
    // Python writes are read from the whole text, heredoc bodies included.
    for captures in OPEN_WRITE.captures_iter(command) {
        files.extend(clean_path(&captures[1]));
    }
    let outer = without_heredocs(command);
    let bare = without_quotes(&outer);
    for captures in REDIRECT.captures_iter(&bare) {
        files.extend(clean_path(&captures[1]));
    }
    for captures in TEE.captures_iter(&bare) {
        files.extend(clean_path(&captures[1]));
    }
    for captures in COPY.captures_iter(&bare) {
        files.extend(clean_path(&captures[1]));
    }
    for segment in outer.split(['\n', ';', '|']).flat_map(|s| s.split("&&")) {
        if SED_I.is_match(segment) {
            // The files are the words after the script.
            let words: Vec<&str> = segment.split_whitespace().collect();
            if let Some(last) = words.last() {
                if words.len() >= 3 && !last.starts_with('\'') && !last.ends_with('\'') {
                    files.extend(clean_path(last));
                }
            }
        }
    }
    files.retain(|f| f != "''");
    files
}

/// The files a command prints (`cat`, `head`, `tail`, `nl`, `less`, `more`, `sed -n`),
/// judged by the first command of each pipeline.
pub fn read_files(command: &str) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let outer = without_heredocs(command);
    for pipeline in outer.split(['\n', ';']).flat_map(|s| s.split("&&")) {
        let first = pipeline.split('|').next().unwrap_or_default();
        let words: Vec<&str> = first.split_whitespace().collect();
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        let mut skip_value = false;
        match *program {
            "cat" | "nl" | "less" | "more" | "head" | "tail" => {
                for word in args {
                    if skip_value {
                        skip_value = false;
                        continue;
                    }
                    if matches!(*word, "-n" | "-c") {
                        skip_value = true;
                        continue;
                    }
                    if word.starts_with('>')
                        || word.starts_with('<')
                        || word.starts_with('2') && word.contains('>')
                    {
                        break;
                    }
                    files.extend(clean_path(word));
                }
            }
            "sed" if args.first() == Some(&"-n") => {
                // sed -n 'SCRIPT' FILE…
                for word in args.iter().skip(2) {
                    files.extend(clean_path(word));
                }
            }
            _ => {}
        }
    }
    files
}

/// The failing tests an output reports, each as the substrings that identify it: a
/// pytest node id (`FAILED` / `ERROR` summary lines, else `___ name ___` headers), a
/// unittest / django `FAIL: test_x (mod.Class)` as `test_x` and `mod.Class`, a sympy
/// `___ path:test_x ___` as itself.
pub fn failing_test_ids(output: &str) -> Vec<Vec<String>> {
    static SUMMARY: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^(?:FAILED|ERROR) ([^\s]+::[^\s]+|[^\s]+\.py)(?: - .*)?$"));
    static HEADER: LazyLock<Regex> = LazyLock::new(|| re(r"(?m)^_{3,} (\S.*?\S) _{3,}$"));
    static UNITTEST: LazyLock<Regex> =
        LazyLock::new(|| re(r"(?m)^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)"));
    let mut ids: Vec<Vec<String>> = Vec::new();
    let mut push = |id: Vec<String>| {
        if !ids.contains(&id) {
            ids.push(id);
        }
    };
    let summary: Vec<_> = SUMMARY.captures_iter(output).collect();
    for captures in &summary {
        push(vec![captures[1].to_owned()]);
    }
    if summary.is_empty() {
        for captures in HEADER.captures_iter(output) {
            let name = &captures[1];
            let bad = name.contains(' ') && !name.starts_with("ERROR collecting");
            if !bad && !name.eq_ignore_ascii_case("summary") {
                push(vec![name
                    .trim_start_matches("ERROR collecting ")
                    .to_owned()]);
            }
        }
    }
    for captures in UNITTEST.captures_iter(output) {
        push(vec![captures[1].to_owned(), captures[2].to_owned()]);
    }
    ids
}

/// The line of a failing command's output that says what went wrong: the last line with
/// an error word, else the last non-empty line.
pub fn last_error_line(output: &str) -> Option<String> {
    static ERROR: LazyLock<Regex> = LazyLock::new(|| {
        re(
            r"(?i)error|exception|fail|traceback|not found|no such|denied|invalid|cannot|unable|fatal",
        )
    });
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .rev()
        .find(|l| ERROR.is_match(l))
        .or(lines.last())?;
    Some(line.chars().take(200).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn writes_are_read_from_redirections_sed_tee_copies_and_python() {
        assert_eq!(written_files("echo x > out.txt"), set(&["out.txt"]));
        assert_eq!(
            written_files("ls 2>/dev/null > list.txt"),
            set(&["list.txt"])
        );
        assert_eq!(
            written_files("sed -i 's/a/b/' src/a.py"),
            set(&["src/a.py"])
        );
        assert_eq!(written_files("cat x | tee -a log.txt"), set(&["log.txt"]));
        assert_eq!(written_files("cp a.py ./b.py"), set(&["b.py"]));
        assert_eq!(
            written_files("cat <<'EOF' > repro.py\nif a > b:\n    pass\nEOF\npython repro.py"),
            set(&["repro.py"])
        );
        assert_eq!(
            written_files("python -c \"print(1 > 2)\""),
            BTreeSet::new(),
            "a quoted > is not a redirection"
        );
        assert_eq!(
            written_files("python - <<EOF\nopen('x.py', 'w').write('')\nEOF"),
            set(&["x.py"])
        );
        assert_eq!(written_files("cat a.py 2>&1"), BTreeSet::new());
    }

    #[test]
    fn reads_are_the_files_printed_by_the_first_command_of_a_pipeline() {
        assert_eq!(read_files("cat a.py"), set(&["a.py"]));
        assert_eq!(read_files("head -n 20 a.py | grep x"), set(&["a.py"]));
        assert_eq!(read_files("sed -n '10,20p' src/b.py"), set(&["src/b.py"]));
        assert_eq!(read_files("grep -n x a.py | head"), BTreeSet::new());
        assert_eq!(read_files("cd /repo && nl -ba c.py"), set(&["c.py"]));
    }

    #[test]
    fn failing_ids_come_from_summaries_headers_and_unittest_lines() {
        let pytest = "____ test_a ____\nE assert 1\nFAILED tests/t.py::test_a - assert 1\n";
        assert_eq!(
            failing_test_ids(pytest),
            vec![vec!["tests/t.py::test_a".to_owned()]]
        );
        let headers = "_____ test_b _____\nE boom\n";
        assert_eq!(failing_test_ids(headers), vec![vec!["test_b".to_owned()]]);
        let django = "FAIL: test_x (app.tests.T)\n---\nERROR: test_y (app.tests.T)\n";
        assert_eq!(failing_test_ids(django).len(), 2);
        assert_eq!(failing_test_ids(django)[0], vec!["test_x", "app.tests.T"]);
        assert!(is_test_command("cd /testbed && python -m pytest -x tests"));
        assert!(is_test_command("./tests/runtests.py admin"));
        assert!(!is_test_command("cat pytest.ini"));
    }

    #[test]
    fn the_error_line_is_the_last_line_that_says_what_went_wrong() {
        let out = "Traceback (most recent call last):\n  File x\nValueError: bad\n\nexit";
        assert_eq!(last_error_line(out).as_deref(), Some("ValueError: bad"));
        assert_eq!(last_error_line("all good\nbye\n").as_deref(), Some("bye"));
        assert_eq!(last_error_line(""), None);
    }
}
