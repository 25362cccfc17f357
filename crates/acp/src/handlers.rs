//! The handlers of an open session's requests: `initialize`, `session/prompt` (and its
//! cancellation by `session/cancel` or `$/cancel_request`), `session/set_mode`,
//! `session/set_config_option`, pith's `_pith/cancel_compaction`, and the stand-in
//! request of a line pith could not read.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CancelNotification, CurrentModeUpdate, InitializeRequest, InitializeResponse, PromptRequest,
    PromptResponse, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::Responder;

use crate::call::{Call, Handled};
use crate::ext::{CancelCompactionRequest, CancelCompactionResponse, RejectedLineRequest};
use crate::files::FileAccess;
use crate::session::PromptError;
use crate::state::State;

/// The open session `$id` names; a session not open here is answered with the error
/// [`State::session`] gives, and the handler returns.
macro_rules! open_session {
    ($state:expr, $id:expr, $responder:expr) => {
        match $state.session($id) {
            Ok(session) => session,
            Err(error) => return $responder.respond_with_error(error),
        }
    };
}

/// `initialize`: remembers what the client declared, answers what pith does.
pub(crate) fn initialize(
    (state, request, responder, _): Call<InitializeRequest, InitializeResponse>,
) -> Handled {
    state.declare(
        crate::initialize::client_view(&request),
        FileAccess::declared(&request.client_capabilities.fs),
        request.client_capabilities.terminal,
    );
    responder.respond(crate::initialize::initialize(&request))
}

/// `session/prompt`: the turn runs on its own task, so that `session/cancel`,
/// `$/cancel_request` and `_pith/cancel_compaction` are read while it runs. Either
/// cancel stops the turn, which answers `cancelled`.
pub(crate) fn prompt(
    (state, request, responder, cx): Call<PromptRequest, PromptResponse>,
) -> Handled {
    let session = open_session!(state, &request.session_id, responder);
    let cancel_request = responder.cancellation();
    state.spawn(async move {
        let watcher = {
            let session = Arc::clone(&session);
            tokio::spawn(async move {
                cancel_request.cancelled().await;
                session.cancel();
            })
        };
        let result = session.prompt(&request.prompt, cx).await;
        watcher.abort();
        match result {
            Ok(reason) => responder.respond(PromptResponse::new(reason)),
            Err(error) => {
                tracing::warn!(%error, "a prompt failed");
                let answer = match error {
                    PromptError::Busy => agent_client_protocol::Error::invalid_request(),
                    PromptError::Closed => {
                        agent_client_protocol::v1::schema::Error::session_not_found(
                            session.id.clone(),
                        )
                        .into()
                    }
                    PromptError::Failed(_) => agent_client_protocol::Error::internal_error(),
                };
                responder.respond_with_error(answer.data(error.to_string()))
            }
        }
    })
}

/// `session/cancel`.
pub(crate) fn cancel(state: &Arc<State>, notification: CancelNotification) {
    if let Ok(session) = state.session(&notification.session_id) {
        session.cancel();
    }
}

/// `session/set_mode`; the mode option follows (`config_option_update`).
pub(crate) fn set_mode(
    (state, request, responder, cx): Call<SetSessionModeRequest, SetSessionModeResponse>,
) -> Handled {
    let session = open_session!(state, &request.session_id, responder);
    match crate::modes::parse(&request.mode_id) {
        Some(mode) => {
            session.set_approval(mode);
            responder.respond(SetSessionModeResponse::new())?;
            let _ = cx.send_notification(session.config_update());
            Ok(())
        }
        None => responder.respond_with_error(agent_client_protocol::Error::invalid_params().data(
            format!(
                "modeId: unknown mode `{}`: read-only, ask, auto-edit or full",
                request.mode_id.0
            ),
        )),
    }
}

/// `session/set_config_option`: every option as it stands after; a change of mode also
/// reaches clients that follow modes (`current_mode_update`).
pub(crate) fn set_config_option(
    (state, request, responder, cx): Call<
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
    >,
) -> Handled {
    let session = open_session!(state, &request.session_id, responder);
    let Some(value) = request.value.as_value_id() else {
        return responder.respond_with_error(
            agent_client_protocol::Error::invalid_params()
                .data("value: pith's options are selects; a boolean is not a value of any"),
        );
    };
    let before = session.approval();
    match session.set_config(&request.config_id.0, &value.0) {
        Ok(options) => {
            responder.respond(SetSessionConfigOptionResponse::new(options))?;
            if session.approval() != before {
                let update = CurrentModeUpdate::new(crate::modes::id(session.approval()));
                let _ = cx.send_notification(SessionNotification::new(
                    session.id.clone(),
                    SessionUpdate::CurrentModeUpdate(update),
                ));
            }
            Ok(())
        }
        Err(error) => responder.respond_with_error(error),
    }
}

/// `_pith/cancel_compaction`.
pub(crate) fn cancel_compaction(
    (state, request, responder, _): Call<CancelCompactionRequest, CancelCompactionResponse>,
) -> Handled {
    let session = open_session!(state, &request.session_id, responder);
    responder.respond(CancelCompactionResponse {
        cancelled: session.cancel_compaction(),
    })
}

/// The stand-in of a line pith could not read (`lines.rs`): a `-32700` with the reason.
pub(crate) fn rejected_line(
    request: RejectedLineRequest,
    responder: Responder<crate::ext::RejectedLineResponse>,
) -> Result<(), agent_client_protocol::Error> {
    responder.respond_with_error(agent_client_protocol::Error::parse_error().data(request.reason))
}
