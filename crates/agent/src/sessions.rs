//! The recorded sessions as every front-end lists and removes them: `pith sessions`, the
//! REPL's `/resume` and `pith acp`'s `session/list` and `session/delete` ask here instead
//! of opening the session store themselves, and name a session for people the same way.

use std::path::Path;

use pith_session::{SessionError, SessionStore, SessionSummary};

/// Which recorded sessions a listing holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// Every session, subagents' included.
    All,
    /// The sessions a user opens: a subagent's belongs to its parent's `task` call.
    TopLevel,
}

/// The sessions of `project` (its canonical directory), or of every project, in the
/// store `lookup`'s variables name (`PITH_HOME`, `HOME`), newest activity first.
pub fn list(
    lookup: &dyn Fn(&str) -> Option<String>,
    project: Option<&Path>,
    listed: Listed,
) -> Result<Vec<SessionSummary>, SessionError> {
    list_in(&SessionStore::from_lookup(lookup)?, project, listed)
}

/// [`list`] in a store already open.
pub fn list_in(
    store: &SessionStore,
    project: Option<&Path>,
    listed: Listed,
) -> Result<Vec<SessionSummary>, SessionError> {
    let mut sessions = store.list_sessions(project)?;
    if listed == Listed::TopLevel {
        sessions.retain(|summary| summary.parent_session.is_none());
    }
    Ok(sessions)
}

/// Removes session `id` (its transcript, spill files and subagents' sessions); `false`
/// when there was none. A session another pith process holds open is
/// [`SessionError::InUse`] and nothing is deleted.
pub fn delete(lookup: &dyn Fn(&str) -> Option<String>, id: &str) -> Result<bool, SessionError> {
    SessionStore::from_lookup(lookup)?.delete(id)
}

/// A session's name for people: the first line of its first message, else its turns
/// and model (`3 turns, anthropic/claude-sonnet-4-5`).
pub fn title(summary: &SessionSummary) -> String {
    summary.title.clone().unwrap_or_else(|| {
        let model = match (&summary.provider, &summary.model) {
            (Some(provider), Some(model)) => format!(", {provider}/{model}"),
            (None, Some(model)) => format!(", {model}"),
            _ => String::new(),
        };
        let turns = match summary.turns {
            1 => "1 turn".to_owned(),
            n => format!("{n} turns"),
        };
        format!("{turns}{model}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_session::NewSession;

    #[test]
    fn a_listing_leaves_subagents_out_when_asked_and_names_untitled_sessions_by_turns() {
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().to_string_lossy().into_owned();
        let lookup = move |name: &str| (name == "PITH_HOME").then(|| home_path.clone());
        let store = SessionStore::from_lookup(&lookup).unwrap();
        let project = tempfile::tempdir().unwrap();
        let cwd = std::fs::canonicalize(project.path()).unwrap();
        let new = || NewSession {
            cwd: cwd.clone(),
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
        };
        let parent = store.create(new()).unwrap();
        let parent_id = parent.id().to_owned();
        let child = store.create_child(new(), &parent_id).unwrap();
        drop(child);

        let all = list(&lookup, Some(&cwd), Listed::All).unwrap();
        assert_eq!(all.len(), 2);
        let top = list(&lookup, Some(&cwd), Listed::TopLevel).unwrap();
        assert_eq!(top.len(), 1);
        assert_eq!(top[0].id, parent_id);
        assert_eq!(title(&top[0]), "0 turns, anthropic/claude-sonnet-4-5");

        drop(parent);
        assert!(delete(&lookup, &parent_id).unwrap());
        assert!(list(&lookup, None, Listed::TopLevel).unwrap().is_empty());
    }
}
