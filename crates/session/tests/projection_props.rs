//! Property: any byte prefix of a valid transcript reads without error (the cut line is a
//! torn tail), keeps exactly the complete records, and projects into both views without
//! panicking.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::path::Path;

use pith_core::{Message, Part, Role, ToolCall, ToolResult, Usage};
use pith_session::encode_line;
use pith_session::parse_transcript;
use pith_session::{
    project_model, project_ui, CompactionTrigger, Event, ReadOptions, TranscriptItem,
};
use proptest::prelude::*;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,20}",
        "\\PC{0,30}",
        Just("line one\nline \"two\"\t\\ end".to_owned()),
    ]
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        text().prop_map(|text| Part::Text { text }),
        (text(), text()).prop_map(|(id, arg)| Part::ToolCall(ToolCall {
            id,
            name: "bash".into(),
            arguments: serde_json::json!({ "command": arg }),
        })),
        (text(), text(), any::<bool>()).prop_map(|(call_id, content, is_error)| {
            Part::ToolResult(ToolResult::new(call_id, content, is_error))
        }),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    (
        prop_oneof![
            Just(Role::System),
            Just(Role::User),
            Just(Role::Assistant),
            Just(Role::Tool)
        ],
        prop::collection::vec(part(), 0..4),
    )
        .prop_map(|(role, parts)| Message { role, parts })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        message().prop_map(|message| Event::UserMessage { message }),
        (
            prop::collection::vec(message(), 0..4),
            any::<bool>(),
            prop::option::of(text()),
            prop::option::of((0u64..1000, 0u64..1000)),
            any::<bool>()
        )
            .prop_map(|(messages, interrupted, error, usage, with_items)| {
                let items = if with_items {
                    vec![TranscriptItem::Notice {
                        text: "Context compacted automatically".into(),
                    }]
                } else {
                    vec![]
                };
                Event::AssistantTurn {
                    messages,
                    items,
                    usage: usage.map(|(i, o)| Usage {
                        input_tokens: i,
                        cached_input_tokens: 0,
                        output_tokens: o,
                        ..Default::default()
                    }),
                    interrupted,
                    error,
                    compaction_model_usage: None,
                }
            }),
        (
            prop::collection::vec(message(), 0..3),
            text(),
            any::<bool>()
        )
            .prop_map(|(messages, summary, manual)| Event::CompactionApplied {
                trigger: if manual {
                    CompactionTrigger::Manual
                } else {
                    CompactionTrigger::Auto
                },
                messages,
                summary,
                tokens_before: 100,
                tokens_after: 10,
                usage: None,
                ledger: manual.then(|| "<session_ledger>\n</session_ledger>".to_owned()),
                ledger_tokens: if manual { 5 } else { 0 },
                restored_files: Vec::new(),
                model: None,
            }),
        prop::collection::vec(message(), 0..3).prop_map(|messages| {
            Event::MicroCompactionApplied {
                reason: Default::default(),
                messages,
                tokens_reclaimed: 1,
                tokens_before: 2,
                tokens_after: 1,
            }
        }),
    ]
}

fn transcript(events: &[Event]) -> String {
    let mut text = encode_line(
        1,
        "2026-11-29T13:10:15.123Z",
        &Event::SessionStarted {
            session_id: "s".into(),
            cwd: "/p".into(),
            provider: "openai".into(),
            model: "m".into(),
            pith_version: "0.1.0".into(),
            parent_session: None,
            forked_from: None,
            forked_at_seq: None,
            copied_through_seq: None,
        },
    )
    .unwrap();
    for (i, event) in events.iter().enumerate() {
        text.push_str(&encode_line(i as u64 + 2, "2026-11-29T13:10:15.123Z", event).unwrap());
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn projecting_any_prefix_of_a_valid_transcript_never_panics(
        events in prop::collection::vec(event(), 0..12),
        cut in 0.0f64..=1.0,
    ) {
        let text = transcript(&events);
        let bytes = text.as_bytes();
        let cut = ((bytes.len() as f64) * cut) as usize;
        let prefix = &bytes[..cut.min(bytes.len())];
        let read = parse_transcript(prefix, Path::new("prefix"), ReadOptions::default());
        let read = match read {
            Ok(read) => read,
            Err(err) => return Err(TestCaseError::fail(format!("a prefix must read: {err}"))),
        };
        let complete_lines = prefix.iter().filter(|b| **b == b'\n').count();
        prop_assert_eq!(read.records.len(), complete_lines);
        prop_assert_eq!(read.report.torn_tail.is_some(), prefix.last().is_some_and(|b| *b != b'\n'));
        let model = project_model(&read.records);
        if let Some(Event::CompactionApplied { messages, .. } | Event::MicroCompactionApplied { messages, .. }) =
            read.records.last().map(|r| &r.event)
        {
            let expected: Vec<Message> = messages.iter().filter(|m| m.role != Role::System).cloned().collect();
            prop_assert_eq!(&model, &expected, "a replacement must become the whole history");
        }
        let ui = project_ui(&read.records);
        prop_assert_eq!(ui.len(), read.records.len());
    }

    #[test]
    fn a_full_transcript_round_trips_every_event(events in prop::collection::vec(event(), 0..12)) {
        let text = transcript(&events);
        let read = parse_transcript(text.as_bytes(), Path::new("t"), ReadOptions::default()).unwrap();
        let back: Vec<Event> = read.records.into_iter().skip(1).map(|r| r.event).collect();
        prop_assert_eq!(back, events);
    }
}
