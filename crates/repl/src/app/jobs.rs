//! Running jobs: a user turn and a manual `/compact`, and how their loop events are
//! shown. Persistence is the conversation's; this module only renders.

use pith_agent::{Conversation, LoopError};
use pith_core::{AutoCompaction, LoopEvent, Role};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use super::App;
use crate::busy::{drive, BusyIo};
use crate::render::{Screen, Tone};
use crate::state::BusyState;
use crate::status::Status;

impl App {
    pub(super) async fn turn(&mut self, text: String) {
        let cancel = CancellationToken::new();
        let mut busy = BusyState::turn(cancel.clone());
        busy.adopt_prepared_summary(self.conversation.prepared_summary_cancel());
        let (mut events, mut received) = unbounded_channel();
        // `@path/to/shot.png` attaches the image to this message.
        let (message, notices) = self.conversation.user_message(&text);
        for notice in notices {
            self.screen.message(Tone::Dim, &notice);
        }
        self.screen.start_answer();
        let (conversation, io) = self.job_parts();
        let job = conversation.run_message(message, &mut events, &cancel);
        let outcome = drive(job, &mut busy, &mut received, io, on_turn_event).await;
        match &outcome.error {
            None => {}
            Some(pith_agent::TurnError::Loop(LoopError::Cancelled)) => self
                .screen
                .message(Tone::Dim, "Turn stopped; what was shown is saved."),
            Some(other) => self.screen.message(Tone::Error, &format!("error: {other}")),
        }
        if let Some(record_error) = &outcome.record_error {
            self.screen.message(Tone::Error, record_error);
        }
        self.finish_busy(busy);
    }

    pub(super) async fn compact(&mut self, focus: Option<String>) {
        let cancel = CancellationToken::new();
        let mut busy = BusyState::manual_compaction(cancel.clone());
        let (mut events, mut received) = unbounded_channel();
        self.screen.start_answer();
        let (conversation, io) = self.job_parts();
        let job = conversation.compact(focus.as_deref(), &mut events, &cancel);
        let outcome = drive(job, &mut busy, &mut received, io, on_compact_event).await;
        match outcome {
            Ok(done) => self.screen.message(
                Tone::Info,
                &format!(
                    "Context compacted ({} → {} tokens)",
                    done.tokens_before, done.tokens_after
                ),
            ),
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

    /// The conversation a job runs on, and apart from it what the busy loop draws on and
    /// reads meanwhile.
    fn job_parts(&mut self) -> (&mut Conversation, BusyIo<'_>) {
        let io = BusyIo {
            screen: &mut self.screen,
            approvals: &mut self.approvals,
            status: &mut self.status,
        };
        (&mut self.conversation, io)
    }

    fn finish_busy(&mut self, busy: BusyState) {
        let (queued, unfinished) = busy.finish();
        self.queued.extend(queued);
        self.type_ahead = unfinished;
        self.refresh_status();
    }
}

/// Shows one event of a turn.
fn on_turn_event(event: LoopEvent, busy: &mut BusyState, screen: &mut Screen, status: &mut Status) {
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ReasoningDelta(text) => screen.reasoning(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => {
            if busy.children.finished(&result.call_id) {
                screen.set_cards(busy.children.lines());
            }
            screen.tool_finished(&result)
        }
        LoopEvent::MessageAppended(message) => {
            if message.role == Role::Assistant {
                // The next model request starts a new answer (and a new markdown state).
                screen.start_answer();
            }
        }
        LoopEvent::Usage(usage) => status.used = usage.input_tokens + usage.output_tokens,
        LoopEvent::AutoCompaction(lifecycle) => {
            if let AutoCompaction::Applied { figures, .. } = &lifecycle {
                // The text before the boundary is complete; the status follows the
                // replacement.
                screen.end_text();
                status.used = figures.tokens_after;
            }
            if let Some(notice) = busy.on_auto_compaction(&lifecycle) {
                screen.message(Tone::Info, &notice.text());
            }
        }
        // The fit's notice came just before: nothing more to say.
        LoopEvent::MicroCompaction(step)
            if step.reason == pith_core::events::MicroReason::Overflow =>
        {
            status.used = step.tokens_after;
        }
        LoopEvent::MicroCompaction(step) => {
            status.used = step.tokens_after;
            screen.message(
                Tone::Dim,
                &format!(
                    "Old tool outputs cleared ({} → {} tokens)",
                    step.tokens_before, step.tokens_after
                ),
            )
        }
        LoopEvent::Governor(notice) => {
            status.note_governor(&notice);
            screen.message(Tone::Info, &notice.text());
        }
        LoopEvent::OutputTruncated { reason } => screen.message(
            Tone::Error,
            &format!("The answer was cut off: {reason}; incomplete tool calls were not run."),
        ),
        LoopEvent::Notice(_) | LoopEvent::Retrying { .. } | LoopEvent::Hook(_) => {
            show_line(screen, &event, "")
        }
        LoopEvent::Subagent(child) => on_child_event(&child, busy, screen),
        LoopEvent::PlanUpdated(plan) => {
            screen.message(Tone::Info, &crate::cards::plan_card(&plan).join("\n"))
        }
        LoopEvent::Checkpoint(summary) => status.checkpoints = Some(summary.store_bytes),
        LoopEvent::RequestStarted { .. }
        | LoopEvent::RequestFinished(_)
        | LoopEvent::TurnFinished { .. } => {}
    }
}

/// Shows one event of a running subagent: its live card; its notices, failures and
/// compactions as lines naming the agent. Esc cancels a child's running compaction as it
/// cancels the parent's.
fn on_child_event(child: &pith_core::SubagentEvent, busy: &mut BusyState, screen: &mut Screen) {
    if busy.children.on_event(child) {
        screen.set_cards(busy.children.lines());
    }
    let agent = &child.agent;
    match child.event.as_ref() {
        LoopEvent::Governor(notice) => {
            screen.message(Tone::Info, &format!("[{agent}] {}", notice.text()))
        }
        LoopEvent::AutoCompaction(lifecycle) => {
            if let Some(notice) = busy.on_auto_compaction(lifecycle) {
                screen.message(Tone::Info, &format!("[{agent}] {}", notice.text()));
            }
        }
        event => show_line(screen, event, &format!("[{agent}] ")),
    }
}

/// Shows one event of a manual compaction: the summary streams visibly; rejected tool
/// calls show as cards.
fn on_compact_event(event: LoopEvent, _: &mut BusyState, screen: &mut Screen, _: &mut Status) {
    match event {
        LoopEvent::TextDelta(text) => screen.text(&text),
        LoopEvent::ToolCallStarted(call) => screen.tool_started(&call),
        LoopEvent::ToolCallFinished { result, .. } => screen.tool_finished(&result),
        event => show_line(screen, &event, ""),
    }
}

/// Shows a notice, a retry or a hook run as one line after `prefix` (a turn's, a
/// compaction's and a child's alike); other events show nothing here.
fn show_line(screen: &mut Screen, event: &LoopEvent, prefix: &str) {
    let line = match event {
        LoopEvent::Notice(text) => Some((Tone::Dim, text.clone())),
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => Some((
            Tone::Dim,
            format!("request failed ({reason}); retry {attempt} in {delay_ms} ms"),
        )),
        LoopEvent::Hook(run) => hook_line(run),
        _ => None,
    };
    if let Some((tone, text)) = line {
        screen.message(tone, &format!("{prefix}{text}"));
    }
}

/// How a hook run shows on screen: blocks and failures always, a successful run only
/// when it has a message for the user.
pub(crate) fn hook_line(run: &pith_core::HookRun) -> Option<(Tone, String)> {
    use pith_core::HookOutcome;
    let what = format!("{} hook `{}`", run.event, run.command);
    let message = run.message.as_deref().unwrap_or("");
    match run.outcome {
        HookOutcome::Proceed if message.is_empty() => None,
        HookOutcome::Proceed => Some((Tone::Dim, format!("{what}: {message}"))),
        HookOutcome::Block => Some((Tone::Info, format!("{what} blocked: {message}"))),
        HookOutcome::Error | HookOutcome::Timeout => {
            Some((Tone::Error, format!("{what} failed: {message}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{CompactionFigures, Message};
    use std::io::{self, Write};
    use std::sync::{Arc, Mutex};

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
    fn an_applied_automatic_compaction_is_flushed_and_announced_without_its_summary() {
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        let turn = CancellationToken::new();
        let mut busy = BusyState::turn(turn.clone());
        let mut status = Status {
            model: "test/m".into(),
            used: 0,
            budget: pith_core::ContextBudget::for_window(20_000),
            auto_compaction: true,
            paused: None,
            spend: None,
            checkpoints: None,
        };
        let events = vec![
            LoopEvent::TextDelta("Before".into()),
            LoopEvent::MessageAppended(Message::assistant("Before")),
            LoopEvent::AutoCompaction(AutoCompaction::Started {
                cancel: turn.child_token(),
                tokens_before: 0,
                background: false,
            }),
            LoopEvent::AutoCompaction(AutoCompaction::Applied {
                replacement: vec![Message::user(
                    "<compacted_context>SECRET</compacted_context>",
                )],
                summary: "SECRET".into(),
                usage: None,
                figures: CompactionFigures {
                    tokens_before: 15_000,
                    tokens_after: 900,
                    ..CompactionFigures::default()
                },
            }),
            LoopEvent::TextDelta("After".into()),
        ];
        for event in events {
            on_turn_event(event, &mut busy, &mut screen, &mut status);
        }
        drop(screen);
        let shown = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            shown,
            "Before\nContext compacted automatically (15000 → 900 tokens)\nAfter\n"
        );
        assert_eq!(status.used, 900, "the status follows the replacement");
    }
}
