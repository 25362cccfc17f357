//! `/rewind` (and Esc Esc): the list of the session's turns, then a rewind to just before
//! one of them, of the files, the conversation or both (docs/rewind.md, "In the REPL").
//!
//! The plan is shown before anything is written. Files changed outside pith since pith
//! last saw them are named and the user is asked (y/N) before they are overwritten;
//! otherwise the rewind runs at once (it is recorded and can itself be rewound). A
//! refused plan (caps, a missing copy) writes nothing.

use pith_agent::RewindPlan;
use pith_agent::{rewind_plan_lines, rewind_turn_lines};
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
        let mut list = vec!["Turns of this session:".to_owned()];
        list.extend(rewind_turn_lines(&turns));
        self.screen.block(&list.join("\n"));
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
        self.screen.block(&rewind_plan_lines(&plan).join("\n"));
        let refused = plan.refused();
        if !refused.is_empty() {
            let text = format!("Cannot rewind, nothing was written: {}", refused.join("; "));
            self.screen.message(Tone::Error, &text);
            return;
        }
        let outside = plan.changed_outside();
        if !outside.is_empty() {
            self.screen.message(
                Tone::Error,
                &format!(
                    "{} file(s) above changed outside pith since pith last saw them; the \
                     rewind overwrites them (their contents now are kept, so rewinding the \
                     rewind brings them back).",
                    outside.len()
                ),
            );
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
