//! pith's extension method: `_pith/cancel_compaction` cancels only the automatic (or
//! manual) compaction a session is running — the child token of the turn, as Esc does
//! in the REPL — and the turn goes on with its history unchanged.
//!
//! Request `{"sessionId": "…"}`; response `{"cancelled": true}` when a compaction was
//! running and is now cancelled, `false` when none was running. An unknown session is a
//! `-32002` (resource not found) error.

use agent_client_protocol::v1::schema::SessionId;
use agent_client_protocol::{JsonRpcRequest, JsonRpcResponse};
use serde::{Deserialize, Serialize};

/// `_pith/cancel_compaction`'s parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_pith/cancel_compaction", response = CancelCompactionResponse)]
#[serde(rename_all = "camelCase")]
pub struct CancelCompactionRequest {
    /// The session whose compaction to cancel.
    pub session_id: SessionId,
}

/// `_pith/cancel_compaction`'s result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
pub struct CancelCompactionResponse {
    /// A compaction was running and is cancelled.
    pub cancelled: bool,
}

/// The request that stands for a line pith could not read (not UTF-8, or over the line
/// limit; see `lines.rs`), sent under that line's own id. It is answered with a `-32700`
/// error whose data is `reason`, so the client's pending request gets its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcRequest)]
#[request(method = "_pith/rejected_line", response = RejectedLineResponse)]
pub struct RejectedLineRequest {
    /// Why the line was not read.
    pub reason: String,
}

/// Never sent: a rejected line is always answered with an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
pub struct RejectedLineResponse {}
