//! docs/session-format.md stays true: its example transcript reads strictly, contains
//! every kind, projects as described, and is exactly what the encoder writes.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use std::path::Path;

use pith_session::event::{encode_line, KNOWN_KINDS};
use pith_session::read::parse_transcript;
use pith_session::{project_model, Event, ReadOptions};

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
