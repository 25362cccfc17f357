//! The compaction governor through every protocol's real adapter against pith-testkit:
//! usage that is not believed, a compaction that cannot help (no request), a replacement
//! that is not smaller (not applied), the per-turn ceiling, and a request nothing can make
//! fit (no request, the error names what takes the room). These suites keep the default
//! band of believed reports unless a scenario says otherwise.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use pith_core::context::{GovernorNotice, PauseReason};
use pith_core::hooks::{CompactionFacts, Hooked};
use pith_core::{LoopEvent, LoopHooks};
use pith_providers::{LoopError, LoopOptions};
use pith_testkit::{Protocol, Turn};
use serde_json::json;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    a_report_far_from_pith_s_count_is_named_once_and_not_anchored_on,
    a_compaction_that_cannot_help_sends_no_summary_request,
    a_replacement_that_is_not_smaller_is_not_applied,
    a_manual_compaction_applies_a_replacement_that_is_not_smaller,
    the_ceiling_holds_a_third_compaction_in_a_turn_and_says_until_when,
    a_request_nothing_can_make_fit_is_never_sent,
    pins_count_in_the_floor_and_the_pause_names_them,
);

/// The harness with the default band of believed reports.
fn default_band(protocol: Protocol, turns: Vec<Turn>, window: u64) -> Harness {
    harness_with(
        protocol,
        turns,
        window,
        LoopOptions {
            usage_band: Default::default(),
            ..fast_options()
        },
    )
}

fn governor_events(events: &[LoopEvent]) -> Vec<GovernorNotice> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Governor(notice) => Some(notice.clone()),
            _ => None,
        })
        .collect()
}

async fn a_report_far_from_pith_s_count_is_named_once_and_not_anchored_on(protocol: Protocol) {
    // 180,000 input tokens reported for requests of a few hundred: never believed.
    let mut h = default_band(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})).with_usage(OVER_THRESHOLD, 10),
            Turn::tool_call("read", json!({"path": "b.rs"})).with_usage(OVER_THRESHOLD, 10),
            Turn::text("Done.").with_usage(OVER_THRESHOLD, 10),
        ],
        WINDOW,
    );
    let run = h.turn("read both").await;
    run.outcome.expect("the turn completes");
    assert!(compaction_events(&run.events).is_empty(), "no compaction");
    let notices = governor_events(&run.events);
    assert_eq!(notices.len(), 1, "{notices:?}");
    let GovernorNotice::UsageImplausible { reported, counted } = notices[0] else {
        panic!("{notices:?}")
    };
    assert_eq!(reported, OVER_THRESHOLD);
    assert!(counted < 1_000, "{counted}");
    let estimate = h.agent.estimate();
    assert!(!estimate.anchored_on_reported_usage);
    assert_eq!(estimate.total, estimate.counted);
}

async fn a_compaction_that_cannot_help_sends_no_summary_request(protocol: Protocol) {
    // A 20,000-token window (input 15,904, threshold 14,313): the latest user message
    // alone is about 14,400 tokens, so any replacement keeps it and sits above the
    // threshold less a tenth of the budget. The loop does not ask for a summary: it
    // pauses, says why, and fits the request.
    let mut h = default_band(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})),
            Turn::text("Done."),
        ],
        20_000,
    );
    let huge = "the quick brown fox jumps over the lazy dog ".repeat(1_600);
    let run = h.turn(&format!("{huge} and then read a.rs")).await;
    run.outcome.expect("the turn completes");
    assert!(
        compaction_events(&run.events).is_empty(),
        "no attempt started"
    );
    assert!(
        !h.requests().iter().any(Wire::is_auto_compaction),
        "no summary request was sent"
    );
    let pauses: Vec<(u64, u64)> = governor_events(&run.events)
        .into_iter()
        .filter_map(|n| match n {
            GovernorNotice::Paused {
                reason: PauseReason::CannotHelp { floor, pins: 0 },
                until_tokens,
                ..
            } => Some((floor, until_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(pauses.len(), 1, "{:?}", governor_events(&run.events));
    assert!(pauses[0].0 > 14_313 - 1_590, "the floor: {pauses:?}");
}

/// Hooks whose `PostCompact` adds a block larger than the history being compacted.
struct Bloating;

#[async_trait]
impl LoopHooks for Bloating {
    async fn post_compact(
        &self,
        _facts: CompactionFacts<'_>,
        _cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        Hooked::none(Some("rule ".repeat(200_000)))
    }
}

async fn a_replacement_that_is_not_smaller_is_not_applied(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"})).with_usage(OVER_THRESHOLD, 10),
            Turn::text(SUMMARY),
            Turn::text("Done."),
        ],
    );
    h.agent.set_hooks(Arc::new(Bloating));
    let before = h.agent.history().len();
    let run = h.turn("read a.rs").await;
    run.outcome.expect("the turn goes on");
    assert_eq!(compaction_events(&run.events), vec!["started", "failed"]);
    let reason = run
        .events
        .iter()
        .find_map(|e| match e {
            LoopEvent::AutoCompaction(pith_core::AutoCompaction::Failed { reason }) => {
                Some(reason.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(reason.contains("is not smaller"), "{reason}");
    assert!(
        governor_events(&run.events).iter().any(|n| matches!(
            n,
            GovernorNotice::Paused {
                reason: PauseReason::Failed { .. },
                ..
            }
        )),
        "and the breaker armed"
    );
    // user, call, result, answer: nothing was replaced.
    assert_eq!(h.agent.history().len(), before + 4);
}

/// The user asked for a manual compaction: the same bloated replacement that an
/// automatic one refuses is applied, and says how large it is.
async fn a_manual_compaction_applies_a_replacement_that_is_not_smaller(protocol: Protocol) {
    let mut h = harness(protocol, vec![Turn::text("Hello."), Turn::text(SUMMARY)]);
    h.agent.set_hooks(Arc::new(Bloating));
    h.turn("hi").await.outcome.expect("the turn completes");
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let compaction = h
        .agent
        .compact(
            None,
            &mut pith_core::InMemory::new(tx),
            &CancellationToken::new(),
        )
        .await
        .expect("applied as the user asked");
    assert!(
        compaction.tokens_after > compaction.tokens_before,
        "{} > {}",
        compaction.tokens_after,
        compaction.tokens_before
    );
    assert_eq!(h.agent.history().len(), 1, "the replacement is the history");
}

async fn the_ceiling_holds_a_third_compaction_in_a_turn_and_says_until_when(protocol: Protocol) {
    // Believed reports that climb back over the threshold right after each compaction
    // (but verify it: the first report after each is below).
    let over = |path: &str| {
        Turn::tool_call("read", json!({ "path": path })).with_usage(OVER_THRESHOLD, 10)
    };
    let under = |path: &str| Turn::tool_call("read", json!({ "path": path }));
    let mut h = harness(
        protocol,
        vec![
            over("a.rs"),
            Turn::text(SUMMARY),
            under("b.rs"),
            over("c.rs"),
            Turn::text(SUMMARY),
            under("d.rs"),
            over("e.rs"),
            Turn::text("Done."),
        ],
    );
    let run = h.turn("read them all").await;
    run.outcome.expect("the turn completes");
    assert_eq!(
        compaction_events(&run.events),
        vec!["started", "applied", "started", "applied"],
        "the third crossing meets the ceiling"
    );
    let ceilings: Vec<(u32, u64)> = governor_events(&run.events)
        .into_iter()
        .filter_map(|n| match n {
            GovernorNotice::CeilingReached {
                attempts,
                until_tokens,
            } => Some((attempts, until_tokens)),
            _ => None,
        })
        .collect();
    assert_eq!(ceilings.len(), 1, "told once");
    assert_eq!(ceilings[0].0, 2);
    assert!(ceilings[0].1 > 95_000, "{ceilings:?}");
    let summaries = h
        .requests()
        .iter()
        .filter(|w| w.is_auto_compaction())
        .count();
    assert_eq!(summaries, 2);
}

async fn a_request_nothing_can_make_fit_is_never_sent(protocol: Protocol) {
    // A window whose input budget is smaller than the system prompt alone.
    let mut h = harness_with(
        protocol,
        vec![Turn::text("never")],
        8_192,
        LoopOptions {
            usage_band: Default::default(),
            ..fast_options()
        },
    );
    h.agent
        .set_system_prompt("You are pith. Rule: be careful. ".repeat(700));
    let run = h.turn("hi").await;
    let failure = run.outcome.expect_err("the turn fails");
    let LoopError::ContextTooLarge(what) = failure.error else {
        panic!("{:?}", failure.error)
    };
    assert!(
        what.contains("system prompt") && what.contains("tools") && what.contains("latest message"),
        "{what}"
    );
    assert_eq!(h.server.request_count(), 0, "no request was sent");
}

/// Two turns of about 7,400 tokens each in a 20,000-token window (threshold 14,313; a
/// replacement must stay under 12,723): over the threshold at the second, with `pinned`
/// tokens of pinned note. The events and the requests.
async fn two_long_turns(protocol: Protocol, pinned: usize) -> (Vec<LoopEvent>, usize) {
    let mut h = default_band(
        protocol,
        vec![
            Turn::text("Noted."),
            Turn::text("## Goal\nThe two messages."),
            Turn::text("Done."),
        ],
        20_000,
    );
    h.agent.options_mut().ledger.pins_percent = 40;
    if pinned > 0 {
        h.agent.pins_mut().add(pith_core::context::pins::Pin::Note {
            text: "keep this ".repeat(pinned / 2),
        });
    }
    let filler = "the quick brown fox jumps over the lazy dog ".repeat(820);
    h.turn(&format!("{filler} one"))
        .await
        .outcome
        .expect("turn one");
    let run = h.turn(&format!("{filler} two")).await;
    run.outcome.expect("turn two completes");
    let summaries = h
        .requests()
        .iter()
        .filter(|r| Wire::is_auto_compaction(r))
        .count();
    (run.events, summaries)
}

async fn pins_count_in_the_floor_and_the_pause_names_them(protocol: Protocol) {
    // Without pins the replacement (the latest message and the summary's allowance) can
    // help: one summary request.
    let (_, summaries) = two_long_turns(protocol, 0).await;
    assert_eq!(summaries, 1, "without pins a compaction helps");
    // With 4,000 tokens of pins it cannot: no request, and the pause names the pins.
    let (events, summaries) = two_long_turns(protocol, 4_000).await;
    assert_eq!(summaries, 0, "no summary request");
    let pins: Vec<u64> = governor_events(&events)
        .into_iter()
        .filter_map(|n| match n {
            GovernorNotice::Paused {
                reason: PauseReason::CannotHelp { pins, .. },
                ..
            } => Some(pins),
            _ => None,
        })
        .collect();
    assert_eq!(pins.len(), 1, "{:?}", governor_events(&events));
    assert!(pins[0] >= 3_500, "the floor counts the pins: {pins:?}");
    let said = PauseReason::CannotHelp {
        floor: 14_000,
        pins: pins[0],
    }
    .describe();
    assert!(said.contains("of them your pins"), "{said}");
}
