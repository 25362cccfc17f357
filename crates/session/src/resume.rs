//! Resuming a session for writing: open it, read it, and hand back what a front-end needs
//! to continue — the model history, the recorded model and the records for replay — with
//! every warning (quarantined tail, skipped lines) as text to show the user.
//!
//! Shared by `pith run --session`, `pith --continue`, `pith --resume` and `/resume`.

use std::path::Path;

use pith_core::Message;

use crate::error::Result;
use crate::event::{Event, Record};
use crate::projection::project_model;
use crate::read::ReadOptions;
use crate::store::{Session, SessionStore};

/// An existing session opened for writing, with what it recorded.
#[derive(Debug)]
pub struct Resumed {
    /// The session, holding the writer lock.
    pub session: Session,
    /// Every record, in order (for replay rendering).
    pub records: Vec<Record>,
    /// The model history to continue from (compactions and conversation rewinds
    /// applied).
    pub history: Vec<Message>,
    /// `provider/model` from `session_started`, when present.
    pub recorded_model: Option<String>,
    /// Problems found while opening and reading, for the user.
    pub warnings: Vec<String>,
}

impl Resumed {
    /// The records of the current line of the conversation (conversation rewinds
    /// applied, [`crate::line`]): what a front-end rebuilds conversation state from, such
    /// as the session ledger. `records` keeps every record, for replay.
    pub fn line(&self) -> Vec<&Record> {
        crate::line::current_line(&self.records)
    }
}

impl SessionStore {
    /// Opens the session `query` (id, id prefix, directory or transcript path) and reads
    /// it strictly.
    pub fn resume(&self, query: &str) -> Result<Resumed> {
        let session = self.open(query)?;
        let mut warnings = Vec::new();
        if let Some(quarantine) = session.quarantine() {
            warnings.push(quarantine.warning());
        }
        let transcript = session.read(ReadOptions::default())?;
        warnings.extend(transcript.report.warnings());
        let recorded_model = transcript.records.iter().find_map(|r| match &r.event {
            Event::SessionStarted {
                provider, model, ..
            } => Some(format!("{provider}/{model}")),
            _ => None,
        });
        let history = project_model(&transcript.records);
        Ok(Resumed {
            session,
            records: transcript.records,
            history,
            recorded_model,
            warnings,
        })
    }

    /// The id of the project's session with the most recent activity, if any; never a
    /// subagent's session (it continues with its parent).
    pub fn latest_session_id(&self, project: &Path) -> Result<Option<String>> {
        Ok(self
            .list_sessions(Some(project))?
            .into_iter()
            .find(|summary| summary.parent_session.is_none())
            .map(|summary| summary.id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::NewSession;

    #[test]
    fn resuming_returns_history_model_and_records_and_continue_finds_the_latest() {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::at(root.path().join("sessions"));
        let cwd = root.path().to_path_buf();
        assert_eq!(store.latest_session_id(&cwd).unwrap(), None);
        let mut session = store
            .create(NewSession {
                cwd: cwd.clone(),
                provider: "openai".into(),
                model: "gpt-4o".into(),
            })
            .unwrap();
        session.append(Event::user_text("hello")).unwrap();
        let id = session.id().to_owned();
        drop(session);

        assert_eq!(store.latest_session_id(&cwd).unwrap(), Some(id.clone()));
        let resumed = store.resume(&id).unwrap();
        assert_eq!(resumed.recorded_model.as_deref(), Some("openai/gpt-4o"));
        assert_eq!(resumed.history, vec![Message::user("hello")]);
        assert_eq!(resumed.records.len(), 2);
        assert!(resumed.warnings.is_empty(), "{:?}", resumed.warnings);

        // A subagent's session, newer than its parent, is never the one to continue.
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mut child = store
            .create_child(
                NewSession {
                    cwd: cwd.clone(),
                    provider: "openai".into(),
                    model: "gpt-4o".into(),
                },
                &id,
            )
            .unwrap();
        child.append(Event::user_text("explore")).unwrap();
        let child_id = child.id().to_owned();
        drop(child);
        let listed = store.list_sessions(Some(&cwd)).unwrap();
        assert_eq!(listed[0].id, child_id, "the child is the newest");
        assert_eq!(listed[0].parent_session.as_deref(), Some(id.as_str()));
        assert_eq!(store.latest_session_id(&cwd).unwrap(), Some(id));
    }
}
