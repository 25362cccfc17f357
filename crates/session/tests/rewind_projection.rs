//! Projection across rewinds: a conversation rewind makes the model history what it was
//! just before the turn rewound to, rebuilt from the transcript (compactions after that
//! point included), and every view stays total on any transcript, rewinds that name
//! missing records included.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use pith_core::{FileChange, FileState, Message};
use pith_session::ui_text;
use pith_session::{
    current_line, project_model, project_model_owned, project_ui, turns, CompactionTrigger, Event,
    NewSession, ReadOptions, Record, Rewind, RewindMode, SessionStore,
};
use proptest::prelude::*;

fn record(seq: u64, event: Event) -> Record {
    Record {
        seq,
        ts: "2026-12-02T01:00:00.000Z".into(),
        event,
    }
}

fn answer(text: &str) -> Event {
    Event::AssistantTurn {
        messages: vec![Message::assistant(text)],
        items: vec![],
        usage: None,
        interrupted: false,
        error: None,
        compaction_model_usage: None,
    }
}

fn compaction(summary: &str) -> Event {
    Event::CompactionApplied {
        trigger: CompactionTrigger::Auto,
        messages: vec![Message::user(summary)],
        summary: summary.into(),
        tokens_before: 100,
        tokens_after: 10,
        usage: None,
        ledger: None,
        ledger_tokens: 0,
        restored_files: vec![],
        model: None,
    }
}

fn rewind(to_seq: u64, turn: u64, mode: RewindMode) -> Event {
    Event::Rewind(Rewind {
        to_seq,
        turn,
        mode,
        root: "/w".into(),
        restored: vec![],
        changes: vec![],
    })
}

/// A transcript under construction: events get consecutive seqs from 1.
#[derive(Default)]
struct Log(Vec<Record>);

impl Log {
    fn push(&mut self, event: Event) -> u64 {
        let seq = self.0.len() as u64 + 1;
        self.0.push(record(seq, event));
        seq
    }

    /// A user turn answered: returns the seq of its user_message.
    fn turn(&mut self, n: &str) -> u64 {
        let seq = self.push(Event::user_text(format!("u{n}")));
        self.push(answer(&format!("a{n}")));
        seq
    }

    fn model(&self) -> Vec<Message> {
        let borrowed = project_model(&self.0);
        assert_eq!(borrowed, project_model_owned(self.0.clone()));
        borrowed
    }
}

fn history(turns: &[&str]) -> Vec<Message> {
    turns
        .iter()
        .flat_map(|n| {
            [
                Message::user(format!("u{n}")),
                Message::assistant(format!("a{n}")),
            ]
        })
        .collect()
}

fn four_turns() -> (Log, Vec<u64>) {
    let mut log = Log::default();
    log.push(Event::SessionStarted {
        session_id: "s".into(),
        cwd: "/w".into(),
        provider: "openai".into(),
        model: "m".into(),
        pith_version: "0".into(),
        parent_session: None,
        forked_from: None,
        forked_at_seq: None,
        copied_through_seq: None,
    });
    let seqs = ["1", "2", "3", "4"].iter().map(|n| log.turn(n)).collect();
    (log, seqs)
}

#[test]
fn a_rewind_to_turn_2_of_4_gives_the_history_before_turn_2() {
    let (mut log, seqs) = four_turns();
    assert_eq!(log.model(), history(&["1", "2", "3", "4"]));
    log.push(rewind(seqs[1], 2, RewindMode::Conversation));
    assert_eq!(log.model(), history(&["1"]));
    log.push(rewind(seqs[0], 1, RewindMode::Both));
    assert!(log.model().is_empty(), "back to before the first turn");
}

#[test]
fn a_rewind_to_before_a_compaction_restores_the_uncompacted_history() {
    let (mut log, seqs) = four_turns();
    // A compaction after turn 3 (it lands between turn 3 and turn 4 in the log).
    let mut with_compaction = Log::default();
    for r in log.0.drain(..) {
        let at_turn_4 = r.seq == seqs[3];
        if at_turn_4 {
            with_compaction.push(compaction("summary of 1-3"));
        }
        with_compaction.push(r.event);
    }
    let mut log = with_compaction;
    let compaction_seq = log
        .0
        .iter()
        .find(|r| matches!(r.event, Event::CompactionApplied { .. }))
        .unwrap()
        .seq;
    let turn_seqs: Vec<u64> = turns(&log.0).iter().map(|t| t.seq).collect();
    assert_eq!(turn_seqs.len(), 4);
    let mut compacted = vec![Message::user("summary of 1-3")];
    compacted.extend(history(&["4"]));
    assert_eq!(log.model(), compacted);
    // Rewinding to turn 4 (after the compaction) keeps the summary...
    let mut to_4 = Log(log.0.clone());
    to_4.push(rewind(turn_seqs[3], 4, RewindMode::Both));
    assert_eq!(to_4.model(), vec![Message::user("summary of 1-3")]);
    // ...rewinding to turn 2 (before it) brings back the records, not the summary.
    log.push(rewind(turn_seqs[1], 2, RewindMode::Both));
    assert_eq!(log.model(), history(&["1"]));
    let line: Vec<u64> = current_line(&log.0).iter().map(|r| r.seq).collect();
    assert_eq!(line, vec![1, 2, 3, log.0.len() as u64]);
    assert!(
        !line.contains(&compaction_seq),
        "the compaction left the line"
    );
}

#[test]
fn new_turns_after_a_rewind_append_and_a_code_rewind_leaves_the_history() {
    let (mut log, seqs) = four_turns();
    log.push(rewind(seqs[2], 3, RewindMode::Code));
    assert_eq!(
        log.model(),
        history(&["1", "2", "3", "4"]),
        "a code rewind leaves the conversation"
    );
    assert_eq!(turns(&log.0).len(), 4);
    log.push(rewind(seqs[2], 3, RewindMode::Conversation));
    log.turn("3b");
    assert_eq!(log.model(), history(&["1", "2", "3b"]));
    let listed = turns(&log.0);
    assert_eq!(
        listed.iter().map(|t| t.number).collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
    assert_eq!(listed[2].preview, "u3b");
}

#[test]
fn a_rewind_then_another_to_an_earlier_point_and_back_into_an_abandoned_branch() {
    let (mut log, seqs) = four_turns();
    log.push(rewind(seqs[2], 3, RewindMode::Both));
    let turn_3b = log.turn("3b");
    log.push(rewind(seqs[1], 2, RewindMode::Both));
    assert_eq!(log.model(), history(&["1"]));
    log.turn("2c");
    assert_eq!(log.model(), history(&["1", "2c"]));
    // A rewind may name a record of an abandoned branch: the state just before it, as
    // it was when that record was written.
    log.push(rewind(turn_3b, 3, RewindMode::Conversation));
    assert_eq!(log.model(), history(&["1", "2"]));
    log.push(rewind(seqs[3], 4, RewindMode::Conversation));
    assert_eq!(log.model(), history(&["1", "2", "3"]));
}

#[test]
fn a_rewind_naming_a_missing_record_is_ignored() {
    let (mut log, _) = four_turns();
    log.push(rewind(999, 2, RewindMode::Both));
    let next = log.0.len() as u64 + 1;
    log.push(rewind(next, 2, RewindMode::Both)); // names itself
    assert_eq!(log.model(), history(&["1", "2", "3", "4"]));
    assert_eq!(turns(&log.0).len(), 4);
}

#[test]
fn a_resumed_session_continues_from_the_rewind_and_replay_shows_it() {
    let root = tempfile::tempdir().unwrap();
    let store = SessionStore::at(root.path().join("sessions"));
    let mut session = store
        .create(NewSession {
            cwd: root.path().to_path_buf(),
            provider: "openai".into(),
            model: "m".into(),
        })
        .unwrap();
    let mut turn_seqs = Vec::new();
    for n in ["1", "2", "3"] {
        turn_seqs.push(session.next_seq());
        session.append(Event::user_text(format!("u{n}"))).unwrap();
        session.append(answer(&format!("a{n}"))).unwrap();
    }
    session
        .append(Event::Checkpoint(pith_session::Checkpoint {
            root: root.path().to_path_buf(),
            call_id: Some("c1".into()),
            tool: Some("edit".into()),
            outside: false,
            rewind_elsewhere: false,
            changes: vec![FileChange {
                path: "a.rs".into(),
                before: FileState::Absent,
                after: FileState::File {
                    hash: "ab".into(),
                    size: 1229,
                    mode: 0o644,
                },
            }],
            bytes: 1229,
        }))
        .unwrap();
    session
        .append(Event::Rewind(Rewind {
            to_seq: turn_seqs[1],
            turn: 2,
            mode: RewindMode::Both,
            root: root.path().to_path_buf(),
            restored: vec!["a.rs".into()],
            changes: vec![],
        }))
        .unwrap();
    let id = session.id().to_owned();
    drop(session);
    let resumed = store.resume(&id).unwrap();
    assert_eq!(resumed.history, history(&["1"]));
    let line: Vec<u64> = resumed.line().iter().map(|r| r.seq).collect();
    assert_eq!(line, vec![1, 2, 3, resumed.records.len() as u64]);
    let mut text = Vec::new();
    ui_text(&project_ui(&resumed.records), &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("  -- checkpoint after edit: 1 file, 1.2 KiB: a.rs\n"),
        "{text}"
    );
    assert!(
        text.contains("== ⟲ rewound to turn 2 (code and conversation): 1 file restored ==\n  [restored: a.rs]"),
        "{text}"
    );
    let read = store.read(&id, ReadOptions::default()).unwrap();
    assert_eq!(read.records, resumed.records);
}

/// The definition, written the slow way: the state before a record is the projection of
/// the records before it.
fn naive(records: &[Record]) -> Vec<Message> {
    let mut history = Vec::new();
    for (index, record) in records.iter().enumerate() {
        match &record.event {
            Event::UserMessage { message } => history.push(message.clone()),
            Event::AssistantTurn { messages, .. } => history.extend(messages.iter().cloned()),
            Event::CompactionApplied { messages, .. }
            | Event::MicroCompactionApplied { messages, .. } => {
                history = messages
                    .iter()
                    .filter(|m| !m.is_system())
                    .cloned()
                    .collect();
            }
            Event::Rewind(rewind) if rewind.mode.rewinds_conversation() => {
                if let Some(target) = records[..index]
                    .iter()
                    .rposition(|r| r.seq == rewind.to_seq)
                {
                    history = naive(&records[..target]);
                }
            }
            _ => {}
        }
    }
    history
}

fn event(max_seq: u64) -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => "[a-c]{1,2}".prop_map(Event::user_text),
        3 => "[a-c]{1,2}".prop_map(|t| answer(&t)),
        1 => "[a-c]{1,2}".prop_map(|t| compaction(&t)),
        2 => (0..max_seq + 3, prop_oneof![
                Just(RewindMode::Code),
                Just(RewindMode::Conversation),
                Just(RewindMode::Both)
            ])
            .prop_map(|(to_seq, mode)| rewind(to_seq, 1, mode)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn projection_matches_the_definition_on_every_prefix(
        events in prop::collection::vec(event(24), 0..24),
        shuffle_seqs in any::<bool>(),
    ) {
        let mut records: Vec<Record> = events
            .into_iter()
            .enumerate()
            .map(|(i, e)| record(i as u64 + 1, e))
            .collect();
        if shuffle_seqs {
            // Seqs with gaps (a transcript read with --skip-corrupt).
            for r in &mut records {
                r.seq *= 2;
            }
        }
        for cut in 0..=records.len() {
            let prefix = &records[..cut];
            let model = project_model(prefix);
            prop_assert_eq!(&model, &naive(prefix));
            prop_assert_eq!(&model, &project_model_owned(prefix.to_vec()));
            prop_assert_eq!(project_ui(prefix).len(), prefix.len());
            let listed = turns(prefix);
            for (i, turn) in listed.iter().enumerate() {
                prop_assert_eq!(turn.number, i as u64 + 1);
            }
        }
    }
}
