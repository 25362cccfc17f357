//! The turn recorder: turns the tool loop's events into session records, the one way
//! every front-end persists a turn.
//!
//! It keeps the turn's memory (messages appended since the last checkpoint) and the
//! visible text, and at the two boundaries where the loop rewrites history it writes the
//! checkpoint of what came before together with the compaction record, atomically
//! (`append_batch`): an automatic compaction (seed 002 "Applied") and a micro-compaction.
//! After such a boundary the memory and the current text start afresh; the text seen
//! before it is kept as `completed_text`, so the final answer is the completed text plus
//! the current text, with no separator added by the boundary.
//!
//! Consecutive assistant messages with text are separated by one newline when the earlier
//! text does not already end with one (two model requests are two messages).

use pith_core::events::AutoCompaction;
use pith_core::{LoopEvent, Message, Role, Usage};

use crate::error::Result;
use crate::event::{CompactionTrigger, Event};
use crate::items::items_from_messages;
use crate::store::Session;

/// A compaction the recorder persisted, for front-end reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionNote {
    /// What triggered it (`micro` compactions are reported with their own flag).
    pub trigger: CompactionTrigger,
    /// True for a micro-compaction (dedup + prune).
    pub micro: bool,
    /// Estimated tokens before.
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
}

/// What a front-end should do after [`TurnRecorder::observe`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// Nothing in particular.
    Nothing,
    /// A compaction was persisted and installed; show it if interactive.
    Compacted(CompactionNote),
}

/// Records one user turn; see the module docs.
#[derive(Debug, Default)]
pub struct TurnRecorder {
    memory: Vec<Message>,
    completed_text: String,
    current_text: String,
    separator_pending: bool,
    usage: Usage,
    usage_seen: bool,
    compactions: Vec<CompactionNote>,
}

impl TurnRecorder {
    /// A recorder for a new turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one loop event; persists at compaction boundaries.
    ///
    /// On error (e.g. a full disk) nothing of the boundary was written and the recorder's
    /// state is unchanged, so the caller can report it and still finish the turn.
    pub fn observe(&mut self, event: &LoopEvent, session: &mut Session) -> Result<Observed> {
        match event {
            LoopEvent::TextDelta(delta) => {
                if self.separator_pending && !delta.is_empty() {
                    let previous = if self.current_text.is_empty() {
                        &self.completed_text
                    } else {
                        &self.current_text
                    };
                    if !previous.is_empty() && !previous.ends_with('\n') {
                        self.current_text.push('\n');
                    }
                    self.separator_pending = false;
                }
                self.current_text.push_str(delta);
            }
            LoopEvent::MessageAppended(message) => {
                if message.role == Role::Assistant && !message.text_content().is_empty() {
                    self.separator_pending = true;
                }
                self.memory.push(message.clone());
            }
            LoopEvent::Usage(usage) => {
                self.usage += *usage;
                self.usage_seen = true;
            }
            LoopEvent::AutoCompaction(AutoCompaction::Applied {
                replacement,
                summary,
                usage,
                tokens_before,
                tokens_after,
            }) => {
                let checkpoint = self.checkpoint(false, None);
                let record = Event::compaction(
                    CompactionTrigger::Auto,
                    replacement,
                    summary.clone(),
                    *tokens_before,
                    *tokens_after,
                    *usage,
                );
                session.append_batch(vec![checkpoint, record])?;
                if let Some(usage) = usage {
                    self.usage += *usage;
                    self.usage_seen = true;
                }
                let note = CompactionNote {
                    trigger: CompactionTrigger::Auto,
                    micro: false,
                    tokens_before: *tokens_before,
                    tokens_after: *tokens_after,
                };
                self.after_boundary(note);
                return Ok(Observed::Compacted(note));
            }
            LoopEvent::MicroCompaction(step) => {
                let checkpoint = self.checkpoint(false, None);
                session.append_batch(vec![checkpoint, Event::micro_compaction(step)])?;
                let note = CompactionNote {
                    trigger: CompactionTrigger::Auto,
                    micro: true,
                    tokens_before: step.tokens_before,
                    tokens_after: step.tokens_after,
                };
                self.after_boundary(note);
                return Ok(Observed::Compacted(note));
            }
            _ => {}
        }
        Ok(Observed::Nothing)
    }

    fn after_boundary(&mut self, note: CompactionNote) {
        self.memory.clear();
        self.completed_text.push_str(&self.current_text);
        self.current_text.clear();
        self.usage = Usage::default();
        self.usage_seen = false;
        self.compactions.push(note);
    }

    fn checkpoint(&self, interrupted: bool, error: Option<String>) -> Event {
        Event::AssistantTurn {
            messages: self.memory.clone(),
            items: items_from_messages(&self.memory),
            usage: self.usage_seen.then_some(self.usage),
            interrupted,
            error,
        }
    }

    /// Writes the final `assistant_turn` checkpoint of the turn.
    pub fn finish(
        &mut self,
        session: &mut Session,
        interrupted: bool,
        error: Option<String>,
    ) -> Result<()> {
        let checkpoint = self.checkpoint(interrupted, error);
        session.append(checkpoint)?;
        self.memory.clear();
        Ok(())
    }

    /// The answer so far: completed pre-compaction text + current text.
    pub fn final_text(&self) -> String {
        format!("{}{}", self.completed_text, self.current_text)
    }

    /// Text streamed since the last compaction boundary.
    pub fn current_text(&self) -> &str {
        &self.current_text
    }

    /// Compactions persisted during this turn.
    pub fn compactions(&self) -> &[CompactionNote] {
        &self.compactions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::project_model;
    use crate::read::ReadOptions;
    use crate::store::{NewSession, SessionStore};
    use pith_core::events::MicroCompaction;

    fn session() -> (tempfile::TempDir, Session) {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::at(root.path().join("sessions"));
        let session = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "test".into(),
                model: "m".into(),
            })
            .unwrap();
        (root, session)
    }

    fn feed(recorder: &mut TurnRecorder, session: &mut Session, events: Vec<LoopEvent>) {
        for event in events {
            recorder.observe(&event, session).unwrap();
        }
    }

    #[test]
    fn an_applied_compaction_writes_checkpoint_and_record_together_and_splits_the_text() {
        let (_root, mut session) = session();
        session.append(Event::user_text("fix it")).unwrap();
        let mut recorder = TurnRecorder::new();
        let first = Message::assistant("Let me look.");
        feed(
            &mut recorder,
            &mut session,
            vec![
                LoopEvent::TextDelta("Let me look.".into()),
                LoopEvent::MessageAppended(first.clone()),
            ],
        );
        let replacement = vec![
            Message::system("sys"),
            Message::user("<compacted_context>S</compacted_context>"),
        ];
        let observed = recorder
            .observe(
                &LoopEvent::AutoCompaction(AutoCompaction::Applied {
                    replacement: replacement.clone(),
                    summary: "S".into(),
                    usage: None,
                    tokens_before: 1000,
                    tokens_after: 10,
                }),
                &mut session,
            )
            .unwrap();
        assert!(matches!(
            observed,
            Observed::Compacted(CompactionNote { micro: false, .. })
        ));
        feed(
            &mut recorder,
            &mut session,
            vec![
                LoopEvent::TextDelta("Done.".into()),
                LoopEvent::MessageAppended(Message::assistant("Done.")),
            ],
        );
        recorder.finish(&mut session, false, None).unwrap();
        assert_eq!(recorder.final_text(), "Let me look.\nDone.");

        let transcript = session.read(ReadOptions::default()).unwrap();
        let kinds: Vec<&str> = transcript.records.iter().map(|r| r.event.kind()).collect();
        assert_eq!(
            kinds,
            vec![
                "session_started",
                "user_message",
                "assistant_turn",
                "compaction_applied",
                "assistant_turn"
            ]
        );
        let model = project_model(&transcript.records);
        assert_eq!(
            model,
            vec![
                Message::user("<compacted_context>S</compacted_context>"),
                Message::assistant("Done.")
            ]
        );
        match &transcript.records[2].event {
            Event::AssistantTurn { messages, .. } => assert_eq!(messages, &vec![first]),
            other => panic!("expected the checkpoint, got {other:?}"),
        }
    }

    #[test]
    fn a_micro_compaction_checkpoints_the_turn_first_so_projection_never_duplicates() {
        let (_root, mut session) = session();
        session.append(Event::user_text("go")).unwrap();
        let mut recorder = TurnRecorder::new();
        let call = Message::assistant_with_calls(
            "",
            vec![pith_core::ToolCall {
                id: "c".into(),
                name: "read".into(),
                arguments: serde_json::json!({}),
            }],
        );
        let result = Message::tool_result("c", "big", false);
        feed(
            &mut recorder,
            &mut session,
            vec![
                LoopEvent::MessageAppended(call.clone()),
                LoopEvent::MessageAppended(result),
            ],
        );
        let pruned = vec![
            Message::user("go"),
            call,
            Message::tool_result("c", "[Old tool result content cleared]", false),
        ];
        feed(
            &mut recorder,
            &mut session,
            vec![LoopEvent::MicroCompaction(MicroCompaction {
                replacement: pruned.clone(),
                tokens_reclaimed: 5,
                tokens_before: 10,
                tokens_after: 5,
            })],
        );
        recorder.finish(&mut session, false, None).unwrap();
        let transcript = session.read(ReadOptions::default()).unwrap();
        assert_eq!(project_model(&transcript.records), pruned);
    }

    #[test]
    fn an_interrupted_turn_is_recorded_with_its_error() {
        let (_root, mut session) = session();
        let mut recorder = TurnRecorder::new();
        feed(
            &mut recorder,
            &mut session,
            vec![LoopEvent::TextDelta("partial".into())],
        );
        recorder
            .finish(&mut session, true, Some("cancelled".into()))
            .unwrap();
        let transcript = session.read(ReadOptions::default()).unwrap();
        match &transcript.records.last().unwrap().event {
            Event::AssistantTurn {
                interrupted, error, ..
            } => {
                assert!(*interrupted);
                assert_eq!(error.as_deref(), Some("cancelled"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(recorder.final_text(), "partial");
    }
}
