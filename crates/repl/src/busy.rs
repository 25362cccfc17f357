//! The busy loop: runs one job (a turn or a `/compact`) while reading keys, showing the
//! loader, answering permission questions and forwarding every loop event to the
//! caller's handler, in one `tokio::select!`.
//!
//! reedline reads no keys while a job streams, so the loop puts the terminal in raw mode
//! and reads keys itself (a polling thread, see `KeyReader`) (restored when the loop ends, also on
//! panic through `terminal`). Without a terminal there are no keys; SIGINT stops the job
//! instead.

use std::future::Future;
use std::time::Duration;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossterm::event::{self, Event as TermEvent, KeyEvent};
use pith_core::LoopEvent;
use pith_tools::Approval;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::approver::ApprovalQuestion;
use crate::keys::{action_for, ApprovalKey, KeyAction};
use crate::render::{Screen, Tone};
use crate::state::{BusyState, Job, Reaction};
use crate::status::Status;
use crate::terminal::RawMode;

/// Spinner period.
const TICK: Duration = Duration::from_millis(120);

/// What the busy loop shows and reads besides the job's events.
pub struct BusyIo<'a> {
    /// Where everything is drawn.
    pub screen: &'a mut Screen,
    /// Permission questions from the tools.
    pub approvals: &'a mut UnboundedReceiver<ApprovalQuestion>,
    /// The status shown in the loader line (the handler updates it).
    pub status: &'a mut Status,
}

/// Runs `job` to completion; `on_event` sees every loop event in order, including those
/// still queued when the job finishes.
pub async fn drive<F, H>(
    job: F,
    busy: &mut BusyState,
    events: &mut UnboundedReceiver<LoopEvent>,
    io: BusyIo<'_>,
    mut on_event: H,
) -> F::Output
where
    F: Future,
    H: FnMut(LoopEvent, &mut BusyState, &mut Screen, &mut Status),
{
    let BusyIo {
        screen,
        approvals,
        status,
    } = io;
    let interactive = screen.is_interactive();
    let raw = if interactive {
        RawMode::enable().ok()
    } else {
        None
    };
    let mut keys = KeyReader::new(raw.is_some());
    let mut interrupts = Interrupts::new(!interactive);
    let mut ticker = tokio::time::interval(TICK);
    let mut question: Option<ApprovalQuestion> = None;
    tokio::pin!(job);
    redraw(screen, busy, status);
    let output = loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => {
                on_event(event, busy, screen, status);
                redraw(screen, busy, status);
            }
            output = &mut job => break output,
            Some(key) = keys.next() => {
                let action = action_for(&key, busy.situation());
                react(busy.apply(action), busy, screen, &mut question);
                redraw(screen, busy, status);
            }
            () = interrupts.next() => {
                let action = match busy.job() {
                    Job::Turn => KeyAction::CancelTurn,
                    Job::ManualCompaction => KeyAction::CancelManualCompaction,
                };
                react(busy.apply(action), busy, screen, &mut question);
            }
            Some(asked) = approvals.recv(), if question.is_none() => {
                // The job may have sent events and then asked within one poll: show
                // what led to the question first.
                while let Ok(event) = events.try_recv() {
                    on_event(event, busy, screen, status);
                }
                screen.question(&asked.request);
                if interactive {
                    busy.set_approval_pending(true);
                    question = Some(asked);
                } else {
                    let _ = asked.answer.send(Approval::Deny {
                        feedback: Some("pith has no terminal to ask the user; use --approval auto-edit or full".to_owned()),
                    });
                }
                redraw(screen, busy, status);
            }
            _ = ticker.tick() => screen.tick(),
        }
    };
    while let Ok(event) = events.try_recv() {
        on_event(event, busy, screen, status);
    }
    busy.set_approval_pending(false);
    screen.end_text();
    screen.clear_loader();
    // Keys typed while the job was finishing still belong to the type-ahead line.
    for key in keys.finish() {
        let action = action_for(&key, busy.situation());
        if let KeyAction::Type(_) | KeyAction::Backspace | KeyAction::QueueLine = action {
            busy.apply(action);
        }
    }
    drop(raw);
    output
}

fn react(
    reaction: Reaction,
    busy: &mut BusyState,
    screen: &mut Screen,
    question: &mut Option<ApprovalQuestion>,
) {
    match reaction {
        Reaction::Notice(notice) => screen.message(Tone::Info, &notice.text()),
        Reaction::Answer(answer) => {
            busy.set_approval_pending(false);
            if let Some(asked) = question.take() {
                let (approval, said) = match answer {
                    ApprovalKey::Once => (Approval::AllowOnce, "allowed once"),
                    ApprovalKey::Session => (Approval::AllowForSession, "allowed for this session"),
                    ApprovalKey::Deny => (Approval::Deny { feedback: None }, "denied"),
                };
                screen.message(Tone::Dim, &format!("  {said}"));
                let _ = asked.answer.send(approval);
            }
        }
        Reaction::Redraw | Reaction::None => {}
    }
}

fn redraw(screen: &mut Screen, busy: &BusyState, status: &Status) {
    let situation = busy.situation();
    let hint = if situation.approval_pending {
        "y / a / n"
    } else if situation.manual_compaction || situation.auto_compaction_running {
        "Esc cancels compaction · Ctrl+C stops"
    } else {
        "Ctrl+C stops"
    };
    let mut detail = String::new();
    if !busy.type_ahead().is_empty() {
        detail.push_str(&format!("› {} · ", busy.type_ahead()));
    }
    if !busy.queued().is_empty() {
        detail.push_str(&format!("{} queued · ", busy.queued().len()));
    }
    detail.push_str(hint);
    detail.push_str(" · ");
    detail.push_str(&status.text());
    screen.set_loader(busy.loader().text(), &detail);
}

/// How often the key thread checks whether it should stop.
const KEY_POLL: Duration = Duration::from_millis(40);

/// Key presses from the terminal, or none.
///
/// A thread polls crossterm with a short timeout and forwards keys over a channel; it is
/// stopped and joined when the reader is dropped, so no stale reader can hold crossterm's
/// input lock (or swallow keys) once reedline takes over the prompt again. (crossterm's
/// `EventStream` keeps a background poll running after it is dropped.)
struct KeyReader {
    keys: Option<UnboundedReceiver<KeyEvent>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl KeyReader {
    fn new(enabled: bool) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        if !enabled {
            return Self {
                keys: None,
                stop,
                thread: None,
            };
        }
        let (sender, keys) = tokio::sync::mpsc::unbounded_channel();
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("pith-keys".to_owned())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    match event::poll(KEY_POLL) {
                        Ok(true) => match event::read() {
                            Ok(TermEvent::Key(key)) => {
                                if sender.send(key).is_err() {
                                    break;
                                }
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        },
                        Ok(false) => {}
                        Err(_) => break,
                    }
                }
            })
            .ok();
        Self {
            keys: thread.is_some().then_some(keys),
            stop,
            thread,
        }
    }

    /// The next key press; pending forever when there is no terminal.
    async fn next(&mut self) -> Option<KeyEvent> {
        let Some(keys) = &mut self.keys else {
            return std::future::pending().await;
        };
        match keys.recv().await {
            Some(key) => Some(key),
            None => {
                self.keys = None;
                std::future::pending().await
            }
        }
    }
}

impl KeyReader {
    /// Stops the thread and returns the keys it read that were not consumed yet.
    fn finish(mut self) -> Vec<KeyEvent> {
        self.stop_thread();
        let mut left = Vec::new();
        if let Some(keys) = &mut self.keys {
            while let Ok(key) = keys.try_recv() {
                left.push(key);
            }
        }
        left
    }

    fn stop_thread(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for KeyReader {
    fn drop(&mut self) {
        self.stop_thread();
    }
}

/// SIGINT when there is no terminal (in raw mode Ctrl+C is a key).
struct Interrupts {
    signal: Option<tokio::signal::unix::Signal>,
}

impl Interrupts {
    fn new(enabled: bool) -> Self {
        use tokio::signal::unix::{signal, SignalKind};
        Self {
            signal: enabled
                .then(|| signal(SignalKind::interrupt()).ok())
                .flatten(),
        }
    }

    async fn next(&mut self) {
        match &mut self.signal {
            Some(signal) => {
                if signal.recv().await.is_none() {
                    self.signal = None;
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending().await,
        }
    }
}
