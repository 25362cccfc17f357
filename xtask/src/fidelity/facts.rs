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

/// One word of a command: its text with quotes removed, and whether any of it was quoted.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    quoted: bool,
}

/// A command split into simple commands (at `;`, `&&`, `||`, `|`, newlines), each a list
/// of words; quotes and backslashes are honoured, so `>` or `;` inside a quoted
/// script is part of a word. Redirection operators are words of their own (`>`, `2>>`).
fn simple_commands(command: &str) -> Vec<Vec<Word>> {
    let mut commands = vec![Vec::new()];
    let mut word = Word {
        text: String::new(),
        quoted: false,
    };
    let mut in_word = false;
    let mut chars = command.chars().peekable();
    let finish = |commands: &mut Vec<Vec<Word>>, word: &mut Word, in_word: &mut bool| {
        if *in_word {
            if let Some(last) = commands.last_mut() {
                last.push(std::mem::replace(
                    word,
                    Word {
                        text: String::new(),
                        quoted: false,
                    },
                ));
            }
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.quoted = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.text.push(q);
                }
            }
            '"' => {
                in_word = true;
                word.quoted = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.text.push(n);
                            }
                        }
                        _ => word.text.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        word.text.push(n);
                    }
                }
            }
            ';' | '|' | '&' | '\n' => {
                finish(&mut commands, &mut word, &mut in_word);
                if c == '&' && chars.peek() == Some(&'>') {
                    // `&>file`: a redirection of both streams.
                    word.text.push('>');
                    chars.next();
                    in_word = true;
                    finish(&mut commands, &mut word, &mut in_word);
                    continue;
                }
                if commands.last().is_some_and(|c| !c.is_empty()) {
                    commands.push(Vec::new());
                }
            }
            '>' | '<' => {
                // A redirection: digits just before it belong to it (`2>`).
                let fd_only =
                    in_word && !word.quoted && word.text.chars().all(|d| d.is_ascii_digit());
                if !fd_only {
                    finish(&mut commands, &mut word, &mut in_word);
                }
                word.text.push(c);
                while let Some(&next) = chars.peek() {
                    if next == '>' || next == '&' || (next == '<' && c == '<') {
                        word.text.push(next);
                        chars.next();
                    } else {
                        break;
                    }
                }
                in_word = true;
                finish(&mut commands, &mut word, &mut in_word);
            }
            c if c.is_whitespace() => finish(&mut commands, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.text.push(c);
            }
        }
    }
    finish(&mut commands, &mut word, &mut in_word);
    commands.retain(|c| !c.is_empty());
    commands
}

fn clean_path(word: &str) -> Option<String> {
    let word = word.trim_end_matches([';', ')']);
    let word = word.strip_prefix("./").unwrap_or(word);
    let ignored = word.is_empty()
        || word.starts_with('-')
        || word.starts_with('&')
        || word.starts_with("/dev/")
        || word.starts_with('$')
        || word.contains('*');
    (!ignored).then(|| word.to_owned())
}

/// Text that a Python interpreter runs: `python -c` scripts and heredocs fed to python.
fn python_sources(command: &str) -> Vec<String> {
    static HEREDOC: LazyLock<Regex> = LazyLock::new(|| re(r#"<<-?\s*['"]?(\w+)['"]?"#));
    let mut sources = Vec::new();
    let mut lines = command.lines();
    while let Some(line) = lines.next() {
        let Some(captures) = HEREDOC.captures(line) else {
            continue;
        };
        let feeds_python = line.contains("python");
        let mut body = String::new();
        for body_line in lines.by_ref() {
            if body_line.trim() == &captures[1] {
                break;
            }
            body.push_str(body_line);
            body.push('\n');
        }
        if feeds_python {
            sources.push(body);
        }
    }
    for words in simple_commands(&without_heredocs(command)) {
        if words.first().is_some_and(|w| w.text.starts_with("python")) {
            if let Some(at) = words.iter().position(|w| w.text == "-c") {
                sources.extend(words.get(at + 1).map(|w| w.text.clone()));
            }
        }
    }
    sources
}

/// The files a command writes or edits, as a reader of the command sees them:
/// redirections, `tee`, `sed -i`, `cp` / `mv` targets, `touch`, and Python
/// `open(…, 'w')` in code that Python runs.
pub fn written_files(command: &str) -> BTreeSet<String> {
    static OPEN_WRITE: LazyLock<Regex> =
        LazyLock::new(|| re(r#"open\(\s*['"]([^'"]+)['"]\s*,\s*['"][wa]"#));
    let mut files = BTreeSet::new();
    for source in python_sources(command) {
        for captures in OPEN_WRITE.captures_iter(&source) {
            files.extend(clean_path(&captures[1]));
        }
    }
    for words in simple_commands(&without_heredocs(command)) {
        for pair in words.windows(2) {
            let op = &pair[0];
            if !op.quoted && op.text.contains('>') && !op.text.ends_with('&') {
                files.extend(clean_path(&pair[1].text));
            }
        }
        let args: Vec<&Word> = words
            .iter()
            .take_while(|w| w.quoted || !(w.text.contains('>') || w.text.contains('<')))
            .collect();
        let Some((program, rest)) = args.split_first() else {
            continue;
        };
        let operands: Vec<&str> = rest
            .iter()
            .filter(|w| w.quoted || !w.text.starts_with('-'))
            .map(|w| w.text.as_str())
            .collect();
        match program.text.as_str() {
            "tee" | "touch" => {
                for operand in &operands {
                    files.extend(clean_path(operand));
                }
            }
            "cp" | "mv" if operands.len() >= 2 => {
                files.extend(operands.last().and_then(|o| clean_path(o)));
            }
            "sed" if rest.iter().any(|w| !w.quoted && w.text.starts_with("-i")) => {
                let has_e = rest.iter().any(|w| !w.quoted && w.text == "-e");
                // Without -e the first operand is the script.
                let skip = usize::from(!has_e);
                let scripts_by_e = rest
                    .windows(2)
                    .filter(|p| p[0].text == "-e")
                    .map(|p| p[1].text.as_str())
                    .collect::<Vec<_>>();
                for operand in operands.iter().skip(skip) {
                    if !scripts_by_e.contains(operand) {
                        files.extend(clean_path(operand));
                    }
                }
            }
            _ => {}
        }
    }
    files
}

/// The files a command prints (`cat`, `head`, `tail`, `nl`, `less`, `more`, `sed -n`),
/// judged by the first command of each pipeline.
pub fn read_files(command: &str) -> BTreeSet<String> {
    let mut files = BTreeSet::new();
    let outer = without_heredocs(command);
    // Only the first command of a pipeline reads files; later ones read the pipe.
    let mut pipeline_start = true;
    for words in simple_commands(&outer.replace('|', "\u{1}|")) {
        let first = pipeline_start;
        pipeline_start = !words.last().is_some_and(|w| w.text.ends_with('\u{1}'));
        if !first {
            continue;
        }
        let words: Vec<String> = words
            .iter()
            .take_while(|w| w.quoted || !(w.text.contains('>') || w.text.contains('<')))
            .map(|w| w.text.trim_end_matches('\u{1}').to_owned())
            .filter(|w| !w.is_empty())
            .collect();
        let Some((program, args)) = words.split_first() else {
            continue;
        };
        match program.as_str() {
            "cat" | "nl" | "less" | "more" | "head" | "tail" => {
                let mut skip_value = false;
                for word in args {
                    if skip_value {
                        skip_value = false;
                        continue;
                    }
                    if matches!(word.as_str(), "-n" | "-c") {
                        skip_value = true;
                        continue;
                    }
                    files.extend(clean_path(word));
                }
            }
            "sed" if args.first().map(String::as_str) == Some("-n") => {
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
        assert_eq!(
            written_files(
                "sed -i '146i \\    def f(self):\\\n        pass; x > y\\\n' django/forms.py"
            ),
            set(&["django/forms.py"]),
            "a multi-line sed script is one word"
        );
        assert_eq!(
            written_files("sed -i -e 's/a/b/' -e 's/c/d/' x.py y.py"),
            set(&["x.py", "y.py"])
        );
        assert_eq!(
            written_files("cat <<'EOF' > script.py\nwith open('made.py', 'w') as f: pass\nEOF"),
            set(&["script.py"]),
            "code written to a file does not run"
        );
        assert_eq!(
            written_files("touch a/__init__.py b.py"),
            set(&["a/__init__.py", "b.py"])
        );
        assert_eq!(written_files("echo hi &> log.txt"), set(&["log.txt"]));
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
