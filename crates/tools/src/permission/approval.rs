//! The question to the user and the answer: a [`PermissionRequest`], an [`Approval`], and
//! the front-end's [`Approver`] that gets one and gives the other.

use async_trait::async_trait;

/// A question to the user: may this tool call run?
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionRequest {
    /// Tool name (`write`, `edit`, `bash`, `read`, ...).
    pub tool: String,
    /// One-line summary of the arguments (path and size, or the command).
    pub summary: String,
    /// What [`Approval::AllowForSession`] would allow from now on.
    pub session_scope: String,
    /// More to review, when there is any: the diff of a write or an edit.
    pub details: Option<String>,
}

/// The user's answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run this call only.
    AllowOnce,
    /// Run this call and every later call covered by the request's `session_scope`.
    AllowForSession,
    /// Do not run it. `feedback` (what to do instead) is passed on to the model.
    Deny {
        /// Optional words for the model.
        feedback: Option<String>,
    },
}

/// The front-end side of `ask`: shows a request to the user and returns the answer.
///
/// Called from inside a tool call, on the tool loop's task. Requests are serialised by
/// the policy (never two at once). If the turn is cancelled while the approver waits, the
/// policy drops the future and the call ends as cancelled, so implementations must be
/// cancel-safe (dropping the future withdraws the question).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Asks the user about `request`.
    async fn decide(&self, request: PermissionRequest) -> Approval;
}
