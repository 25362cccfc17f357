//! Recording a turn: the loop's events become session records, and history rewrites are
//! written before the loop applies them.
//!
//! [`TurnRecorder`] keeps the turn's memory (messages appended since the last checkpoint)
//! and the visible text. [`Recording`] is the [`TurnSink`] a conversation hands the loop:
//! it lets the recorder observe every event before the front-end sees it, and on
//! [`TurnSink::persist`] writes the checkpoint of what came before together with the
//! rewrite's record, atomically (`append_batch`). Only when that write succeeded does the
//! loop install the rewrite; after it the memory and the current text start afresh, and
//! the text seen before is kept as `completed_text`, so the final answer is the completed
//! text plus the current text, with no separator added by the boundary.
//!
//! Consecutive assistant messages with text are separated by one newline when the earlier
//! text does not already end with one (two model requests are two messages).

use crate::checkpoints::Checkpoints;
use pith_core::{
    ChildRun, CompactionTrigger, EventSink, HistoryRewrite, LoopEvent, Message, PersistError,
    RequestReport, Role, TurnSink, Usage,
};
use pith_session::{items_from_messages, Event, ModelUsage, Session, TranscriptItem};

/// A compaction the recorder persisted, for front-end reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionNote {
    /// What triggered it (`micro` compactions are reported with their own flag).
    pub trigger: CompactionTrigger,
    /// True for a micro-compaction (dedup + prune) or an overflow fit.
    pub micro: bool,
    /// True for an overflow fit (a rule-based rewrite because nothing else could make
    /// the request fit).
    pub overflow: bool,
    /// Estimated tokens before.
    pub tokens_before: u64,
    /// Estimated tokens after.
    pub tokens_after: u64,
    /// Tokens of the session ledger the replacement carries (0 without one).
    pub ledger_tokens: u64,
}

impl CompactionNote {
    /// `auto`, `micro` or `manual`, as reports name it.
    pub fn kind(&self) -> &'static str {
        match (self.micro, self.trigger) {
            (true, _) if self.overflow => "overflow",
            (true, _) => "micro",
            (false, CompactionTrigger::Auto) => "auto",
            (false, CompactionTrigger::Manual) => "manual",
        }
    }
}

/// What compaction did and cost over a turn (or a session): attempts and how they ended,
/// and the usage of the summary requests, failed ones included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CompactionTotals {
    /// Automatic LLM compactions started.
    pub llm_attempts: u32,
    /// Of them, applied.
    pub applied: u32,
    /// Failed (the request, the summary, the replacement or its write).
    pub failed: u32,
    /// Cancelled (Esc, or the turn).
    pub cancelled: u32,
    /// Micro-compactions applied.
    pub micro: u32,
    /// Overflow fits recorded (requests that could not fit otherwise, trimmed).
    pub overflow_fits: u32,
    /// Summary requests sent (a compaction whose model called tools sends several).
    pub summary_requests: u32,
    /// Their usage.
    pub usage: Usage,
    /// Of the automatic compactions started, those prepared in the background.
    pub prepared: u32,
    /// Summaries prepared in the background and never applied.
    pub unused: u32,
    /// What those unused summaries used (part of `usage`).
    pub unused_usage: Usage,
    /// The part of `usage` sent to the compaction model (`[context] compaction_model`),
    /// charged at its prices (reports show it apart).
    #[serde(skip)]
    pub compaction_model_usage: Usage,
    /// The part of `unused_usage` sent to the compaction model.
    #[serde(skip)]
    pub compaction_model_unused_usage: Usage,
}

impl std::ops::AddAssign for CompactionTotals {
    fn add_assign(&mut self, other: Self) {
        self.llm_attempts += other.llm_attempts;
        self.applied += other.applied;
        self.failed += other.failed;
        self.cancelled += other.cancelled;
        self.micro += other.micro;
        self.overflow_fits += other.overflow_fits;
        self.summary_requests += other.summary_requests;
        self.usage += other.usage;
        self.prepared += other.prepared;
        self.unused += other.unused;
        self.unused_usage += other.unused_usage;
        self.compaction_model_usage += other.compaction_model_usage;
        self.compaction_model_unused_usage += other.compaction_model_unused_usage;
    }
}

impl CompactionTotals {
    /// Counts one loop event.
    pub fn observe(&mut self, event: &LoopEvent) {
        match event {
            LoopEvent::AutoCompaction(lifecycle) => match lifecycle {
                pith_core::AutoCompaction::Started { background, .. } => {
                    self.llm_attempts += 1;
                    self.prepared += u32::from(*background);
                }
                pith_core::AutoCompaction::Unused { usage, model, .. } => {
                    self.unused += 1;
                    self.unused_usage += *usage;
                    if model.is_some() {
                        self.compaction_model_unused_usage += *usage;
                    }
                }
                pith_core::AutoCompaction::Applied { .. } => self.applied += 1,
                pith_core::AutoCompaction::Failed { .. } => self.failed += 1,
                pith_core::AutoCompaction::Cancelled => self.cancelled += 1,
            },
            LoopEvent::MicroCompaction(step) => match step.reason {
                pith_core::events::MicroReason::Prune => self.micro += 1,
                pith_core::events::MicroReason::Overflow => self.overflow_fits += 1,
            },
            LoopEvent::RequestFinished(report)
                if report.purpose == pith_core::RequestPurpose::Compaction =>
            {
                self.summary_requests += 1;
                self.usage += report.usage;
                if report.compaction_model.is_some() {
                    self.compaction_model_usage += report.usage;
                }
            }
            _ => {}
        }
    }
}

/// Records one user turn; see the module docs.
#[derive(Debug, Default)]
pub struct TurnRecorder {
    memory: Vec<Message>,
    /// Notices shown during the turn, with the number of messages before each.
    notices: Vec<(usize, String)>,
    completed_text: String,
    current_text: String,
    separator_pending: bool,
    usage: Usage,
    usage_seen: bool,
    /// What this part of the turn sent to the compaction model (not in `usage`).
    compaction_model_usage: Option<ModelUsage>,
    compactions: Vec<CompactionNote>,
    /// Child conversations of the turn's `task` calls (kept across boundaries).
    children: Vec<ChildRun>,
    /// What the turn's compactions did and cost.
    compaction: CompactionTotals,
    /// The turn's model requests (its compactions' included), in order.
    requests: Vec<RequestReport>,
}

impl TurnRecorder {
    /// A recorder for a new turn.
    pub fn new() -> Self {
        Self::default()
    }

    /// Follows one loop event: the turn's messages, text and usage.
    pub fn observe(&mut self, event: &LoopEvent) {
        self.compaction.observe(event);
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
            LoopEvent::ToolCallFinished { result, .. } => {
                if let Some(child) = &result.child_session {
                    self.children.push(child.clone());
                }
            }
            LoopEvent::OutputTruncated { reason } => self
                .notices
                .push((self.memory.len(), format!("truncated: {reason}"))),
            // Every request the turn sent — its own and its compactions' summaries,
            // failed ones included — counts in the checkpoint that closes this part of
            // the turn (pith_session::spend).
            // A compaction model's summaries are charged at its prices: kept apart.
            LoopEvent::RequestFinished(report) => {
                match &report.compaction_model {
                    Some(model) => {
                        let spent = self
                            .compaction_model_usage
                            .get_or_insert_with(|| ModelUsage {
                                model: model.clone(),
                                usage: Usage::default(),
                            });
                        spent.usage += report.usage;
                    }
                    None => {
                        self.usage += report.usage;
                        self.usage_seen = true;
                    }
                }
                self.requests.push(report.clone());
            }
            _ => {}
        }
    }

    /// What the turn's compactions did and cost so far.
    pub fn compaction_totals(&self) -> CompactionTotals {
        self.compaction
    }

    /// Writes `rewrite` to `session`, after the checkpoint of the turn so far when there
    /// is one, atomically. On error nothing was written and the recorder is unchanged.
    pub fn persist(
        &mut self,
        rewrite: &HistoryRewrite,
        session: &mut Session,
    ) -> pith_session::Result<()> {
        let (record, note) = match rewrite {
            HistoryRewrite::Compaction(compaction) => (
                Event::from_compaction(compaction),
                CompactionNote {
                    trigger: compaction.trigger,
                    micro: false,
                    overflow: false,
                    tokens_before: compaction.tokens_before,
                    tokens_after: compaction.tokens_after,
                    ledger_tokens: compaction.carried.ledger_tokens,
                },
            ),
            HistoryRewrite::Micro(step) => (
                Event::micro_compaction(step),
                CompactionNote {
                    trigger: CompactionTrigger::Auto,
                    micro: true,
                    overflow: step.reason == pith_core::events::MicroReason::Overflow,
                    tokens_before: step.tokens_before,
                    tokens_after: step.tokens_after,
                    ledger_tokens: 0,
                },
            ),
        };
        // The compaction's summary requests are its record's; the checkpoint before it
        // holds the turn's other requests (pith_session::spend).
        let (summary, to_compaction_model) = match rewrite {
            HistoryRewrite::Compaction(compaction) => (
                compaction.usage.unwrap_or_default(),
                compaction.model.is_some(),
            ),
            HistoryRewrite::Micro(_) => (Usage::default(), false),
        };
        let before = (self.usage, self.compaction_model_usage.clone());
        if to_compaction_model {
            if let Some(spent) = &mut self.compaction_model_usage {
                spent.usage = spent.usage.saturating_sub(summary);
            }
        } else {
            self.usage = self.usage.saturating_sub(summary);
        }
        let written = if self.has_checkpoint() {
            session.append_batch(vec![self.checkpoint(false, None), record])
        } else {
            session.append(record).map(|_| Vec::new())
        };
        if let Err(error) = written {
            (self.usage, self.compaction_model_usage) = before;
            return Err(error);
        }
        self.after_boundary(note);
        Ok(())
    }

    fn has_checkpoint(&self) -> bool {
        !self.memory.is_empty()
            || (self.usage_seen && !self.usage.is_empty())
            || self.compaction_model_spent().is_some()
    }

    /// What this part of the turn sent to the compaction model and no compaction record
    /// holds, when anything.
    fn compaction_model_spent(&self) -> Option<ModelUsage> {
        self.compaction_model_usage
            .clone()
            .filter(|spent| !spent.usage.is_empty())
    }

    fn after_boundary(&mut self, note: CompactionNote) {
        self.memory.clear();
        self.notices.clear();
        self.completed_text.push_str(&self.current_text);
        self.current_text.clear();
        self.usage = Usage::default();
        self.usage_seen = false;
        self.compaction_model_usage = None;
        self.compactions.push(note);
    }

    fn checkpoint(&self, interrupted: bool, error: Option<String>) -> Event {
        Event::AssistantTurn {
            messages: self.memory.clone(),
            items: self.items(),
            usage: self.usage_seen.then_some(self.usage),
            interrupted,
            error,
            compaction_model_usage: self.compaction_model_spent(),
        }
    }

    /// The visible items of the turn so far: those of its messages, with the notices
    /// (a truncated answer) after the message they followed.
    fn items(&self) -> Vec<TranscriptItem> {
        let mut items = Vec::new();
        let mut notices = self.notices.iter().peekable();
        for (index, message) in self.memory.iter().enumerate() {
            items.extend(items_from_messages(std::slice::from_ref(message)));
            while let Some((_, text)) = notices.next_if(|(after, _)| *after == index + 1) {
                items.push(TranscriptItem::Notice { text: text.clone() });
            }
        }
        items.extend(notices.map(|(_, text)| TranscriptItem::Notice { text: text.clone() }));
        items
    }

    /// Writes the final `assistant_turn` checkpoint of the turn.
    pub fn finish(
        &mut self,
        session: &mut Session,
        interrupted: bool,
        error: Option<String>,
    ) -> pith_session::Result<()> {
        let checkpoint = self.checkpoint(interrupted, error);
        session.append(checkpoint)?;
        self.memory.clear();
        self.notices.clear();
        Ok(())
    }

    /// The child conversations of the turn's `task` calls, in the order they ended.
    pub fn children(&self) -> &[ChildRun] {
        &self.children
    }

    /// The answer so far: completed pre-compaction text + current text.
    pub fn final_text(&self) -> String {
        format!("{}{}", self.completed_text, self.current_text)
    }

    /// Compactions persisted during this turn.
    pub fn compactions(&self) -> &[CompactionNote] {
        &self.compactions
    }

    /// The turn's model requests so far (its compactions' included), in order.
    pub fn requests(&self) -> &[RequestReport] {
        &self.requests
    }
}

/// The [`TurnSink`] of one turn or `/compact`: the recorder observes every event, then
/// the front-end's sink receives it; rewrites are persisted through the recorder.
pub struct Recording<'a> {
    /// The turn's recorder.
    pub recorder: &'a mut TurnRecorder,
    /// The session written to.
    pub session: &'a mut Session,
    /// Where the front-end wants the events.
    pub frontend: &'a mut dyn EventSink,
    /// The conversation's checkpoints, whose observed changes are written as they come.
    pub checkpoints: Option<&'a Checkpoints>,
}

impl Recording<'_> {
    /// Writes the checkpoints observed since the last call ended, and shows each.
    pub fn flush_checkpoints(&mut self) {
        let Some(checkpoints) = self.checkpoints else {
            return;
        };
        for record in checkpoints.take_pending() {
            write_checkpoint(self.session, checkpoints, record, self.frontend);
        }
    }
}

/// Appends `record` (in parts when it is large) and shows it to `frontend`, with a
/// notice naming the files whose content it could not keep; a record that cannot be
/// written is a notice (the copies are in the store all the same).
pub fn write_checkpoint(
    session: &mut Session,
    checkpoints: &Checkpoints,
    record: pith_session::Checkpoint,
    frontend: &mut dyn EventSink,
) {
    let mut summary = checkpoints.summary(&record);
    let omitted = crate::checkpoints::omitted(&record);
    let count = record.changes.len();
    let events = record.split().into_iter().map(Event::Checkpoint).collect();
    match session.append_batch(events) {
        Ok(seqs) => {
            summary.id = seqs.first().copied().unwrap_or_default().to_string();
            frontend.emit(LoopEvent::Checkpoint(summary));
            if !omitted.is_empty() {
                frontend.emit(LoopEvent::Notice(format!(
                    "not copied for rewind: {} — a rewind that would bring back this content \
                     is refused",
                    omitted.join(", ")
                )));
            }
        }
        Err(error) => frontend.emit(LoopEvent::Notice(format!(
            "cannot record a checkpoint of {count} file(s): {error}"
        ))),
    }
}

impl EventSink for Recording<'_> {
    fn emit(&mut self, event: LoopEvent) {
        // A call's checkpoint is taken before its result is emitted.
        if matches!(event, LoopEvent::ToolCallFinished { .. }) {
            self.flush_checkpoints();
        }
        self.recorder.observe(&event);
        if let LoopEvent::Hook(run) = &event {
            // Every hook run is in the transcript; one that cannot be written is still
            // shown, with the reason.
            if let Err(error) = self.session.append(Event::HookRun(run.clone())) {
                self.frontend.emit(LoopEvent::Notice(format!(
                    "cannot record the {} hook's run: {error}",
                    run.event
                )));
            }
        }
        self.frontend.emit(event);
    }
}

impl TurnSink for Recording<'_> {
    fn persist(&mut self, rewrite: &HistoryRewrite) -> Result<(), PersistError> {
        self.recorder
            .persist(rewrite, self.session)
            .map_err(|error| PersistError(error.to_string()))
    }
}

#[cfg(test)]
mod compaction_model_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::events::MicroCompaction;
    use pith_session::{project_model, NewSession, ReadOptions, SessionStore};

    pub(super) fn session() -> (tempfile::TempDir, Session) {
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

    pub(super) fn observe(recorder: &mut TurnRecorder, events: Vec<LoopEvent>) {
        for event in events {
            recorder.observe(&event);
        }
    }

    fn kinds(session: &Session) -> Vec<String> {
        session
            .read(ReadOptions::default())
            .unwrap()
            .records
            .iter()
            .map(|r| r.event.kind().to_owned())
            .collect()
    }

    fn auto(summary: &str) -> HistoryRewrite {
        HistoryRewrite::Compaction(pith_core::Compaction {
            trigger: CompactionTrigger::Auto,
            replacement: vec![Message::user(format!(
                "<compacted_context>{summary}</compacted_context>"
            ))],
            summary: summary.into(),
            tokens_before: 1000,
            tokens_after: 10,
            usage: None,
            carried: pith_core::Carried::default(),
            model: None,
        })
    }

    #[test]
    fn a_persisted_compaction_writes_checkpoint_and_record_together_and_splits_the_text() {
        let (_root, mut session) = session();
        session.append(Event::user_text("fix it")).unwrap();
        let mut recorder = TurnRecorder::new();
        let first = Message::assistant("Let me look.");
        observe(
            &mut recorder,
            vec![
                LoopEvent::TextDelta("Let me look.".into()),
                LoopEvent::MessageAppended(first.clone()),
            ],
        );
        recorder.persist(&auto("S"), &mut session).unwrap();
        assert_eq!(recorder.compactions().len(), 1);
        assert!(!recorder.compactions()[0].micro);
        observe(
            &mut recorder,
            vec![
                LoopEvent::TextDelta("Done.".into()),
                LoopEvent::MessageAppended(Message::assistant("Done.")),
            ],
        );
        recorder.finish(&mut session, false, None).unwrap();
        assert_eq!(recorder.final_text(), "Let me look.\nDone.");
        assert_eq!(
            kinds(&session),
            [
                "session_started",
                "user_message",
                "assistant_turn",
                "compaction_applied",
                "assistant_turn"
            ]
        );
        let transcript = session.read(ReadOptions::default()).unwrap();
        assert_eq!(
            project_model(&transcript.records),
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
    fn a_compaction_at_the_start_of_a_turn_is_one_record_without_an_empty_checkpoint() {
        let (_root, mut session) = session();
        session.append(Event::user_text("next")).unwrap();
        let mut recorder = TurnRecorder::new();
        recorder.persist(&auto("S"), &mut session).unwrap();
        assert_eq!(
            kinds(&session),
            ["session_started", "user_message", "compaction_applied"]
        );
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
        observe(
            &mut recorder,
            vec![
                LoopEvent::MessageAppended(call.clone()),
                LoopEvent::MessageAppended(Message::tool_result("c", "big", false)),
            ],
        );
        let pruned = vec![
            Message::user("go"),
            call,
            Message::tool_result("c", "[Old tool result content cleared]", false),
        ];
        recorder
            .persist(
                &HistoryRewrite::Micro(MicroCompaction {
                    reason: pith_core::events::MicroReason::Prune,
                    replacement: pruned.clone(),
                    tokens_reclaimed: 5,
                    tokens_before: 10,
                    tokens_after: 5,
                    duration_ms: 0,
                }),
                &mut session,
            )
            .unwrap();
        assert!(recorder.compactions()[0].micro);
        recorder.finish(&mut session, false, None).unwrap();
        let transcript = session.read(ReadOptions::default()).unwrap();
        assert_eq!(project_model(&transcript.records), pruned);
    }

    #[test]
    fn a_failed_write_leaves_the_recorder_and_the_transcript_as_they_were() {
        let (_root, mut session) = session();
        session.append(Event::user_text("go")).unwrap();
        let mut recorder = TurnRecorder::new();
        observe(
            &mut recorder,
            vec![
                LoopEvent::TextDelta("partial".into()),
                LoopEvent::MessageAppended(Message::assistant("partial")),
            ],
        );
        let before = kinds(&session);
        // The batch's temporary file goes next to the transcript: a vanished directory
        // makes the atomic write fail, as a full disk would.
        let dir = session.dir().to_path_buf();
        let transcript = std::fs::read(session.transcript_path()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(recorder.persist(&auto("S"), &mut session).is_err());
        assert!(recorder.compactions().is_empty());
        assert_eq!(recorder.final_text(), "partial");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(session.transcript_path(), transcript).unwrap();
        assert_eq!(kinds(&session), before);
    }

    #[test]
    fn an_interrupted_turn_is_recorded_with_its_error() {
        let (_root, mut session) = session();
        let mut recorder = TurnRecorder::new();
        observe(&mut recorder, vec![LoopEvent::TextDelta("partial".into())]);
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
