//! What each program reads and writes, from its arguments: the views (`cat`, `head`,
//! `sed -n`, …) and the writers (`tee`, `sed -i`, `cp`, `rm`, `git checkout`, inline
//! Python, …) of the rule in [`super`]'s docs.

use super::effects::{push_write, ShellEffects, ShellRead};
use super::python::python_writes;
use crate::context::shell::lexer::SimpleCommand;
use crate::context::shell::program::operands;
use crate::protocol::effect::FileAction;

/// What a filter in a pipeline keeps of its input.
pub(super) enum PipedRange {
    /// These lines (1-based, inclusive).
    Lines(u64, u64),
    /// An unknown part.
    Partial,
}

/// The range a filter without file operands prints of its piped input.
pub(super) fn piped_range(program: &str, words: &[&str]) -> Option<PipedRange> {
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
pub(super) fn classify(
    program: &str,
    words: &[&str],
    simple: &SimpleCommand,
    path: &dyn Fn(&str) -> Option<String>,
    writes_to_file: bool,
    effects: &mut ShellEffects,
) {
    let args = words.get(1..).unwrap_or_default();
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
            for word in operands(args, &[]) {
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
        "sed" => sed_effects(args, path, writes_to_file, effects),
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
            for word in operands(args, &["-s", "--size"]) {
                push_write(effects, path(word), action);
            }
        }
        "touch" => {
            for word in operands(args, &[]) {
                push_write(effects, path(word), FileAction::Changed);
            }
        }
        "ed" | "ex" => {
            if let Some(word) = operands(args, &[]).first() {
                push_write(effects, path(word), FileAction::Edited);
            }
        }
        "patch" => {
            let with_value = ["-i", "-o", "-d", "-p", "-B", "-r", "-D"];
            if let Some(word) = operands(args, &with_value).first() {
                push_write(effects, path(word), FileAction::Edited);
            }
        }
        "cp" | "mv" | "install" => copy_or_move(program, args, path, effects),
        "rm" | "unlink" => {
            for word in operands(args, &[]) {
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
        "git" => git_writes(args, path, effects),
        "python" | "python3" | "python2" | "pypy" | "pypy3" => {
            python_writes_of(args, simple, path, effects);
        }
        _ => {}
    }
}

/// `sed`: `-i` edits its files; otherwise it reads them — the lines a quiet `-n '3,5p'`
/// prints, a part of them for another quiet script, all of them else.
fn sed_effects(
    args: &[&str],
    path: &dyn Fn(&str) -> Option<String>,
    writes_to_file: bool,
    effects: &mut ShellEffects,
) {
    let parsed = SedArgs::parse(args);
    if parsed.in_place {
        for word in &parsed.files {
            push_write(effects, path(word), FileAction::Edited);
        }
        return;
    }
    if writes_to_file {
        return;
    }
    let range = parsed.script.as_deref().and_then(print_range);
    for word in &parsed.files {
        let Some(path) = path(word) else {
            continue;
        };
        let (lines, partial) = match (parsed.quiet, range) {
            (true, Some(lines)) => (Some(lines), false),
            (true, None) => (None, true),
            (false, _) => (None, false),
        };
        effects.reads.push(ShellRead {
            path,
            lines,
            partial,
        });
    }
}

/// `git checkout` / `git restore` of files: each changed. Without `--`, only words that
/// look like files (not branches).
fn git_writes(args: &[&str], path: &dyn Fn(&str) -> Option<String>, effects: &mut ShellEffects) {
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

/// A Python script (`-c`, or a heredoc on stdin) and the files it writes.
fn python_writes_of(
    args: &[&str],
    simple: &SimpleCommand,
    path: &dyn Fn(&str) -> Option<String>,
    effects: &mut ShellEffects,
) {
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

/// `cp`, `mv`, `install`: the target written; `mv`'s sources deleted. A target directory
/// given with `-t` is not followed.
fn copy_or_move(
    program: &str,
    args: &[&str],
    path: &dyn Fn(&str) -> Option<String>,
    effects: &mut ShellEffects,
) {
    if args
        .iter()
        .any(|w| *w == "-t" || w.starts_with("--target-directory"))
    {
        return;
    }
    let operands = operands(args, &[]);
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
