//! docs/session-format.md stays true: its example transcript reads strictly, contains
//! every kind, projects as described, and is exactly what the encoder writes.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::path::Path;

use pith_core::Message;
use pith_session::parse_transcript;
use pith_session::ui_text;
use pith_session::{encode_line, KNOWN_KINDS};
use pith_session::{project_model, project_ui, turns, Event, ReadOptions};

const DOC: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/session-format.md"
));

fn example() -> &'static str {
    let start = DOC
        .find("```jsonl\n")
        .expect("docs/session-format.md has a ```jsonl example")
        + "```jsonl\n".len();
    let len = DOC[start..]
        .find("```")
        .expect("the example block is closed");
    &DOC[start..start + len]
}

#[test]
fn the_documented_example_reads_strictly_and_covers_every_kind() {
    let transcript = parse_transcript(
        example().as_bytes(),
        Path::new("docs/session-format.md"),
        ReadOptions::default(),
    )
    .unwrap_or_else(|e| panic!("the documented example is not a valid transcript: {e}"));
    assert_eq!(transcript.report, Default::default());
    for kind in KNOWN_KINDS {
        assert!(
            transcript.records.iter().any(|r| r.event.kind() == kind),
            "the documented example lacks a {kind} record"
        );
    }
    let history = project_model(&transcript.records);
    assert!(
        history[0].text_content().starts_with("<compacted_context>"),
        "after the compaction the model view starts from the replacement"
    );
    assert!(matches!(
        transcript.records.last().map(|r| &r.event),
        Some(Event::UserMessage { .. })
    ));
}

/// The text block the doc says `pith replay` prints for the example.
fn documented_replay() -> &'static str {
    let intro = "`pith replay <path-to-this-file>` renders it as:\n\n```\n";
    let start = DOC.find(intro).expect("the doc shows the example's replay") + intro.len();
    let len = DOC[start..]
        .find("```")
        .expect("the replay block is closed");
    &DOC[start..start + len]
}

#[test]
fn the_documented_replay_is_what_replay_prints() {
    let transcript = parse_transcript(
        example().as_bytes(),
        Path::new("doc"),
        ReadOptions::default(),
    )
    .unwrap();
    let mut text = Vec::new();
    ui_text(&project_ui(&transcript.records), &mut text).unwrap();
    assert_eq!(String::from_utf8(text).unwrap(), documented_replay());
}

#[test]
fn the_documented_rewind_returns_to_before_the_second_turn() {
    let transcript = parse_transcript(
        example().as_bytes(),
        Path::new("doc"),
        ReadOptions::default(),
    )
    .unwrap();
    let records = &transcript.records;
    let rewind_at = records
        .iter()
        .position(|r| matches!(r.event, Event::Rewind(_)))
        .unwrap();
    let Event::Rewind(rewind) = &records[rewind_at].event else {
        unreachable!()
    };
    let target = records.iter().position(|r| r.seq == rewind.to_seq).unwrap();
    assert!(matches!(records[target].event, Event::UserMessage { .. }));
    // The history is the one just before the turn rewound to, plus the new turn.
    let mut expected = project_model(&records[..target]);
    expected.extend(
        records[rewind_at..]
            .iter()
            .filter_map(|r| match &r.event {
                Event::UserMessage { message } => Some(message.clone()),
                _ => None,
            })
            .collect::<Vec<Message>>(),
    );
    assert_eq!(project_model(records), expected);
    let listed = turns(records);
    assert_eq!(listed.len(), 2, "turn 2 was rewound and asked again");
    assert_eq!(listed[0].files, vec!["src/parser.rs"]);
    assert!(listed[1].files.is_empty());
}

#[test]
fn the_documented_example_is_byte_for_byte_what_pith_writes() {
    let transcript = parse_transcript(
        example().as_bytes(),
        Path::new("doc"),
        ReadOptions::default(),
    )
    .unwrap();
    for (record, line) in transcript.records.iter().zip(example().lines()) {
        let encoded = encode_line(record.seq, &record.ts, &record.event).unwrap();
        assert_eq!(
            encoded.trim_end(),
            line,
            "record {} in the doc differs from the encoder's output",
            record.seq
        );
    }
}
