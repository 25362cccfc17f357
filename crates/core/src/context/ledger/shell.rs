//! What a shell command line does to files, judged from its text: which files it prints
//! (reads, with the lines when the command says which) and which it writes, edits,
//! creates or deletes.
//!
//! The rule (documented in docs/context-pipeline.md, "Session ledger"):
//!
//! - The line is split the way the shell splits it: quotes, escapes, `&&`, `||`, `;`,
//!   `|`, `&`, newlines, subshell parentheses, comments, and heredoc bodies (which are
//!   read as the input of their command, never as commands).
//! - **Reads**: `cat`, `nl`, `tac`, `less`, `more`, `bat` of their operands (whole),
//!   `head -n N` (lines 1–N), `tail` (its end), `sed -n 'A,Bp'` (lines A–B), other
//!   `sed` without `-i` and `awk` (part of the file). A range printed through a pipe
//!   (`nl -ba F | sed -n '10,40p'`, `cat F | head -20`) is the range read. A command
//!   whose output is redirected to a file is a copy, not a read.
//! - **Writes**: output redirections (`>`, `>>`, `&>`, `N>`; not `/dev/*` or
//!   descriptors), `tee`, `sed -i`, `perl -i`, `ed`/`ex`, `patch FILE`, `cp` and `mv`
//!   targets, `dd of=`, `sponge`, `truncate`, `touch`, `git checkout`/`git restore` of
//!   files (changed back), `rm` (deleted) and `mv` sources (deleted), and Python scripts
//!   given inline (`-c`, or a heredoc) that `open(PATH, 'w'|'a'|'x')` or
//!   `Path(PATH).write_text(…)` a literal path.
//! - `cd DIR` earlier on the line makes later relative paths relative to `DIR`. Paths
//!   with globs, variables or command substitutions are left out: their files are
//!   unknown.
//!
//! Anything else (a program that writes files itself) is not seen here; in a git work
//! tree the bash tool also compares `git status` before and after each command.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::protocol::effect::FileAction;

/// A file a command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRead {
    /// The path (relative paths as the command names them, after any `cd`).
    pub path: String,
    /// The lines printed (1-based, inclusive) when the command says which.
    pub lines: Option<(u64, u64)>,
    /// True when only part of the file was printed and the part is not known (`tail`,
    /// `awk`, `sed` scripts).
    pub partial: bool,
}

/// A file a command changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellWrite {
    /// The path (as for [`ShellRead::path`]).
    pub path: String,
    /// What happened to it.
    pub action: FileAction,
}

/// The files one command line reads and writes, in the order they appear.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellEffects {
    /// Files printed.
    pub reads: Vec<ShellRead>,
    /// Files changed.
    pub writes: Vec<ShellWrite>,
}

/// The files `command` reads and writes (see the module docs for the rule).
pub fn file_effects(command: &str) -> ShellEffects {
    let commands = Lexer::new(command).run();
    let mut effects = ShellEffects::default();
    let mut dir: Option<String> = None;
    // Index in `effects.reads` of the whole-file read the current pipeline started with.
    let mut pipeline_read: Option<usize> = None;
    for simple in &commands {
        if !simple.piped {
            pipeline_read = None;
        }
        let words = program_words(&simple.words);
        let program = words.first().map(|w| base_name(w)).unwrap_or_default();
        if program == "cd" {
            dir = match words.get(1) {
                Some(target) if is_plain_path(target) => Some(join(dir.as_deref(), target)),
                _ => None,
            };
            continue;
        }
        let path = |word: &str| -> Option<String> {
            is_plain_path(word).then(|| join(dir.as_deref(), word))
        };
        let mut writes_to_file = false;
        for redirect in &simple.redirects {
            if redirect.output {
                if let Some(target) = path(&redirect.target) {
                    writes_to_file = true;
                    effects.writes.push(ShellWrite {
                        path: target,
                        action: FileAction::Written,
                    });
                }
            }
        }
        let before = effects.reads.len();
        classify(program, &words, simple, &path, writes_to_file, &mut effects);
        // A range printed through a pipe is the range of the file the pipe started with.
        if simple.piped && effects.reads.len() == before && !writes_to_file {
            if let (Some(index), Some(range)) = (pipeline_read, piped_range(program, &words)) {
                let read = &mut effects.reads[index];
                match range {
                    PipedRange::Lines(first, last) => read.lines = Some((first, last)),
                    PipedRange::Partial => read.partial = true,
                }
            }
        } else if effects.reads.len() == before + 1 && effects.reads[before].lines.is_none() {
            pipeline_read = Some(before);
        } else if !simple.piped {
            pipeline_read = None;
        }
    }
    effects
}

/// What a filter in a pipeline keeps of its input.
enum PipedRange {
    Lines(u64, u64),
    Partial,
}

/// The range a filter without file operands prints of its piped input.
fn piped_range(program: &str, words: &[&str]) -> Option<PipedRange> {
    match program {
        "sed" => {
            let parsed = SedArgs::parse(&words[1..]);
            if !parsed.files.is_empty() || parsed.in_place {
                return None;
            }
            match parsed
                .quiet
                .then(|| parsed.script.as_deref().and_then(print_range))
            {
                Some(Some((first, last))) => Some(PipedRange::Lines(first, last)),
                _ => Some(PipedRange::Partial),
            }
        }
        "head" => {
            let (count, files) = head_args(&words[1..]);
            files
                .is_empty()
                .then(|| PipedRange::Lines(1, count.unwrap_or(10)))
        }
        "tail" | "awk" | "gawk" | "grep" | "egrep" | "rg" => Some(PipedRange::Partial),
        _ => None,
    }
}

/// Adds what one simple command reads and writes.
fn classify(
    program: &str,
    words: &[&str],
    simple: &Simple,
    path: &dyn Fn(&str) -> Option<String>,
    writes_to_file: bool,
    effects: &mut ShellEffects,
) {
    let args = words.get(1..).unwrap_or_default();
    let operands = || {
        args.iter()
            .copied()
            .filter(|w| !w.starts_with('-'))
            .collect::<Vec<&str>>()
    };
    let mut read = |word: &str, lines: Option<(u64, u64)>, partial: bool| {
        if writes_to_file {
            return;
        }
        if let Some(p) = path(word) {
            effects.reads.push(ShellRead {
                path: p,
                lines,
                partial,
            });
        }
    };
    match program {
        "cat" | "nl" | "tac" | "less" | "more" | "bat" | "batcat" => {
            for word in operands() {
                read(word, None, false);
            }
        }
        "head" => {
            let (count, files) = head_args(args);
            for word in files {
                read(word, Some((1, count.unwrap_or(10))), false);
            }
        }
        "tail" => {
            for word in tail_operands(args) {
                read(word, None, true);
            }
        }
        "awk" | "gawk" => {
            if args.iter().any(|w| *w == "-i" || w.starts_with("-i")) {
                return;
            }
            let mut rest = args.iter().skip_while(|w| w.starts_with('-'));
            rest.next(); // the program
            for word in rest.filter(|w| !w.contains('=')) {
                read(word, None, true);
            }
        }
        "sed" => {
            let parsed = SedArgs::parse(args);
            if parsed.in_place {
                for word in &parsed.files {
                    push_write(effects, path(word), FileAction::Edited);
                }
            } else {
                let range = parsed.script.as_deref().and_then(print_range);
                for word in &parsed.files {
                    match (parsed.quiet, range) {
                        (true, Some(lines)) => read(word, Some(lines), false),
                        (true, None) => read(word, None, true),
                        (false, _) => read(word, None, false),
                    }
                }
            }
        }
        "perl" | "ruby"
            if args
                .iter()
                .any(|w| w.starts_with("-i") || w.starts_with("-pi")) =>
        {
            let mut rest = args.iter().skip_while(|w| w.starts_with('-'));
            if args.iter().any(|w| w.contains('e')) {
                rest.next(); // the -e script
            }
            for word in rest {
                push_write(effects, path(word), FileAction::Edited);
            }
        }
        "tee" | "sponge" | "truncate" => {
            let action = if program == "truncate" {
                FileAction::Changed
            } else {
                FileAction::Written
            };
            let mut skip_next = false;
            for word in args {
                if skip_next {
                    skip_next = false;
                } else if *word == "-s" || *word == "--size" {
                    skip_next = true;
                } else if !word.starts_with('-') {
                    push_write(effects, path(word), action);
                }
            }
        }
        "touch" => {
            for word in operands() {
                push_write(effects, path(word), FileAction::Changed);
            }
        }
        "ed" | "ex" => {
            if let Some(word) = operands().first() {
                push_write(effects, path(word), FileAction::Edited);
            }
        }
        "patch" => {
            let mut skip_next = false;
            for word in args {
                if skip_next {
                    skip_next = false;
                } else if matches!(*word, "-i" | "-o" | "-d" | "-p" | "-B" | "-r" | "-D") {
                    skip_next = true;
                } else if !word.starts_with('-') {
                    push_write(effects, path(word), FileAction::Edited);
                    break;
                }
            }
        }
        "cp" | "mv" | "install" => {
            if args
                .iter()
                .any(|w| *w == "-t" || w.starts_with("--target-directory"))
            {
                return;
            }
            let operands = operands();
            if let Some((target, sources)) = operands.split_last() {
                if sources.is_empty() {
                    return;
                }
                if program == "mv" {
                    for source in sources {
                        push_write(effects, path(source), FileAction::Deleted);
                    }
                }
                push_write(effects, path(target), FileAction::Written);
            }
        }
        "rm" | "unlink" => {
            for word in operands() {
                push_write(effects, path(word), FileAction::Deleted);
            }
        }
        "dd" => {
            for word in args {
                if let Some(target) = word.strip_prefix("of=") {
                    push_write(effects, path(target), FileAction::Written);
                }
            }
        }
        "git" => {
            let sub = args.iter().find(|w| !w.starts_with('-')).copied();
            if matches!(sub, Some("checkout" | "restore")) {
                let after_sub = args.iter().skip_while(|w| Some(**w) != sub).skip(1);
                let explicit = args.contains(&"--");
                let mut past_dashes = false;
                for word in after_sub {
                    if *word == "--" {
                        past_dashes = true;
                        continue;
                    }
                    if word.starts_with('-') {
                        continue;
                    }
                    // Without `--`, only words that look like files (not branches).
                    if past_dashes || (!explicit && (word.contains('.') || word.contains('/'))) {
                        push_write(effects, path(word), FileAction::Changed);
                    }
                }
            }
        }
        "python" | "python3" | "python2" | "pypy" | "pypy3" => {
            let script = match args.iter().position(|w| *w == "-c") {
                Some(at) => args.get(at + 1).map(|s| (*s).to_owned()),
                None if args.iter().all(|w| w.starts_with('-')) => simple.heredoc.clone(),
                None => None,
            };
            if let Some(script) = script {
                for written in python_writes(&script) {
                    push_write(effects, path(&written), FileAction::Written);
                }
            }
        }
        _ => {}
    }
}

fn push_write(effects: &mut ShellEffects, path: Option<String>, action: FileAction) {
    if let Some(path) = path {
        effects.writes.push(ShellWrite { path, action });
    }
}

/// `head`'s line count and file operands.
fn head_args<'a>(args: &[&'a str]) -> (Option<u64>, Vec<&'a str>) {
    let mut count = None;
    let mut files = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        if *word == "-n" || *word == "--lines" {
            count = iter.next().and_then(|n| n.parse().ok());
        } else if *word == "-c" || *word == "--bytes" {
            iter.next();
        } else if let Some(n) = word.strip_prefix("--lines=") {
            count = n.parse().ok();
        } else if let Some(n) = word.strip_prefix("-n") {
            count = n.parse().ok();
        } else if let Some(n) = word.strip_prefix('-') {
            if let Ok(n) = n.parse() {
                count = Some(n);
            }
        } else {
            files.push(*word);
        }
    }
    (count, files)
}

/// `tail`'s file operands.
fn tail_operands<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut files = Vec::new();
    let mut iter = args.iter();
    while let Some(word) = iter.next() {
        if matches!(*word, "-n" | "-c" | "--lines" | "--bytes" | "-s") {
            iter.next();
        } else if !word.starts_with('-') && !word.starts_with('+') {
            files.push(*word);
        }
    }
    files
}

/// The arguments of a `sed` invocation that matter here.
struct SedArgs {
    in_place: bool,
    quiet: bool,
    script: Option<String>,
    files: Vec<String>,
}

impl SedArgs {
    fn parse(args: &[&str]) -> Self {
        let mut parsed = SedArgs {
            in_place: false,
            quiet: false,
            script: None,
            files: Vec::new(),
        };
        let mut explicit_script = false;
        let mut positional = Vec::new();
        let mut iter = args.iter();
        while let Some(word) = iter.next() {
            match *word {
                "-e" | "--expression" => {
                    explicit_script = true;
                    if parsed.script.is_none() {
                        parsed.script = iter.next().map(|s| (*s).to_owned());
                    } else {
                        iter.next();
                    }
                }
                "-f" | "--file" => {
                    explicit_script = true;
                    iter.next();
                }
                "-n" | "--quiet" | "--silent" => parsed.quiet = true,
                w if w.starts_with("--in-place") => parsed.in_place = true,
                w if w.starts_with('-') && w.len() > 1 && !w.starts_with("--") => {
                    let flags = &w[1..];
                    if flags.contains('i') {
                        parsed.in_place = true;
                    }
                    if flags.starts_with('n') || (flags.contains('n') && !flags.contains('i')) {
                        parsed.quiet = true;
                    }
                }
                w if w.starts_with("--") => {}
                w => positional.push(w.to_owned()),
            }
        }
        let mut positional = positional.into_iter();
        if !explicit_script {
            parsed.script = positional.next();
        }
        parsed.files = positional.collect();
        parsed
    }
}

/// The lines a `sed -n` script prints when it is one range: `A,Bp`, `Ap`, `A,$p` (to
/// the end: not a known range).
fn print_range(script: &str) -> Option<(u64, u64)> {
    let body = script.trim().strip_suffix('p')?;
    let (first, last) = body.split_once(',').unwrap_or((body, body));
    let first: u64 = first.trim().parse().ok()?;
    let last: u64 = last.trim().parse().ok()?;
    (first >= 1 && last >= first).then_some((first, last))
}

/// String assignments, `open(…)` calls with a writing mode and `Path(…).write_*` calls
/// of an inline Python script.
static PY_ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)^\s*([A-Za-z_]\w*)\s*=\s*(?:r|f)?(['"])([^'"\n]+)['"]\s*$"#)
        .expect("constant pattern compiles")
});
static PY_OPEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"open\(\s*(?:(?:r|f)?(['"])([^'"\n]+)['"]|([A-Za-z_]\w*))\s*,\s*(?:mode\s*=\s*)?['"]([rwaxbt+]+)['"]"#)
        .expect("constant pattern compiles")
});
static PY_PATH_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"Path\(\s*(?:(['"])([^'"\n]+)['"]|([A-Za-z_]\w*))\s*\)\.write_(?:text|bytes)\("#)
        .expect("constant pattern compiles")
});

/// The literal paths an inline Python script writes.
fn python_writes(script: &str) -> Vec<String> {
    let variables: HashMap<&str, &str> = PY_ASSIGN
        .captures_iter(script)
        .filter_map(|c| Some((c.get(1)?.as_str(), c.get(3)?.as_str())))
        .collect();
    let resolve = |literal: Option<regex::Match>, variable: Option<regex::Match>| {
        literal
            .map(|m| m.as_str())
            .or_else(|| variables.get(variable?.as_str()).copied())
            .map(str::to_owned)
    };
    let mut paths = Vec::new();
    for captures in PY_OPEN.captures_iter(script) {
        let mode = captures.get(4).map_or("", |m| m.as_str());
        if mode.contains(['w', 'a', 'x', '+']) {
            if let Some(path) = resolve(captures.get(2), captures.get(3)) {
                paths.push(path);
            }
        }
    }
    for captures in PY_PATH_WRITE.captures_iter(script) {
        if let Some(path) = resolve(captures.get(2), captures.get(3)) {
            paths.push(path);
        }
    }
    paths
}

/// The words of a simple command from its program on: leading `VAR=value` assignments
/// and wrappers (`sudo`, `time`, `env`, `nice`, `nohup`, `command`, `exec`,
/// `timeout N`) removed.
fn program_words(words: &[String]) -> Vec<&str> {
    let mut rest: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| *w != "{" && *w != "}" && *w != "!")
        .collect();
    loop {
        match rest.first().copied() {
            Some(w) if is_assignment(w) => {
                rest.remove(0);
            }
            Some("sudo" | "time" | "nice" | "nohup" | "command" | "exec" | "stdbuf") => {
                rest.remove(0);
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest.remove(0);
                }
            }
            Some("env") => {
                rest.remove(0);
                while rest
                    .first()
                    .is_some_and(|w| w.starts_with('-') || is_assignment(w))
                {
                    rest.remove(0);
                }
            }
            Some("timeout") => {
                rest.remove(0);
                while rest.first().is_some_and(|w| w.starts_with('-')) {
                    rest.remove(0);
                }
                if rest.first().is_some_and(|w| {
                    w.chars()
                        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 's' | 'm' | 'h'))
                }) {
                    rest.remove(0);
                }
            }
            _ => return rest,
        }
    }
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// True for a word that names one known file: no globs, variables, substitutions,
/// home-relative paths or devices.
fn is_plain_path(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 1_000
        && !word.starts_with('-')
        && !word.starts_with('~')
        && !word.starts_with("/dev/")
        && !word.starts_with("/proc/")
        && !word.contains([
            '*', '?', '[', ']', '{', '}', '$', '`', '\n', '<', '>', '|', '&',
        ])
        && word != "."
        && word != ".."
}

/// `word` relative to `dir` (when it is relative and a `cd` came before), lexically
/// normalised (`./` and `a/..` removed).
fn join(dir: Option<&str>, word: &str) -> String {
    let joined = match dir {
        Some(dir) if !word.starts_with('/') => format!("{dir}/{word}"),
        _ => word.to_owned(),
    };
    normalise(&joined)
}

/// Removes `.` components and folds `name/..`, keeping leading `..` and the root.
pub(crate) fn normalise(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    match (absolute, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

/// One simple command of a line.
#[derive(Debug, Default)]
struct Simple {
    words: Vec<String>,
    redirects: Vec<Redirect>,
    /// The body of the command's first heredoc (or here-string).
    heredoc: Option<String>,
    /// Its standard input is the previous command's output.
    piped: bool,
}

/// A file redirection.
#[derive(Debug)]
struct Redirect {
    /// True for output (`>`, `>>`, `&>`, `N>`), false for input.
    output: bool,
    target: String,
}

/// What the next word is.
enum Pending {
    Word,
    OutputTarget,
    InputTarget,
    Descriptor,
    Heredoc { strip_tabs: bool },
    HereString,
}

/// A heredoc whose body starts after the current line.
struct OpenHeredoc {
    delimiter: String,
    strip_tabs: bool,
    command: usize,
}

/// Splits a command line into simple commands (see the module docs).
struct Lexer {
    chars: Vec<char>,
    at: usize,
    commands: Vec<Simple>,
    current: Simple,
    pending: Pending,
    heredocs: Vec<OpenHeredoc>,
    bodies: HashMap<usize, String>,
}

impl Lexer {
    fn new(line: &str) -> Self {
        Self {
            chars: line.chars().collect(),
            at: 0,
            commands: Vec::new(),
            current: Simple::default(),
            pending: Pending::Word,
            heredocs: Vec::new(),
            bodies: HashMap::new(),
        }
    }

    fn peek(&self, offset: usize) -> Option<char> {
        self.chars.get(self.at + offset).copied()
    }

    fn run(mut self) -> Vec<Simple> {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.at += 1,
                '\n' => {
                    self.at += 1;
                    self.finish(false);
                    self.read_heredoc_bodies();
                }
                '\\' if self.peek(1) == Some('\n') => self.at += 2,
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.at += 1;
                    }
                }
                ';' | '(' | ')' => {
                    self.at += 1;
                    self.finish(false);
                }
                '&' if self.peek(1) == Some('>') => {
                    self.at += 2;
                    if self.peek(0) == Some('>') {
                        self.at += 1;
                    }
                    self.pending = Pending::OutputTarget;
                }
                '&' => {
                    self.at += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.finish(false);
                }
                '|' if self.peek(1) == Some('|') => {
                    self.at += 2;
                    self.finish(false);
                }
                '|' => {
                    self.at += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.finish(true);
                }
                '>' | '<' => self.redirect(),
                c if c.is_ascii_digit() && self.descriptor_redirect() => {}
                _ => {
                    let word = self.word();
                    self.take_word(word);
                }
            }
        }
        self.finish(false);
        for (index, body) in self.bodies.drain() {
            if let Some(command) = self.commands.get_mut(index) {
                command.heredoc.get_or_insert(body);
            }
        }
        self.commands
    }

    /// `2>`, `2>>`, `1>&2`: a descriptor number directly before a redirection.
    fn descriptor_redirect(&mut self) -> bool {
        let mut end = self.at;
        while self.chars.get(end).is_some_and(char::is_ascii_digit) {
            end += 1;
        }
        if matches!(self.chars.get(end), Some('>' | '<')) {
            self.at = end;
            self.redirect();
            true
        } else {
            false
        }
    }

    fn redirect(&mut self) {
        let first = self.chars[self.at];
        self.at += 1;
        if first == '<' {
            match (self.peek(0), self.peek(1)) {
                (Some('<'), Some('<')) => {
                    self.at += 2;
                    self.pending = Pending::HereString;
                }
                (Some('<'), Some('-')) => {
                    self.at += 2;
                    self.pending = Pending::Heredoc { strip_tabs: true };
                }
                (Some('<'), _) => {
                    self.at += 1;
                    self.pending = Pending::Heredoc { strip_tabs: false };
                }
                (Some('('), _) => {
                    // Process substitution `<(…)`: a command, not a file.
                    let mut word = String::from("<");
                    self.balanced(&mut word);
                    self.current.words.push(word);
                }
                _ => self.pending = Pending::InputTarget,
            }
            return;
        }
        match self.peek(0) {
            Some('>') | Some('|') => self.at += 1,
            Some('&') => {
                self.at += 1;
                self.pending = Pending::Descriptor;
                return;
            }
            Some('(') => {
                let mut word = String::from(">");
                self.balanced(&mut word);
                self.current.words.push(word);
                return;
            }
            _ => {}
        }
        self.pending = Pending::OutputTarget;
    }

    fn take_word(&mut self, word: String) {
        match std::mem::replace(&mut self.pending, Pending::Word) {
            Pending::Word => self.current.words.push(word),
            Pending::OutputTarget => self.current.redirects.push(Redirect {
                output: true,
                target: word,
            }),
            Pending::InputTarget => self.current.redirects.push(Redirect {
                output: false,
                target: word,
            }),
            Pending::Descriptor => {
                // `>&2`, `>&-`: a descriptor; `>&file` is bash's `&>file`.
                if !word.chars().all(|c| c.is_ascii_digit() || c == '-') {
                    self.current.redirects.push(Redirect {
                        output: true,
                        target: word,
                    });
                }
            }
            Pending::Heredoc { strip_tabs } => self.heredocs.push(OpenHeredoc {
                delimiter: word,
                strip_tabs,
                command: self.commands.len(),
            }),
            Pending::HereString => {
                self.current.heredoc.get_or_insert(word);
            }
        }
    }

    /// Ends the current simple command; the next one reads its input from it when
    /// `pipe`.
    fn finish(&mut self, pipe: bool) {
        self.pending = Pending::Word;
        let next = Simple {
            piped: pipe,
            ..Simple::default()
        };
        let done = std::mem::replace(&mut self.current, next);
        if !done.words.is_empty() || !done.redirects.is_empty() || done.heredoc.is_some() {
            self.commands.push(done);
        }
    }

    /// Reads the bodies of the heredocs opened on the line just ended.
    fn read_heredoc_bodies(&mut self) {
        for heredoc in std::mem::take(&mut self.heredocs) {
            let mut body = String::new();
            while let Some(line) = self.next_line() {
                let candidate = if heredoc.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if candidate.trim_end() == heredoc.delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            self.bodies.entry(heredoc.command).or_insert(body);
        }
    }

    fn next_line(&mut self) -> Option<String> {
        if self.at >= self.chars.len() {
            return None;
        }
        let start = self.at;
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.at += 1;
        }
        let line: String = self.chars[start..self.at].iter().collect();
        if self.peek(0) == Some('\n') {
            self.at += 1;
        }
        Some(line)
    }

    /// One word: quotes removed, escapes resolved, `$(…)` and backquotes kept verbatim.
    fn word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '>' | '<' | ')' => break,
                '(' if word.is_empty() || !word.ends_with(['$', '<', '>', '=']) => break,
                '\'' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => {
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        match q {
                            '"' => break,
                            '\\' => match self.peek(0) {
                                Some(e @ ('"' | '\\' | '$' | '`')) => {
                                    self.at += 1;
                                    word.push(e);
                                }
                                Some('\n') => self.at += 1,
                                _ => word.push('\\'),
                            },
                            _ => word.push(q),
                        }
                    }
                }
                '\\' => {
                    self.at += 1;
                    match self.peek(0) {
                        Some('\n') => self.at += 1,
                        Some(e) => {
                            self.at += 1;
                            word.push(e);
                        }
                        None => {}
                    }
                }
                '$' if self.peek(1) == Some('(') => {
                    word.push('$');
                    self.at += 1;
                    self.balanced(&mut word);
                }
                '(' => self.balanced(&mut word),
                '`' => {
                    word.push('`');
                    self.at += 1;
                    while let Some(q) = self.peek(0) {
                        self.at += 1;
                        word.push(q);
                        if q == '`' {
                            break;
                        }
                    }
                }
                _ => {
                    word.push(c);
                    self.at += 1;
                }
            }
        }
        if word.is_empty() && self.at < self.chars.len() {
            // Never stall on a character no rule consumed.
            let c = self.chars[self.at];
            if !matches!(c, ' ' | '\t' | '\r' | '\n') {
                word.push(c);
            }
            self.at += 1;
        }
        word
    }

    /// Copies a parenthesised group (from its `(`) into `word`, verbatim.
    fn balanced(&mut self, word: &mut String) {
        let mut depth = 0usize;
        while let Some(c) = self.peek(0) {
            self.at += 1;
            word.push(c);
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read as the tests compare it: path, line range, partial.
    type ReadView = (String, Option<(u64, u64)>, bool);

    fn reads(command: &str) -> Vec<ReadView> {
        file_effects(command)
            .reads
            .into_iter()
            .map(|r| (r.path, r.lines, r.partial))
            .collect()
    }

    fn writes(command: &str) -> Vec<(String, FileAction)> {
        file_effects(command)
            .writes
            .into_iter()
            .map(|w| (w.path, w.action))
            .collect()
    }

    fn whole(path: &str) -> (String, Option<(u64, u64)>, bool) {
        (path.to_owned(), None, false)
    }

    #[test]
    fn views_are_reads_with_the_lines_they_print() {
        assert_eq!(reads("cat src/a.py"), vec![whole("src/a.py")]);
        assert_eq!(
            reads("cat -n a.py b.py"),
            vec![whole("a.py"), whole("b.py")]
        );
        assert_eq!(
            reads("sed -n '10,40p' src/a.py"),
            vec![("src/a.py".into(), Some((10, 40)), false)]
        );
        assert_eq!(
            reads("nl -ba django/db/models.py | sed -n '540,555p'"),
            vec![("django/db/models.py".into(), Some((540, 555)), false)]
        );
        assert_eq!(
            reads("head -n 5 a.py"),
            vec![("a.py".into(), Some((1, 5)), false)]
        );
        assert_eq!(
            reads("cat a.py | head -20"),
            vec![("a.py".into(), Some((1, 20)), false)]
        );
        assert_eq!(reads("tail -n 20 a.py"), vec![("a.py".into(), None, true)]);
        assert_eq!(
            reads("cat a.py | grep foo"),
            vec![("a.py".into(), None, true)]
        );
        assert_eq!(
            reads("grep -n foo a.py"),
            vec![],
            "a search is not a read of the file"
        );
        assert_eq!(reads("cat a.py > b.py"), vec![], "a copy is not a read");
        assert_eq!(
            reads("cd tests && cat ../src/a.py"),
            vec![whole("src/a.py")]
        );
        assert_eq!(reads("cat *.py"), vec![], "globs name unknown files");
    }

    #[test]
    fn write_forms_are_recognised() {
        use FileAction::*;
        assert_eq!(
            writes("echo hi > out.txt"),
            vec![("out.txt".into(), Written)]
        );
        assert_eq!(
            writes("python run.py 2>&1 >> log.txt"),
            vec![("log.txt".into(), Written)]
        );
        assert_eq!(
            writes("make &> build.log"),
            vec![("build.log".into(), Written)]
        );
        assert_eq!(writes("ls > /dev/null 2>&1"), vec![]);
        assert_eq!(
            writes("sed -i 's/a/b/' src/x.py src/y.py"),
            vec![("src/x.py".into(), Edited), ("src/y.py".into(), Edited)]
        );
        assert_eq!(
            writes("sed -i.bak -e 's/a/b/' x.py"),
            vec![("x.py".into(), Edited)]
        );
        assert_eq!(
            writes("echo x | tee -a notes.md"),
            vec![("notes.md".into(), Written)]
        );
        assert_eq!(
            writes("mv a.py b.py"),
            vec![("a.py".into(), Deleted), ("b.py".into(), Written)]
        );
        assert_eq!(writes("cp -r a.py b.py"), vec![("b.py".into(), Written)]);
        assert_eq!(
            writes("rm -f reproduce.py test_x.py"),
            vec![
                ("reproduce.py".into(), Deleted),
                ("test_x.py".into(), Deleted)
            ]
        );
        assert_eq!(
            writes("git checkout django/db/x.py"),
            vec![("django/db/x.py".into(), Changed)]
        );
        assert_eq!(writes("git checkout main"), vec![]);
        assert_eq!(
            writes("ed src/m.py <<EOF\n1d\nw\nq\nEOF"),
            vec![("src/m.py".into(), Edited)]
        );
        assert_eq!(
            writes("patch a.py a.py.patch"),
            vec![("a.py".into(), Edited)]
        );
        assert_eq!(
            writes("cd sub && echo x > ../top.txt"),
            vec![("top.txt".into(), Written)]
        );
        assert_eq!(writes("echo $X > $OUT"), vec![]);
    }

    #[test]
    fn heredoc_bodies_are_input_not_commands() {
        use FileAction::*;
        let command = "cat <<'EOF' > reproduce.py\nimport os\nrm -rf /\ncat secret.txt\nEOF\npython reproduce.py";
        assert_eq!(writes(command), vec![("reproduce.py".into(), Written)]);
        assert_eq!(reads(command), vec![]);
        let tabs = "cat <<-EOF > a.txt\n\tbody\n\tEOF\ncat a.txt";
        assert_eq!(writes(tabs), vec![("a.txt".into(), Written)]);
        assert_eq!(reads(tabs), vec![whole("a.txt")]);
    }

    #[test]
    fn inline_python_writes_are_seen() {
        let command = "python3 - <<'EOF'\npath = 'tests/constraints/tests.py'\nwith open(path, 'r') as f:\n    text = f.read()\nwith open(path, 'w') as f:\n    f.write(text)\nopen(\"log.txt\", mode=\"a\").write('x')\nfrom pathlib import Path\nPath('gen.py').write_text('x')\nEOF";
        assert_eq!(
            writes(command),
            vec![
                ("tests/constraints/tests.py".into(), FileAction::Written),
                ("log.txt".into(), FileAction::Written),
                ("gen.py".into(), FileAction::Written),
            ]
        );
        assert_eq!(
            writes("python -c \"open('x.txt', 'w').write('1')\""),
            vec![("x.txt".into(), FileAction::Written)]
        );
        assert_eq!(writes("python -c \"print(open('x.txt').read())\""), vec![]);
    }

    #[test]
    fn hostile_or_broken_lines_never_panic() {
        for line in [
            "",
            "'unterminated",
            "\"unterminated \\",
            "cat <<EOF",
            "$(((",
            "a >",
            "| | ;; && >& <<< ((",
            "echo `x",
            "2>",
            "cat <(ls) > >(tee x)",
        ] {
            let _ = file_effects(line);
        }
        let long = "cat a.py | ".repeat(2_000);
        let _ = file_effects(&long);
    }

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalise("./a/./b/../c.py"), "a/c.py");
        assert_eq!(normalise("../x"), "../x");
        assert_eq!(normalise("/a/../../b"), "/b");
    }
}
