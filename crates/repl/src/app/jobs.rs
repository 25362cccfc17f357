//! Running jobs: a user turn and a manual `/compact`, and how their loop events are
//! shown and persisted.

use super::*;

impl App {
    pub(super) async fn turn(&mut self, text: String) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let user = Message::user(text);
        if let Err(error) = conversation.session.append(Event::UserMessage {
            message: user.clone(),
        }) {
            self.screen.message(
                Tone::Error,
                &format!("cannot record the message, so it was not sent: {error}"),
            );
            return;
        }
        conversation.unused = false;
        let cancel = CancellationToken::new();
        let mut busy = BusyState::turn(cancel.clone());
        let mut recorder = TurnRecorder::new();
        let (tx, mut rx) = unbounded_channel();
        let Conversation { agent, session, .. } = conversation;
        self.screen.start_answer();
        let outcome = drive(
            agent.run_turn(user, &tx, &cancel),
            &mut busy,
            &mut rx,
            BusyIo {
                screen: &mut self.screen,
                approvals: &mut self.approvals,
                status: &mut self.status,
            },
            |event, busy, screen, status| {
                on_turn_event(event, busy, screen, status, &mut recorder, session)
            },
        )
        .await;
        let error = outcome.err().map(|failure| failure.error);
        let interrupted = matches!(error, Some(LoopError::Cancelled));
        if let Err(e) = recorder.finish(session, interrupted, error.as_ref().map(|e| e.to_string()))
        {
            self.screen.message(
                Tone::Error,
                &format!("cannot record the end of the turn: {e}"),
            );
        }
        match error {
            None => {}
            Some(LoopError::Cancelled) => self
                .screen
                .message(Tone::Dim, "Turn stopped; what was shown is saved."),
            Some(other) => self.screen.message(Tone::Error, &format!("error: {other}")),
        }
        self.finish_busy(busy);
    }

    pub(super) async fn compact(&mut self, focus: Option<String>) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let snapshot = conversation.agent.history().to_vec();
        let cancel = CancellationToken::new();
        let mut busy = BusyState::manual_compaction(cancel.clone());
        let (tx, mut rx) = unbounded_channel();
        let Conversation { agent, session, .. } = conversation;
        self.screen.start_answer();
        let outcome = drive(
            agent.compact(focus.as_deref(), &tx, &cancel),
            &mut busy,
            &mut rx,
            BusyIo {
                screen: &mut self.screen,
                approvals: &mut self.approvals,
                status: &mut self.status,
            },
            on_compact_event,
        )
        .await;
        match outcome {
            Ok(done) => {
                let record = Event::CompactionApplied {
                    trigger: CompactionTrigger::Manual,
                    messages: done.replacement.clone(),
                    summary: done.summary.clone(),
                    tokens_before: done.tokens_before,
                    tokens_after: done.tokens_after,
                    usage: Some(done.usage),
                };
                match session.append(record) {
                    Ok(_) => self.screen.message(
                        Tone::Info,
                        &format!(
                            "Context compacted ({} → {} tokens)",
                            done.tokens_before, done.tokens_after
                        ),
                    ),
                    Err(error) => {
                        agent.set_history(snapshot);
                        self.screen.message(
                            Tone::Error,
                            &format!(
                                "cannot save the compaction ({error}); the history is unchanged"
                            ),
                        );
                    }
                }
            }
            Err(LoopError::Cancelled) => self
                .screen
                .message(Tone::Info, "Compaction cancelled; the history is unchanged"),
            Err(error) => self.screen.message(
                Tone::Error,
                &format!("/compact failed: {error}; the history is unchanged"),
            ),
        }
        self.finish_busy(busy);
    }

    fn finish_busy(&mut self, busy: BusyState) {
        let (queued, unfinished) = busy.finish();
        self.queued.extend(queued);
        self.type_ahead = unfinished;
        self.refresh_status();
    }
}

/// Handles one event of a turn: persistence first (the recorder), then the screen.
fn on_turn_event(
    event: LoopEvent,
    busy: &mut BusyState,
    screen: &mut Screen,
    status: &mut Status,
    recorder: &mut TurnRecorder,
    session: &mut Session,
) {
    if let LoopEvent::AutoCompaction(pith_core::AutoCompaction::Applied { .. }) = &event {
        // Flush what is visible before the checkpoint that records it.
        screen.end_text();
    }
    match recorder.observe(&event, session) {
        Ok(Observed::Compacted(note)) => status.used = note.tokens_after,
        Ok(Observed::Nothing) => {}
        Err(error) => screen.message(Tone::Error, &format!("cannot save the compaction: {error}")),
    }
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => screen.tool_finished(&result),
        LoopEvent::MessageAppended(message) => {
            if message.role == Role::Assistant {
                // The next model request starts a new answer (and a new markdown state).
                screen.start_answer();
            }
        }
        LoopEvent::Usage(usage) => status.used = usage.input_tokens + usage.output_tokens,
        LoopEvent::AutoCompaction(lifecycle) => {
            if let Some(notice) = busy.on_auto_compaction(&lifecycle) {
                screen.message(Tone::Info, &notice.text());
            }
        }
        LoopEvent::MicroCompaction(step) => screen.message(
            Tone::Dim,
            &format!(
                "Old tool outputs cleared ({} → {} tokens)",
                step.tokens_before, step.tokens_after
            ),
        ),
        LoopEvent::Notice(text) => screen.message(Tone::Dim, &text),
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => screen.message(
            Tone::Dim,
            &format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
        ),
        LoopEvent::ReasoningDelta(_)
        | LoopEvent::RequestStarted { .. }
        | LoopEvent::TurnFinished { .. } => {}
    }
}

/// Handles one event of a manual compaction: the summary streams visibly; rejected tool
/// calls show as cards.
fn on_compact_event(event: LoopEvent, _: &mut BusyState, screen: &mut Screen, _: &mut Status) {
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => screen.tool_finished(&result),
        LoopEvent::Notice(text) => screen.message(Tone::Dim, &text),
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => screen.message(
            Tone::Dim,
            &format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::AutoCompaction;
    use pith_session::ReadOptions;
    use std::io::Write;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn an_applied_automatic_compaction_is_flushed_persisted_and_announced_without_its_summary() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::at(root.path().join("sessions"));
        let mut session = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "test".into(),
                model: "m".into(),
            })
            .unwrap();
        session.append(Event::user_text("go")).unwrap();
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        let turn = CancellationToken::new();
        let mut busy = BusyState::turn(turn.clone());
        let mut status = Status {
            model: "test/m".into(),
            used: 0,
            budget: pith_core::ContextBudget::for_window(20_000),
            auto_compaction: true,
        };
        let mut recorder = TurnRecorder::new();
        let events = vec![
            LoopEvent::TextDelta("Before".into()),
            LoopEvent::MessageAppended(Message::assistant("Before")),
            LoopEvent::AutoCompaction(AutoCompaction::Started {
                cancel: turn.child_token(),
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Applied {
                replacement: vec![
                    Message::system("sys"),
                    Message::user("<compacted_context>SECRET</compacted_context>"),
                ],
                summary: "SECRET".into(),
                usage: None,
                tokens_before: 15_000,
                tokens_after: 900,
            }),
            LoopEvent::TextDelta("After".into()),
        ];
        for event in events {
            on_turn_event(
                event,
                &mut busy,
                &mut screen,
                &mut status,
                &mut recorder,
                &mut session,
            );
        }
        drop(screen);
        let shown = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            shown,
            "Before\nContext compacted automatically (15000 → 900 tokens)\nAfter\n"
        );
        assert_eq!(status.used, 900, "the status follows the replacement");
        let kinds: Vec<String> = session
            .read(ReadOptions::default())
            .unwrap()
            .records
            .iter()
            .map(|r| r.event.kind().to_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "session_started",
                "user_message",
                "assistant_turn",
                "compaction_applied"
            ]
        );
    }
}
