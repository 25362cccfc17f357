//! Capture-time squash: shrink one tool result before it enters history, keeping what
//! the model needs and marking every gap.
//!
//! [`apply`] is called exactly once per tool result by the tools layer. It never alters
//! `read` output, passes outputs at or under the floor unchanged, and otherwise picks a
//! squasher by tool, command and content ([`detect`]): file views (byte-exact up to a
//! cap, then judged by content within a budget), JSON, test runners, multi-step logs
//! (each step by its own family), logs, grep / find / ls, or the generic fallback. Gaps
//! are marked by exactly one `[N lines omitted]` line ([`marker`]) and the counts are
//! exact.
//! When [`Squashed::dropped_anything`] is true the caller writes the raw output to a
//! spill file and calls [`with_spill_marker`], so nothing is lost. This module does no
//! I/O.
//!
//! Contract: the result is never longer than the input (a squash that would not save
//! anything returns the input unchanged), and it never panics on any input.

// The squashers keep several per-line arrays (error flags, runs, kinds) indexed by line
// number; index loops over them read better than zipped iterators.
#![allow(clippy::needless_range_loop)]

pub mod config;
pub mod detect;
mod dispatch;
pub mod failures;
mod file_view;
mod generic;
mod grep_args;
mod json;
mod lines;
mod log;
pub mod marker;
mod outline;
mod scan;
mod search;
mod steps;
mod test_runner;

use serde::Serialize;

use dispatch::{dispatch, Body, Outcome};
use scan::{mark_matching_lines, ERROR_LINE};

pub use crate::context::shell::family::{command_family, view_origin, CommandFamily, ViewOrigin};
pub use config::SquashConfig;
pub use detect::Family;
pub use failures::{failing_tests, FailingTest};
pub use marker::{omitted_marker, parse_omitted, spill_marker, with_spill_marker};

/// Squashing must save at least this many bytes (about what the spill marker line
/// costs), otherwise the output passes unchanged.
pub const MIN_SAVING_BYTES: usize = 100;

/// What squash did to one output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SquashStats {
    /// The squasher that was chosen.
    pub family: Family,
    /// Bytes of the raw output.
    pub bytes_before: usize,
    /// Bytes of the squashed text.
    pub bytes_after: usize,
    /// Lines of the raw output.
    pub lines_before: usize,
    /// Lines of the squashed text (markers included).
    pub lines_after: usize,
    /// Original lines replaced by `[N lines omitted]` markers.
    pub lines_omitted: usize,
}

/// The result of squashing one tool output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Squashed {
    /// What the model will see (before any spill marker).
    pub text: String,
    /// True when `text` differs from the raw output: the caller must spill the raw
    /// output and append [`spill_marker`] with [`with_spill_marker`].
    pub dropped_anything: bool,
    /// Sizes before and after.
    pub stats: SquashStats,
}

/// Squashes one tool output. See the module docs for the contract.
///
/// `tool` is the tool name (`read`, `bash`, `grep`, ...), `command` the shell command for
/// `bash` (used to pick the squasher; `None` means judge by content), `exit_code` the
/// process exit status when there is one.
pub fn apply(
    tool: &str,
    command: Option<&str>,
    exit_code: Option<i32>,
    output: &str,
    config: &SquashConfig,
) -> Squashed {
    if tool == "read" {
        return unchanged(output, Family::Read);
    }
    if output.len() <= config.floor_bytes {
        return unchanged(output, Family::Small);
    }
    let view = command.filter(|c| command_family(c) == CommandFamily::FileView);
    if view.is_some() && output.len() <= config.file_view_cap_bytes {
        return unchanged(output, Family::FileView);
    }
    let lines = lines::split_lines(output);
    let errors = mark_matching_lines(output, &lines, &ERROR_LINE);
    let (family, body) = match view {
        Some(command) => file_view::squash(command, output, &lines, &errors, config),
        None => {
            let error_count = errors.iter().filter(|e| **e).count();
            let mut family = detect::detect(tool, command, exit_code, output, error_count);
            let bare = command
                .filter(|_| family == Family::Grep)
                .and_then(grep_args::parse)
                .filter(grep_args::GrepArgs::bare_lines);
            if let Some(args) = bare {
                // One file without `-n`: the command's pattern tells matches from context.
                let plan = search::bare_grep_plan(&lines, &args.matcher, config);
                (Family::Grep, Body::Lines(plan))
            } else {
                if family == Family::Grep && search::grep_shaped_share(&lines) < 0.5 {
                    // e.g. `ls -R && grep ...`: the command says grep, the content says otherwise.
                    family = detect::detect_from_content(tool, exit_code, output, error_count);
                }
                if family == Family::FileView {
                    // A view named by content only (no command) cannot happen; keep it exact.
                    return unchanged(output, family);
                }
                dispatch(family, output, &lines, &errors, config)
            }
        }
    };
    let mut squashed = match body {
        Body::Unchanged => return unchanged(output, family),
        Body::Whole(text) => Outcome::whole(text),
        Body::Lines(plan) => lines::render(&lines, &plan).into(),
    };
    // Line squashers render lines without the final newline; restore the original's.
    if squashed.represented.is_some() && output.ends_with('\n') {
        squashed.text.push('\n');
    }
    if let Some(represented) = squashed.represented {
        debug_assert_eq!(
            represented + squashed.omitted,
            lines.len(),
            "kept + omitted must equal the original line count"
        );
    }
    // A squash that saves less than the spill marker costs is not worth a spill.
    if squashed.text.len() + MIN_SAVING_BYTES >= output.len() || squashed.text == output {
        return unchanged(output, family);
    }
    Squashed {
        stats: SquashStats {
            family,
            bytes_before: output.len(),
            bytes_after: squashed.text.len(),
            lines_before: lines.len(),
            lines_after: squashed.lines_after,
            lines_omitted: squashed.omitted,
        },
        text: squashed.text,
        dropped_anything: true,
    }
}

fn unchanged(output: &str, family: Family) -> Squashed {
    let n = lines::split_lines(output).len();
    Squashed {
        text: output.to_owned(),
        dropped_anything: false,
        stats: SquashStats {
            family,
            bytes_before: output.len(),
            bytes_after: output.len(),
            lines_before: n,
            lines_after: n,
            lines_omitted: 0,
        },
    }
}

#[cfg(test)]
mod tests;
