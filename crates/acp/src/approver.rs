//! pith's permission questions as `session/request_permission`: the editor shows the
//! tool call the question is about, with three options — allow once, allow for the rest
//! of the session (what pith's "allow for this session" covers, in words), reject. A
//! rejection, a cancelled question or a client that fails to answer refuses the call,
//! and the model is told.

use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId, ToolCallId, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use async_trait::async_trait;
use pith_tools::{Approval, Approver, PermissionRequest};

use crate::editor::Editor;
use crate::running::RunningCalls;

/// The option ids pith offers.
pub const ALLOW_ONCE: &str = "allow-once";
/// Allow this call and what the question's scope covers, for the session.
pub const ALLOW_ALWAYS: &str = "allow-always";
/// Refuse the call.
pub const REJECT: &str = "reject";

/// Asks the editor; one per ACP session.
#[derive(Debug)]
pub struct AcpApprover {
    editor: Editor,
    running: RunningCalls,
}

impl AcpApprover {
    /// An approver asking `editor` about the calls in `running`.
    pub fn new(editor: Editor, running: RunningCalls) -> Self {
        Self { editor, running }
    }
}

/// The `session/request_permission` for `request`, about the running call `call_id` of
/// `session` (or a call of its own when none is running, e.g. an MCP tool's).
pub fn question(
    session: SessionId,
    call_id: Option<String>,
    request: &PermissionRequest,
) -> RequestPermissionRequest {
    let mut fields = ToolCallUpdateFields::new().title(request.summary.clone());
    if let Some(details) = &request.details {
        fields = fields.content(vec![details.clone().into()]);
    }
    if call_id.is_none() {
        fields = fields.kind(ToolKind::Other);
    }
    let id = call_id.unwrap_or_else(|| format!("permission-{}", request.tool));
    RequestPermissionRequest::new(
        session,
        ToolCallUpdate::new(ToolCallId::new(id), fields),
        vec![
            PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                ALLOW_ALWAYS,
                format!("Allow for this session: {}", request.session_scope),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce),
        ],
    )
}

/// pith's answer for the editor's `outcome`.
pub fn answer(outcome: &RequestPermissionOutcome) -> Approval {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            ALLOW_ONCE => Approval::AllowOnce,
            ALLOW_ALWAYS => Approval::AllowForSession,
            _ => Approval::Deny { feedback: None },
        },
        _ => Approval::Deny { feedback: None },
    }
}

#[async_trait]
impl Approver for AcpApprover {
    async fn decide(&self, request: PermissionRequest) -> Approval {
        let Some(session) = self.editor.session_id() else {
            return Approval::Deny { feedback: None };
        };
        // A subagent's call is asked about in the subagent's session.
        let (session, call) = match self.running.latest(&request.tool) {
            Some(call) => (call.session, Some(call.id)),
            None => (session, None),
        };
        match self.editor.ask(question(session, call, &request)).await {
            Ok(response) => answer(&response.outcome),
            Err(error) => {
                tracing::warn!(%error, "the editor did not answer a permission question");
                Approval::Deny {
                    feedback: Some(format!("the editor could not be asked: {error}")),
                }
            }
        }
    }
}
