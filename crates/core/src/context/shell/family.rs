//! What a command line prints, judged from its text alone: a test run, a search, a
//! listing, a file view or anything else ([`command_family`]), and for a view of one
//! file, which file and from which line ([`view_origin`]).
//!
//! The rules read each simple command's words as written (quotes kept: `python -c
//! "import pytest…"` names pytest), from its program on (see
//! [`program_words`]). The classifier is also what `cargo xtask eval` groups its table
//! by, so the families it reports are exactly the ones squash acts on, and what the
//! session ledger recognises test commands by.

use serde::Serialize;

use super::lexer::{simple_commands, SimpleCommand};
use super::program::{base_name, operands, program_words};

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

/// Set-up commands before the one whose output counts (`cd /repo && pytest`); left out
/// unless they read piped input.
const SET_UP: &[&str] = &[
    "cd", "export", "source", ".", "set", "echo", "pushd", "popd", "true",
];

/// The set-up commands a single-file view may follow.
const VIEW_SET_UP: &[&str] = &["cd", "export", "set"];

/// The simple commands of a line that may print its output, each with its program words
/// (read from its text as written): those whose program is in `set_up`, or that have
/// none, are left out unless they read piped input.
fn meaningful<'a>(
    commands: &'a [SimpleCommand],
    set_up: &[&str],
) -> Vec<(&'a SimpleCommand, Vec<&'a str>)> {
    commands
        .iter()
        .filter_map(|command| {
            let words = program_words(command.text.split_whitespace());
            let set_up = words.first().is_none_or(|w| set_up.contains(&base_name(w)));
            (command.piped || !set_up).then_some((command, words))
        })
        .collect()
}

/// The simple command whose output a command line prints: the first of its last
/// pipeline, after `cd` / `export` and other set-up commands.
pub fn output_head(commands: &[SimpleCommand]) -> Option<&SimpleCommand> {
    let meaningful = meaningful(commands, SET_UP);
    let start = meaningful.iter().rposition(|(command, _)| !command.piped)?;
    Some(meaningful[start].0)
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

/// Classifies a shell command by what its output will be.
pub fn command_family(command: &str) -> CommandFamily {
    let commands = simple_commands(command);
    let meaningful = meaningful(&commands, SET_UP);
    if meaningful.iter().any(|(_, words)| is_test_runner(words)) {
        return CommandFamily::TestRunner;
    }
    // The producing command is the first of the last pipeline.
    let Some(start) = meaningful.iter().rposition(|(command, _)| !command.piped) else {
        return CommandFamily::Other;
    };
    let pipeline = &meaningful[start..];
    let (_, head) = &pipeline[0];
    let Some(first) = head.first() else {
        return CommandFamily::Other;
    };
    match base_name(first) {
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => CommandFamily::Grep,
        "git" if head.get(1) == Some(&"grep") => CommandFamily::Grep,
        "find" | "fd" | "fdfind" | "locate" => CommandFamily::Find,
        "ls" | "tree" | "exa" | "eza" => CommandFamily::Ls,
        _ if view_kind(head)
            && pipeline.iter().skip(1).all(|(_, w)| {
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
    let commands = simple_commands(command);
    let meaningful = meaningful(&commands, VIEW_SET_UP);
    let [(view, words)] = meaningful.as_slice() else {
        return None;
    };
    if view.piped {
        return None;
    }
    let (program, args) = words.split_first()?;
    let mut first_line = 1usize;
    let operands = match base_name(program) {
        "cat" | "nl" => operands(args, &[]),
        "head" => operands(args, &["-n", "-c"]),
        "sed" => {
            if args.first() != Some(&"-n") || args.len() != 3 {
                return None;
            }
            let script = unquote(args[1]);
            let range = script.strip_suffix('p')?;
            let start = range.split(',').next()?;
            first_line = start.parse().ok()?;
            vec![args[2]]
        }
        _ => return None,
    };
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
    fn the_output_head_is_the_first_of_the_last_pipeline_after_set_up() {
        let commands = simple_commands("cd /x && LC_ALL=C time grep -n 'a b' f.py | head");
        let head = output_head(&commands).expect("a head");
        assert_eq!(head.text, "LC_ALL=C time grep -n 'a b' f.py");
        assert_eq!(
            program_words(head.words.iter().map(String::as_str)),
            ["grep", "-n", "a b", "f.py"]
        );
        assert!(output_head(&simple_commands("cd /x && export A=1")).is_none());
    }
}
