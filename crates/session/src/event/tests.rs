//! The event records: how each reads and writes.

use super::*;
use serde_json::json;

fn line_json(event: &Event) -> serde_json::Value {
    let line = encode_line(7, "2026-11-29T13:10:15.123Z", event).unwrap();
    assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
    serde_json::from_str(&line).unwrap()
}

#[test]
fn session_started_has_the_documented_shape() {
    let event = Event::SessionStarted {
        session_id: "0193".into(),
        cwd: "/work/p".into(),
        provider: "openai".into(),
        model: "gpt-4o".into(),
        pith_version: "0.1.0".into(),
        parent_session: None,
        forked_from: None,
        forked_at_seq: None,
        copied_through_seq: None,
    };
    assert_eq!(
        line_json(&event),
        json!({"v": 1, "seq": 7, "ts": "2026-11-29T13:10:15.123Z", "kind": "session_started",
               "session_id": "0193", "cwd": "/work/p", "provider": "openai",
               "model": "gpt-4o", "pith_version": "0.1.0"})
    );
    let fork = Event::SessionStarted {
        session_id: "0194".into(),
        cwd: "/work/p".into(),
        provider: "openai".into(),
        model: "gpt-4o".into(),
        pith_version: "0.1.0".into(),
        parent_session: None,
        forked_from: Some("0193".into()),
        forked_at_seq: Some(12),
        copied_through_seq: Some(11),
    };
    assert_eq!(
        line_json(&fork),
        json!({"v": 1, "seq": 7, "ts": "2026-11-29T13:10:15.123Z", "kind": "session_started",
               "session_id": "0194", "cwd": "/work/p", "provider": "openai",
               "model": "gpt-4o", "pith_version": "0.1.0", "forked_from": "0193",
               "forked_at_seq": 12, "copied_through_seq": 11})
    );
    let line = encode_line(1, "t", &fork).unwrap();
    assert_eq!(decode_line(line.trim_end()).unwrap().event, fork);
}

#[test]
fn envelope_fields_come_first_in_the_documented_order() {
    let line = encode_line(3, "2026-11-29T13:10:15.123Z", &Event::user_text("hi")).unwrap();
    assert!(
        line.starts_with(
            r#"{"v":1,"seq":3,"ts":"2026-11-29T13:10:15.123Z","kind":"user_message","#
        ),
        "{line}"
    );
}

#[test]
fn compaction_and_micro_records_have_the_documented_shape() {
    let compaction = Event::CompactionApplied {
        trigger: CompactionTrigger::Auto,
        messages: vec![Message::user("<compacted_context>s</compacted_context>")],
        summary: "s".into(),
        tokens_before: 100,
        tokens_after: 10,
        usage: None,
        ledger: None,
        ledger_tokens: 0,
        restored_files: Vec::new(),
        model: None,
    };
    let value = line_json(&compaction);
    assert_eq!(value["kind"], "compaction_applied");
    assert_eq!(value["trigger"], "auto");
    assert_eq!(value["tokens_before"], 100);
    assert_eq!(value["tokens_after"], 10);
    assert_eq!(value["usage"], serde_json::Value::Null);
    let micro = Event::MicroCompactionApplied {
        reason: Default::default(),
        messages: vec![],
        tokens_reclaimed: 5,
        tokens_before: 20,
        tokens_after: 15,
    };
    assert_eq!(
        line_json(&micro),
        json!({"v": 1, "seq": 7, "ts": "2026-11-29T13:10:15.123Z",
               "kind": "micro_compaction_applied", "messages": [],
               "tokens_reclaimed": 5, "tokens_before": 20, "tokens_after": 15})
    );
}

#[test]
fn a_hook_run_record_has_the_documented_shape_and_round_trips() {
    let run = Event::HookRun(pith_core::HookRun {
        event: pith_core::HookEvent::PreToolUse,
        matcher: Some("bash".into()),
        command: ".pith/hooks/guard.sh".into(),
        outcome: pith_core::HookOutcome::Block,
        exit_code: Some(2),
        duration_ms: 12,
        decision: None,
        message: Some("rm -rf outside the workspace".into()),
        stdout: String::new(),
        stderr: "rm -rf outside the workspace\n".into(),
    });
    let value = line_json(&run);
    assert_eq!(
        value,
        json!({"v": 1, "seq": 7, "ts": "2026-11-29T13:10:15.123Z", "kind": "hook_run",
               "event": "PreToolUse", "matcher": "bash", "command": ".pith/hooks/guard.sh",
               "outcome": "block", "exit_code": 2, "duration_ms": 12, "decision": null,
               "message": "rm -rf outside the workspace", "stdout": "",
               "stderr": "rm -rf outside the workspace\n"})
    );
    let line = encode_line(7, "2026-11-29T13:10:15.123Z", &run).unwrap();
    assert_eq!(decode_line(line.trim_end()).unwrap().event, run);
    assert!(!run.ends_turn(), "a hook run is not a durability point");
}

#[test]
fn every_known_event_round_trips_through_a_line() {
    let events = vec![
        Event::user_text("fix the bug"),
        Event::AssistantTurn {
            messages: vec![Message::assistant("done")],
            items: vec![TranscriptItem::AssistantText {
                text: "done".into(),
            }],
            usage: Some(Usage {
                input_tokens: 10,
                cached_input_tokens: 2,
                output_tokens: 3,
                ..Default::default()
            }),
            interrupted: true,
            error: Some("stream reset".into()),
            compaction_model_usage: None,
        },
    ];
    for (i, event) in events.into_iter().enumerate() {
        let line = encode_line(i as u64 + 1, "2026-11-29T13:10:15.123Z", &event).unwrap();
        let record = decode_line(line.trim_end()).unwrap();
        assert_eq!(record.event, event);
        assert_eq!(record.seq, i as u64 + 1);
    }
}

#[test]
fn an_unknown_kind_is_kept_verbatim() {
    let line =
        r#"{"v":1,"seq":4,"ts":"2026-11-29T13:10:15.123Z","kind":"tool_approval","x":[1,2]}"#;
    let record = decode_line(line).unwrap();
    assert_eq!(
        record.event,
        Event::Unknown {
            kind: "tool_approval".into(),
            raw: line.into()
        }
    );
    assert!(matches!(
        encode_line(5, "t", &record.event),
        Err(SessionError::UnknownKind { .. })
    ));
}

#[test]
fn persisted_replacements_never_carry_system_messages() {
    let replacement = vec![Message::system("prompt"), Message::user("summary")];
    let event = Event::compaction(CompactionTrigger::Auto, &replacement, "s", 9, 1, None);
    assert!(matches!(&event, Event::CompactionApplied { messages, .. }
        if messages == &vec![Message::user("summary")]));
    let micro = Event::micro_compaction(&pith_core::events::MicroCompaction {
        reason: pith_core::events::MicroReason::Prune,
        replacement,
        tokens_reclaimed: 3,
        tokens_before: 9,
        tokens_after: 6,
        duration_ms: 0,
    });
    assert!(
        matches!(&micro, Event::MicroCompactionApplied { messages, tokens_reclaimed: 3, .. }
        if messages == &vec![Message::user("summary")])
    );
}

#[test]
fn a_newer_schema_version_is_refused_with_a_clear_reason() {
    let line = r#"{"v":2,"seq":1,"ts":"2026-11-29T13:10:15.123Z","kind":"user_message"}"#;
    let problem = decode_line(line).unwrap_err();
    assert_eq!(problem, LineProblem::UnsupportedVersion(2));
    assert!(problem.to_string().contains("newer pith"), "{problem}");
}

#[test]
fn malformed_lines_say_what_is_wrong() {
    for (line, expected) in [
        ("not json", "expected"),
        (r#"{"seq":1,"ts":"t","kind":"user_message"}"#, "\"v\""),
        (r#"{"v":1,"ts":"t","kind":"user_message"}"#, "\"seq\""),
        (
            r#"{"v":1,"seq":1,"ts":"t","kind":"user_message"}"#,
            "user_message",
        ),
    ] {
        let problem = decode_line(line).unwrap_err().to_string();
        assert!(problem.contains(expected), "{line}: {problem}");
    }
}

#[test]
fn timestamps_are_fixed_width_rfc3339() {
    let ts = now_ts();
    assert_eq!(ts.len(), "2026-11-29T13:10:15.123Z".len(), "{ts}");
    time::OffsetDateTime::parse(&ts, &time::format_description::well_known::Rfc3339).unwrap();
}
