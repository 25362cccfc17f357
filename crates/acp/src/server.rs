//! The ACP agent: the connection's handlers. Each request is answered from here; a
//! prompt runs on its own task so that `session/cancel` and `_pith/cancel_compaction`
//! are read while it runs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CancelNotification, ForkSessionRequest,
    ForkSessionResponse, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer,
    NewSessionRequest, NewSessionResponse, NoticeSeverity, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionForkCapabilities, SessionId,
    SessionListCapabilities, SessionNotification, SessionUpdate, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, ConnectTo};
use pith_agent::{Conversation, Env, Frontend, Overrides, SessionChoice};

use crate::approver::AcpApprover;
use crate::ext::{CancelCompactionRequest, CancelCompactionResponse};
use crate::files::{ClientFiles, FileAccess};
use crate::running::RunningCalls;
use crate::session::{figures, AcpSession, PromptError};
use crate::terminal::ClientTerminal;
use crate::updates::{ClientView, EventMapper};
use pith_tools::bash::terminal::CommandTerminal;
use pith_tools::TextFiles;

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
struct State {
    options: AgentOptions,
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
    /// Runs `work` on the runtime, outside the connection's dispatch loop (a turn, or
    /// opening a conversation, which may block on a server's window probe).
    fn spawn(
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
        let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
        tasks.retain(|task| !task.is_finished());
        tasks.push(handle);
        Ok(())
    }

    fn session(&self, id: &SessionId) -> Result<Arc<AcpSession>, agent_client_protocol::Error> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                agent_client_protocol::v1::schema::Error::session_not_found(id.clone()).into()
            })
    }

    fn view(&self) -> ClientView {
        *self.view.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves one client over `transport` until it closes the connection. Sessions still
/// open are closed then (a session never prompted is removed, as in the REPL).
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    options: AgentOptions,
) -> Result<(), agent_client_protocol::Error> {
    let state = Arc::new(State {
        options,
        view: Mutex::new(ClientView::default()),
        files: Mutex::new(FileAccess::default()),
        terminal: Mutex::new(false),
        sessions: Mutex::new(HashMap::new()),
        tasks: Mutex::new(Vec::new()),
    });
    let (s1, s2, s3, s4, s5, s6, s7, s8, s9) = (
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
        state.clone(),
    );
    let served = Agent
        .v1()
        .name("pith")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                *s1.view.lock().unwrap_or_else(PoisonError::into_inner) = client_view(&request);
                *s1.files.lock().unwrap_or_else(PoisonError::into_inner) =
                    FileAccess::declared(&request.client_capabilities.fs);
                *s1.terminal.lock().unwrap_or_else(PoisonError::into_inner) =
                    request.client_capabilities.terminal;
                responder.respond(initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx: ConnectionTo<Client>| {
                let state = s2.clone();
                s2.spawn(async move {
                    let opened = open(
                        &state,
                        &cx,
                        request.cwd,
                        SessionChoice::New,
                        &request.mcp_servers,
                    );
                    match opened {
                        Ok(opened) => {
                            let response = NewSessionResponse::new(opened.session.id.clone())
                                .modes(crate::modes::state(opened.session.approval()));
                            responder.respond(response)?;
                            after_open(&cx, opened);
                            Ok(())
                        }
                        Err(error) => responder.respond_with_error(error),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx: ConnectionTo<Client>| {
                let state = s3.clone();
                s3.spawn(async move {
                    let choice = SessionChoice::Resume(request.session_id.0.to_string());
                    match open(&state, &cx, request.cwd, choice, &request.mcp_servers) {
                        Ok(opened) => {
                            responder.respond(
                                LoadSessionResponse::new()
                                    .modes(crate::modes::state(opened.session.approval())),
                            )?;
                            after_open(&cx, opened);
                            Ok(())
                        }
                        Err(error) => responder.respond_with_error(error),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let session = match s4.session(&request.session_id) {
                    Ok(session) => session,
                    Err(error) => return responder.respond_with_error(error),
                };
                s4.spawn(async move {
                    match session.prompt(&request.prompt, cx).await {
                        Ok(reason) => responder.respond(PromptResponse::new(reason)),
                        Err(error) => {
                            tracing::warn!(%error, "a prompt failed");
                            let answer = match error {
                                PromptError::Busy => {
                                    agent_client_protocol::Error::invalid_request()
                                }
                                PromptError::Failed(_) => {
                                    agent_client_protocol::Error::internal_error()
                                }
                            };
                            responder.respond_with_error(answer.data(error.to_string()))
                        }
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Ok(session) = s5.session(&notification.session_id) {
                    session.cancel();
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let session = match s6.session(&request.session_id) {
                    Ok(session) => session,
                    Err(error) => return responder.respond_with_error(error),
                };
                match crate::modes::parse(&request.mode_id) {
                    Some(mode) => {
                        session.set_approval(mode);
                        responder.respond(SetSessionModeResponse::new())
                    }
                    None => responder.respond_with_error(
                        agent_client_protocol::Error::invalid_params().data(format!(
                            "unknown mode `{}`: read-only, ask, auto-edit or full",
                            request.mode_id.0
                        )),
                    ),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CancelCompactionRequest, responder, _cx| {
                let session = match s7.session(&request.session_id) {
                    Ok(session) => session,
                    Err(error) => return responder.respond_with_error(error),
                };
                responder.respond(CancelCompactionResponse {
                    cancelled: session.cancel_compaction(),
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ForkSessionRequest, responder, cx: ConnectionTo<Client>| {
                let state = s9.clone();
                s9.spawn(async move {
                    let choice = SessionChoice::Fork(request.session_id.0.to_string());
                    match open(&state, &cx, request.cwd, choice, &request.mcp_servers) {
                        Ok(opened) => {
                            responder.respond(
                                ForkSessionResponse::new(opened.session.id.clone())
                                    .modes(crate::modes::state(opened.session.approval())),
                            )?;
                            after_open(&cx, opened);
                            Ok(())
                        }
                        Err(error) => responder.respond_with_error(error),
                    }
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                responder
                    .respond_with_result(crate::sessions::list(&request, s8.options.env.as_ref()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport)
        .await;
    // The editor is gone: stop every turn, and let each end (and be recorded) before
    // the process exits.
    let sessions: Vec<Arc<AcpSession>> = state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .drain()
        .map(|(_, session)| session)
        .collect();
    for session in &sessions {
        session.cancel();
    }
    let tasks = std::mem::take(&mut *state.tasks.lock().unwrap_or_else(PoisonError::into_inner));
    let ended = tokio::time::timeout(CLOSE_GRACE, futures::future::join_all(tasks)).await;
    if ended.is_err() {
        tracing::warn!("turns still running {CLOSE_GRACE:?} after the editor left");
    }
    for session in sessions {
        session.close();
    }
    served
}

/// The editor's terminals for `bash`, when it declared them and this binary's path is
/// known (the editor runs `pith sandbox-exec`).
fn editor_terminal(
    state: &State,
    cx: &ConnectionTo<Client>,
    id_cell: &Arc<OnceLock<SessionId>>,
    running: &RunningCalls,
) -> Option<Arc<dyn CommandTerminal>> {
    if !*state
        .terminal
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return None;
    }
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => {
            tracing::warn!(%error, "the editor's terminals are not used: pith's path is unknown");
            return None;
        }
    };
    let terminal = ClientTerminal::new(cx.clone(), id_cell.clone(), program, running.clone());
    Some(Arc::new(terminal))
}

/// What the client can show, from its capabilities.
fn client_view(request: &InitializeRequest) -> ClientView {
    let capabilities = &request.client_capabilities;
    let session = capabilities.session.as_ref();
    ClientView {
        compaction: session.is_some_and(|s| s.compaction.is_some()),
        notices: session.is_some_and(|s| s.notices.is_some()),
        subagents: capabilities.subagents.is_some(),
    }
}

/// `initialize`'s answer: what pith really does (docs/acp.md has the table).
pub fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let protocol = std::cmp::min(
        request.protocol_version,
        agent_client_protocol::schema::ProtocolVersion::V1,
    );
    InitializeResponse::new(protocol)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .fork(SessionForkCapabilities::new()),
                )
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .image(true)
                        .audio(false)
                        .embedded_context(true),
                ),
        )
        .agent_info(Implementation::new("pith", env!("CARGO_PKG_VERSION")).title("pith".to_owned()))
}

/// Opens a conversation for a session in `cwd`, registers it, and returns it with the
/// notices to show.
fn open(
    state: &Arc<State>,
    cx: &ConnectionTo<Client>,
    cwd: PathBuf,
    session: SessionChoice,
    mcp_servers: &[McpServer],
) -> Result<Opened, agent_client_protocol::Error> {
    if !cwd.is_absolute() {
        return Err(agent_client_protocol::Error::invalid_params().data(format!(
            "cwd must be an absolute path, not `{}`",
            cwd.display()
        )));
    }
    if let SessionChoice::Resume(id) = &session {
        let open_here = state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(&SessionId::new(id.as_str()));
        if open_here {
            return Err(agent_client_protocol::Error::invalid_request()
                .data(format!("session {id} is already open on this connection")));
        }
    }
    // A fork's history is the client's already (it forked its own thread): it is not
    // replayed.
    let (resuming, replaying) = match &session {
        SessionChoice::Resume(_) => (true, true),
        SessionChoice::Fork(_) => (true, false),
        _ => (false, false),
    };
    let (extra_mcp_servers, mcp_notices) = crate::mcp_servers::from_client(mcp_servers);
    let overrides = Overrides {
        session,
        cwd: cwd.clone(),
        extra_mcp_servers,
        ..state.options.overrides.clone()
    };
    let running = RunningCalls::default();
    let id_cell = Arc::new(OnceLock::new());
    let approver = AcpApprover::new(cx.clone(), id_cell.clone(), running.clone());
    let access = *state.files.lock().unwrap_or_else(PoisonError::into_inner);
    let files = (access.read || access.write).then(|| {
        Arc::new(ClientFiles::new(cx.clone(), id_cell.clone(), access)) as Arc<dyn TextFiles>
    });
    let terminal = editor_terminal(state, cx, &id_cell, &running);
    let frontend = Frontend {
        env: state.options.env.clone(),
        approver: Some(Arc::new(approver)),
        files,
        terminal,
        changes: None,
    };
    let opened = Conversation::open(overrides, frontend).map_err(|error| match error {
        pith_agent::ConversationError::Usage(message) if resuming => {
            agent_client_protocol::v1::schema::Error::resource_not_found(None)
                .data(message)
                .into()
        }
        error => agent_client_protocol::Error::internal_error().data(error.to_string()),
    })?;
    let mut conversation = opened.value;
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
    if let Some(records) = opened.resumed.as_ref().filter(|_| replaying) {
        replayed = crate::replay::replay(records, &mut mapper, view);
    }
    // Where the context stands before the first prompt (a loaded session's history,
    // a new one's system prompt and tools), with the cost so far.
    let used = conversation.estimate().total as u64;
    let usage = mapper.notification(SessionUpdate::UsageUpdate(mapper.usage_update(used)));
    let session = Arc::new(AcpSession::new(conversation, mapper));
    let _ = id_cell.set(session.id.clone());
    tracing::info!(session = %session.id.0, resumed = resuming, "ACP session open");
    for notification in replayed {
        let _ = cx.send_notification(notification);
    }
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(session.id.clone(), session.clone());
    Ok(Opened {
        session,
        notices,
        usage,
    })
}

/// A session just opened, with what the editor gets after the response.
struct Opened {
    session: Arc<AcpSession>,
    /// Warnings and notes of opening it.
    notices: Vec<String>,
    /// Where its context stands.
    usage: SessionNotification,
}

/// After a session's response: its notices, where its context stands, and the commands
/// it offers.
fn after_open(cx: &ConnectionTo<Client>, opened: Opened) {
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
