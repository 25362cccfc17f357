//! What `/rewind` and `pith rewind` read from a transcript: the user turns of the
//! current line of the conversation with the files each changed, and the file changes
//! recorded after a point, from which the state of every path at that point follows.
//!
//! The rule for files: the state of a path at a point S (just before the record with
//! seq S) is the `before` of the first change of that path recorded after S — in a
//! `checkpoint` of pith's, of changes outside pith, or of a later rewind — and a path
//! with no change after S is as it is now. Files are not part of the line: a change
//! stays a change of the workspace whether or not the conversation that made it was
//! rewound, so [`changes_after`] reads every record.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pith_core::{FileChange, FileState};
use serde::Serialize;

use crate::event::{Event, Record};
use crate::line::current_line;
use crate::projection::user_text;

/// Longest [`Turn::preview`], in characters.
pub const PREVIEW_CHARS: usize = 80;

/// One user turn of the current line of the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Turn {
    /// Its number as the user sees it (1-based, along the line: after a conversation
    /// rewind to turn N, the next turn is N again).
    #[serde(rename = "number")]
    pub number: u64,
    /// The `seq` of its `user_message` (what a rewind's `to_seq` names).
    #[serde(rename = "seq")]
    pub seq: u64,
    /// When the user sent it (the record's `ts`).
    #[serde(rename = "ts")]
    pub ts: String,
    /// The first non-blank line of the user's text, at most [`PREVIEW_CHARS`] characters
    /// (cut with `…`).
    #[serde(rename = "preview")]
    pub preview: String,
    /// The paths pith's tool calls changed during the turn (its checkpoints up to the
    /// next turn of the line; outside changes excluded), sorted, each once.
    #[serde(rename = "files")]
    pub files: Vec<String>,
}

/// The user turns of the current line of the conversation, in order.
pub fn turns(records: &[Record]) -> Vec<Turn> {
    let mut turns: Vec<Turn> = Vec::new();
    let mut files: BTreeSet<String> = BTreeSet::new();
    for record in current_line(records) {
        match &record.event {
            Event::UserMessage { message } => {
                if let Some(last) = turns.last_mut() {
                    last.files = std::mem::take(&mut files).into_iter().collect();
                }
                files.clear();
                turns.push(Turn {
                    number: turns.len() as u64 + 1,
                    seq: record.seq,
                    ts: record.ts.clone(),
                    preview: preview(&user_text(message)),
                    files: Vec::new(),
                });
            }
            Event::Checkpoint(checkpoint) if !checkpoint.outside && !turns.is_empty() => {
                files.extend(checkpoint.changes.iter().map(FileChange::shown_path));
            }
            _ => {}
        }
    }
    if let Some(last) = turns.last_mut() {
        last.files = files.into_iter().collect();
    }
    turns
}

/// The `seq` of turn `number` (1-based) of the current line, if there is one.
pub fn turn_seq(records: &[Record], number: u64) -> Option<u64> {
    let index = usize::try_from(number.checked_sub(1)?).ok()?;
    turns(records).get(index).map(|turn| turn.seq)
}

fn preview(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    if line.chars().count() <= PREVIEW_CHARS {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(PREVIEW_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// The changes of one record, with the root their paths are relative to.
fn record_changes(record: &Record) -> Option<(&Path, &[FileChange])> {
    match &record.event {
        // Another session's rewind is never this session's to rewind.
        Event::Checkpoint(checkpoint) if checkpoint.rewind_elsewhere => None,
        Event::Checkpoint(checkpoint) => Some((&checkpoint.root, &checkpoint.changes)),
        Event::Rewind(rewind) => Some((&rewind.root, &rewind.changes)),
        _ => None,
    }
}

/// Every file change recorded after the record with seq `seq` (records with a greater
/// seq), in transcript order, whatever root it is under: pith's checkpoints, changes
/// outside pith, and what rewinds wrote, from abandoned turns too.
pub fn changes_after(records: &[Record], seq: u64) -> Vec<FileChange> {
    records
        .iter()
        .filter(|record| record.seq > seq)
        .filter_map(record_changes)
        .flat_map(|(_, changes)| changes.iter().cloned())
        .collect()
}

/// [`changes_after`] for the paths under one root (the workspace a rewind restores;
/// changes recorded under other writable roots are left out).
pub fn changes_after_in(records: &[Record], seq: u64, root: &Path) -> Vec<FileChange> {
    records
        .iter()
        .filter(|record| record.seq > seq)
        .filter_map(record_changes)
        .filter(|(under, _)| *under == root)
        .flat_map(|(_, changes)| changes.iter().cloned())
        .collect()
}

/// The latest rewind record that wrote files under `root`, with its record's `ts`: what
/// an undo puts back (every rewind, an undo included, records what it overwrote).
pub fn last_code_rewind<'a>(
    records: &'a [Record],
    root: &Path,
) -> Option<(&'a Record, &'a crate::Rewind)> {
    records.iter().rev().find_map(|record| match &record.event {
        Event::Rewind(rewind) if rewind.root == root && !rewind.changes.is_empty() => {
            Some((record, rewind))
        }
        _ => None,
    })
}

/// The state of every path under `root` that changed after the record with seq `seq`,
/// as it was at that point: the `before` of its first change after it. What a code
/// rewind to the turn whose `user_message` has that seq puts back (an
/// [`FileState::Omitted`] state cannot be put back: the rewind refuses and names it).
pub fn states_at(records: &[Record], seq: u64, root: &Path) -> BTreeMap<String, FileState> {
    let mut states = BTreeMap::new();
    for change in changes_after_in(records, seq, root) {
        states.entry(change.path).or_insert(change.before);
    }
    states
}

/// The last state pith recorded for every path under `root`: the `after` of its last
/// change. A file on disk that differs from it was changed outside pith since.
pub fn last_known_states(records: &[Record], root: &Path) -> BTreeMap<String, FileState> {
    let mut states = BTreeMap::new();
    for record in records {
        let changes = match &record.event {
            // What another session's rewind wrote is known too: not a change outside pith.
            Event::Checkpoint(checkpoint) if checkpoint.root == root => &checkpoint.changes,
            Event::Rewind(rewind) if rewind.root == root => &rewind.changes,
            _ => continue,
        };
        for change in changes {
            states.insert(change.path.clone(), change.after.clone());
        }
    }
    states
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{Checkpoint, Rewind, RewindMode};

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            ts: format!("2026-12-02T01:00:{seq:02}.000Z"),
            event,
        }
    }

    fn file(hash: &str) -> FileState {
        FileState::File {
            hash: hash.into(),
            size: 1,
            mode: 0o644,
        }
    }

    fn change(path: &str, before: FileState, after: FileState) -> FileChange {
        FileChange {
            path: path.into(),
            before,
            after,
        }
    }

    fn checkpoint(root: &str, outside: bool, changes: Vec<FileChange>) -> Event {
        Event::Checkpoint(Checkpoint {
            root: root.into(),
            call_id: (!outside).then(|| "call".to_owned()),
            tool: None,
            outside,
            rewind_elsewhere: false,
            changes,
            bytes: 1,
        })
    }

    fn rewind(to_seq: u64, turn: u64, mode: RewindMode, changes: Vec<FileChange>) -> Event {
        Event::Rewind(Rewind {
            to_seq,
            turn,
            mode,
            root: "/w".into(),
            restored: changes.iter().map(|c| c.path.clone()).collect(),
            changes,
        })
    }

    /// Three turns: turn 1 writes a.rs twice and b.rs, the user edits c.txt outside
    /// pith before turn 2, turn 2 writes b.rs and /tmp's x, turn 3 writes nothing.
    fn session() -> Vec<Record> {
        vec![
            record(1, Event::HookRun(hook())),
            record(2, Event::user_text("first turn\nsecond line")),
            record(
                3,
                checkpoint("/w", false, vec![change("b.rs", file("b0"), file("b1"))]),
            ),
            record(
                4,
                checkpoint(
                    "/w",
                    false,
                    vec![
                        change("a.rs", FileState::Absent, file("a1")),
                        change("b.rs", file("b1"), file("b2")),
                    ],
                ),
            ),
            record(
                5,
                checkpoint("/w", true, vec![change("c.txt", file("c0"), file("c1"))]),
            ),
            record(6, Event::user_text("   \n\tsecond turn")),
            record(
                7,
                checkpoint("/w", false, vec![change("b.rs", file("b2"), file("b3"))]),
            ),
            record(
                8,
                checkpoint("/tmp", false, vec![change("x", file("x0"), file("x1"))]),
            ),
            record(9, Event::user_text("long ".repeat(40))),
        ]
    }

    #[test]
    fn turns_list_the_line_with_files_changed_by_pith() {
        let records = session();
        let turns = turns(&records);
        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].number, 1);
        assert_eq!(turns[0].seq, 2);
        assert_eq!(turns[0].ts, "2026-12-02T01:00:02.000Z");
        assert_eq!(turns[0].preview, "first turn");
        assert_eq!(turns[0].files, vec!["a.rs", "b.rs"], "deduped, sorted");
        assert_eq!(turns[1].preview, "second turn");
        assert_eq!(
            turns[1].files,
            vec!["b.rs", "x"],
            "outside changes excluded"
        );
        assert_eq!(turns[2].preview.chars().count(), PREVIEW_CHARS);
        assert!(turns[2].preview.ends_with('…'));
        assert!(turns[2].files.is_empty());
        assert_eq!(turn_seq(&records, 2), Some(6));
        assert_eq!(turn_seq(&records, 0), None);
        assert_eq!(turn_seq(&records, 4), None);
    }

    fn hook() -> pith_core::HookRun {
        pith_core::HookRun {
            event: pith_core::HookEvent::PreToolUse,
            matcher: None,
            command: "true".into(),
            outcome: pith_core::HookOutcome::Proceed,
            exit_code: Some(0),
            duration_ms: 1,
            decision: None,
            message: None,
            stdout: String::new(),
            stderr: String::new(),
        }
    }

    #[test]
    fn after_a_conversation_rewind_turns_continue_from_the_turn_rewound_to() {
        let mut records = session();
        records.push(record(10, rewind(6, 2, RewindMode::Both, vec![])));
        let listed = turns(&records);
        assert_eq!(listed.len(), 1, "turns 2 and 3 left the line: {listed:?}");
        assert_eq!(
            listed[0].files,
            vec!["a.rs", "b.rs"],
            "turn 1 keeps its files"
        );
        records.push(record(11, Event::user_text("another second turn")));
        records.push(record(
            12,
            checkpoint(
                "/w",
                false,
                vec![change("d.rs", FileState::Absent, file("d1"))],
            ),
        ));
        let listed = turns(&records);
        assert_eq!(listed.len(), 2);
        assert_eq!((listed[1].number, listed[1].seq), (2, 11));
        assert_eq!(listed[1].preview, "another second turn");
        assert_eq!(listed[1].files, vec!["d.rs"]);
        // A code-only rewind leaves the line, and so the turns, alone.
        records.push(record(13, rewind(2, 1, RewindMode::Code, vec![])));
        assert_eq!(turns(&records).len(), 2);
    }

    #[test]
    fn changes_after_a_point_include_outside_changes_other_roots_and_rewinds() {
        let mut records = session();
        // A rewind of the files to before turn 2 (it wrote b.rs back), then to turn 1.
        records.push(record(
            10,
            rewind(
                6,
                2,
                RewindMode::Code,
                vec![change("b.rs", file("b3"), file("b2"))],
            ),
        ));
        let paths = |changes: Vec<FileChange>| -> Vec<String> {
            changes.into_iter().map(|c| c.path).collect()
        };
        assert_eq!(
            paths(changes_after(&records, 2)),
            vec!["b.rs", "a.rs", "b.rs", "c.txt", "b.rs", "x", "b.rs"]
        );
        assert_eq!(
            paths(changes_after_in(&records, 2, Path::new("/w"))),
            vec!["b.rs", "a.rs", "b.rs", "c.txt", "b.rs", "b.rs"]
        );
        assert_eq!(paths(changes_after(&records, 6)), vec!["b.rs", "x", "b.rs"]);
        assert!(changes_after(&records, 10).is_empty());

        let at_turn_1 = states_at(&records, 2, Path::new("/w"));
        assert_eq!(
            at_turn_1,
            BTreeMap::from([
                ("a.rs".to_owned(), FileState::Absent),
                ("b.rs".to_owned(), file("b0")),
                ("c.txt".to_owned(), file("c0")),
            ])
        );
        // The rewind is undoable: the state just after it is recorded, and the state
        // before it (b3) is what a rewind to a point after turn 2's changes puts back.
        let known = last_known_states(&records, Path::new("/w"));
        assert_eq!(known["b.rs"], file("b2"));
        assert_eq!(known["c.txt"], file("c1"));
        assert_eq!(
            states_at(&records, 8, Path::new("/w"))["b.rs"],
            file("b3"),
            "rewinding the rewind"
        );
        assert!(
            !known.contains_key("x"),
            "other roots are not the workspace"
        );
    }

    /// What another session's rewind wrote is known (not a change outside pith) but never
    /// rewound by this session: a rewind to before it leaves those paths to it.
    #[test]
    fn another_session_s_rewind_is_known_and_never_rewound() {
        let mut records = vec![record(
            2,
            checkpoint("/w", false, vec![change("a.rs", file("a0"), file("a1"))]),
        )];
        let Event::Checkpoint(mut elsewhere) = checkpoint(
            "/w",
            true,
            vec![
                change("a.rs", file("a1"), file("b-era")),
                change("z.rs", file("z1"), file("z0")),
            ],
        ) else {
            unreachable!()
        };
        elsewhere.rewind_elsewhere = true;
        records.push(record(3, Event::Checkpoint(elsewhere)));
        let targets = states_at(&records, 1, Path::new("/w"));
        assert_eq!(targets, BTreeMap::from([("a.rs".to_owned(), file("a0"))]));
        let paths: Vec<String> = changes_after_in(&records, 1, Path::new("/w"))
            .into_iter()
            .map(|c| c.path)
            .collect();
        assert_eq!(paths, ["a.rs"]);
        let known = last_known_states(&records, Path::new("/w"));
        assert_eq!(known["a.rs"], file("b-era"));
        assert_eq!(known["z.rs"], file("z0"));
    }
}
