//! What every request handler (`handlers.rs`, `lifecycle.rs`) takes and returns.

use std::sync::Arc;

use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::Client;

use crate::state::State;

/// What a handler gets for one request: the agent's state, the request, where its answer
/// goes, and the connection it came on.
pub(crate) type Call<Req, Resp> = (Arc<State>, Req, Responder<Resp>, ConnectionTo<Client>);

/// What a handler returns: `Err` when its answer could not be sent.
pub(crate) type Handled = Result<(), agent_client_protocol::Error>;
