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

/// Registers each `$ty => $handler` of the table on `$builder`: a request of type `$ty`
/// is answered by `$handler` (`crate::call`: a `Call` in, `Handled` out).
macro_rules! requests {
    ($builder:expr, $state:expr; $($ty:ty => $handler:path;)*) => {{
        let builder = $builder;
        $(
            let state = Arc::clone(&$state);
            let builder = builder.on_receive_request(
                async move |request: $ty, responder, cx: ConnectionTo<Client>| {
                    $handler((Arc::clone(&state), request, responder, cx))
                },
                agent_client_protocol::on_receive_request!(),
            );
        )*
        builder
    }};
}

/// Serves one client over `transport` until it closes the connection. The sessions
/// still open are closed then, once their turns ended (and were recorded).
pub async fn serve(
    transport: impl ConnectTo<Agent> + 'static,
    options: AgentOptions,
) -> Result<(), agent_client_protocol::Error> {
    let state = Arc::new(State::new(options));
    let agent = requests!(Agent.v1().name("pith"), state;
        InitializeRequest => handlers::initialize;
        NewSessionRequest => lifecycle::new_session;
        LoadSessionRequest => lifecycle::load_session;
        ResumeSessionRequest => lifecycle::resume_session;
        ForkSessionRequest => lifecycle::fork_session;
        CloseSessionRequest => lifecycle::close_session;
        DeleteSessionRequest => lifecycle::delete_session;
        ListSessionsRequest => lifecycle::list_sessions;
        PromptRequest => handlers::prompt;
        SetSessionModeRequest => handlers::set_mode;
        SetSessionConfigOptionRequest => handlers::set_config_option;
        CancelCompactionRequest => handlers::cancel_compaction;
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
