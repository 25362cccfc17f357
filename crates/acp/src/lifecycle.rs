//! The session lifecycle: `session/new`, `session/load`, `session/resume`,
//! `session/fork`, `session/close`, `session/delete` and `session/list`.
//!
//! - **new**: a new pith session, written at once (listed, loadable after a restart);
//! - **load**: a recorded session, its transcript replayed before the response;
//! - **resume**: a recorded session, not replayed (the client has the history);
//! - **fork**: a new session starting with a copy of another's records;
//! - **close**: the running turn cancelled as by `session/cancel` and waited for, then
//!   the conversation closed; the session stays recorded (listable, loadable);
//! - **delete**: closed if open here, then its transcript and its subagents' removed
//!   from disk; an unknown session succeeds silently; one another pith process holds
//!   open is refused; the checkpoint store's copies are left to its collection.
//!
//! Opening runs outside the dispatch loop (it may probe a server); a `$/cancel_request`
//! for it answers `-32800` and closes what was opened.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ForkSessionRequest, ForkSessionResponse, ListSessionsRequest, LoadSessionRequest,
    LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionConfigOption, SessionId, SessionModeState,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, JsonRpcResponse};
use pith_session::SessionError;

use crate::call::{Call, Handled};
use crate::open::{after_open, open, Opening};
use crate::session::AcpSession;
use crate::state::State;

/// The request's answer from the session opened for it.
type Answer<R> = fn(&AcpSession, SessionModeState, Vec<SessionConfigOption>) -> R;

/// Opens a session as `opening` says, outside the dispatch loop, and answers with
/// `answer`'s response, then the updates that follow it.
fn open_and_answer<R: JsonRpcResponse + Send + 'static>(
    state: &Arc<State>,
    cx: ConnectionTo<Client>,
    (cwd, opening, mcp_servers): (PathBuf, Opening, Vec<McpServer>),
    responder: Responder<R>,
    answer: Answer<R>,
) -> Handled {
    let state2 = Arc::clone(state);
    let cancelled = responder.cancellation();
    state.spawn(async move {
        match open(&state2, &cx, cwd, opening, &mcp_servers) {
            Ok(opened) if cancelled.is_cancelled() => {
                if let Some(session) = state2.remove(&opened.session.id) {
                    session.close().await;
                }
                responder.respond_with_error(agent_client_protocol::Error::request_cancelled())
            }
            Ok(opened) => {
                let session = &opened.session;
                let modes = crate::modes::state(session.approval());
                responder.respond(answer(session, modes, session.config_options()))?;
                after_open(&cx, opened);
                Ok(())
            }
            Err(error) => responder.respond_with_error(error),
        }
    })
}

/// `session/new`.
pub(crate) fn new_session(
    (state, request, responder, cx): Call<NewSessionRequest, NewSessionResponse>,
) -> Handled {
    let how = (request.cwd, Opening::New, request.mcp_servers);
    open_and_answer(&state, cx, how, responder, |session, modes, options| {
        NewSessionResponse::new(session.id.clone())
            .modes(modes)
            .config_options(options)
    })
}

/// `session/load`.
pub(crate) fn load_session(
    (state, request, responder, cx): Call<LoadSessionRequest, LoadSessionResponse>,
) -> Handled {
    let opening = Opening::Load(request.session_id.0.to_string());
    let how = (request.cwd, opening, request.mcp_servers);
    open_and_answer(&state, cx, how, responder, |_, modes, options| {
        LoadSessionResponse::new()
            .modes(modes)
            .config_options(options)
    })
}

/// `session/resume`.
pub(crate) fn resume_session(
    (state, request, responder, cx): Call<ResumeSessionRequest, ResumeSessionResponse>,
) -> Handled {
    let opening = Opening::Resume(request.session_id.0.to_string());
    let how = (request.cwd, opening, request.mcp_servers);
    open_and_answer(&state, cx, how, responder, |_, modes, options| {
        ResumeSessionResponse::new()
            .modes(modes)
            .config_options(options)
    })
}

/// `session/fork`.
pub(crate) fn fork_session(
    (state, request, responder, cx): Call<ForkSessionRequest, ForkSessionResponse>,
) -> Handled {
    let opening = Opening::Fork(request.session_id.0.to_string());
    let how = (request.cwd, opening, request.mcp_servers);
    open_and_answer(&state, cx, how, responder, |session, modes, options| {
        ForkSessionResponse::new(session.id.clone())
            .modes(modes)
            .config_options(options)
    })
}

/// `session/close`: a session not open on this connection is `-32002`.
pub(crate) fn close_session(
    (state, request, responder, _): Call<CloseSessionRequest, CloseSessionResponse>,
) -> Handled {
    let Some(session) = state.remove(&request.session_id) else {
        return responder.respond_with_error(not_open(&request.session_id));
    };
    state.spawn(async move {
        session.close().await;
        responder.respond(CloseSessionResponse::new())
    })
}

/// `session/delete`.
pub(crate) fn delete_session(
    (state, request, responder, _): Call<DeleteSessionRequest, DeleteSessionResponse>,
) -> Handled {
    let open_here = state.remove(&request.session_id);
    let env = state.options.env.clone();
    state.spawn(async move {
        if let Some(session) = open_here {
            session.close().await;
        }
        let id = request.session_id.0.to_string();
        let deleted = pith_agent::delete_session(&|name| env(name), &id);
        match deleted {
            Ok(_) => responder.respond(DeleteSessionResponse::new()),
            Err(SessionError::InUse { pid, .. }) => responder.respond_with_error(
                agent_client_protocol::Error::invalid_request().data(format!(
                    "sessionId: session {id} is open in another pith process{}; close it there first",
                    pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
                )),
            ),
            Err(error) => responder.respond_with_error(
                agent_client_protocol::Error::internal_error().data(error.to_string()),
            ),
        }
    })
}

/// `session/list`.
pub(crate) fn list_sessions(
    (state, request, responder, _): Call<
        ListSessionsRequest,
        agent_client_protocol::v1::schema::ListSessionsResponse,
    >,
) -> Handled {
    let env = state.options.env.clone();
    responder.respond_with_result(crate::sessions::list(&request, &|name| env(name)))
}

/// The spec's "session not found" for a session this connection does not have open.
fn not_open(id: &SessionId) -> agent_client_protocol::Error {
    agent_client_protocol::v1::schema::Error::session_not_found(id.clone())
        .data(format!(
            "sessionId: session {} is not open on this connection",
            id.0
        ))
        .into()
}
