//! What a shell command line does to files, judged from its text: which files it prints
//! (reads, with the lines when the command says which) and which it writes, edits,
//! creates or deletes.
//!
//! The rule (documented in docs/context-pipeline.md, "Session ledger"):
//!
//! - The line is split the way the shell splits it, by pith's one shell lexer
//!   ([`crate::context::shell::lexer`]): quotes, escapes, `&&`, `||`, `;`, `|`, `&`,
//!   newlines, subshell parentheses, comments, and heredoc bodies (which are read as
//!   the input of their command, never as commands).
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
//! Anything else (a program that writes files itself) is not seen here; the bash tool
//! also asks the session's change tracker what changed while the command ran.
//!
//! Files: [`effects`] (what the rule finds), [`line`] (the walk over a line's simple
//! commands, `cd` and pipelines), [`programs`] (each program's arguments), [`python`]
//! (inline scripts) and [`paths`] (which words name a known file).

mod effects;
mod line;
mod paths;
mod programs;
mod python;

pub use effects::{ShellEffects, ShellRead, ShellWrite};
pub use line::file_effects;
pub(crate) use paths::normalise;

#[cfg(test)]
mod tests;
