//! The connection's state: the options every session starts from, what the client
//! declared in `initialize`, the open sessions, and the work requests started (turns,
//! opening sessions), awaited when the connection closes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol::v1::schema::SessionId;
use pith_agent::{Env, Overrides};

use crate::files::FileAccess;
use crate::session::AcpSession;
use crate::updates::ClientView;

/// How long the turns still running when the editor closes the connection get to end.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// What every session of the connection starts from.
#[derive(Clone)]
pub struct AgentOptions {
    /// The command line's choices (`--model`, `--approval`, …); the session and the
    /// workspace are each request's.
    pub overrides: Overrides,
    /// Environment lookup (keys, base URLs, config locations).
    pub env: Env,
}

/// The connection's state.
pub(crate) struct State {
    pub(crate) options: AgentOptions,
    view: Mutex<ClientView>,
    /// The file methods the client declared.
    files: Mutex<FileAccess>,
    /// Whether the client declared `terminal` (then `bash` runs in its terminals).
    terminal: Mutex<bool>,
    sessions: Mutex<HashMap<SessionId, Arc<AcpSession>>>,
    /// The work started by requests (opening sessions, turns), awaited when the
    /// connection closes so that every turn ends and is recorded.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl State {
    /// A connection's state before `initialize`.
    pub(crate) fn new(options: AgentOptions) -> Self {
        Self {
            options,
            view: Mutex::new(ClientView::default()),
            files: Mutex::new(FileAccess::default()),
            terminal: Mutex::new(false),
            sessions: Mutex::new(HashMap::new()),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Remembers what the client declared in `initialize`.
    pub(crate) fn declare(&self, view: ClientView, files: FileAccess, terminal: bool) {
        *lock(&self.view) = view;
        *lock(&self.files) = files;
        *lock(&self.terminal) = terminal;
    }

    /// What the client can show.
    pub(crate) fn view(&self) -> ClientView {
        *lock(&self.view)
    }

    /// The file methods the client declared.
    pub(crate) fn files(&self) -> FileAccess {
        *lock(&self.files)
    }

    /// Whether the client runs commands in its terminals.
    pub(crate) fn terminal(&self) -> bool {
        *lock(&self.terminal)
    }

    /// Runs `work` on the runtime, outside the connection's dispatch loop (a turn, or
    /// opening a conversation, which may block on a server's window probe).
    pub(crate) fn spawn(
        &self,
        work: impl std::future::Future<Output = Result<(), agent_client_protocol::Error>>
            + Send
            + 'static,
    ) -> Result<(), agent_client_protocol::Error> {
        let handle = tokio::spawn(async move {
            if let Err(error) = work.await {
                tracing::debug!(%error, "an answer was not sent (connection closing)");
            }
        });
        let mut tasks = lock(&self.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(handle);
        Ok(())
    }

    /// The open session `id`, or the spec's `-32002`.
    pub(crate) fn session(
        &self,
        id: &SessionId,
    ) -> Result<Arc<AcpSession>, agent_client_protocol::Error> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
        })
    }

    /// True when session `id` is open on this connection.
    pub(crate) fn is_open(&self, id: &SessionId) -> bool {
        lock(&self.sessions).contains_key(id)
    }

    /// Registers an open session.
    pub(crate) fn insert(&self, session: Arc<AcpSession>) {
        lock(&self.sessions).insert(session.id.clone(), session);
    }

    /// Takes session `id` out of the open ones.
    pub(crate) fn remove(&self, id: &SessionId) -> Option<Arc<AcpSession>> {
        lock(&self.sessions).remove(id)
    }

    /// The editor is gone: stops every turn, lets each end (and be recorded), then
    /// closes every session.
    pub(crate) async fn close_all(&self) {
        let sessions: Vec<Arc<AcpSession>> = lock(&self.sessions).drain().map(|(_, s)| s).collect();
        for session in &sessions {
            session.cancel();
        }
        let tasks = std::mem::take(&mut *lock(&self.tasks));
        let ended = tokio::time::timeout(CLOSE_GRACE, futures::future::join_all(tasks)).await;
        if ended.is_err() {
            tracing::warn!("turns still running {CLOSE_GRACE:?} after the editor left");
        }
        for session in sessions {
            // A turn still running past the grace keeps its conversation; it is dropped
            // with the process.
            let wait = std::time::Duration::from_secs(1);
            if tokio::time::timeout(wait, session.close()).await.is_err() {
                tracing::warn!(session = %session.id.0, "a session was still in use when the connection closed");
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
