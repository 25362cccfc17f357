//! The editor at the other end of one ACP session, as the parts of pith that ask it
//! things hold it (permission questions, files, terminals): the connection, and the
//! session's id once the conversation is open.

use std::future::Future;
use std::io;
use std::sync::{Arc, OnceLock};

use agent_client_protocol::v1::schema::SessionId;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, JsonRpcRequest};

/// The editor of one ACP session: its connection, and the session's id once known.
#[derive(Debug, Clone)]
pub struct Editor {
    /// The connection to the client.
    pub connection: ConnectionTo<Client>,
    /// Set once the conversation is open (its id is the ACP session id).
    session: Arc<OnceLock<SessionId>>,
}

impl Editor {
    /// The editor over `connection`; `session` is filled in when the session's id is
    /// known.
    pub fn new(connection: ConnectionTo<Client>, session: Arc<OnceLock<SessionId>>) -> Self {
        Self {
            connection,
            session,
        }
    }

    /// The session's id, once the conversation is open.
    pub fn session_id(&self) -> Option<SessionId> {
        self.session.get().cloned()
    }

    /// The session's id, or the error of a request made before the session is open.
    pub fn session(&self) -> io::Result<SessionId> {
        self.session_id()
            .ok_or_else(|| io::Error::other("the ACP session is not open yet"))
    }

    /// Sends `request` to the editor now; the future is its answer.
    pub fn ask<Req: JsonRpcRequest>(
        &self,
        request: Req,
    ) -> impl Future<Output = Result<Req::Response, agent_client_protocol::Error>> {
        self.connection.send_request(request).block_task()
    }
}

/// The `io::Error` for a failed request to the editor (its code and message).
pub fn editor_error(method: &str, error: &agent_client_protocol::Error) -> io::Error {
    io::Error::other(format!(
        "the editor answered {method} with an error: {error}"
    ))
}
