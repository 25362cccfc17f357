//! The two records of checkpoints and rewind (docs/session-format.md, docs/rewind.md):
//! `checkpoint` (what pith, or someone outside it, changed in the workspace, with the
//! states the checkpoint store kept) and `rewind` (a return to the state just before a
//! user turn, of the files, the conversation or both).
//!
//! Both carry [`FileChange`]s (pith-core's vocabulary, whose JSON form is fixed there).
//! The transcript holds only these records; the contents are in the checkpoint store.
//! The rule a rewind follows: the state of a path at a point S of the transcript is the
//! `before` of the first change of that path recorded after S (or, with no change after
//! S, its state now) — see [`crate::turns::changes_after`].

use std::path::PathBuf;

use pith_core::FileChange;
use serde::{Deserialize, Serialize};

fn is_false(value: &bool) -> bool {
    !*value
}

/// A `checkpoint` record: paths that changed in one workspace root, with what each held
/// before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The root the paths are relative to (absolute, canonical: the workspace, or another
    /// writable root of the sandbox).
    #[serde(rename = "root")]
    pub root: PathBuf,
    /// The tool call whose changes these are; absent for changes found at a turn's
    /// start, made outside pith.
    #[serde(rename = "call_id", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The name of that call's tool (`edit`, `bash`, `task`, an MCP tool), when known.
    #[serde(rename = "tool", default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// True for changes made outside pith (found between turns): kept so a rewind can
    /// warn before overwriting them, never counted among a turn's files.
    #[serde(rename = "outside", default, skip_serializing_if = "is_false")]
    pub outside: bool,
    /// True for changes another session's rewind made (pith knows them from the store's
    /// rewind journal): recorded so the history is complete, never rewound by this
    /// session. A rewind of this session that would overwrite such a path asks first, as
    /// for any change made outside it.
    #[serde(rename = "rewind_elsewhere", default, skip_serializing_if = "is_false")]
    pub rewind_elsewhere: bool,
    /// What changed, one entry per path.
    #[serde(rename = "changes")]
    pub changes: Vec<FileChange>,
    /// Bytes the checkpoint store newly took for these states (0 when it had them all).
    #[serde(rename = "bytes")]
    pub bytes: u64,
}

/// Most changes one `checkpoint` record holds: a command that changes more paths (a
/// branch switch of a large repository) is recorded as several records, so no line
/// grows past what readers hold (a change is about 200 bytes: 10,000 make 2 MB).
pub const MAX_CHANGES_PER_RECORD: usize = 10_000;

impl Checkpoint {
    /// This checkpoint as records of at most [`MAX_CHANGES_PER_RECORD`] changes each, in
    /// order (one record when it is small; none when it has no change). `bytes` is
    /// counted once, on the first. Append them with one `append_batch`.
    pub fn split(self) -> Vec<Checkpoint> {
        let Checkpoint {
            root,
            call_id,
            tool,
            outside,
            rewind_elsewhere,
            changes,
            bytes,
        } = self;
        let mut parts = Vec::with_capacity(changes.len().div_ceil(MAX_CHANGES_PER_RECORD));
        let mut changes = changes.into_iter().peekable();
        while changes.peek().is_some() {
            let chunk: Vec<FileChange> = changes.by_ref().take(MAX_CHANGES_PER_RECORD).collect();
            parts.push(Checkpoint {
                root: root.clone(),
                call_id: call_id.clone(),
                tool: tool.clone(),
                outside,
                rewind_elsewhere,
                changes: chunk,
                bytes: if parts.is_empty() { bytes } else { 0 },
            });
        }
        parts
    }
}

/// What a rewind returned to the state before a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RewindMode {
    /// The files only; the conversation goes on.
    #[serde(rename = "code")]
    Code,
    /// The conversation only; the files stay as they are.
    #[serde(rename = "conversation")]
    Conversation,
    /// Both.
    #[serde(rename = "both")]
    Both,
}

impl RewindMode {
    /// The mode as written in the record.
    pub fn as_str(self) -> &'static str {
        match self {
            RewindMode::Code => "code",
            RewindMode::Conversation => "conversation",
            RewindMode::Both => "both",
        }
    }

    /// True when the rewind restored files.
    pub fn rewinds_code(self) -> bool {
        matches!(self, RewindMode::Code | RewindMode::Both)
    }

    /// True when the rewind returned the conversation to its earlier point.
    pub fn rewinds_conversation(self) -> bool {
        matches!(self, RewindMode::Conversation | RewindMode::Both)
    }

    /// Words for the user: `code`, `conversation`, `code and conversation`.
    pub fn describe(self) -> &'static str {
        match self {
            RewindMode::Code => "code",
            RewindMode::Conversation => "conversation",
            RewindMode::Both => "code and conversation",
        }
    }
}

/// A `rewind` record: the session returned to the state just before the record `to_seq`
/// (a turn's `user_message`). Appended after the rewind is done; nothing earlier is
/// rewritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewind {
    /// The `seq` of the `user_message` of the turn rewound to: the state is the one just
    /// before that record.
    #[serde(rename = "to_seq")]
    pub to_seq: u64,
    /// That turn's number as the user saw it (1-based, on the line of the conversation
    /// at the time of the rewind: see [`crate::turns::turns`]).
    #[serde(rename = "turn")]
    pub turn: u64,
    /// What was rewound.
    #[serde(rename = "mode")]
    pub mode: RewindMode,
    /// The workspace root the paths are relative to (absolute, canonical; a rewind
    /// never writes outside it).
    #[serde(rename = "root")]
    pub root: PathBuf,
    /// The paths the rewind put back, sorted.
    #[serde(rename = "restored", default)]
    pub restored: Vec<String>,
    /// What the rewind itself wrote: `before` is what it overwrote, `after` what it put
    /// back. This makes a rewind undoable (a later rewind to before this one's point
    /// restores the `before` states).
    #[serde(rename = "changes", default)]
    pub changes: Vec<FileChange>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{decode_line, encode_line, Event};
    use pith_core::FileState;
    use serde_json::json;

    fn line_json(event: &Event) -> serde_json::Value {
        let line = encode_line(9, "2026-12-02T01:30:00.000Z", event).unwrap();
        let back = decode_line(line.trim_end()).unwrap();
        assert_eq!(&back.event, event, "the record round-trips");
        serde_json::from_str(&line).unwrap()
    }

    fn edit_of(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            before: FileState::File {
                hash: "aa".into(),
                size: 3,
                mode: 0o644,
            },
            after: FileState::File {
                hash: "bb".into(),
                size: 4,
                mode: 0o644,
            },
        }
    }

    #[test]
    fn a_checkpoint_of_a_tool_call_has_the_documented_shape() {
        let event = Event::Checkpoint(Checkpoint {
            root: "/home/ada/src/tally".into(),
            call_id: Some("call_3".into()),
            tool: Some("edit".into()),
            outside: false,
            rewind_elsewhere: false,
            changes: vec![edit_of("src/parser.rs")],
            bytes: 4,
        });
        assert_eq!(
            line_json(&event),
            json!({"v": 1, "seq": 9, "ts": "2026-12-02T01:30:00.000Z", "kind": "checkpoint",
                   "root": "/home/ada/src/tally", "call_id": "call_3", "tool": "edit",
                   "changes": [{"path": "src/parser.rs",
                                "before": {"state": "file", "hash": "aa", "size": 3, "mode": 420},
                                "after": {"state": "file", "hash": "bb", "size": 4, "mode": 420}}],
                   "bytes": 4})
        );
        assert!(
            !event.ends_turn(),
            "a checkpoint becomes durable with its turn: no fsync per tool call"
        );
    }

    #[test]
    fn a_checkpoint_of_outside_changes_has_no_call_and_says_outside() {
        let event = Event::Checkpoint(Checkpoint {
            root: "/w".into(),
            call_id: None,
            tool: None,
            outside: true,
            rewind_elsewhere: false,
            changes: vec![FileChange {
                path: "notes.txt".into(),
                before: FileState::Absent,
                after: FileState::Symlink {
                    target: "../x".into(),
                },
            }],
            bytes: 0,
        });
        assert_eq!(
            line_json(&event),
            json!({"v": 1, "seq": 9, "ts": "2026-12-02T01:30:00.000Z", "kind": "checkpoint",
                   "root": "/w", "outside": true,
                   "changes": [{"path": "notes.txt", "before": {"state": "absent"},
                                "after": {"state": "symlink", "target": "../x"}}],
                   "bytes": 0})
        );
    }

    #[test]
    fn a_rewind_has_the_documented_shape_in_every_mode() {
        let event = Event::Rewind(Rewind {
            to_seq: 12,
            turn: 3,
            mode: RewindMode::Both,
            root: "/w".into(),
            restored: vec!["src/a.rs".into()],
            changes: vec![FileChange {
                path: "src/a.rs".into(),
                before: FileState::Omitted {
                    size: 20,
                    reason: "over the per-file cap".into(),
                },
                after: FileState::Absent,
            }],
        });
        assert_eq!(
            line_json(&event),
            json!({"v": 1, "seq": 9, "ts": "2026-12-02T01:30:00.000Z", "kind": "rewind",
                   "to_seq": 12, "turn": 3, "mode": "both", "root": "/w",
                   "restored": ["src/a.rs"],
                   "changes": [{"path": "src/a.rs",
                                "before": {"state": "omitted", "size": 20, "reason": "over the per-file cap"},
                                "after": {"state": "absent"}}]})
        );
        let conversation = Event::Rewind(Rewind {
            to_seq: 2,
            turn: 1,
            mode: RewindMode::Conversation,
            root: "/w".into(),
            restored: vec![],
            changes: vec![],
        });
        assert_eq!(
            line_json(&conversation),
            json!({"v": 1, "seq": 9, "ts": "2026-12-02T01:30:00.000Z", "kind": "rewind",
                   "to_seq": 2, "turn": 1, "mode": "conversation", "root": "/w",
                   "restored": [], "changes": []})
        );
        for (mode, text) in [
            (RewindMode::Code, "code"),
            (RewindMode::Conversation, "conversation"),
            (RewindMode::Both, "both"),
        ] {
            assert_eq!(serde_json::to_value(mode).unwrap(), json!(text));
            assert_eq!(mode.as_str(), text);
        }
        assert!(conversation.ends_turn(), "a rewind is durable at once");
        assert!(RewindMode::Both.rewinds_code() && RewindMode::Both.rewinds_conversation());
        assert!(!RewindMode::Code.rewinds_conversation());
        assert!(!RewindMode::Conversation.rewinds_code());
    }

    #[test]
    fn a_large_checkpoint_splits_into_bounded_records_in_order() {
        let checkpoint = |count: usize| Checkpoint {
            root: "/w".into(),
            call_id: Some("c".into()),
            tool: Some("bash".into()),
            outside: false,
            rewind_elsewhere: false,
            changes: (0..count).map(|i| edit_of(&format!("f{i}"))).collect(),
            bytes: 77,
        };
        assert!(checkpoint(0).split().is_empty());
        assert_eq!(checkpoint(3).split(), vec![checkpoint(3)]);
        let parts = checkpoint(2 * MAX_CHANGES_PER_RECORD + 1).split();
        assert_eq!(
            parts.iter().map(|p| p.changes.len()).collect::<Vec<_>>(),
            vec![MAX_CHANGES_PER_RECORD, MAX_CHANGES_PER_RECORD, 1]
        );
        assert_eq!(
            parts.iter().map(|p| p.bytes).collect::<Vec<_>>(),
            vec![77, 0, 0]
        );
        assert!(parts.iter().all(|p| p.call_id.as_deref() == Some("c")));
        let paths: Vec<&str> = parts
            .iter()
            .flat_map(|p| p.changes.iter().map(|c| c.path.as_str()))
            .collect();
        assert_eq!(paths.first(), Some(&"f0"));
        assert_eq!(paths.last(), Some(&"f20000"));
        assert_eq!(paths.len(), 2 * MAX_CHANGES_PER_RECORD + 1);
    }

    #[test]
    fn a_rewind_with_an_unknown_mode_is_a_malformed_line() {
        let line = r#"{"v":1,"seq":4,"ts":"t","kind":"rewind","to_seq":2,"turn":1,"mode":"files","root":"/w"}"#;
        let problem = decode_line(line).unwrap_err().to_string();
        assert!(problem.contains("invalid rewind record"), "{problem}");
    }
}
