//! The two views of one event log.
//!
//! - Model view ([`project_model`]): the system-free conversation history a resumed
//!   session continues from, read along the current line of the conversation
//!   ([`crate::line`]: a conversation rewind returns to the state just before its
//!   target). `user_message` and `assistant_turn` append; `compaction_applied` and
//!   `micro_compaction_applied` replace everything reconstructed so far with their
//!   messages (the earlier checkpoint stays in the log for audit).
//! - UI view ([`project_ui`]): every visible item in order, pre-compaction checkpoints
//!   and abandoned turns included, with a marker for each file checkpoint and rewind,
//!   for `pith replay` and `/resume`.
//!
//! Both skip records of unknown kinds and never panic on any prefix of a transcript.

use std::path::PathBuf;

use pith_core::context::pins::user_words;
use pith_core::{FileChange, Message, Usage};
use serde::Serialize;

use crate::checkpoint::{Checkpoint, RewindMode};
use crate::event::{CompactionTrigger, Event, Record};
use crate::items::{items_from_messages, TranscriptItem};
use crate::line::line_indices;

/// The conversation history (no system messages) after replaying `records`. Only the
/// records of the current line ([`crate::line`]) from its last replacement on are cloned.
pub fn project_model(records: &[Record]) -> Vec<Message> {
    let line = line_indices(records);
    let start = last_replacement(records, &line);
    fold(line[start..].iter().map(|&index| records[index].clone()))
}

/// [`project_model`] consuming the records: moves messages instead of cloning them (what
/// a resume or `pith replay --view model` wants).
pub fn project_model_owned(records: Vec<Record>) -> Vec<Message> {
    let line = line_indices(&records);
    // Everything before the line's last replacement is discarded by it: skip it.
    let start = last_replacement(&records, &line);
    let mut keep = vec![false; records.len()];
    for &index in &line[start..] {
        keep[index] = true;
    }
    fold(
        records
            .into_iter()
            .zip(keep)
            .filter_map(|(record, keep)| keep.then_some(record)),
    )
}

/// The history the records of one line produce: `user_message` and `assistant_turn`
/// append, replacements replace; everything else (a rewind included: the line already
/// says where it returned to) adds nothing.
fn fold(line: impl Iterator<Item = Record>) -> Vec<Message> {
    let mut history: Vec<Message> = Vec::new();
    for record in line {
        match record.event {
            Event::SessionStarted { .. }
            | Event::ModelSwitched { .. }
            | Event::HookRun(_)
            | Event::Checkpoint(_)
            | Event::Rewind(_)
            | Event::Pin(_)
            | Event::Unknown { .. } => {}
            Event::UserMessage { message } => history.push(message),
            Event::AssistantTurn { messages, .. } => history.extend(messages),
            Event::CompactionApplied { messages, .. }
            | Event::MicroCompactionApplied { messages, .. } => {
                history = messages.into_iter().filter(|m| !m.is_system()).collect();
            }
        }
    }
    history
}

/// Position in `line` of its last record that replaces the whole history (0: none).
fn last_replacement(records: &[Record], line: &[usize]) -> usize {
    line.iter()
        .rposition(|&index| {
            matches!(
                records[index].event,
                Event::CompactionApplied { .. } | Event::MicroCompactionApplied { .. }
            )
        })
        .unwrap_or(0)
}

/// One entry of the UI view.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum UiEntry {
    /// The session header.
    #[serde(rename = "session_started")]
    SessionStarted(SessionEntry),
    /// A user message.
    #[serde(rename = "user")]
    User {
        /// Record sequence number.
        #[serde(rename = "seq")]
        seq: u64,
        /// Record time.
        #[serde(rename = "ts")]
        ts: String,
        /// The message text.
        #[serde(rename = "text")]
        text: String,
    },
    /// An assistant turn (or the checkpointed part of one).
    #[serde(rename = "assistant")]
    Assistant {
        /// Record sequence number.
        #[serde(rename = "seq")]
        seq: u64,
        /// Record time.
        #[serde(rename = "ts")]
        ts: String,
        /// What the user saw.
        #[serde(rename = "items")]
        items: Vec<TranscriptItem>,
        /// Usage, when reported.
        #[serde(rename = "usage")]
        usage: Option<Usage>,
        /// Interrupted by the user.
        #[serde(rename = "interrupted")]
        interrupted: bool,
        /// The error that ended the turn.
        #[serde(rename = "error")]
        error: Option<String>,
    },
    /// A compaction marker.
    #[serde(rename = "compaction")]
    Compaction(CompactionEntry),
    /// A micro-compaction (or overflow fit) marker.
    #[serde(rename = "micro_compaction")]
    MicroCompaction(MicroCompactionEntry),
    /// The conversation switched model (`/model`).
    #[serde(rename = "model_switched")]
    ModelSwitched {
        /// Record sequence number.
        #[serde(rename = "seq")]
        seq: u64,
        /// Record time.
        #[serde(rename = "ts")]
        ts: String,
        /// Provider.
        #[serde(rename = "provider")]
        provider: String,
        /// Model.
        #[serde(rename = "model")]
        model: String,
    },
    /// A hook ran.
    #[serde(rename = "hook")]
    Hook(HookEntry),
    /// Workspace files changed, and the checkpoint store kept their states.
    #[serde(rename = "checkpoint")]
    Checkpoint(CheckpointEntry),
    /// The session was rewound to the state before a turn.
    #[serde(rename = "rewind")]
    Rewind(RewindEntry),
    /// The user pinned something, or removed a pin.
    #[serde(rename = "pin")]
    Pin {
        /// Record sequence number.
        #[serde(rename = "seq")]
        seq: u64,
        /// Record time.
        #[serde(rename = "ts")]
        ts: String,
        /// What changed.
        #[serde(flatten)]
        change: crate::pin::PinChange,
    },
}

/// A `session_started` record, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// Session id.
    #[serde(rename = "session_id")]
    pub session_id: String,
    /// Working directory.
    #[serde(rename = "cwd")]
    pub cwd: PathBuf,
    /// Provider.
    #[serde(rename = "provider")]
    pub provider: String,
    /// Model.
    #[serde(rename = "model")]
    pub model: String,
}

/// A `compaction_applied` record, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompactionEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// Manual or automatic.
    #[serde(rename = "trigger")]
    pub trigger: CompactionTrigger,
    /// Estimated input tokens before.
    #[serde(rename = "tokens_before")]
    pub tokens_before: u64,
    /// Estimated input tokens after.
    #[serde(rename = "tokens_after")]
    pub tokens_after: u64,
    /// The summary the user saw: manual compaction streams it visibly; an automatic
    /// summary is private and is `None` here.
    #[serde(rename = "summary")]
    pub visible_summary: Option<String>,
    /// The session ledger the replacement carried, as the model saw it.
    #[serde(rename = "ledger", default, skip_serializing_if = "Option::is_none")]
    pub ledger: Option<String>,
    /// Tokens of the session ledger the replacement carried (0: none).
    #[serde(
        rename = "ledger_tokens",
        default,
        skip_serializing_if = "crate::event::is_zero"
    )]
    pub ledger_tokens: u64,
    /// Files re-attached to the replacement.
    #[serde(
        rename = "restored_files",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub restored_files: Vec<String>,
}

/// A `micro_compaction_applied` record, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MicroCompactionEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// `prune`, or `overflow` for an overflow fit (absent: `prune`).
    #[serde(
        rename = "reason",
        default,
        skip_serializing_if = "crate::event::is_prune"
    )]
    pub reason: pith_core::events::MicroReason,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// Estimated tokens reclaimed.
    #[serde(rename = "tokens_reclaimed")]
    pub tokens_reclaimed: u64,
    /// Estimated input tokens before.
    #[serde(rename = "tokens_before")]
    pub tokens_before: u64,
    /// Estimated input tokens after.
    #[serde(rename = "tokens_after")]
    pub tokens_after: u64,
}

/// A `checkpoint` record, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckpointEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// The tool call whose changes these are (absent: found at a turn's start).
    #[serde(rename = "call_id", skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Its tool, when recorded.
    #[serde(rename = "tool", skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// True for changes made outside pith.
    #[serde(rename = "outside")]
    pub outside: bool,
    /// The paths that changed, in record order.
    #[serde(rename = "files")]
    pub files: Vec<String>,
    /// How many of them the store could not keep (over a cap, unreadable).
    #[serde(rename = "omitted")]
    pub omitted: usize,
    /// Bytes the store newly took.
    #[serde(rename = "bytes")]
    pub bytes: u64,
}

/// A `rewind` record, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RewindEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// The turn rewound to, as the user saw it.
    #[serde(rename = "turn")]
    pub turn: u64,
    /// The `seq` of that turn's `user_message`.
    #[serde(rename = "to_seq")]
    pub to_seq: u64,
    /// What was rewound.
    #[serde(rename = "mode")]
    pub mode: RewindMode,
    /// The paths put back.
    #[serde(rename = "restored")]
    pub restored: Vec<String>,
}

/// A hook run, as `pith replay` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HookEntry {
    /// Record sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Record time.
    #[serde(rename = "ts")]
    pub ts: String,
    /// The run.
    #[serde(rename = "run")]
    pub run: pith_core::HookRun,
}

/// Every visible entry of `records`, in order. Assistant turns recorded without items
/// show items derived from their messages.
pub fn project_ui(records: &[Record]) -> Vec<UiEntry> {
    records.iter().filter_map(ui_entry).collect()
}

/// The visible entry of one record (`None` for a record pith does not know).
fn ui_entry(record: &Record) -> Option<UiEntry> {
    let seq = record.seq;
    let ts = record.ts.clone();
    let entry = match &record.event {
        Event::Unknown { .. } => return None,
        Event::Pin(change) => UiEntry::Pin {
            seq,
            ts,
            change: change.clone(),
        },
        Event::ModelSwitched { provider, model } => UiEntry::ModelSwitched {
            seq,
            ts,
            provider: provider.clone(),
            model: model.clone(),
        },
        Event::SessionStarted {
            session_id,
            cwd,
            provider,
            model,
            ..
        } => UiEntry::SessionStarted(SessionEntry {
            seq,
            ts,
            session_id: session_id.clone(),
            cwd: cwd.clone(),
            provider: provider.clone(),
            model: model.clone(),
        }),
        Event::UserMessage { message } => UiEntry::User {
            seq,
            ts,
            text: user_text(message),
        },
        Event::AssistantTurn {
            messages,
            items,
            usage,
            interrupted,
            error,
            ..
        } => UiEntry::Assistant {
            seq,
            ts,
            items: shown_items(items, messages),
            usage: *usage,
            interrupted: *interrupted,
            error: error.clone(),
        },
        Event::CompactionApplied {
            trigger,
            summary,
            tokens_before,
            tokens_after,
            ledger,
            ledger_tokens,
            restored_files,
            ..
        } => UiEntry::Compaction(CompactionEntry {
            seq,
            ts,
            trigger: *trigger,
            tokens_before: *tokens_before,
            tokens_after: *tokens_after,
            // A manual compaction's summary was shown as it streamed.
            visible_summary: (*trigger == CompactionTrigger::Manual).then(|| summary.clone()),
            ledger: ledger.clone(),
            ledger_tokens: *ledger_tokens,
            restored_files: restored_files.clone(),
        }),
        Event::HookRun(run) => UiEntry::Hook(HookEntry {
            seq,
            ts,
            run: run.clone(),
        }),
        Event::Checkpoint(checkpoint) => checkpoint_entry(seq, ts, checkpoint),
        Event::Rewind(rewind) => UiEntry::Rewind(RewindEntry {
            seq,
            ts,
            turn: rewind.turn,
            to_seq: rewind.to_seq,
            mode: rewind.mode,
            restored: rewind.restored.clone(),
        }),
        Event::MicroCompactionApplied {
            reason,
            tokens_reclaimed,
            tokens_before,
            tokens_after,
            ..
        } => UiEntry::MicroCompaction(MicroCompactionEntry {
            seq,
            ts,
            reason: *reason,
            tokens_reclaimed: *tokens_reclaimed,
            tokens_before: *tokens_before,
            tokens_after: *tokens_after,
        }),
    };
    Some(entry)
}

/// An assistant turn's items: as recorded, or derived from its messages for a turn
/// recorded without them.
fn shown_items(items: &[TranscriptItem], messages: &[Message]) -> Vec<TranscriptItem> {
    if items.is_empty() {
        items_from_messages(messages)
    } else {
        items.to_vec()
    }
}

/// A checkpoint's entry: the files it changed and how many of them it could not keep.
fn checkpoint_entry(seq: u64, ts: String, checkpoint: &Checkpoint) -> UiEntry {
    UiEntry::Checkpoint(CheckpointEntry {
        seq,
        ts,
        call_id: checkpoint.call_id.clone(),
        tool: checkpoint.tool.clone(),
        outside: checkpoint.outside,
        files: checkpoint
            .changes
            .iter()
            .map(FileChange::shown_path)
            .collect(),
        omitted: checkpoint
            .changes
            .iter()
            .filter(|c| !c.before.is_restorable() || !c.after.is_restorable())
            .count(),
        bytes: checkpoint.bytes,
    })
}

/// The text of a user message; tool results in it (unusual) are shown as their content.
pub(crate) fn user_text(message: &Message) -> String {
    // The user's words: not the block of pins pith adds to the message after a `/pin`.
    let text = user_words(message);
    if !text.is_empty() {
        return text;
    }
    message
        .tool_results()
        .map(|r| r.content.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            ts: "2026-11-29T13:10:15.123Z".into(),
            event,
        }
    }

    fn turn(text: &str) -> Event {
        Event::AssistantTurn {
            messages: vec![Message::assistant(text)],
            items: vec![],
            usage: None,
            interrupted: false,
            error: None,
            compaction_model_usage: None,
        }
    }

    fn compaction(messages: Vec<Message>) -> Event {
        Event::CompactionApplied {
            trigger: CompactionTrigger::Auto,
            messages,
            summary: "private summary".into(),
            tokens_before: 1000,
            tokens_after: 100,
            usage: None,
            ledger: None,
            ledger_tokens: 0,
            restored_files: Vec::new(),
            model: None,
        }
    }

    #[test]
    fn compaction_replaces_the_reconstructed_history() {
        let records = vec![
            record(1, Event::user_text("first")),
            record(2, turn("checkpointed output")),
            record(
                3,
                compaction(vec![
                    Message::system("must be stripped"),
                    Message::user("<compacted_context>s</compacted_context>"),
                ]),
            ),
            record(4, turn("after")),
        ];
        assert_eq!(
            project_model(&records),
            vec![
                Message::user("<compacted_context>s</compacted_context>"),
                Message::assistant("after"),
            ]
        );
    }

    #[test]
    fn the_ui_keeps_pre_compaction_checkpoints_and_hides_the_auto_summary() {
        let records = vec![
            record(1, Event::user_text("first")),
            record(2, turn("checkpointed output")),
            record(3, compaction(vec![Message::user("s")])),
            record(
                4,
                Event::Unknown {
                    kind: "future".into(),
                    raw: "{}".into(),
                },
            ),
        ];
        let ui = project_ui(&records);
        assert_eq!(ui.len(), 3, "unknown kinds are skipped: {ui:?}");
        assert!(matches!(&ui[1], UiEntry::Assistant { items, .. }
            if items == &vec![TranscriptItem::AssistantText { text: "checkpointed output".into() }]));
        assert!(matches!(
            &ui[2],
            UiEntry::Compaction(CompactionEntry {
                visible_summary: None,
                tokens_before: 1000,
                tokens_after: 100,
                ..
            })
        ));
    }

    #[test]
    fn owned_and_borrowed_model_projections_agree() {
        let records = vec![
            record(1, Event::user_text("a")),
            record(2, turn("b")),
            record(3, compaction(vec![Message::user("s")])),
            record(4, Event::user_text("c")),
            record(5, turn("d")),
        ];
        assert_eq!(
            project_model(&records),
            project_model_owned(records.clone())
        );
        assert_eq!(
            project_model(&records[..2]),
            project_model_owned(records[..2].to_vec())
        );
    }

    #[test]
    fn micro_compaction_replaces_history_exactly() {
        let pruned = vec![
            Message::user("q"),
            Message::tool_result("c", "[pruned]", false),
        ];
        let records = vec![
            record(1, Event::user_text("q")),
            record(2, turn("long")),
            record(
                3,
                Event::MicroCompactionApplied {
                    reason: Default::default(),
                    messages: pruned.clone(),
                    tokens_reclaimed: 10,
                    tokens_before: 30,
                    tokens_after: 20,
                },
            ),
        ];
        assert_eq!(project_model(&records), pruned);
    }
}
