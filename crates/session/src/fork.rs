//! Forking a session: a new session of the same project that starts with a copy of
//! another's records (`session/fork` of `pith acp`).
//!
//! The fork's `session_started` (record 1) names the source in `forked_from` and keeps
//! its project and model; every later record is copied in order in one
//! [`Session::append_batch`], so the fork has all of them or does not exist, and its
//! sequence numbers match the source's. Payloads the source stored out of line are read
//! back and stored again under the fork's own directory. Tool outputs spilled to files
//! stay where they are: the paths in the copied results name the source's `spill/`.

use crate::error::{Result, SessionError};
use crate::event::Event;
use crate::read::ReadOptions;
use crate::store::{NewSession, Session, SessionStore};

impl SessionStore {
    /// Creates a fork of the session `query` (id, id prefix, directory or transcript
    /// path), holding its writer lock. The source is only read (a session another
    /// process is writing can be forked; a half-written last line is left out). A
    /// transcript with a corrupt line, or with records of a newer pith, is not forked.
    pub fn fork(&self, query: &str) -> Result<Session> {
        let source = self.read(query, ReadOptions::default())?;
        let mut records = source.records.into_iter();
        let (source_id, new) = match records.next().map(|r| r.event) {
            Some(Event::SessionStarted {
                session_id,
                cwd,
                provider,
                model,
                ..
            }) => (
                session_id,
                NewSession {
                    cwd,
                    provider,
                    model,
                },
            ),
            _ => {
                return Err(SessionError::NotContinuable {
                    id: query.to_owned(),
                    reason: "its transcript does not start with session_started".into(),
                })
            }
        };
        let events: Vec<Event> = records.map(|r| r.event).collect();
        if let Some(unknown) = events.iter().find(|e| matches!(e, Event::Unknown { .. })) {
            return Err(SessionError::NotContinuable {
                id: source_id,
                reason: format!(
                    "it has a `{}` record of a newer pith, which cannot be copied",
                    unknown.kind()
                ),
            });
        }
        let mut fork = self.create_with_parent(new, None, Some(source_id))?;
        if !events.is_empty() {
            fork.append_batch(events)?;
        }
        Ok(fork)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::project_model;

    fn store() -> (tempfile::TempDir, SessionStore) {
        let root = tempfile::tempdir().unwrap();
        let store = SessionStore::at(root.path().join("sessions"));
        (root, store)
    }

    #[test]
    fn a_fork_starts_with_the_source_history_names_it_and_goes_its_own_way() {
        let (root, store) = store();
        let mut source = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "anthropic".into(),
                model: "claude-sonnet-4-5".into(),
            })
            .unwrap();
        source.append(Event::user_text("first question")).unwrap();
        // A payload large enough to be stored out of line in the source.
        let big = "x".repeat(64 * 1024);
        source.set_max_record_bytes(16 * 1024);
        source.append(Event::user_text(&big)).unwrap();
        let source_id = source.id().to_owned();
        // The source is still open (its writer holds the lock): a fork only reads it.
        let mut fork = store.fork(&source_id[..13]).unwrap();
        assert_ne!(fork.id(), source_id);
        let forked = fork.read(ReadOptions::default()).unwrap();
        match &forked.records[0].event {
            Event::SessionStarted {
                session_id,
                forked_from,
                parent_session,
                model,
                ..
            } => {
                assert_eq!(session_id, fork.id());
                assert_eq!(forked_from.as_deref(), Some(source_id.as_str()));
                assert_eq!(parent_session, &None, "a fork is no subagent");
                assert_eq!(model, "claude-sonnet-4-5");
            }
            other => panic!("record 1 is {other:?}"),
        }
        let history = project_model(&forked.records);
        let original = project_model(&source.read(ReadOptions::default()).unwrap().records);
        assert_eq!(history, original);
        assert_eq!(forked.records.len(), 3);
        assert_eq!(fork.next_seq(), source.next_seq());

        // Each goes on alone.
        fork.append(Event::user_text("only in the fork")).unwrap();
        let source_text = std::fs::read_to_string(source.transcript_path()).unwrap();
        assert!(!source_text.contains("only in the fork"));
        // Listed as a session of its own (it can be continued).
        drop(fork);
        let listed = store.list_sessions(Some(root.path())).unwrap();
        assert_eq!(listed.len(), 2);
    }

    #[test]
    fn an_unknown_session_is_not_found_and_nothing_is_created() {
        let (root, store) = store();
        let error = store.fork("0193-nope").unwrap_err();
        assert!(matches!(error, SessionError::NotFound { .. }), "{error}");
        assert!(store.list_sessions(Some(root.path())).unwrap().is_empty());
    }
}
