//! The line of the conversation: which records the session's current state is made of,
//! once conversation rewinds are taken into account.
//!
//! The transcript is append-only, so a rewind cannot remove the turns it abandons; it
//! is a record that says "continue from the state just before record `to_seq`". The rule
//! is recursive and exact: the state just before record X is the state the records
//! before X produce. Each record is therefore appended to the line *as it was* when the
//! record was written; a conversation rewind (`mode` `conversation` or `both`) is
//! appended to the line as it was just before its target, so everything between the
//! target and the rewind leaves the line. A rewind to a point before a compaction thus
//! brings back the uncompacted records from before it: the history is rebuilt from the
//! transcript, not from the summary.
//!
//! Every view of "the conversation now" reads the line: the model history
//! ([`crate::projection::project_model`]), the user turns ([`crate::turns::turns`]) and
//! the session ledger a front-end rebuilds from the records, and the pins
//! ([`pins_on_line`]). The UI view and file
//! changes ([`crate::turns::changes_after`]) read every record instead.
//!
//! A conversation rewind whose `to_seq` names no earlier record (a damaged or
//! hand-edited transcript) cannot be followed: it is ignored (the line goes on through
//! it, as for a `code` rewind) with a warning in the log, never a panic.

use pith_core::context::pins::Pins;

use crate::event::{Event, Record};
use crate::pin::PinAction;

/// The index of the record a conversation rewind at `index` returns to just before, or
/// `None` when it is no conversation rewind.
fn rewind_target(records: &[Record], index: usize) -> Option<Result<usize, u64>> {
    match &records[index].event {
        Event::Rewind(rewind) if rewind.mode.rewinds_conversation() => Some(
            records[..index]
                .iter()
                .rposition(|r| r.seq == rewind.to_seq)
                .ok_or(rewind.to_seq),
        ),
        _ => None,
    }
}

/// True when `event` is a rewind of the conversation.
fn is_conversation_rewind(event: &Event) -> bool {
    matches!(event, Event::Rewind(rewind) if rewind.mode.rewinds_conversation())
}

/// Indices into `records` of the current line of the conversation, in order. Without a
/// conversation rewind this is every index.
pub fn line_indices(records: &[Record]) -> Vec<usize> {
    if !records.iter().any(|r| is_conversation_rewind(&r.event)) {
        return (0..records.len()).collect();
    }
    // tip_before[i]: the last record of the line just before record i was written (the
    // state "just before i"). parent[i]: the record before i on the line i belongs to;
    // the same, except for a conversation rewind, which continues the line as it was
    // just before its target.
    let mut tip_before: Vec<Option<usize>> = Vec::with_capacity(records.len());
    let mut parent: Vec<Option<usize>> = Vec::with_capacity(records.len());
    let mut tip: Option<usize> = None;
    for index in 0..records.len() {
        let before = match rewind_target(records, index) {
            Some(Ok(target)) => tip_before[target],
            Some(Err(to_seq)) => {
                tracing::warn!(
                    seq = records[index].seq,
                    to_seq,
                    "a rewind names no earlier record: ignored"
                );
                tip
            }
            None => tip,
        };
        tip_before.push(tip);
        parent.push(before);
        tip = Some(index);
    }
    let mut line = Vec::new();
    let mut at = tip;
    while let Some(index) = at {
        line.push(index);
        at = parent[index];
    }
    line.reverse();
    line
}

/// The records of the current line of the conversation, in order: what a front-end
/// rebuilds conversation state from (for example the session ledger).
pub fn current_line(records: &[Record]) -> Vec<&Record> {
    line_indices(records)
        .into_iter()
        .map(|index| &records[index])
        .collect()
}

/// [`current_line`], consuming the records (no clone).
pub fn current_line_owned(records: Vec<Record>) -> Vec<Record> {
    let mut keep = vec![false; records.len()];
    for index in line_indices(&records) {
        keep[index] = true;
    }
    records
        .into_iter()
        .zip(keep)
        .filter_map(|(record, keep)| keep.then_some(record))
        .collect()
}

/// The pins of the current line of the conversation (see [`current_line`]), each marked
/// shown when a user message or a compaction came after it (the model has seen it).
pub fn pins_on_line(records: &[Record]) -> Pins {
    let mut pins = Pins::new();
    for record in current_line(records) {
        match &record.event {
            Event::Pin(change) => match change.action {
                PinAction::Add => {
                    pins.add(change.pin.clone());
                }
                PinAction::Remove => {
                    pins.remove_pin(&change.pin);
                }
            },
            Event::UserMessage { .. } | Event::CompactionApplied { .. } => pins.mark_all_shown(),
            _ => {}
        }
    }
    pins
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{Rewind, RewindMode};

    fn record(seq: u64, event: Event) -> Record {
        Record {
            seq,
            ts: String::new(),
            event,
        }
    }

    fn rewind(to_seq: u64, mode: RewindMode) -> Event {
        Event::Rewind(Rewind {
            to_seq,
            turn: 1,
            mode,
            root: "/w".into(),
            restored: vec![],
            changes: vec![],
        })
    }

    fn seqs(records: &[Record]) -> Vec<u64> {
        current_line(records).iter().map(|r| r.seq).collect()
    }

    #[test]
    fn without_a_conversation_rewind_the_line_is_every_record() {
        let records = vec![
            record(1, Event::user_text("a")),
            record(2, rewind(1, RewindMode::Code)),
            record(3, Event::user_text("b")),
        ];
        assert_eq!(seqs(&records), vec![1, 2, 3]);
    }

    #[test]
    fn a_rewind_drops_everything_from_its_target_and_nested_rewinds_compose() {
        let records = vec![
            record(1, Event::user_text("t1")),
            record(2, Event::user_text("t2")),
            record(3, Event::user_text("t3")),
            record(4, rewind(2, RewindMode::Both)),
            record(5, Event::user_text("t2'")),
            // Back to a record of the abandoned branch: the line as it was then.
            record(6, rewind(3, RewindMode::Conversation)),
            record(7, Event::user_text("t3'")),
            // Back to just before a rewind: the line the rewind abandoned.
            record(8, rewind(6, RewindMode::Conversation)),
        ];
        assert_eq!(seqs(&records[..5]), vec![1, 4, 5]);
        assert_eq!(seqs(&records[..7]), vec![1, 2, 6, 7]);
        assert_eq!(seqs(&records), vec![1, 4, 5, 8]);
        assert_eq!(
            current_line_owned(records[..7].to_vec())
                .iter()
                .map(|r| r.seq)
                .collect::<Vec<_>>(),
            vec![1, 2, 6, 7]
        );
    }

    #[test]
    fn a_rewind_to_a_missing_or_later_seq_is_ignored() {
        let records = vec![
            record(1, Event::user_text("a")),
            record(2, rewind(99, RewindMode::Both)),
            record(3, rewind(3, RewindMode::Both)),
            record(4, rewind(4, RewindMode::Conversation)),
        ];
        assert_eq!(seqs(&records), vec![1, 2, 3, 4]);
        assert!(line_indices(&[]).is_empty());
    }

    #[test]
    fn the_pins_are_the_fold_of_the_line_shown_after_a_message() {
        use crate::pin::PinChange;
        use pith_core::context::pins::Pin;
        let change = |action, path: &str| {
            Event::Pin(PinChange {
                action,
                pin: Pin::File { path: path.into() },
            })
        };
        let records = vec![
            record(1, change(PinAction::Add, "a.md")),
            record(2, change(PinAction::Add, "b.md")),
            record(3, Event::user_text("go")),
            record(4, change(PinAction::Remove, "a.md")),
            record(5, change(PinAction::Add, "c.md")),
            record(6, Event::user_text("again")),
            record(7, change(PinAction::Add, "d.md")),
            record(8, rewind(6, RewindMode::Conversation)),
        ];
        let pins = pins_on_line(&records);
        let paths: Vec<String> = pins.iter().map(Pin::label).collect();
        assert_eq!(
            paths,
            ["b.md", "c.md"],
            "a rewind takes the pins made after its point"
        );
        assert_eq!(
            pins.unshown(),
            vec![Pin::File {
                path: "c.md".into()
            }]
        );
    }
}
