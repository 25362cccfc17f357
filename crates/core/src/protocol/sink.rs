//! Where the tool loop's output goes: the events of a turn ([`EventSink`]), the history
//! rewrites that must be on disk before they are applied ([`TurnSink`]), and the events a
//! running tool sends for the parent's front-end ([`Progress`]).
//!
//! The loop (pith-providers) never writes anything itself: it hands each
//! [`HistoryRewrite`] to its [`TurnSink`] and installs the rewrite only when
//! [`TurnSink::persist`] returned `Ok`. The conversation (pith-agent) implements the
//! trait over the session store; tests implement it over memory ([`InMemory`]), or with a
//! writer that fails on demand.

use thiserror::Error;
use tokio::sync::mpsc;

use crate::protocol::events::LoopEvent;
use crate::protocol::rewrite::HistoryRewrite;

/// Where the events of a turn go: a front-end's renderer, a channel, a test's list.
///
/// The loop calls [`EventSink::emit`] synchronously, in the order things happen, from the
/// task that runs the turn; an implementation must not block for long (the REPL forwards
/// into a channel, `pith run` writes a line). Events are never assistant content.
pub trait EventSink: Send {
    /// Receives one event.
    fn emit(&mut self, event: LoopEvent);
}

/// Forwards into a channel; a dropped receiver means nobody is watching, and the turn
/// still completes.
impl EventSink for tokio::sync::mpsc::UnboundedSender<LoopEvent> {
    fn emit(&mut self, event: LoopEvent) {
        let _ = self.send(event);
    }
}

/// Collects events in order (tests, batch consumers).
impl EventSink for Vec<LoopEvent> {
    fn emit(&mut self, event: LoopEvent) {
        self.push(event);
    }
}

/// Discards every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl EventSink for Discard {
    fn emit(&mut self, _event: LoopEvent) {}
}

/// A rewrite could not be persisted; the loop leaves the live history unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("cannot write the transcript: {0}")]
pub struct PersistError(pub String);

/// The loop's owner, as the loop sees it while a turn or a compaction runs: where its
/// events go ([`EventSink`]) and where history rewrites are persisted.
///
/// Contract: the loop calls [`TurnSink::persist`] with a rewrite before it changes its
/// history, and changes it only when that returns `Ok`. Events emitted before the call
/// describe the history the rewrite replaces, so an implementation that records the
/// turn's messages (from [`crate::LoopEvent::MessageAppended`]) has seen all of them.
/// After an `Ok` the loop emits the rewrite's own event
/// ([`crate::AutoCompaction::Applied`] or [`crate::LoopEvent::MicroCompaction`]); after an
/// error it emits a failure and carries on with the history unchanged.
pub trait TurnSink: EventSink {
    /// Makes `rewrite` durable.
    fn persist(&mut self, rewrite: &HistoryRewrite) -> Result<(), PersistError>;
}

/// A [`TurnSink`] without a transcript: events go to `events`, rewrites are kept in
/// memory. For tests, benchmarks and simulations. With `fail_with` set, every
/// [`TurnSink::persist`] fails with that message (the loop must then leave its history
/// unchanged).
#[derive(Debug, Default)]
pub struct InMemory<S> {
    /// Where events go.
    pub events: S,
    /// Every rewrite persisted so far, in order.
    pub persisted: Vec<HistoryRewrite>,
    /// When set, persisting fails with this message.
    pub fail_with: Option<String>,
}

impl<S: EventSink> InMemory<S> {
    /// A sink forwarding events to `events`, persisting in memory.
    pub fn new(events: S) -> Self {
        Self {
            events,
            persisted: Vec::new(),
            fail_with: None,
        }
    }

    /// A sink whose every write fails with `message`, as a full disk would.
    pub fn failing(events: S, message: impl Into<String>) -> Self {
        Self {
            fail_with: Some(message.into()),
            ..Self::new(events)
        }
    }
}

impl<S: EventSink> EventSink for InMemory<S> {
    fn emit(&mut self, event: LoopEvent) {
        self.events.emit(event);
    }
}

impl<S: EventSink> TurnSink for InMemory<S> {
    fn persist(&mut self, rewrite: &HistoryRewrite) -> Result<(), PersistError> {
        if let Some(message) = &self.fail_with {
            return Err(PersistError(message.clone()));
        }
        self.persisted.push(rewrite.clone());
        Ok(())
    }
}

/// Where a running tool sends events for the parent's front-end (see
/// [`crate::protocol::subagent`]). Sending never blocks; events sent after the call
/// ended are dropped.
#[derive(Debug, Clone)]
pub struct Progress {
    sender: mpsc::UnboundedSender<LoopEvent>,
}

impl Progress {
    /// A handle and the receiver the tool loop drains while the call runs.
    pub fn channel() -> (Progress, mpsc::UnboundedReceiver<LoopEvent>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        (Progress { sender }, receiver)
    }

    /// Sends one event; nothing happens when nobody listens any more.
    pub fn send(&self, event: LoopEvent) {
        let _ = self.sender.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn progress_reaches_the_receiver_and_outlives_it_quietly() {
        let (progress, mut receiver) = Progress::channel();
        progress.send(LoopEvent::Notice("one".into()));
        assert!(matches!(receiver.recv().await, Some(LoopEvent::Notice(n)) if n == "one"));
        drop(receiver);
        progress.send(LoopEvent::Notice("nobody listens".into()));
    }
}
