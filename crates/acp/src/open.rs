//! Opening a session for `session/new`, `session/load`, `session/resume` and
//! `session/fork`: the request's `cwd` checked, a pith `Conversation` opened on the
//! client's capabilities, the transcript replayed when the method says so, and what the
//! editor gets after the response.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use agent_client_protocol::v1::schema::{
    AvailableCommandsUpdate, McpServer, NoticeSeverity, SessionId, SessionNotification,
    SessionUpdate,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use pith_agent::{Conversation, Frontend, Overrides, SessionChoice};
use pith_tools::CommandTerminal;
use pith_tools::TextFiles;

use crate::approver::AcpApprover;
use crate::editor::Editor;
use crate::files::ClientFiles;
use crate::running::RunningCalls;
use crate::session::{figures, AcpSession};
use crate::state::State;
use crate::terminal::ClientTerminal;
use crate::updates::EventMapper;

/// How a session is opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opening {
    /// `session/new`: a new session, written at once so that what `session/list` shows
    /// can always be loaded.
    New,
    /// `session/load`: a recorded session, its transcript replayed before the response.
    Load(String),
    /// `session/resume`: a recorded session, not replayed (the client has the history).
    Resume(String),
    /// `session/fork`: a new session starting with a copy of another's records, not
    /// replayed (the client forked its own thread).
    Fork(String),
}

impl Opening {
    fn choice(&self) -> SessionChoice {
        match self {
            Opening::New => SessionChoice::New,
            Opening::Load(id) | Opening::Resume(id) => SessionChoice::Resume(id.clone()),
            Opening::Fork(id) => SessionChoice::Fork(id.clone()),
        }
    }

    /// The session named by the request, for the methods that name one.
    fn named(&self) -> Option<&str> {
        match self {
            Opening::New => None,
            Opening::Load(id) | Opening::Resume(id) | Opening::Fork(id) => Some(id),
        }
    }
}

/// A session just opened, with what the editor gets after the response.
pub(crate) struct Opened {
    pub(crate) session: Arc<AcpSession>,
    /// Warnings and notes of opening it.
    notices: Vec<String>,
    /// Where its context stands.
    usage: SessionNotification,
}

/// The `cwd` of a request, checked: absolute, existing, a directory. Each failure is a
/// `-32602` naming the field.
pub(crate) fn checked_cwd(cwd: &Path) -> Result<PathBuf, agent_client_protocol::Error> {
    let invalid = |message: String| agent_client_protocol::Error::invalid_params().data(message);
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd: `{}` is not an absolute path",
            cwd.display()
        )));
    }
    match std::fs::metadata(cwd) {
        Ok(meta) if meta.is_dir() => Ok(cwd.to_path_buf()),
        Ok(_) => Err(invalid(format!(
            "cwd: `{}` is not a directory",
            cwd.display()
        ))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Err(invalid(format!("cwd: `{}` does not exist", cwd.display())))
        }
        Err(error) => Err(invalid(format!(
            "cwd: `{}` cannot be read: {error}",
            cwd.display()
        ))),
    }
}

/// Opens a conversation for a session in `cwd`, registers it, and returns it with the
/// notices to show.
pub(crate) fn open(
    state: &Arc<State>,
    cx: &ConnectionTo<Client>,
    cwd: PathBuf,
    opening: Opening,
    mcp_servers: &[McpServer],
) -> Result<Opened, agent_client_protocol::Error> {
    let cwd = checked_cwd(&cwd)?;
    if let Opening::Load(id) | Opening::Resume(id) = &opening {
        if state.is_open(&SessionId::new(id.as_str())) {
            return Err(
                agent_client_protocol::Error::invalid_request().data(format!(
                    "sessionId: session {id} is already open on this connection"
                )),
            );
        }
    }
    let (extra_mcp_servers, mcp_notices) = crate::mcp_servers::from_client(mcp_servers);
    let overrides = Overrides {
        session: opening.choice(),
        cwd,
        extra_mcp_servers,
        ..state.options.overrides.clone()
    };
    let running = RunningCalls::default();
    let id_cell = Arc::new(OnceLock::new());
    let editor = Editor::new(cx.clone(), Arc::clone(&id_cell));
    let frontend = frontend(state, &editor, &running);
    let opened = Conversation::open(overrides, frontend).map_err(|error| match error {
        pith_agent::ConversationError::Usage(message) if opening.named().is_some() => {
            agent_client_protocol::v1::schema::Error::session_not_found(SessionId::new(
                opening.named().unwrap_or_default(),
            ))
            .data(message)
            .into()
        }
        error => agent_client_protocol::Error::internal_error().data(error.to_string()),
    })?;
    let mut conversation = opened.value;
    // What session/list shows can always be loaded: a session is kept once created.
    conversation.keep();
    // The next prompt may use a summary prepared during this one.
    conversation.keep_prepared_summaries(true);
    let mut notices = opened.notices;
    notices.extend(mcp_notices);
    let view = state.view();
    let mut mapper = EventMapper::new(
        SessionId::new(conversation.session_id()),
        conversation.cwd().to_path_buf(),
        view,
        figures(&conversation),
        running,
    );
    let mut replayed = Vec::new();
    if let Some(records) = opened.resumed.as_ref() {
        if matches!(opening, Opening::Load(_)) {
            replayed = crate::replay::replay(records, &mut mapper, view);
        } else {
            // Not replayed, but what the session spent counts all the same.
            mapper.add_spent(&pith_session::SessionSpend::from_records(records));
        }
    }
    // Where the context stands before the first prompt (a loaded session's history,
    // a new one's system prompt and tools), with the cost so far.
    let used = conversation.estimate().total as u64;
    let usage = mapper.notification(SessionUpdate::UsageUpdate(mapper.usage_update(used)));
    let session = Arc::new(AcpSession::new(conversation, mapper));
    let _ = id_cell.set(session.id.clone());
    tracing::info!(session = %session.id.0, ?opening, "ACP session open");
    for notification in replayed {
        let _ = cx.send_notification(notification);
    }
    state.insert(session.clone());
    Ok(Opened {
        session,
        notices,
        usage,
    })
}

/// What pith's conversation gets from this client: its approvals, its buffers and its
/// terminals, as it declared them.
fn frontend(state: &Arc<State>, editor: &Editor, running: &RunningCalls) -> Frontend {
    let approver = AcpApprover::new(editor.clone(), running.clone());
    let access = state.files();
    let files = (access.read || access.write)
        .then(|| Arc::new(ClientFiles::new(editor.clone(), access)) as Arc<dyn TextFiles>);
    Frontend {
        env: state.options.env.clone(),
        approver: Some(Arc::new(approver)),
        files,
        terminal: editor_terminal(state, editor, running),
        changes: None,
    }
}

/// The editor's terminals for `bash`, when it declared them and this binary's path is
/// known (the editor runs `pith sandbox-exec`).
fn editor_terminal(
    state: &State,
    editor: &Editor,
    running: &RunningCalls,
) -> Option<Arc<dyn CommandTerminal>> {
    if !state.terminal() {
        return None;
    }
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => {
            tracing::warn!(%error, "the editor's terminals are not used: pith's path is unknown");
            return None;
        }
    };
    let terminal = ClientTerminal::new(editor.clone(), program, running.clone());
    Some(Arc::new(terminal))
}

/// After a session's response: where its context stands, its notices, the commands it
/// offers, and its title when it has one.
pub(crate) fn after_open(cx: &ConnectionTo<Client>, opened: Opened) {
    let Opened {
        session,
        notices,
        usage,
    } = opened;
    let mut out: Vec<SessionNotification> = vec![usage];
    for notice in notices {
        out.extend(
            session
                .mapper()
                .notice_updates(NoticeSeverity::Warning, notice),
        );
    }
    out.push(SessionNotification::new(
        session.id.clone(),
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
            crate::commands::available(),
        )),
    ));
    for notification in out {
        let _ = cx.send_notification(notification);
    }
}
