//! Which squasher an output gets: from the tool, then the command, then the content.
//!
//! The command classifier is also what `cargo xtask eval` groups its table by, so the
//! families it reports are exactly the ones squash acts on (one copy of the rule).

use serde::Serialize;

/// What a command is, judged from its text alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum CommandFamily {
    /// A test runner (pytest, django runtests, cargo test, go test, jest, ...).
    #[serde(rename = "test_runner")]
    TestRunner,
    /// A content search (`grep`, `rg`, `git grep`, `ag`).
    #[serde(rename = "grep")]
    Grep,
    /// A path search (`find`, `fd`, `locate`).
    #[serde(rename = "find")]
    Find,
    /// A directory listing (`ls`, `tree`).
    #[serde(rename = "ls")]
    Ls,
    /// A command that only prints files (`cat`, `sed -n`, `head`, `tail`, `nl`).
    #[serde(rename = "file_view")]
    FileView,
    /// Anything else (scripts, builds, git, ...).
    #[serde(rename = "other")]
    Other,
}

impl CommandFamily {
    /// Stable lower-case name (used in stats and the eval table).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TestRunner => "test_runner",
            Self::Grep => "grep",
            Self::Find => "find",
            Self::Ls => "ls",
            Self::FileView => "file_view",
            Self::Other => "other",
        }
    }
}

/// The squasher chosen for one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Family {
    /// Output of `read`: never altered.
    #[serde(rename = "read")]
    Read,
    /// At or under the floor: passed unchanged.
    #[serde(rename = "small")]
    Small,
    /// A file view: byte-exact up to the cap.
    #[serde(rename = "file_view")]
    FileView,
    /// Valid JSON.
    #[serde(rename = "json")]
    Json,
    /// Test-runner output.
    #[serde(rename = "test_runner")]
    TestRunner,
    /// Log or build output with several error/warning lines.
    #[serde(rename = "log")]
    Log,
    /// `path:line:text` search output.
    #[serde(rename = "grep")]
    Grep,
    /// A list of paths (`find`, glob).
    #[serde(rename = "path_list")]
    PathList,
    /// A directory listing (`ls`, `ls -R`, `tree`).
    #[serde(rename = "ls")]
    Ls,
    /// Anything else: head + tail + important lines.
    #[serde(rename = "generic")]
    Generic,
    /// Several steps (CI script, make, tox): each squashed by its own family.
    #[serde(rename = "multi_step")]
    MultiStep,
    /// A source-code view above the cap: head, tail and an outline of definitions.
    #[serde(rename = "source_outline")]
    SourceOutline,
}

impl Family {
    /// Stable lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Small => "small",
            Self::FileView => "file_view",
            Self::Json => "json",
            Self::TestRunner => "test_runner",
            Self::Log => "log",
            Self::Grep => "grep",
            Self::PathList => "path_list",
            Self::Ls => "ls",
            Self::Generic => "generic",
            Self::MultiStep => "multi_step",
            Self::SourceOutline => "source_outline",
        }
    }
}

/// Splits a shell command into its simple commands (on `&&`, `||`, `;`, `|`, newlines),
/// ignoring separators inside quotes. Heredoc bodies are not interpreted.
fn simple_commands(command: &str) -> Vec<(String, bool)> {
    // (segment, piped_from_previous)
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut piped = false;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else if c == '\\' && q == '"' {
                if let Some(n) = chars.next() {
                    cur.push(c);
                    cur.push(n);
                    continue;
                }
            }
            cur.push(c);
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                cur.push(c);
            }
            '&' if chars.peek() == Some(&'&') => {
                chars.next();
                out.push((std::mem::take(&mut cur), piped));
                piped = false;
            }
            '|' if chars.peek() == Some(&'|') => {
                chars.next();
                out.push((std::mem::take(&mut cur), piped));
                piped = false;
            }
            '|' => {
                out.push((std::mem::take(&mut cur), piped));
                piped = true;
            }
            ';' | '\n' => {
                out.push((std::mem::take(&mut cur), piped));
                piped = false;
            }
            _ => cur.push(c),
        }
    }
    out.push((cur, piped));
    out.into_iter()
        .map(|(s, p)| (s.trim().to_owned(), p))
        .filter(|(s, _)| !s.is_empty())
        .collect()
}

/// The words of a simple command after leading `VAR=value` assignments and wrappers
/// (`time`, `timeout N`, `env`, `sudo`, `nice`).
fn program_words(segment: &str) -> Vec<&str> {
    let mut words: Vec<&str> = segment.split_whitespace().collect();
    loop {
        match words.first() {
            Some(w) if w.contains('=') && !w.starts_with('-') && !w.starts_with('=') => {
                words.remove(0);
            }
            Some(&("time" | "env" | "sudo" | "nice" | "command" | "exec")) => {
                words.remove(0);
            }
            Some(&"timeout") => {
                words.remove(0);
                if words.first().is_some_and(|w| {
                    w.chars()
                        .all(|c| c.is_ascii_digit() || c == 's' || c == '.')
                }) {
                    words.remove(0);
                }
            }
            _ => break,
        }
    }
    words
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_test_runner(words: &[&str]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    let prog = base_name(first);
    let has = |w: &str| words.contains(&w);
    let has_suffix = |s: &str| words.iter().any(|x| x.ends_with(s));
    match prog {
        "pytest" | "py.test" | "nosetests" | "tox" | "jest" | "vitest" | "mocha" | "rspec"
        | "phpunit" | "ctest" | "runtests.py" | "nox" | "trial" => true,
        "test" => first.contains('/'), // bin/test (sympy), ./test
        "python" | "python3" | "python2" | "coverage" | "uv" | "poetry" | "pipenv" | "hatch" => {
            has("pytest")
                || has("unittest")
                || has("nose")
                || has("test")
                || has_suffix("runtests.py")
                || has_suffix("bin/test")
                || words.iter().any(|w| w.starts_with("pytest"))
        }
        "cargo" => matches!(words.get(1), Some(&("test" | "nextest"))),
        "go" => words.get(1) == Some(&"test"),
        "npm" | "yarn" | "pnpm" | "bun" => {
            has("test") || words.iter().any(|w| w.starts_with("test:"))
        }
        "npx" => words
            .get(1)
            .is_some_and(|w| matches!(*w, "jest" | "vitest" | "mocha")),
        "make" => words
            .iter()
            .skip(1)
            .any(|w| w.starts_with("test") || *w == "check"),
        "mvn" | "gradle" | "./gradlew" | "gradlew" | "dotnet" => has("test"),
        _ => prog.ends_with("runtests.py") || prog == "runtests",
    }
}

fn view_kind(words: &[&str]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    match base_name(first) {
        "cat" | "nl" | "head" | "tail" | "less" | "more" | "bat" => {
            // `cat <<EOF > file` writes a file; `cat a > b` copies one.
            !words
                .iter()
                .any(|w| w.starts_with('>') || w.starts_with("<<"))
        }
        "sed" => {
            words.iter().any(|w| *w == "-n" || w.starts_with("-n"))
                && !words.iter().any(|w| w.starts_with("-i"))
        }
        "awk" => words.iter().any(|w| w.contains("NR")),
        _ => false,
    }
}

/// The words of a simple command as the shell reads them: split on blanks outside
/// quotes, quotes removed, backslash escapes resolved (no expansions).
pub(crate) fn shell_words(segment: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = segment.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => word.push(e),
                            Some(e) => {
                                word.push('\\');
                                word.push(e);
                            }
                            None => word.push('\\'),
                        },
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    word.push(e);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The simple command whose output a command line prints: the first of its last
/// pipeline (after `cd` / `export` and other set-up commands), without leading
/// `VAR=value` assignments and wrappers (`time`, `env`, `sudo`, …).
pub(crate) fn last_pipeline_head(command: &str) -> Option<String> {
    let segments = simple_commands(command);
    let meaningful: Vec<&(String, bool)> = segments
        .iter()
        .filter(|(seg, piped)| {
            *piped
                || !matches!(
                    program_words(seg).first().map(|w| base_name(w)),
                    None | Some(
                        "cd" | "export"
                            | "source"
                            | "."
                            | "set"
                            | "echo"
                            | "pushd"
                            | "popd"
                            | "true"
                    )
                )
        })
        .collect();
    let start = meaningful.iter().rposition(|(_, piped)| !*piped)?;
    let segment = meaningful[start].0.as_str();
    // `program_words` yields slices of `segment` past the assignments and wrappers.
    let program = program_words(segment).first().copied()?;
    let at = program.as_ptr() as usize - segment.as_ptr() as usize;
    Some(segment[at..].to_owned())
}

/// Classifies a shell command by what its output will be.
pub fn command_family(command: &str) -> CommandFamily {
    let segments = simple_commands(command);
    let mut meaningful: Vec<(Vec<&str>, bool)> = Vec::new();
    for (seg, piped) in &segments {
        let words = program_words(seg);
        match words.first().map(|w| base_name(w)) {
            None
            | Some("cd" | "export" | "source" | "." | "set" | "echo" | "pushd" | "popd" | "true")
                if !*piped =>
            {
                continue
            }
            _ => meaningful.push((words, *piped)),
        }
    }
    if meaningful.iter().any(|(w, _)| is_test_runner(w)) {
        return CommandFamily::TestRunner;
    }
    // The producing command is the first of the last pipeline.
    let Some(start) = meaningful.iter().rposition(|(_, piped)| !*piped) else {
        return CommandFamily::Other;
    };
    let pipeline = &meaningful[start..];
    let (head, _) = &pipeline[0];
    let Some(first) = head.first() else {
        return CommandFamily::Other;
    };
    match base_name(first) {
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => CommandFamily::Grep,
        "git" if head.get(1) == Some(&"grep") => CommandFamily::Grep,
        "find" | "fd" | "fdfind" | "locate" => CommandFamily::Find,
        "ls" | "tree" | "exa" | "eza" => CommandFamily::Ls,
        _ if view_kind(head)
            && pipeline.iter().skip(1).all(|(w, _)| {
                view_kind(w) || w.first().is_some_and(|p| matches!(base_name(p), "grep"))
            }) =>
        {
            CommandFamily::FileView
        }
        _ => CommandFamily::Other,
    }
}

/// Where the lines of a single-file view come from: the file and the file line of the
/// view's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewOrigin {
    /// The file as the command names it.
    pub path: String,
    /// The file's line number of the view's first output line.
    pub first_line: usize,
}

fn unquote(word: &str) -> &str {
    word.trim_matches(|c| c == '\'' || c == '"')
}

/// The file and first line of a view that prints one file from its start or from a
/// `sed -n 'A,Bp'` range: `cat [-n] F`, `nl [-ba] F`, `head [-n N] F`, `sed -n 'A,Bp' F`.
/// `None` for anything else (pipelines, several files, `tail`).
pub fn view_origin(command: &str) -> Option<ViewOrigin> {
    let segments = simple_commands(command);
    let meaningful: Vec<&(String, bool)> = segments
        .iter()
        .filter(|(seg, piped)| {
            *piped
                || !matches!(
                    program_words(seg).first().map(|w| base_name(w)),
                    None | Some("cd" | "export" | "set")
                )
        })
        .collect();
    let [(segment, false)] = meaningful.as_slice() else {
        return None;
    };
    let words = program_words(segment);
    let (program, args) = words.split_first()?;
    let mut first_line = 1usize;
    let mut operands: Vec<&str> = Vec::new();
    match base_name(program) {
        "cat" | "nl" => {
            operands.extend(args.iter().filter(|w| !w.starts_with('-')));
        }
        "head" => {
            let mut skip_next = false;
            for w in args {
                if skip_next {
                    skip_next = false;
                } else if *w == "-n" || *w == "-c" {
                    skip_next = true;
                } else if !w.starts_with('-') {
                    operands.push(w);
                }
            }
        }
        "sed" => {
            if args.first() != Some(&"-n") || args.len() != 3 {
                return None;
            }
            let script = unquote(args[1]);
            let range = script.strip_suffix('p')?;
            let start = range.split(',').next()?;
            first_line = start.parse().ok()?;
            operands.push(args[2]);
        }
        _ => return None,
    }
    let [path] = operands.as_slice() else {
        return None;
    };
    if path.contains(['>', '<', '*', '?', '$', '`']) {
        return None;
    }
    Some(ViewOrigin {
        path: unquote(path).to_owned(),
        first_line: first_line.max(1),
    })
}

/// Content signatures of test-runner output, searched in one pass.
static TEST_SIGNATURES: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(concat!(
        r"test session starts|short test summary info|tests finished:",
        r"|\nRan \d+ tests? in |\ntest result: |\n--- FAIL: |\nFAIL: test|\nERROR: test",
        r"|\nTest Suites: |\n=== RUN "
    ))
    .expect("constant pattern compiles")
});

/// True when the content carries a test runner's signature.
pub(crate) fn looks_like_test_output(text: &str) -> bool {
    TEST_SIGNATURES.is_match(text)
}

/// True for a line shaped like grep output with a file name: `path:12:text`,
/// `path-12-text` (context) or `path:text` where `path` looks like a file.
pub(crate) fn grep_path_prefix(line: &str) -> Option<&str> {
    let colon = line.find(':')?;
    let path = &line[..colon];
    if path.is_empty() || path.contains(char::is_whitespace) || path.len() > 300 {
        return None;
    }
    let looks_like_file = path.contains('/')
        || path.rsplit_once('.').is_some_and(|(a, e)| {
            !a.is_empty()
                && !e.is_empty()
                && e.len() <= 8
                && e.chars().all(|c| c.is_ascii_alphanumeric())
        });
    if !looks_like_file || !path.chars().any(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    Some(path)
}

/// True for a line that is a bare path (find / glob output).
pub(crate) fn looks_like_path(line: &str) -> bool {
    let t = line.trim_end();
    !t.is_empty()
        && !t.contains(char::is_whitespace)
        && (t.contains('/') || t.contains('.'))
        && t.chars().any(|c| c.is_ascii_alphabetic())
}

/// The squasher for an output above the floor.
pub(crate) fn detect(
    tool: &str,
    command: Option<&str>,
    exit_code: Option<i32>,
    output: &str,
    error_lines: usize,
) -> Family {
    match tool {
        "grep" | "search" | "rg" => return Family::Grep,
        "glob" | "find" => return Family::PathList,
        "ls" | "list" => return Family::Ls,
        _ => {}
    }
    if let Some(cmd) = command {
        match command_family(cmd) {
            CommandFamily::TestRunner => return Family::TestRunner,
            CommandFamily::FileView => return Family::FileView,
            CommandFamily::Grep => return Family::Grep,
            CommandFamily::Find => return Family::PathList,
            CommandFamily::Ls => return Family::Ls,
            CommandFamily::Other => {}
        }
    }
    detect_from_content(tool, exit_code, output, error_lines)
}

/// The squasher judged from the content alone.
pub(crate) fn detect_from_content(
    tool: &str,
    exit_code: Option<i32>,
    output: &str,
    error_lines: usize,
) -> Family {
    let trimmed = output.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && serde_json::from_str::<serde::de::IgnoredAny>(output).is_ok()
    {
        return Family::Json;
    }
    if looks_like_test_output(output) {
        return Family::TestRunner;
    }
    let mut total = 0usize;
    let mut grep_like = 0usize;
    let mut path_like = 0usize;
    for line in output.lines().take(400) {
        if line.trim().is_empty() || line == "--" {
            continue;
        }
        total += 1;
        if grep_path_prefix(line).is_some() {
            grep_like += 1;
        }
        if looks_like_path(line) {
            path_like += 1;
        }
    }
    if total >= 5 && path_like * 10 >= total * 8 {
        return Family::PathList;
    }
    if total >= 5 && grep_like * 10 >= total * 6 {
        return Family::Grep;
    }
    let is_shell = matches!(tool, "bash" | "shell" | "sh" | "exec");
    if is_shell && (error_lines >= 3 || (error_lines >= 1 && exit_code.is_some_and(|c| c != 0))) {
        return Family::Log;
    }
    Family::Generic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_classified_by_what_they_print() {
        let cases = [
            (
                "cd /testbed && python -m pytest tests/test_x.py -q",
                CommandFamily::TestRunner,
            ),
            (
                "./tests/runtests.py file_uploads files",
                CommandFamily::TestRunner,
            ),
            (
                "PYTHONPATH=. python3 tests/runtests.py auth",
                CommandFamily::TestRunner,
            ),
            (
                "bin/test sympy/core/tests/test_basic.py",
                CommandFamily::TestRunner,
            ),
            ("cargo test -p pith-core", CommandFamily::TestRunner),
            ("go test ./...", CommandFamily::TestRunner),
            ("npx jest src", CommandFamily::TestRunner),
            ("grep -rn \"foo | bar\" src", CommandFamily::Grep),
            ("grep -r x . | head -n 20", CommandFamily::Grep),
            ("git grep -n foo", CommandFamily::Grep),
            ("find . -name '*.py'", CommandFamily::Find),
            ("ls -R", CommandFamily::Ls),
            ("cat django/db/models/base.py", CommandFamily::FileView),
            ("nl -ba src/x.py | sed -n '10,80p'", CommandFamily::FileView),
            ("sed -n '1,100p' a.py", CommandFamily::FileView),
            ("cat <<'EOF' > x.py\nprint(1)\nEOF", CommandFamily::Other),
            ("sed -i 's/a/b/' x.py", CommandFamily::Other),
            ("python reproduce.py | head -50", CommandFamily::Other),
            ("git diff", CommandFamily::Other),
        ];
        for (cmd, want) in cases {
            assert_eq!(command_family(cmd), want, "command {cmd:?}");
        }
    }

    #[test]
    fn shell_words_follow_quotes_and_escapes() {
        assert_eq!(
            shell_words(r#"grep -C 2 "a \"b\" c" 'd e' f\ g"#),
            ["grep", "-C", "2", "a \"b\" c", "d e", "f g"]
        );
        assert_eq!(
            last_pipeline_head("cd /x && LC_ALL=C time grep -n 'a b' f.py | head").as_deref(),
            Some("grep -n 'a b' f.py")
        );
    }

    #[test]
    fn view_origins_name_the_file_and_its_first_line() {
        let at = |path: &str, first_line: usize| {
            Some(ViewOrigin {
                path: path.into(),
                first_line,
            })
        };
        assert_eq!(view_origin("cat big.py"), at("big.py", 1));
        assert_eq!(
            view_origin("cd /repo && cat -n src/a.py"),
            at("src/a.py", 1)
        );
        assert_eq!(view_origin("nl -ba src/x.py"), at("src/x.py", 1));
        assert_eq!(view_origin("head -n 5000 x.log"), at("x.log", 1));
        assert_eq!(
            view_origin("sed -n '120,4000p' lib/m.rs"),
            at("lib/m.rs", 120)
        );
        assert_eq!(view_origin("tail -n 100 x.log"), None);
        assert_eq!(view_origin("cat a.py b.py"), None);
        assert_eq!(view_origin("nl -ba x.py | sed -n '10,20p'"), None);
    }

    #[test]
    fn content_detection_recognises_grep_and_paths() {
        let grep: String = (0..20)
            .map(|i| format!("src/a{i}.rs:{i}:fn main() {{}}\n"))
            .collect();
        assert_eq!(detect("bash", None, None, &grep, 0), Family::Grep);
        let paths: String = (0..20).map(|i| format!("./src/mod{i}/file.py\n")).collect();
        assert_eq!(detect("bash", None, None, &paths, 0), Family::PathList);
        assert_eq!(
            detect("bash", None, None, "{\"a\": [1, 2]}", 0),
            Family::Json
        );
    }
}
