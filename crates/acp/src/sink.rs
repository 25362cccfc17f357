//! The event sink of an ACP session's turn: every loop event becomes the session's
//! notifications ([`crate::updates`]), sent in order; an automatic compaction's child
//! token is kept while it runs, for `_pith/cancel_compaction`.

use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::SessionNotification;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use pith_core::{AutoCompaction, EventSink, LoopEvent};
use tokio_util::sync::CancellationToken;

use crate::updates::EventMapper;

/// The running compaction's token, shared by a session's sink and its
/// `_pith/cancel_compaction` handler.
#[derive(Debug, Clone, Default)]
pub struct CompactionSlot {
    token: Arc<Mutex<Option<CancellationToken>>>,
}

impl CompactionSlot {
    /// A compaction started; `token` cancels only it.
    pub fn started(&self, token: CancellationToken) {
        *self.lock() = Some(token);
    }

    /// The compaction ended.
    pub fn ended(&self) {
        *self.lock() = None;
    }

    /// Cancels the running compaction; false when none runs.
    pub fn cancel(&self) -> bool {
        match self.lock().take() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CancellationToken>> {
        self.token.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where notifications go: the connection, or (tests) a list.
pub trait Outbox: Send {
    /// Sends one notification.
    fn send(&mut self, notification: SessionNotification);
}

impl Outbox for ConnectionTo<Client> {
    fn send(&mut self, notification: SessionNotification) {
        if let Err(error) = self.send_notification(notification) {
            tracing::debug!(%error, "a session update was not sent (connection closing)");
        }
    }
}

impl Outbox for Vec<SessionNotification> {
    fn send(&mut self, notification: SessionNotification) {
        self.push(notification);
    }
}

/// A turn's sink.
pub struct SessionSink<O: Outbox> {
    mapper: Arc<Mutex<EventMapper>>,
    compaction: CompactionSlot,
    outbox: O,
}

impl<O: Outbox> SessionSink<O> {
    /// A sink mapping with `mapper` into `outbox`, keeping compaction tokens in `slot`.
    pub fn new(mapper: Arc<Mutex<EventMapper>>, compaction: CompactionSlot, outbox: O) -> Self {
        Self {
            mapper,
            compaction,
            outbox,
        }
    }

    /// Sends notifications made outside the loop's events (manual compaction, notices).
    pub fn send_all(&mut self, notifications: Vec<SessionNotification>) {
        for notification in notifications {
            self.outbox.send(notification);
        }
    }

    /// The session's mapper.
    pub fn mapper(&self) -> std::sync::MutexGuard<'_, EventMapper> {
        self.mapper.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The outbox (tests read what was sent).
    pub fn into_outbox(self) -> O {
        self.outbox
    }
}

impl<O: Outbox> EventSink for SessionSink<O> {
    fn emit(&mut self, event: LoopEvent) {
        if let LoopEvent::AutoCompaction(lifecycle) = &event {
            match lifecycle {
                AutoCompaction::Started { cancel, .. } => self.compaction.started(cancel.clone()),
                _ => self.compaction.ended(),
            }
        }
        let notifications = self.mapper().map(&event);
        self.send_all(notifications);
    }
}
