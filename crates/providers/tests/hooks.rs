//! The loop's hook points through the real adapters against the testkit server, with a
//! scripted [`LoopHooks`]: a denied call never runs and the model reads the reason; a
//! `PostToolUse` context reaches the model with the result; a Stop hook continues the
//! turn once, within `--max-turns`; `PreCompact` blocks an automatic compaction or adds
//! instructions to it; `PostCompact` context is part of the replacement; every request is
//! reported with its purpose, id and retries.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::*;
use pith_core::hooks::{CompactGate, CompactionAsk, CompactionFacts, Hooked, ToolGate};
use pith_core::{
    CompactionTrigger, HookEvent, HookOutcome, HookRun, LoopEvent, LoopHooks, RequestPurpose,
    ToolCall, ToolResult,
};
use pith_providers::LoopError;
use pith_testkit::{Fault, Protocol, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    a_denied_call_never_runs_and_the_model_reads_the_reason,
    post_tool_use_context_reaches_the_model_with_the_result,
    a_stop_hook_continues_the_turn_once_and_is_told_it_did,
    pre_compact_blocks_an_automatic_compaction_and_the_turn_goes_on,
    pre_compact_instructions_and_post_compact_context_shape_the_compaction,
);

/// What the scripted hooks do; each answer is recorded as one run.
#[derive(Default)]
struct Scripted {
    deny: Option<String>,
    post_context: Option<String>,
    stop_message: Option<String>,
    block_compaction: Option<String>,
    instructions: Option<String>,
    post_compact: Option<String>,
    stops_seen: Mutex<Vec<bool>>,
    compactions_seen: Mutex<Vec<(CompactionTrigger, u64)>>,
}

fn run(event: HookEvent, outcome: HookOutcome) -> Vec<HookRun> {
    vec![HookRun {
        event,
        matcher: None,
        command: format!("{event}-hook"),
        outcome,
        exit_code: Some(if outcome == HookOutcome::Block { 2 } else { 0 }),
        duration_ms: 1,
        decision: None,
        message: None,
        stdout: String::new(),
        stderr: String::new(),
    }]
}

#[async_trait]
impl LoopHooks for Scripted {
    async fn pre_tool_use(&self, _call: &ToolCall, _: &CancellationToken) -> Hooked<ToolGate> {
        match &self.deny {
            Some(reason) => Hooked {
                value: ToolGate::Deny {
                    reason: reason.clone(),
                },
                runs: run(HookEvent::PreToolUse, HookOutcome::Block),
            },
            None => Hooked {
                value: ToolGate::Run {
                    pre_approved: false,
                },
                runs: run(HookEvent::PreToolUse, HookOutcome::Proceed),
            },
        }
    }

    async fn post_tool_use(
        &self,
        _call: &ToolCall,
        _result: &ToolResult,
        _: &CancellationToken,
    ) -> Hooked<Option<String>> {
        Hooked {
            value: self.post_context.clone(),
            runs: run(HookEvent::PostToolUse, HookOutcome::Proceed),
        }
    }

    async fn pre_compact(
        &self,
        ask: CompactionAsk<'_>,
        _: &CancellationToken,
    ) -> Hooked<CompactGate> {
        self.compactions_seen
            .lock()
            .unwrap()
            .push((ask.trigger, ask.tokens_before));
        match &self.block_compaction {
            Some(reason) => Hooked {
                value: CompactGate::Block {
                    reason: reason.clone(),
                },
                runs: run(HookEvent::PreCompact, HookOutcome::Block),
            },
            None => Hooked {
                value: CompactGate::Proceed {
                    instructions: self.instructions.clone(),
                },
                runs: run(HookEvent::PreCompact, HookOutcome::Proceed),
            },
        }
    }

    async fn post_compact(
        &self,
        _facts: CompactionFacts<'_>,
        _: &CancellationToken,
    ) -> Hooked<Option<String>> {
        Hooked {
            value: self.post_compact.clone(),
            runs: run(HookEvent::PostCompact, HookOutcome::Proceed),
        }
    }

    async fn stop(
        &self,
        _last_text: &str,
        continued: bool,
        _: &CancellationToken,
    ) -> Hooked<Option<String>> {
        self.stops_seen.lock().unwrap().push(continued);
        Hooked {
            value: if continued {
                None
            } else {
                self.stop_message.clone()
            },
            runs: run(HookEvent::Stop, HookOutcome::Proceed),
        }
    }
}

fn hook_events(events: &[LoopEvent]) -> Vec<(HookEvent, HookOutcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Hook(run) => Some((run.event, run.outcome)),
            _ => None,
        })
        .collect()
}

fn reported_requests(events: &[LoopEvent]) -> Vec<(u64, RequestPurpose, u32, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::RequestFinished(r) => Some((r.id, r.purpose, r.retries, r.error.is_none())),
            _ => None,
        })
        .collect()
}

async fn a_denied_call_never_runs_and_the_model_reads_the_reason(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "secrets.env"})),
            Turn::text("I may not read it."),
        ],
    );
    h.agent.set_hooks(Arc::new(Scripted {
        deny: Some("A PreToolUse hook blocked this call: no secrets".into()),
        ..Scripted::default()
    }));
    let run = h.turn("read the secrets").await;
    assert!(run.outcome.is_ok(), "{:?}", run.outcome.err());
    assert_eq!(
        h.tool.runs.load(Ordering::SeqCst),
        0,
        "a denied call never runs"
    );
    let requests = h.requests();
    let outputs = requests[1].tool_outputs();
    assert_eq!(outputs.len(), 1);
    assert_eq!(
        outputs[0].content,
        "A PreToolUse hook blocked this call: no secrets"
    );
    // The hook ran before the call started; no PostToolUse for a call that did not run.
    let order: Vec<&str> = run
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Hook(_) => Some("hook"),
            LoopEvent::ToolCallStarted(_) => Some("started"),
            LoopEvent::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order, ["hook", "started", "finished", "hook"]);
    assert_eq!(
        hook_events(&run.events),
        [
            (HookEvent::PreToolUse, HookOutcome::Block),
            (HookEvent::Stop, HookOutcome::Proceed)
        ]
    );
}

async fn post_tool_use_context_reaches_the_model_with_the_result(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})),
            Turn::text("Done."),
        ],
    );
    h.agent.set_hooks(Arc::new(Scripted {
        post_context: Some("formatted with rustfmt".into()),
        ..Scripted::default()
    }));
    let run = h.turn("read a.rs").await;
    assert!(run.outcome.is_ok());
    assert_eq!(h.tool.runs.load(Ordering::SeqCst), 1);
    let outputs = h.requests()[1].tool_outputs();
    assert_eq!(
        outputs[0].content,
        "contents of a.rs\n\n<hook_context event=\"PostToolUse\">\nformatted with rustfmt\n</hook_context>"
    );
    let finished = run.events.iter().find_map(|e| match e {
        LoopEvent::ToolCallFinished { result, .. } => Some(result.content.clone()),
        _ => None,
    });
    assert_eq!(
        finished.as_deref(),
        Some(outputs[0].content.as_str()),
        "the front-end sees what the model sees"
    );
}

async fn a_stop_hook_continues_the_turn_once_and_is_told_it_did(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![Turn::text("Done."), Turn::text("Tests pass now.")],
    );
    let hooks = Arc::new(Scripted {
        stop_message: Some("run the tests before you stop".into()),
        ..Scripted::default()
    });
    h.agent.set_hooks(hooks.clone());
    let run = h.turn("fix it").await;
    let summary = run.outcome.expect("the turn completes");
    assert_eq!(summary.requests, 2);
    assert_eq!(*hooks.stops_seen.lock().unwrap(), [false, true]);
    let requests = h.requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1]
            .last_user_text()
            .contains("run the tests before you stop"),
        "{}",
        requests[1].last_user_text()
    );
    assert_eq!(visible_text(&run.events), "Done.Tests pass now.");
    assert_eq!(
        reported_requests(&run.events)
            .iter()
            .map(|r| (r.0, r.1))
            .collect::<Vec<_>>(),
        [(1, RequestPurpose::Turn), (2, RequestPurpose::Turn)]
    );

    // Bounded by --max-turns: a hook that always continues cannot run the turn forever.
    let mut h = harness(protocol, vec![Turn::text("Done."), Turn::text("Again.")]);
    h.agent.options_mut().max_requests_per_turn = Some(1);
    h.agent.set_hooks(Arc::new(Scripted {
        stop_message: Some("keep going".into()),
        ..Scripted::default()
    }));
    let run = h.turn("fix it").await;
    assert!(matches!(
        run.outcome,
        Err(ref failure) if matches!(failure.error, LoopError::MaxRequests(1))
    ));
    assert_eq!(h.requests().len(), 1);
}

async fn pre_compact_blocks_an_automatic_compaction_and_the_turn_goes_on(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})).with_usage(OVER_THRESHOLD, 10),
            Turn::text("Done."),
        ],
    );
    let hooks = Arc::new(Scripted {
        block_compaction: Some("not during a release".into()),
        ..Scripted::default()
    });
    h.agent.set_hooks(hooks.clone());
    let run = h.turn("read a.rs").await;
    assert!(run.outcome.is_ok(), "{:?}", run.outcome.err());
    assert!(compaction_events(&run.events).is_empty(), "nothing started");
    assert_eq!(h.requests().len(), 2, "no summary request was sent");
    let seen = hooks.compactions_seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, CompactionTrigger::Auto);
    assert!(seen[0].1 >= OVER_THRESHOLD, "{seen:?}");
    assert!(run.events.iter().any(|e| matches!(e,
        LoopEvent::Notice(text) if text.contains("not during a release"))));
}

async fn pre_compact_instructions_and_post_compact_context_shape_the_compaction(
    protocol: Protocol,
) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})).with_usage(OVER_THRESHOLD, 10),
            Turn::fault(Fault::Http500),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
    );
    h.agent.set_hooks(Arc::new(Scripted {
        instructions: Some("keep the list of failing tests".into()),
        post_compact: Some("House rule: never push to main.".into()),
        ..Scripted::default()
    }));
    let run = h.turn("read a.rs").await;
    assert!(run.outcome.is_ok(), "{:?}", run.outcome.err());
    assert_eq!(compaction_events(&run.events), ["started", "applied"]);
    let requests = h.requests();
    assert_eq!(
        requests[2].last_user_text(),
        format!(
            "{}\n\nAdditional instructions for this summary:\nkeep the list of failing tests",
            pith_core::summary::auto_prompt()
        )
    );
    let after = requests[3].conversation();
    let replacement = serde_json::to_string(&after).unwrap();
    assert!(
        replacement.contains("House rule: never push to main."),
        "the PostCompact context is part of the replacement: {replacement}"
    );
    assert!(run.events.iter().any(|e| matches!(e,
        LoopEvent::AutoCompaction(pith_core::AutoCompaction::Applied { replacement, figures, .. })
            if replacement.last().is_some_and(|m| m.text_content().contains("House rule"))
                && figures.duration_ms < 60_000)));
    assert_eq!(
        reported_requests(&run.events),
        [
            (1, RequestPurpose::Turn, 0, true),
            (2, RequestPurpose::Compaction, 1, true),
            (3, RequestPurpose::Turn, 0, true),
        ],
        "the failed attempt is a retry of request 2"
    );
}
