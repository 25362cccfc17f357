//! Every loop event pith emits, as the `session/update` notifications an editor gets:
//! the mapping (`pith_acp::EventMapper`), the turn's sink (`pith_acp::SessionSink`), the
//! permission question (`pith_acp::permission_question`), the stop reasons
//! (`pith_acp::stop_reason`) and the replay of a transcript (`pith_acp::replay`). Checked on the JSON the client receives.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::path::Path;

use agent_client_protocol::v1::schema::{
    PermissionOptionId, RequestPermissionOutcome, SelectedPermissionOutcome, SessionId,
    SessionNotification, StopReason,
};
use pith_acp::{
    permission_answer as answer, permission_question as question, ClientView, CompactionSlot,
    EventMapper, ManualEnd, ModelFigures, RunningCalls, SessionSink, ALLOW_ALWAYS, ALLOW_ONCE,
    REJECT,
};
use pith_agent::Prices;
use pith_agent::{LoopError, TurnError, TurnOutcome};
use pith_core::events::{CompactionFigures, MicroCompaction, MicroReason};
use pith_core::{
    AutoCompaction, ChildRun, EventSink, HookEvent, HookOutcome, HookRun, LoopEvent, Message,
    Pricing, RequestPurpose, RequestReport, SubagentEvent, ToolCall, ToolResult, Usage,
};
use pith_tools::{Approval, PermissionRequest};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const EVERYTHING: ClientView = ClientView {
    compaction: true,
    notices: true,
    subagents: true,
};
const NOTHING: ClientView = ClientView {
    compaction: false,
    notices: false,
    subagents: false,
};

fn mapper(view: ClientView, cwd: &Path) -> EventMapper {
    EventMapper::new(
        SessionId::new("s1"),
        cwd.to_path_buf(),
        view,
        ModelFigures {
            window: 200_000,
            model: "local/model".into(),
            prices: Prices::from_table(Vec::new()),
        },
        RunningCalls::default(),
    )
}

/// The notifications as the client reads them.
fn wire(notifications: Vec<SessionNotification>) -> Vec<Value> {
    notifications
        .into_iter()
        .map(|n| serde_json::to_value(n).expect("a notification serialises"))
        .collect()
}

fn updates(notifications: Vec<SessionNotification>) -> Vec<Value> {
    wire(notifications)
        .into_iter()
        .map(|n| n["update"].clone())
        .collect()
}

fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

#[test]
fn text_and_reasoning_stream_as_chunks_and_empty_deltas_are_dropped() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let sent = wire(m.map(&LoopEvent::TextDelta("Hello".into())));
    assert_eq!(
        sent,
        [
            json!({"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Hello"}}})
        ]
    );
    let thought = updates(m.map(&LoopEvent::ReasoningDelta("hmm".into())));
    assert_eq!(thought[0]["sessionUpdate"], json!("agent_thought_chunk"));
    assert!(m.map(&LoopEvent::TextDelta(String::new())).is_empty());
    for silent in [
        LoopEvent::RequestStarted { attempt: 1 },
        LoopEvent::MessageAppended(Message::assistant("x")),
        LoopEvent::TurnFinished {
            usage: Usage::default(),
        },
    ] {
        assert!(m.map(&silent).is_empty(), "{silent:?}");
    }
}

#[test]
fn a_write_is_an_edit_call_with_a_diff_against_the_file_it_replaces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
    let mut m = mapper(EVERYTHING, dir.path());
    let write = call("c1", "write", json!({"path": "a.txt", "content": "new\n"}));
    let started = updates(m.map(&LoopEvent::ToolCallStarted(write.clone())));
    let path = dir.path().join("a.txt").display().to_string();
    assert_eq!(
        started[0],
        json!({
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Write a.txt",
            "kind": "edit",
            "status": "in_progress",
            "content": [{"type": "diff", "path": path, "oldText": "old\n", "newText": "new\n"}],
            "locations": [{"path": path}],
            "rawInput": {"path": "a.txt", "content": "new\n"}
        })
    );
    assert_eq!(m.running().latest("write").map(|c| c.id), Some("c1".into()));
    let finished = updates(m.map(&LoopEvent::ToolCallFinished {
        call: write,
        result: ToolResult::new("c1", "wrote 4 bytes", false),
    }));
    assert_eq!(finished[0]["sessionUpdate"], json!("tool_call_update"));
    assert_eq!(finished[0]["status"], json!("completed"));
    assert_eq!(
        finished[0]["content"][0]["content"]["text"],
        json!("wrote 4 bytes")
    );
    assert_eq!(m.running().latest("write"), None);
}

#[test]
fn edit_bash_and_search_calls_have_their_kinds_and_a_failure_is_failed() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let edit = updates(m.map(&LoopEvent::ToolCallStarted(call(
        "c1",
        "edit",
        json!({"path": "src/lib.rs", "old_string": "a", "new_string": "b"}),
    ))));
    assert_eq!(edit[0]["kind"], json!("edit"));
    assert_eq!(
        edit[0]["content"][0],
        json!({"type": "diff", "path": "/w/src/lib.rs", "oldText": "a", "newText": "b"})
    );
    let bash = call("c2", "bash", json!({"command": "cargo test"}));
    let shown = updates(m.map(&LoopEvent::ToolCallStarted(bash.clone())));
    assert_eq!(
        (shown[0]["kind"].clone(), shown[0]["title"].clone()),
        (json!("execute"), json!("`cargo test`"))
    );
    let failed = updates(m.map(&LoopEvent::ToolCallFinished {
        call: bash,
        result: ToolResult::new("c2", "exit 101\n3 failed", true),
    }));
    assert_eq!(failed[0]["status"], json!("failed"));
    let grep = updates(m.map(&LoopEvent::ToolCallStarted(call(
        "c3",
        "grep",
        json!({"pattern": "fn main"}),
    ))));
    assert_eq!(grep[0]["kind"], json!("search"));
}

#[test]
fn usage_is_the_context_used_against_the_window_with_the_cost_so_far() {
    let sonnet = Pricing {
        input: 3.0,
        cached_input: 0.3,
        output: 15.0,
        cache_write: None,
    };
    let haiku = Pricing {
        input: 1.0,
        cached_input: 0.1,
        output: 5.0,
        cache_write: None,
    };
    let mut m = EventMapper::new(
        SessionId::new("s1"),
        "/w".into(),
        EVERYTHING,
        ModelFigures {
            window: 200_000,
            model: "anthropic/claude-sonnet-4-5".into(),
            prices: Prices::from_table(vec![
                ("anthropic/claude-sonnet-4-5".into(), sonnet),
                ("anthropic/claude-haiku-4-5".into(), haiku),
            ]),
        },
        RunningCalls::default(),
    );
    let usage = Usage {
        input_tokens: 1_000_000,
        output_tokens: 100_000,
        ..Usage::default()
    };
    // Every request counts (a compaction's summary too), and a subagent's at its model.
    for purpose in [RequestPurpose::Turn, RequestPurpose::Compaction] {
        m.map(&LoopEvent::RequestFinished(RequestReport {
            id: 1,
            purpose,
            protocol: "anthropic".into(),
            model: "claude-sonnet-4-5".into(),
            usage,
            usage_reported: true,
            duration_ms: 1,
            retries: 0,
            error: None,
            compaction_model: None,
        }));
    }
    let mut result = pith_core::ToolResult::new("c1", "report", false);
    result.child_session = Some(pith_core::ChildRun {
        session_id: "child".into(),
        agent: "explore".into(),
        model: "anthropic/claude-haiku-4-5".into(),
        usage,
        requests: 1,
        tool_calls: 0,
    });
    m.map(&LoopEvent::ToolCallFinished {
        call: pith_core::ToolCall {
            id: "c1".into(),
            name: "task".into(),
            arguments: json!({}),
        },
        result,
    });
    let sent = updates(m.map(&LoopEvent::Usage(usage)));
    assert_eq!(sent[0]["sessionUpdate"], json!("usage_update"));
    assert_eq!(sent[0]["used"], json!(1_100_000));
    assert_eq!(sent[0]["size"], json!(200_000));
    assert_eq!(sent[0]["cost"]["currency"], json!("USD"));
    // Two Sonnet requests of $4.5 and a Haiku child of $1.5.
    assert!((sent[0]["cost"]["amount"].as_f64().unwrap() - 10.5).abs() < 1e-9);
    // A summary sent to the compaction model is charged at its prices: $1.5 more.
    m.map(&LoopEvent::RequestFinished(RequestReport {
        id: 2,
        purpose: RequestPurpose::Compaction,
        protocol: "anthropic".into(),
        model: "claude-haiku-4-5".into(),
        usage,
        usage_reported: true,
        duration_ms: 1,
        retries: 0,
        error: None,
        compaction_model: Some("anthropic/claude-haiku-4-5".into()),
    }));
    let sent = updates(m.map(&LoopEvent::Usage(usage)));
    assert!((sent[0]["cost"]["amount"].as_f64().unwrap() - 12.0).abs() < 1e-9);
}

#[test]
fn an_automatic_compaction_is_in_progress_then_completed_with_its_figures() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let started = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Started {
        cancel: CancellationToken::new(),
        tokens_before: 180_000,
        background: false,
    })));
    assert_eq!(
        started,
        [
            json!({"sessionUpdate": "compaction_update", "compactionId": "auto-1",
            "status": "in_progress",
            "_meta": {"pith": {"trigger": "auto", "tokensBefore": 180_000, "background": false}}})
        ]
    );
    let applied = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Applied {
        replacement: Vec::new(),
        summary: "## Goal\nShip it.".into(),
        usage: None,
        figures: CompactionFigures {
            tokens_before: 180_000,
            tokens_after: 9_000,
            ledger_tokens: 300,
            duration_ms: 1_200,
            waited_ms: 1_200,
        },
    })));
    let kinds: Vec<&Value> = applied.iter().map(|u| &u["sessionUpdate"]).collect();
    assert_eq!(
        kinds,
        [
            "compaction_summary_chunk",
            "compaction_update",
            "usage_update"
        ]
    );
    assert_eq!(applied[0]["compactionId"], json!("auto-1"));
    assert_eq!(applied[0]["content"]["text"], json!("## Goal\nShip it."));
    assert_eq!(applied[1]["status"], json!("completed"));
    assert_eq!(
        applied[1]["_meta"]["pith"],
        json!({"trigger": "auto", "tokensBefore": 180_000, "tokensAfter": 9_000,
            "ledgerTokens": 300, "durationMs": 1_200, "waitedMs": 1_200})
    );
    assert_eq!(applied[2]["used"], json!(9_000));
}

#[test]
fn a_cancelled_and_a_failed_compaction_end_their_own_ids() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let start = || {
        LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: CancellationToken::new(),
            tokens_before: 1,
            background: false,
        })
    };
    m.map(&start());
    let cancelled = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Cancelled)));
    assert_eq!(
        (
            cancelled[0]["compactionId"].clone(),
            cancelled[0]["status"].clone()
        ),
        (json!("auto-1"), json!("cancelled"))
    );
    m.map(&start());
    let failed = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Failed {
        reason: "summary too long".into(),
    })));
    assert_eq!(failed[0]["compactionId"], json!("auto-2"));
    assert_eq!(failed[0]["status"], json!("failed"));
    assert_eq!(failed[0]["error"], json!("summary too long"));
}

#[test]
fn a_summary_prepared_in_the_background_says_so_and_ends_unused_with_its_reason() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let started = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Started {
        cancel: CancellationToken::new(),
        tokens_before: 12_000,
        background: true,
    })));
    assert_eq!(started[0]["status"], json!("in_progress"));
    assert_eq!(started[0]["_meta"]["pith"]["background"], json!(true));
    let unused = updates(m.map(&LoopEvent::AutoCompaction(AutoCompaction::Unused {
        reason: "the session stopped before it was needed".into(),
        usage: Default::default(),
        model: None,
    })));
    assert_eq!(unused[0]["compactionId"], started[0]["compactionId"]);
    assert_eq!(unused[0]["status"], json!("cancelled"));
    assert_eq!(
        unused[0]["_meta"]["pith"]["unused"],
        json!("the session stopped before it was needed")
    );
    let with_notices = ClientView {
        notices: true,
        ..NOTHING
    };
    let mut words = mapper(with_notices, Path::new("/w"));
    let noticed = updates(
        words.map(&LoopEvent::AutoCompaction(AutoCompaction::Started {
            cancel: CancellationToken::new(),
            tokens_before: 12_000,
            background: true,
        })),
    );
    assert!(noticed[0]["title"]
        .as_str()
        .unwrap()
        .starts_with("Preparing a summary in the background"));
}

#[test]
fn a_client_without_compaction_updates_gets_words_as_notices_or_thoughts() {
    let started = LoopEvent::AutoCompaction(AutoCompaction::Started {
        cancel: CancellationToken::new(),
        tokens_before: 180_000,
        background: false,
    });
    let with_notices = ClientView {
        notices: true,
        ..NOTHING
    };
    let noticed = updates(mapper(with_notices, Path::new("/w")).map(&started));
    assert_eq!(noticed[0]["sessionUpdate"], json!("notice"));
    assert_eq!(
        noticed[0]["title"],
        json!("Compacting the context automatically (180000 tokens)…")
    );
    assert_eq!(noticed[0]["severity"], json!("info"));
    let bare = updates(mapper(NOTHING, Path::new("/w")).map(&started));
    assert_eq!(bare[0]["sessionUpdate"], json!("agent_thought_chunk"));
    assert!(bare[0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("pith: Compacting"));
}

#[test]
fn a_micro_compaction_is_a_completed_compaction_and_the_new_usage() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let sent = updates(m.map(&LoopEvent::MicroCompaction(MicroCompaction {
        reason: MicroReason::Prune,
        replacement: Vec::new(),
        tokens_reclaimed: 40_000,
        tokens_before: 150_000,
        tokens_after: 110_000,
        duration_ms: 3,
    })));
    assert_eq!(sent[0]["status"], json!("completed"));
    assert_eq!(sent[0]["_meta"]["pith"]["trigger"], json!("micro"));
    assert_eq!(sent[1]["sessionUpdate"], json!("usage_update"));
    assert_eq!(sent[1]["used"], json!(110_000));
}

#[test]
fn a_manual_compaction_streams_its_summary_and_ends_each_way() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let started = updates(m.manual_started(50_000));
    assert_eq!(started[0]["status"], json!("in_progress"));
    assert_eq!(started[0]["_meta"]["pith"]["trigger"], json!("manual"));
    let chunk = updates(m.manual_summary("## Goal"));
    assert_eq!(chunk[0]["sessionUpdate"], json!("compaction_summary_chunk"));
    let done = updates(m.manual_finished(Ok((50_000, 4_000))));
    assert_eq!(done[0]["status"], json!("completed"));
    assert_eq!(done[0]["_meta"]["pith"]["tokensAfter"], json!(4_000));
    m.manual_started(1);
    let cancelled = updates(m.manual_finished(Err(ManualEnd::Cancelled)));
    assert_eq!(cancelled[0]["status"], json!("cancelled"));
    m.manual_started(1);
    let failed = updates(m.manual_finished(Err(ManualEnd::Failed("offline".into()))));
    assert_eq!(failed[0]["error"], json!("offline"));
}

#[test]
fn notices_governor_retries_hooks_and_cut_answers_are_notices() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let retry = updates(m.map(&LoopEvent::Retrying {
        attempt: 1,
        delay_ms: 500,
        reason: "529 overloaded".into(),
    }));
    assert_eq!(retry[0]["sessionUpdate"], json!("notice"));
    assert_eq!(retry[0]["severity"], json!("warning"));
    let note = updates(m.map(&LoopEvent::Notice("trimmed".into())));
    assert_eq!(note[0]["severity"], json!("info"));
    let cut = updates(m.map(&LoopEvent::OutputTruncated {
        reason: "output cap".into(),
    }));
    assert!(cut[0].to_string().contains("cut off"));
    let hook = |outcome, message: Option<&str>| {
        LoopEvent::Hook(HookRun {
            event: HookEvent::PreToolUse,
            matcher: None,
            command: "./check.sh".into(),
            outcome,
            exit_code: Some(2),
            duration_ms: 5,
            decision: None,
            message: message.map(str::to_owned),
            stdout: String::new(),
            stderr: String::new(),
        })
    };
    assert!(m.map(&hook(HookOutcome::Proceed, None)).is_empty());
    let blocked = updates(m.map(&hook(HookOutcome::Block, Some("no rm"))));
    assert_eq!(blocked[0]["severity"], json!("warning"));
    assert!(blocked[0].to_string().contains("blocked: no rm"));
}

fn child_event(event: LoopEvent) -> LoopEvent {
    LoopEvent::Subagent(SubagentEvent {
        call_id: "task1".into(),
        agent: "explore".into(),
        session_id: "child-1".into(),
        event: Box::new(event),
    })
}

#[test]
fn a_subagent_is_a_child_session_for_a_client_that_shows_them() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let sent = wire(m.map(&child_event(LoopEvent::ToolCallStarted(call(
        "k1",
        "read",
        json!({"path": "a.rs"}),
    )))));
    assert_eq!(sent[0]["sessionId"], json!("s1"));
    assert_eq!(sent[0]["update"]["sessionUpdate"], json!("subagent_update"));
    assert_eq!(sent[1]["sessionId"], json!("child-1"));
    assert_eq!(sent[1]["update"]["toolCallId"], json!("k1"));
    let text = wire(m.map(&child_event(LoopEvent::TextDelta("found it".into()))));
    assert_eq!(text[0]["sessionId"], json!("child-1"));
    let mut result = ToolResult::new("task1", "report", false);
    result.child_session = Some(ChildRun {
        session_id: "child-1".into(),
        agent: "explore".into(),
        model: "m".into(),
        usage: Usage::default(),
        requests: 1,
        tool_calls: 1,
    });
    let done = wire(m.map(&LoopEvent::ToolCallFinished {
        call: call("task1", "task", json!({})),
        result,
    }));
    assert_eq!(done[1]["update"]["sessionUpdate"], json!("subagent_update"));
    assert_eq!(done[1]["sessionId"], json!("s1"));
}

#[test]
fn a_subagent_nests_its_tool_calls_in_the_parent_for_other_clients() {
    let mut m = mapper(NOTHING, Path::new("/w"));
    let sent = wire(m.map(&child_event(LoopEvent::ToolCallStarted(call(
        "k1",
        "read",
        json!({"path": "a.rs"}),
    )))));
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["sessionId"], json!("s1"));
    assert_eq!(sent[0]["update"]["toolCallId"], json!("child-1/k1"));
    assert_eq!(sent[0]["update"]["title"], json!("[explore] Read a.rs"));
    assert_eq!(
        sent[0]["update"]["_meta"]["pith"]["parentToolCallId"],
        json!("task1")
    );
    assert!(m
        .map(&child_event(LoopEvent::TextDelta("internal".into())))
        .is_empty());
}

#[test]
fn the_sink_keeps_the_running_compactions_token_until_it_ends() {
    let slot = CompactionSlot::default();
    let mut sink = SessionSink::new(
        std::sync::Arc::new(std::sync::Mutex::new(mapper(EVERYTHING, Path::new("/w")))),
        slot.clone(),
        Vec::new(),
    );
    assert!(!slot.cancel(), "nothing runs yet");
    let token = CancellationToken::new();
    sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
        cancel: token.clone(),
        tokens_before: 1,
        background: false,
    }));
    assert!(slot.cancel());
    assert!(token.is_cancelled());
    sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Started {
        cancel: CancellationToken::new(),
        tokens_before: 1,
        background: false,
    }));
    sink.emit(LoopEvent::AutoCompaction(AutoCompaction::Cancelled));
    assert!(!slot.cancel(), "the ended compaction is forgotten");
    let sent = sink.into_outbox();
    assert_eq!(sent.len(), 3);
}

#[test]
fn a_permission_question_points_at_the_call_and_offers_three_answers() {
    let request = PermissionRequest {
        tool: "bash".into(),
        summary: "run: rm -rf target".into(),
        session_scope: "this exact command: rm -rf target".into(),
        details: None,
    };
    let asked =
        serde_json::to_value(question(SessionId::new("s1"), Some("c7".into()), &request)).unwrap();
    assert_eq!(asked["toolCall"]["toolCallId"], json!("c7"));
    assert_eq!(asked["toolCall"]["title"], json!("run: rm -rf target"));
    let options: Vec<(Value, Value)> = asked["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].clone(), o["kind"].clone()))
        .collect();
    assert_eq!(
        options,
        [
            (json!(ALLOW_ONCE), json!("allow_once")),
            (json!(ALLOW_ALWAYS), json!("allow_always")),
            (json!(REJECT), json!("reject_once")),
        ]
    );
    assert!(asked["options"][1]["name"]
        .to_string()
        .contains("this exact command"));
    let picked = |id: &str| {
        answer(&RequestPermissionOutcome::Selected(
            SelectedPermissionOutcome::new(PermissionOptionId::new(id)),
        ))
    };
    assert_eq!(picked(ALLOW_ONCE), Approval::AllowOnce);
    assert_eq!(picked(ALLOW_ALWAYS), Approval::AllowForSession);
    assert_eq!(picked(REJECT), Approval::Deny { feedback: None });
    assert_eq!(picked("unknown"), Approval::Deny { feedback: None });
    assert_eq!(
        answer(&RequestPermissionOutcome::Cancelled),
        Approval::Deny { feedback: None }
    );
}

#[test]
fn turn_outcomes_are_stop_reasons_or_errors() {
    use pith_acp::stop_reason;
    let ended = |error: Option<TurnError>| TurnOutcome {
        error,
        ..TurnOutcome::default()
    };
    assert_eq!(stop_reason(&ended(None)).unwrap(), StopReason::EndTurn);
    assert_eq!(
        stop_reason(&ended(Some(TurnError::Loop(LoopError::Cancelled)))).unwrap(),
        StopReason::Cancelled
    );
    assert_eq!(
        stop_reason(&ended(Some(TurnError::Loop(LoopError::MaxRequests(3))))).unwrap(),
        StopReason::MaxTurnRequests
    );
    assert_eq!(
        stop_reason(&ended(Some(TurnError::Blocked("no".into())))).unwrap(),
        StopReason::Refusal
    );
    let failed = stop_reason(&ended(Some(TurnError::Record("disk full".into()))));
    assert!(failed.unwrap_err().to_string().contains("disk full"));
}

fn plan_arguments() -> Value {
    json!({"steps": [
        {"step": "read the parser", "status": "done"},
        {"step": "fix the off-by-one", "status": "in_progress", "note": "line 42"},
        {"step": "run the tests", "status": "pending"},
    ]})
}

fn acp_plan() -> Value {
    json!({
        "sessionUpdate": "plan",
        "entries": [
            {"content": "read the parser", "priority": "medium", "status": "completed"},
            {"content": "fix the off-by-one — line 42", "priority": "medium", "status": "in_progress"},
            {"content": "run the tests", "priority": "medium", "status": "pending"},
        ]
    })
}

#[test]
fn a_plan_update_is_the_editors_whole_checklist() {
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let plan = pith_core::Plan::from_arguments(&plan_arguments()).unwrap();
    let sent = updates(m.map(&LoopEvent::PlanUpdated(plan)));
    assert_eq!(sent, vec![acp_plan()]);
    // A cleared plan clears the editor's checklist.
    let cleared = updates(m.map(&LoopEvent::PlanUpdated(pith_core::Plan::default())));
    assert_eq!(
        cleared,
        vec![json!({"sessionUpdate": "plan", "entries": []})]
    );
}

#[test]
fn a_loaded_session_replays_each_accepted_plan_after_its_call() {
    use pith_session::{Event, Record};
    let accepted = call("p1", pith_core::PLAN_TOOL, plan_arguments());
    let refused = call(
        "p2",
        pith_core::PLAN_TOOL,
        json!({"steps": [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]}),
    );
    let turn = Event::AssistantTurn {
        messages: vec![Message::assistant_with_calls(
            "Planning.",
            vec![accepted, refused],
        )],
        items: Vec::new(),
        usage: None,
        interrupted: false,
        error: None,
        compaction_model_usage: None,
    };
    let records = vec![Record {
        seq: 1,
        ts: "2026-12-01T00:00:00.000Z".into(),
        event: turn,
    }];
    let mut m = mapper(EVERYTHING, Path::new("/w"));
    let sent = updates(pith_acp::replay(&records, &mut m, EVERYTHING));
    let kinds: Vec<&str> = sent
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        vec!["agent_message_chunk", "tool_call", "plan", "tool_call"],
        "{sent:#?}"
    );
    assert_eq!(sent[2], acp_plan());
}
