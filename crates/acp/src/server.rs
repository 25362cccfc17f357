//! The ACP agent: which handler answers each method (`lifecycle.rs` the sessions'
//! lifecycle, `handlers.rs` the rest), on one connection, until the client closes it.
//! Long work (opening a session, a turn) runs on tasks of its own, so the dispatch loop
//! keeps reading `session/cancel` and `$/cancel_request` (the SDK marks a cancelled
//! request before any handler runs).

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, DeleteSessionRequest, ForkSessionRequest,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, NewSessionRequest, PromptRequest,
    ResumeSessionRequest, SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, Client, ConnectTo};

use crate::ext::{CancelCompactionRequest, RejectedLineRequest};
use crate::handlers;
use crate::lifecycle;
pub use crate::state::AgentOptions;
use crate::state::State;

/// Registers `$handler(&state, request, responder[, cx])` for requests of type `$ty`.
macro_rules! request {
    ($builder:expr, $state:expr, $ty:ty, $handler:path) => {{
        let state = Arc::clone(&$state);
        $builder.on_receive_request(
            async move |request: $ty, responder, _cx: ConnectionTo<Client>| {
                $handler(&state, request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        )
    }};
    ($builder:expr, $state:expr, $ty:ty, $handler:path, cx) => {{
        let state = Arc::clone(&$state);
        $builder.on_receive_request(
            async move |request: $ty, responder, cx: ConnectionTo<Client>| {
                $handler(&state, request, responder, cx)
            },
            agent_client_protocol::on_receive_request!(),
        )
    }};
}

/// Serves one client over `transport` until it closes the connection. The sessions
/// still open are closed then, once their turns ended (and were recorded).
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    options: AgentOptions,
) -> Result<(), agent_client_protocol::Error> {
    let state = Arc::new(State::new(options));
    let agent = Agent.v1().name("pith");
    let agent = request!(agent, state, InitializeRequest, handlers::initialize);
    let agent = request!(agent, state, NewSessionRequest, lifecycle::new_session, cx);
    let agent = request!(
        agent,
        state,
        LoadSessionRequest,
        lifecycle::load_session,
        cx
    );
    let agent = request!(
        agent,
        state,
        ResumeSessionRequest,
        lifecycle::resume_session,
        cx
    );
    let agent = request!(
        agent,
        state,
        ForkSessionRequest,
        lifecycle::fork_session,
        cx
    );
    let agent = request!(agent, state, CloseSessionRequest, lifecycle::close_session);
    let agent = request!(
        agent,
        state,
        DeleteSessionRequest,
        lifecycle::delete_session
    );
    let agent = request!(agent, state, ListSessionsRequest, lifecycle::list_sessions);
    let agent = request!(agent, state, PromptRequest, handlers::prompt, cx);
    let agent = request!(agent, state, SetSessionModeRequest, handlers::set_mode, cx);
    let agent = request!(
        agent,
        state,
        SetSessionConfigOptionRequest,
        handlers::set_config_option,
        cx
    );
    let agent = request!(
        agent,
        state,
        CancelCompactionRequest,
        handlers::cancel_compaction
    );
    let cancelling = Arc::clone(&state);
    let agent = agent
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                handlers::cancel(&cancelling, notification);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RejectedLineRequest, responder, _cx| {
                handlers::rejected_line(request, responder)
            },
            agent_client_protocol::on_receive_request!(),
        );
    let served = agent.connect_to(transport).await;
    // The editor is gone: stop every turn, and let each end (and be recorded) before
    // the process exits.
    state.close_all().await;
    served
}
