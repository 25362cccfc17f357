//! `/rewind` (and Esc Esc): the list of the session's turns, then a rewind to just before
//! one of them, of the files, the conversation or both (docs/rewind.md, "In the REPL").
//!
//! The plan is shown before anything is written. Files changed outside pith since pith
//! last saw them are named and the user is asked (y/N) before they are overwritten;
//! otherwise the rewind runs at once (it is recorded and can itself be rewound). A
//! refused plan (caps, a missing copy) writes nothing.

use std::fmt::Write as _;

use pith_agent::checkpoints::rewind::RewindPlan;
use pith_session::turns::Turn;
use pith_session::RewindMode;
use tokio::runtime::Runtime;

use super::App;
use crate::input::{Entry, LineSource};
use crate::render::Tone;

impl App {
    /// `/rewind` without a turn lists the turns; with one, rewinds to just before it.
    pub(super) fn rewind(
        &mut self,
        runtime: &Runtime,
        source: &mut LineSource,
        turn: Option<u64>,
        mode: RewindMode,
    ) {
        match turn {
            None => self.rewind_list(),
            Some(turn) => self.rewind_to(runtime, source, turn, mode),
        }
    }

    fn rewind_list(&mut self) {
        let turns = match self.conversation.turns() {
            Ok(turns) => turns,
            Err(error) => {
                self.screen.message(Tone::Error, &error.to_string());
                return;
            }
        };
        if turns.is_empty() {
            self.screen
                .message(Tone::Dim, "Nothing to rewind: no turn in this session yet.");
            return;
        }
        self.screen.block(&turn_list(&turns));
        let how = if self.conversation.keeps_checkpoints() {
            "Rewind with /rewind N [code|conversation|both] (default both): code puts the files \
             back as they were before turn N, conversation continues from before it."
        } else {
            "Checkpoints are off: only the conversation can be rewound, \
             with /rewind N conversation."
        };
        self.screen.message(Tone::Dim, how);
        if self.screen.is_interactive() {
            self.type_ahead = "/rewind ".to_owned();
        }
    }

    /// `/rewind undo`: the latest rewind of the files, undone, asked about and carried
    /// out as any rewind (an undo is one, so undoing again redoes it).
    pub(super) fn rewind_undo(&mut self, runtime: &Runtime, source: &mut LineSource) {
        match runtime.block_on(self.conversation.plan_undo()) {
            Ok(plan) => self.rewind_with(runtime, source, plan, RewindMode::Code),
            Err(error) => self.screen.message(Tone::Error, &error.to_string()),
        }
    }

    fn rewind_to(
        &mut self,
        runtime: &Runtime,
        source: &mut LineSource,
        turn: u64,
        mode: RewindMode,
    ) {
        match runtime.block_on(self.conversation.plan_rewind(turn, mode)) {
            Ok(plan) => self.rewind_with(runtime, source, plan, mode),
            Err(error) => self.screen.message(Tone::Error, &error.to_string()),
        }
    }

    /// Shows `plan`, asks about files changed outside pith, and carries it out.
    fn rewind_with(
        &mut self,
        runtime: &Runtime,
        source: &mut LineSource,
        plan: RewindPlan,
        mode: RewindMode,
    ) {
        self.screen.block(&plan_text(&plan));
        let refused = plan.refused();
        if !refused.is_empty() {
            let text = format!("Cannot rewind, nothing was written: {}", refused.join("; "));
            self.screen.message(Tone::Error, &text);
            return;
        }
        let outside = plan.changed_outside();
        if !outside.is_empty() {
            let mut text = String::from(
                "These files changed outside pith since pith last saw them; the rewind \
                 overwrites them (their contents now are kept, so rewinding the rewind \
                 brings them back):",
            );
            for path in &outside {
                let _ = write!(text, "\n  {path}");
            }
            self.screen.message(Tone::Error, &text);
            self.screen
                .message(Tone::Info, "Overwrite them and rewind? [y/N]");
            let yes = matches!(
                source.read(""),
                Ok(Entry::Line(answer)) if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes")
            );
            if !yes {
                self.screen
                    .message(Tone::Dim, "Rewind cancelled: nothing was written.");
                return;
            }
        }
        let number = plan.turn.number;
        let undo = plan.undo;
        let text = self.conversation.user_text_at(plan.turn.seq).ok().flatten();
        match runtime.block_on(self.conversation.rewind(plan)) {
            Ok(done) => {
                let mut summary = if undo {
                    format!(
                        "Undid the latest rewind: {} file(s) restored (/rewind undo again redoes it).",
                        done.record.restored.len()
                    )
                } else {
                    format!(
                        "Rewound to before turn {number}: {} file(s) restored (/rewind undo undoes it).",
                        done.record.restored.len()
                    )
                };
                if mode.rewinds_conversation() {
                    summary.push_str(&format!(
                        " The conversation continues from before turn {number}"
                    ));
                    match text {
                        Some(text) if self.screen.is_interactive() => {
                            summary.push_str("; its message is back in the input line.");
                            self.type_ahead = text;
                        }
                        _ => summary.push('.'),
                    }
                }
                if done.not_as_planned.is_empty() {
                    self.screen.message(Tone::Info, &summary);
                } else {
                    self.screen.message(
                        Tone::Error,
                        &format!(
                            "{summary} But re-read after the rewind, these are not as it left \
                             them (something changed them meanwhile): {}",
                            done.not_as_planned.join(", ")
                        ),
                    );
                }
                self.refresh_status();
            }
            Err(error) => self.screen.message(Tone::Error, &error.to_string()),
        }
    }
}

/// The turns, one a line: number, time, first line of the message, files it changed.
fn turn_list(turns: &[Turn]) -> String {
    let mut out = String::from("Turns of this session:");
    for turn in turns {
        let files = if turn.files.is_empty() {
            String::new()
        } else {
            format!("  [{}]", turn.files.join(", "))
        };
        let _ = write!(
            out,
            "\n{:>4}  {}  {}{files}",
            turn.number,
            short_time(&turn.ts),
            turn.preview
        );
    }
    out
}

/// What the plan does, before it is done.
fn plan_text(plan: &RewindPlan) -> String {
    let mut out = plan.headline();
    let writes = plan.writes();
    if plan.mode.rewinds_code() && writes.is_empty() {
        out.push_str("\n  no file to restore");
    }
    for path in writes {
        let _ = write!(out, "\n  restore {path}");
    }
    if plan.mode.rewinds_conversation() {
        let _ = write!(
            out,
            "\n  the conversation continues from before turn {}",
            plan.turn.number
        );
    }
    out
}

/// A record's `ts` (`2026-12-02T02:14:34.123Z`) as `2026-12-02 02:14 UTC`; any other
/// text as it is.
fn short_time(ts: &str) -> String {
    let well_formed = ts.len() >= 16
        && ts.is_char_boundary(16)
        && ts.as_bytes().get(10) == Some(&b'T')
        && ts.ends_with('Z');
    if well_formed {
        format!("{} {} UTC", &ts[..10], &ts[11..16])
    } else {
        ts.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(number: u64, preview: &str, files: &[&str]) -> Turn {
        Turn {
            number,
            seq: number * 10,
            ts: "2026-12-02T02:14:34.123Z".into(),
            preview: preview.into(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    #[test]
    fn the_list_shows_number_time_preview_and_files() {
        let text = turn_list(&[
            turn(1, "write v2", &["a.txt", "b.txt"]),
            turn(2, "talk", &[]),
        ]);
        assert_eq!(
            text,
            "Turns of this session:\n   1  2026-12-02 02:14 UTC  write v2  [a.txt, b.txt]\n   2  2026-12-02 02:14 UTC  talk"
        );
    }

    #[test]
    fn odd_timestamps_are_shown_as_they_are() {
        assert_eq!(short_time("yesterday"), "yesterday");
        assert_eq!(
            short_time("2026-12-02T02:14:34+01:00"),
            "2026-12-02T02:14:34+01:00"
        );
        assert_eq!(short_time("ééééééééééééééééZ"), "ééééééééééééééééZ");
    }
}
