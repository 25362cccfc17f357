//! Forking a session: a new session of the same project that starts with a copy of
//! another's records (`session/fork` of `pith acp`), or of the records before a point
//! (`pith run --fork <session>@<turn>`: the fork continues from just before that turn).
//!
//! The fork's `session_started` (record 1) names the source in `forked_from` (and the
//! point in `forked_at_seq`) and keeps its project and model; every later record up to
//! the point is copied in order in one
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
        self.fork_at(query, None)
    }

    /// [`SessionStore::fork`] of the records before the one with seq `before_seq` (for a
    /// turn, the seq of its `user_message`, from [`crate::turns::turn_seq`]): the fork
    /// continues from the state just before that record, and its `session_started`
    /// records the point in `forked_at_seq`. `None` copies every record. A seq that no
    /// record after the first has is refused, and nothing is created.
    pub fn fork_at(&self, query: &str, before_seq: Option<u64>) -> Result<Session> {
        let source = self.read(query, ReadOptions::default())?;
        let mut records = source.records;
        if let Some(before) = before_seq {
            match records.iter().skip(1).position(|r| r.seq == before) {
                Some(index) => records.truncate(index + 1),
                None => {
                    return Err(SessionError::NotContinuable {
                        id: query.to_owned(),
                        reason: format!(
                            "it has no record {before} to fork before (a fork point is the \
                             seq of a record after session_started)"
                        ),
                    })
                }
            }
        }
        let mut records = records.into_iter();
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
        // The fork's session_started is its record 1; the copies follow it.
        let copied_through = (!events.is_empty()).then(|| 1 + events.len() as u64);
        if let Some(unknown) = events.iter().find(|e| matches!(e, Event::Unknown { .. })) {
            return Err(SessionError::NotContinuable {
                id: source_id,
                reason: format!(
                    "it has a `{}` record of a newer pith, which cannot be copied",
                    unknown.kind()
                ),
            });
        }
        let lineage = crate::store::Lineage {
            forked_from: Some(source_id),
            forked_at_seq: before_seq,
            copied_through_seq: copied_through,
            ..Default::default()
        };
        let mut fork = self.create_with_parent(new, lineage)?;
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

    fn forked_at_seq(session: &Session) -> Option<u64> {
        match &session.read(ReadOptions::default()).unwrap().records[0].event {
            Event::SessionStarted { forked_at_seq, .. } => *forked_at_seq,
            other => panic!("record 1 is {other:?}"),
        }
    }

    #[test]
    fn a_fork_at_a_turn_copies_the_records_before_it_and_names_the_point() {
        let (root, store) = store();
        let mut source = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "openai".into(),
                model: "gpt-4o".into(),
            })
            .unwrap();
        for text in ["turn one", "turn two", "turn three"] {
            source.append(Event::user_text(text)).unwrap();
        }
        let source_id = source.id().to_owned();
        let all = source.read(ReadOptions::default()).unwrap().records;
        let turn_two = crate::turns::turn_seq(&all, 2).unwrap();
        assert_eq!(turn_two, 3);

        let mut fork = store.fork_at(&source_id, Some(turn_two)).unwrap();
        let forked = fork.read(ReadOptions::default()).unwrap().records;
        assert_eq!(forked.len(), 2, "session_started and turn one: {forked:?}");
        assert_eq!(forked[1].event, Event::user_text("turn one"));
        assert_eq!(forked_at_seq(&fork), Some(3));
        assert_eq!(
            fork.next_seq(),
            3,
            "the fork's numbering continues at the point"
        );
        assert_eq!(
            project_model(&forked),
            vec![pith_core::Message::user("turn one")]
        );
        // The fork holds its writer lock.
        let held = store.open(fork.id()).unwrap_err();
        assert!(matches!(held, SessionError::InUse { .. }), "{held}");
        fork.append(Event::user_text("turn two, again")).unwrap();
        assert_eq!(
            crate::turns::turns(&fork.read(ReadOptions::default()).unwrap().records).len(),
            2
        );

        // A fork of everything says no point; the source is untouched.
        let whole = store.fork(&source_id).unwrap();
        assert_eq!(forked_at_seq(&whole), None);
        assert_eq!(whole.read(ReadOptions::default()).unwrap().records.len(), 4);
        assert_eq!(source.read(ReadOptions::default()).unwrap().records, all);
    }

    #[test]
    fn a_fork_point_that_names_no_record_is_refused_and_nothing_is_created() {
        let (root, store) = store();
        let mut source = store
            .create(NewSession {
                cwd: root.path().to_path_buf(),
                provider: "openai".into(),
                model: "gpt-4o".into(),
            })
            .unwrap();
        source.append(Event::user_text("only turn")).unwrap();
        let id = source.id().to_owned();
        drop(source);
        for point in [1, 9] {
            let error = store.fork_at(&id, Some(point)).unwrap_err();
            assert!(
                error
                    .to_string()
                    .contains(&format!("no record {point} to fork before")),
                "{error}"
            );
        }
        assert_eq!(store.list_sessions(Some(root.path())).unwrap().len(), 1);
    }

    #[test]
    fn an_unknown_session_is_not_found_and_nothing_is_created() {
        let (root, store) = store();
        let error = store.fork("0193-nope").unwrap_err();
        assert!(matches!(error, SessionError::NotFound { .. }), "{error}");
        assert!(store.list_sessions(Some(root.path())).unwrap().is_empty());
    }
}
