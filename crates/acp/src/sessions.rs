//! `session/list`: the recorded sessions an editor can load or resume — those of the
//! requested project (`cwd`), or of every project, newest activity first, [`PAGE`] at a
//! time (`nextCursor`). A subagent's session is not listed (it belongs to its parent's
//! `task` call). A session's title is its first message's first line, else its turns
//! and model.

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use pith_agent::{list_sessions, session_title, Listed};
use pith_session::SessionSummary;

/// Sessions per page.
pub const PAGE: usize = 50;

/// What a cursor pith gives starts with; the rest is the offset of the next page.
const CURSOR_PREFIX: &str = "pith-sessions-from-";

/// The sessions `request` asks for, from the store `lookup`'s variables name.
pub fn list(
    request: &ListSessionsRequest,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ListSessionsResponse, agent_client_protocol::Error> {
    let invalid = |message: String| agent_client_protocol::Error::invalid_params().data(message);
    let start = match &request.cursor {
        None => 0,
        Some(cursor) => cursor
            .strip_prefix(CURSOR_PREFIX)
            .and_then(|offset| offset.parse::<usize>().ok())
            .ok_or_else(|| {
                invalid(format!(
                    "cursor: `{cursor}` is not a cursor pith gave (use the nextCursor of a previous answer)"
                ))
            })?,
    };
    let project = match &request.cwd {
        Some(cwd) => Some(std::fs::canonicalize(cwd).map_err(|error| {
            invalid(format!("cwd: cannot resolve `{}`: {error}", cwd.display()))
        })?),
        None => None,
    };
    let sessions = list_sessions(lookup, project.as_deref(), Listed::TopLevel)
        .map_err(|error| agent_client_protocol::Error::internal_error().data(error.to_string()))?;
    let page: Vec<SessionInfo> = sessions.iter().skip(start).take(PAGE).map(info).collect();
    let next = start + page.len();
    let response = ListSessionsResponse::new(page);
    Ok(if next < sessions.len() {
        response.next_cursor(format!("{CURSOR_PREFIX}{next}"))
    } else {
        response
    })
}

/// How one recorded session is listed.
fn info(summary: &SessionSummary) -> SessionInfo {
    let cwd = summary.cwd.clone().unwrap_or_default();
    SessionInfo::new(summary.id.clone(), cwd)
        .title(session_title(summary))
        .updated_at(summary.last_activity.clone().or(summary.started.clone()))
}
