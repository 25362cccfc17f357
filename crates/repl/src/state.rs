//! The state of a busy REPL — a streaming turn or a manual `/compact` — as a pure state
//! machine: which token a key cancels, what the loader says, and what the user typed
//! meanwhile.
//!
//! docs/repl.md ("Keys"): on `Started` the existing loader text becomes
//! `Compacting...` and the child token is kept; Esc cancels that child only; on
//! `Cancelled` / `Failed` the normal loader returns and the turn goes on; on `Applied`
//! the normal loader returns and the user is told `Context compacted automatically`. The
//! front-end renders what this module decides and persists through the turn recorder;
//! this module never prints and never touches the session.

use pith_core::AutoCompaction;
use tokio_util::sync::CancellationToken;

use crate::keys::{ApprovalKey, KeyAction, Situation};

/// What the busy job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Job {
    /// A user turn through the tool loop.
    Turn,
    /// A manual `/compact`.
    ManualCompaction,
}

/// The text of the single loader (spinner) line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loader {
    /// The model is working on the turn.
    Working,
    /// A compaction (automatic or manual) is running.
    Compacting,
    /// The model is working, and a summary is being prepared in the background.
    WorkingAndPreparing,
}

impl Loader {
    /// The words shown next to the spinner.
    pub fn text(self) -> &'static str {
        match self {
            Loader::Working => "Working...",
            Loader::Compacting => "Compacting...",
            Loader::WorkingAndPreparing => "Working... (preparing a summary; Esc cancels it)",
        }
    }
}

/// Something to tell the user, on its own line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// An automatic compaction was applied (and persisted by the recorder).
    CompactedAutomatically {
        /// Estimated input tokens before.
        tokens_before: u64,
        /// Estimated input tokens after.
        tokens_after: u64,
    },
    /// The user cancelled the automatic compaction; the turn continues unchanged.
    AutoCompactionCancelled,
    /// The automatic compaction failed; the turn continues unchanged.
    AutoCompactionFailed(String),
    /// A summary prepared in the background was not used; the turn continues unchanged.
    PreparedSummaryUnused(String),
    /// The user asked to stop the turn.
    Interrupting,
    /// The user cancelled `/compact`.
    ManualCompactionCancelling,
}

impl Notice {
    /// The line shown for this notice.
    pub fn text(&self) -> String {
        match self {
            Notice::CompactedAutomatically {
                tokens_before,
                tokens_after,
            } => format!(
                "Context compacted automatically ({} → {} tokens)",
                tokens_before, tokens_after
            ),
            Notice::AutoCompactionCancelled => {
                "Compaction cancelled; the turn continues with the full history".to_owned()
            }
            Notice::AutoCompactionFailed(reason) => {
                format!("Compaction failed ({reason}); the turn continues with the full history")
            }
            Notice::PreparedSummaryUnused(reason) => {
                format!("The summary prepared in the background was not used ({reason})")
            }
            Notice::Interrupting => "Interrupted".to_owned(),
            Notice::ManualCompactionCancelling => "Cancelling /compact…".to_owned(),
        }
    }
}

/// What the front-end should do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// Nothing visible changed.
    None,
    /// The loader or type-ahead line changed: redraw it.
    Redraw,
    /// Show a notice (and redraw).
    Notice(Notice),
    /// Send this answer to the waiting permission question.
    Answer(ApprovalKey),
}

/// The busy state; see the module docs.
#[derive(Debug)]
pub struct BusyState {
    job: Job,
    cancel: CancellationToken,
    compactor: Option<CancellationToken>,
    /// The compactor prepares a summary in the background: the turn goes on meanwhile.
    background: bool,
    approval_pending: bool,
    type_ahead: String,
    queued: Vec<String>,
    /// Live cards of the turn's running subagents.
    pub children: crate::child_cards::ChildCards,
}

impl BusyState {
    /// A turn guarded by `cancel` (the parent token).
    pub fn turn(cancel: CancellationToken) -> Self {
        Self::new(Job::Turn, cancel)
    }

    /// A manual compaction guarded by `cancel`.
    pub fn manual_compaction(cancel: CancellationToken) -> Self {
        Self::new(Job::ManualCompaction, cancel)
    }

    fn new(job: Job, cancel: CancellationToken) -> Self {
        Self {
            job,
            cancel,
            compactor: None,
            background: false,
            approval_pending: false,
            type_ahead: String::new(),
            queued: Vec::new(),
            children: Default::default(),
        }
    }

    /// The job.
    pub fn job(&self) -> Job {
        self.job
    }

    /// What the key mapping needs to know.
    pub fn situation(&self) -> Situation {
        Situation {
            auto_compaction_running: self.compactor.is_some(),
            manual_compaction: self.job == Job::ManualCompaction,
            approval_pending: self.approval_pending,
        }
    }

    /// A summary prepared in the background by an earlier turn (`cancel` cancels it):
    /// shown, and cancelled by Esc, as one this turn started.
    pub fn adopt_prepared_summary(&mut self, cancel: Option<CancellationToken>) {
        if let Some(cancel) = cancel.filter(|c| !c.is_cancelled()) {
            self.compactor = Some(cancel);
            self.background = true;
        }
    }

    /// The loader text now.
    pub fn loader(&self) -> Loader {
        match (&self.compactor, self.background) {
            _ if self.job == Job::ManualCompaction => Loader::Compacting,
            (Some(_), true) => Loader::WorkingAndPreparing,
            (Some(_), false) => Loader::Compacting,
            (None, _) => Loader::Working,
        }
    }

    /// Follows the automatic compaction lifecycle; returns what to tell the user.
    pub fn on_auto_compaction(&mut self, event: &AutoCompaction) -> Option<Notice> {
        match event {
            AutoCompaction::Started {
                cancel, background, ..
            } => {
                self.compactor = Some(cancel.clone());
                self.background = *background;
                None
            }
            AutoCompaction::Unused { reason, .. } => {
                self.compactor = None;
                Some(Notice::PreparedSummaryUnused(reason.clone()))
            }
            AutoCompaction::Applied { figures, .. } => {
                self.compactor = None;
                Some(Notice::CompactedAutomatically {
                    tokens_before: figures.tokens_before,
                    tokens_after: figures.tokens_after,
                })
            }
            AutoCompaction::Cancelled => {
                self.compactor = None;
                Some(Notice::AutoCompactionCancelled)
            }
            AutoCompaction::Failed { reason } => {
                self.compactor = None;
                Some(Notice::AutoCompactionFailed(reason.clone()))
            }
        }
    }

    /// A permission question appeared (true) or was answered (false).
    pub fn set_approval_pending(&mut self, pending: bool) {
        self.approval_pending = pending;
    }

    /// Carries out a key's action: cancels the right token, edits the type-ahead line.
    pub fn apply(&mut self, action: KeyAction) -> Reaction {
        match action {
            KeyAction::CancelCompactor => match &self.compactor {
                Some(child) => {
                    child.cancel();
                    // A background one is told cancelled only at the loop's next step:
                    // the loader returns at once.
                    if self.background {
                        self.compactor = None;
                        self.background = false;
                    }
                    Reaction::Redraw
                }
                None => Reaction::None,
            },
            KeyAction::CancelManualCompaction => {
                if self.cancel.is_cancelled() {
                    return Reaction::None;
                }
                self.cancel.cancel();
                Reaction::Notice(Notice::ManualCompactionCancelling)
            }
            KeyAction::CancelTurn => {
                if self.cancel.is_cancelled() {
                    return Reaction::None;
                }
                self.cancel.cancel();
                // A summary prepared since an earlier turn is not under this turn's
                // token: stopping the turn stops it too.
                if let Some(compactor) = self.compactor.as_ref().filter(|_| self.background) {
                    compactor.cancel();
                }
                Reaction::Notice(Notice::Interrupting)
            }
            KeyAction::Answer(answer) => {
                self.approval_pending = false;
                Reaction::Answer(answer)
            }
            KeyAction::Type(c) => {
                self.type_ahead.push(c);
                Reaction::Redraw
            }
            KeyAction::Backspace => {
                if self.type_ahead.pop().is_some() {
                    Reaction::Redraw
                } else {
                    Reaction::None
                }
            }
            KeyAction::QueueLine => {
                let line = std::mem::take(&mut self.type_ahead);
                if line.trim().is_empty() {
                    return Reaction::None;
                }
                self.queued.push(line);
                Reaction::Redraw
            }
            KeyAction::Nothing => Reaction::None,
        }
    }

    /// The line being typed meanwhile.
    pub fn type_ahead(&self) -> &str {
        &self.type_ahead
    }

    /// Lines queued with Enter meanwhile.
    pub fn queued(&self) -> &[String] {
        &self.queued
    }

    /// Ends the busy state: the queued lines (in order), then the unfinished type-ahead
    /// line as the next prompt's starting text.
    pub fn finish(self) -> (Vec<String>, String) {
        (self.queued, self.type_ahead)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::action_for;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use pith_core::CompactionFigures;

    fn press(state: &mut BusyState, code: KeyCode, modifiers: KeyModifiers) -> Reaction {
        let action = action_for(&KeyEvent::new(code, modifiers), state.situation());
        state.apply(action)
    }

    fn esc(state: &mut BusyState) -> Reaction {
        press(state, KeyCode::Esc, KeyModifiers::NONE)
    }

    #[test]
    fn esc_cancels_only_the_compactor_and_the_turn_keeps_streaming() {
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        assert_eq!(state.loader(), Loader::Working);
        let child = turn.child_token();
        state.on_auto_compaction(&AutoCompaction::Started {
            cancel: child.clone(),
            tokens_before: 0,
            background: false,
        });
        assert_eq!(
            state.loader(),
            Loader::Compacting,
            "Started must switch the loader text"
        );
        assert_eq!(esc(&mut state), Reaction::Redraw);
        assert!(child.is_cancelled(), "Esc must cancel the child compactor");
        assert!(
            !turn.is_cancelled(),
            "Esc must leave the parent turn running"
        );

        let notice = state.on_auto_compaction(&AutoCompaction::Cancelled);
        assert_eq!(notice, Some(Notice::AutoCompactionCancelled));
        assert_eq!(
            state.loader(),
            Loader::Working,
            "the normal loader must return"
        );
        assert_eq!(
            esc(&mut state),
            Reaction::None,
            "Esc without a compaction does nothing"
        );
        assert!(!turn.is_cancelled());
    }

    #[test]
    fn a_background_summary_shows_beside_the_work_and_esc_cancels_only_it() {
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        let child = turn.child_token();
        state.on_auto_compaction(&AutoCompaction::Started {
            cancel: child.clone(),
            tokens_before: 0,
            background: true,
        });
        assert_eq!(state.loader(), Loader::WorkingAndPreparing);
        assert_eq!(esc(&mut state), Reaction::Redraw);
        assert!(child.is_cancelled() && !turn.is_cancelled());
        assert_eq!(
            state.loader(),
            Loader::Working,
            "the loader returns at once"
        );
        assert_eq!(
            esc(&mut state),
            Reaction::None,
            "a second Esc has nothing to cancel"
        );
        assert!(!turn.is_cancelled());
    }

    #[test]
    fn a_summary_prepared_in_an_earlier_turn_is_adopted_and_stopped_with_the_turn() {
        let earlier = CancellationToken::new();
        let prepared = earlier.child_token();
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        state.adopt_prepared_summary(Some(prepared.clone()));
        assert_eq!(state.loader(), Loader::WorkingAndPreparing);
        let notice = state.on_auto_compaction(&AutoCompaction::Unused {
            reason: "the history was rewritten".into(),
            usage: Default::default(),
            model: None,
        });
        assert!(matches!(notice, Some(Notice::PreparedSummaryUnused(_))));
        assert_eq!(state.loader(), Loader::Working);
        state.adopt_prepared_summary(Some(prepared.clone()));
        press(&mut state, KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert!(turn.is_cancelled() && prepared.is_cancelled());
    }

    #[test]
    fn an_applied_compaction_restores_the_loader_and_announces_itself() {
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        state.on_auto_compaction(&AutoCompaction::Started {
            cancel: turn.child_token(),
            tokens_before: 0,
            background: false,
        });
        let notice = state.on_auto_compaction(&AutoCompaction::Applied {
            replacement: Vec::new(),
            summary: "private".into(),
            usage: None,
            figures: CompactionFigures {
                tokens_before: 900,
                tokens_after: 100,
                ..CompactionFigures::default()
            },
        });
        let notice = notice.expect("Applied must be announced");
        assert_eq!(
            notice.text(),
            "Context compacted automatically (900 → 100 tokens)"
        );
        assert!(
            !notice.text().contains("private"),
            "the summary is never shown"
        );
        assert_eq!(state.loader(), Loader::Working);
    }

    #[test]
    fn a_failed_compaction_restores_the_loader_and_the_turn_continues() {
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        state.on_auto_compaction(&AutoCompaction::Started {
            cancel: turn.child_token(),
            tokens_before: 0,
            background: false,
        });
        let notice = state.on_auto_compaction(&AutoCompaction::Failed {
            reason: "empty summary".into(),
        });
        assert!(matches!(notice, Some(Notice::AutoCompactionFailed(_))));
        assert_eq!(state.loader(), Loader::Working);
        assert!(!turn.is_cancelled());
    }

    #[test]
    fn ctrl_c_cancels_the_turn_and_the_compactor_under_it() {
        let turn = CancellationToken::new();
        let mut state = BusyState::turn(turn.clone());
        let child = turn.child_token();
        state.on_auto_compaction(&AutoCompaction::Started {
            cancel: child.clone(),
            tokens_before: 0,
            background: false,
        });
        let reaction = press(&mut state, KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(reaction, Reaction::Notice(Notice::Interrupting));
        assert!(turn.is_cancelled() && child.is_cancelled());
        let again = press(&mut state, KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(again, Reaction::None, "a second Ctrl+C says nothing new");
    }

    #[test]
    fn manual_compaction_shows_compacting_and_esc_cancels_it() {
        let cancel = CancellationToken::new();
        let mut state = BusyState::manual_compaction(cancel.clone());
        assert_eq!(state.loader(), Loader::Compacting);
        assert_eq!(
            esc(&mut state),
            Reaction::Notice(Notice::ManualCompactionCancelling)
        );
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn input_typed_during_compact_is_queued_in_order() {
        let mut state = BusyState::manual_compaction(CancellationToken::new());
        for c in "first".chars() {
            press(&mut state, KeyCode::Char(c), KeyModifiers::NONE);
        }
        press(&mut state, KeyCode::Enter, KeyModifiers::NONE);
        press(&mut state, KeyCode::Enter, KeyModifiers::NONE);
        for c in "secx".chars() {
            press(&mut state, KeyCode::Char(c), KeyModifiers::NONE);
        }
        press(&mut state, KeyCode::Backspace, KeyModifiers::NONE);
        press(&mut state, KeyCode::Char('o'), KeyModifiers::SHIFT);
        assert_eq!(state.queued(), ["first".to_owned()]);
        press(&mut state, KeyCode::Enter, KeyModifiers::NONE);
        press(&mut state, KeyCode::Char('n'), KeyModifiers::NONE);
        let (queued, unfinished) = state.finish();
        assert_eq!(queued, vec!["first".to_owned(), "seco".to_owned()]);
        assert_eq!(unfinished, "n");
    }

    #[test]
    fn a_permission_answer_clears_the_question() {
        let mut state = BusyState::turn(CancellationToken::new());
        state.set_approval_pending(true);
        let reaction = press(&mut state, KeyCode::Char('y'), KeyModifiers::NONE);
        assert_eq!(reaction, Reaction::Answer(ApprovalKey::Once));
        assert!(!state.situation().approval_pending);
        assert_eq!(state.type_ahead(), "", "the answer must not be typed ahead");
    }
}
