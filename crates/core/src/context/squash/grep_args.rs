//! What a `grep` command line asked for: its pattern (as a matcher), whether it searched
//! one file or many, and whether it numbered its lines.
//!
//! Used for the one grep output whose lines say nothing about themselves: a single file
//! searched without `-n` (`grep -C 20 "mixed types" expressions.py`) prints bare lines,
//! so the pattern is what tells the matches from their context. Parsing covers GNU grep's
//! common options; anything unusual (`-v`, `-l`, `-c`, `-f FILE`, a pattern the regex
//! crate cannot read) gives `None` and the output is judged by its content.

use regex::{Regex, RegexBuilder};

use crate::context::shell::family::output_head;
use crate::context::shell::lexer::simple_commands;
use crate::context::shell::program::{base_name, program_words};

/// A grep invocation's pattern and shape.
#[derive(Debug, Clone)]
pub(crate) struct GrepArgs {
    /// Matches the lines grep selected.
    pub matcher: Regex,
    /// Files (or directories) named on the command line.
    pub operands: usize,
    /// `-r` / `-R`: a directory walk (lines carry file names).
    pub recursive: bool,
    /// `-n`: lines carry numbers.
    pub numbered: bool,
}

impl GrepArgs {
    /// True for a grep whose output lines carry neither a file name nor a number.
    pub fn bare_lines(&self) -> bool {
        self.operands == 1 && !self.recursive && !self.numbered
    }
}

/// Short options that take an argument (attached, `-C5`, or the next word).
const SHORT_WITH_ARG: &[u8] = b"ABCDdefm";
/// Long options that take an argument when it is not given with `=`.
const LONG_WITH_ARG: &[&str] = &[
    "--regexp",
    "--file",
    "--after-context",
    "--before-context",
    "--context",
    "--max-count",
    "--include",
    "--exclude",
    "--exclude-dir",
    "--label",
    "--devices",
    "--directories",
    "--binary-files",
    "--color",
    "--colour",
];

#[derive(Default)]
struct Flags {
    fixed: bool,
    extended: bool,
    ignore_case: bool,
    word: bool,
    whole_line: bool,
    recursive: bool,
    numbered: bool,
    unsupported: bool,
}

impl Flags {
    fn short(&mut self, letter: u8) {
        match letter {
            b'F' => self.fixed = true,
            b'E' | b'P' => self.extended = true,
            b'G' => self.extended = false,
            b'i' | b'y' => self.ignore_case = true,
            b'w' => self.word = true,
            b'x' => self.whole_line = true,
            b'r' | b'R' => self.recursive = true,
            b'n' => self.numbered = true,
            // Inverted matches, file lists, counts, quiet, filename prefixes.
            b'v' | b'l' | b'L' | b'c' | b'q' | b'H' | b'Z' | b'z' => self.unsupported = true,
            _ => {}
        }
    }

    fn long(&mut self, name: &str) {
        match name {
            "--fixed-strings" => self.fixed = true,
            "--extended-regexp" | "--perl-regexp" => self.extended = true,
            "--ignore-case" => self.ignore_case = true,
            "--word-regexp" => self.word = true,
            "--line-regexp" => self.whole_line = true,
            "--recursive" | "--dereference-recursive" => self.recursive = true,
            "--line-number" => self.numbered = true,
            "--invert-match"
            | "--files-with-matches"
            | "--files-without-match"
            | "--count"
            | "--quiet"
            | "--silent"
            | "--with-filename"
            | "--null"
            | "--null-data" => self.unsupported = true,
            _ => {}
        }
    }
}

/// Parses the grep that produces `command`'s output (the head of its last pipeline).
pub(crate) fn parse(command: &str) -> Option<GrepArgs> {
    let commands = simple_commands(command);
    let head = output_head(&commands)?;
    let words = program_words(head.words.iter().map(String::as_str));
    let mut words = words.into_iter();
    let program = base_name(words.next()?);
    let mut flags = Flags::default();
    match program {
        "grep" => {}
        "egrep" => flags.extended = true,
        "fgrep" => flags.fixed = true,
        _ => return None,
    }
    let mut patterns: Vec<String> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut only_operands = false;
    while let Some(word) = words.next() {
        if only_operands || word == "-" || !word.starts_with('-') {
            operands.push(word);
        } else if word == "--" {
            only_operands = true;
        } else if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (format!("--{n}"), Some(v.to_owned())),
                None => (word.to_owned(), None),
            };
            let value = match value {
                Some(v) => Some(v),
                None if LONG_WITH_ARG.contains(&name.as_str()) => Some(words.next()?.to_owned()),
                None => None,
            };
            match name.as_str() {
                "--regexp" => patterns.push(value?),
                "--file" => return None,
                _ => flags.long(&name),
            }
        } else {
            let letters = &word.as_bytes()[1..];
            for (k, &letter) in letters.iter().enumerate() {
                if SHORT_WITH_ARG.contains(&letter) {
                    let attached = &word[k + 2..];
                    let value = if attached.is_empty() {
                        words.next()?.to_owned()
                    } else {
                        attached.to_owned()
                    };
                    match letter {
                        b'e' => patterns.push(value),
                        b'f' => return None,
                        _ => {}
                    }
                    break;
                }
                flags.short(letter);
            }
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            return None;
        }
        patterns.push(operands.remove(0).to_owned());
    }
    if flags.unsupported {
        return None;
    }
    let matcher = build_matcher(&patterns, &flags)?;
    Some(GrepArgs {
        matcher,
        operands: operands.len(),
        recursive: flags.recursive,
        numbered: flags.numbered,
    })
}

/// A basic regular expression (grep's default) in the regex crate's syntax: `\( \) \{ \}
/// \| \+ \?` are operators there, their bare forms literal characters.
fn from_basic(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(op @ ('(' | ')' | '{' | '}' | '|' | '+' | '?')) => out.push(op),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push_str("\\\\"),
            },
            '(' | ')' | '{' | '}' | '|' | '+' | '?' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

fn build_matcher(patterns: &[String], flags: &Flags) -> Option<Regex> {
    let alternatives: Vec<String> = patterns
        .iter()
        .flat_map(|p| p.split('\n'))
        .map(|p| {
            if flags.fixed {
                regex::escape(p)
            } else if flags.extended {
                p.to_owned()
            } else {
                from_basic(p)
            }
        })
        .map(|p| {
            if flags.whole_line {
                format!("^(?:{p})$")
            } else if flags.word {
                format!(r"\b(?:{p})\b")
            } else {
                format!("(?:{p})")
            }
        })
        .collect();
    RegexBuilder::new(&alternatives.join("|"))
        .case_insensitive(flags.ignore_case)
        .size_limit(1 << 20)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_and_shape_of_common_grep_lines_are_read() {
        let args = parse("grep -C 20 \"Expression contains mixed types\" django/db/expressions.py")
            .expect("parsed");
        assert!(args.bare_lines());
        assert!(args
            .matcher
            .is_match("raise FieldError('Expression contains mixed types: x')"));
        assert!(!args.matcher.is_match("Expression contains types"));

        let args = parse("cd /repo && grep -rn 'def foo\\|class Foo' src | head -20").unwrap();
        assert!(args.recursive && args.numbered && !args.bare_lines());
        assert!(args.matcher.is_match("    def foo(self):"));
        assert!(args.matcher.is_match("class Foo(Base):"));

        let args = parse("grep -iw -e todo -e fixme notes.txt").unwrap();
        assert!(args.bare_lines());
        assert!(args.matcher.is_match("TODO: this"));
        assert!(!args.matcher.is_match("todos"));

        let args = parse("grep -A5 'f(x)' a.py").unwrap();
        assert!(
            args.matcher.is_match("y = f(x) + 1"),
            "BRE parentheses are literal"
        );
        let args = parse("grep -E 'a(b|c)' a.py").unwrap();
        assert!(args.matcher.is_match("ac"));
    }

    #[test]
    fn unusual_greps_are_not_guessed() {
        for command in [
            "grep -v foo a.py",
            "grep -l foo *.py",
            "grep -c foo a.py",
            "grep -f patterns.txt a.py",
            "rg foo",
            "grep",
        ] {
            assert!(parse(command).is_none(), "{command}");
        }
    }
}
