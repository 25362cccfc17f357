//! `session/list`: the recorded sessions an editor can load — those of the requested
//! project (`cwd`), or of every project, newest activity first. A subagent's session is
//! not listed (it belongs to its parent's `task` call). Everything is returned at once
//! (no cursor).

use agent_client_protocol::v1::schema::{ListSessionsRequest, ListSessionsResponse, SessionInfo};
use pith_session::{SessionStore, SessionSummary};

/// The sessions `request` asks for, from the store `lookup`'s variables name.
pub fn list(
    request: &ListSessionsRequest,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ListSessionsResponse, agent_client_protocol::Error> {
    let project = match &request.cwd {
        Some(cwd) => Some(std::fs::canonicalize(cwd).map_err(|error| {
            agent_client_protocol::Error::invalid_params()
                .data(format!("cannot resolve `{}`: {error}", cwd.display()))
        })?),
        None => None,
    };
    let store = SessionStore::from_lookup(lookup)
        .map_err(|error| agent_client_protocol::Error::internal_error().data(error.to_string()))?;
    let sessions = store
        .list_sessions(project.as_deref())
        .map_err(|error| agent_client_protocol::Error::internal_error().data(error.to_string()))?;
    Ok(ListSessionsResponse::new(
        sessions
            .iter()
            .filter(|summary| summary.parent_session.is_none())
            .map(info)
            .collect(),
    ))
}

/// How one recorded session is listed.
fn info(summary: &SessionSummary) -> SessionInfo {
    let cwd = summary.cwd.clone().unwrap_or_default();
    let model = match (&summary.provider, &summary.model) {
        (Some(provider), Some(model)) => format!(", {provider}/{model}"),
        (None, Some(model)) => format!(", {model}"),
        _ => String::new(),
    };
    let turns = match summary.turns {
        1 => "1 turn".to_owned(),
        n => format!("{n} turns"),
    };
    SessionInfo::new(summary.id.clone(), cwd)
        .title(format!("{turns}{model}"))
        .updated_at(summary.last_activity.clone().or(summary.started.clone()))
}
