//! A model for summaries (`SummaryModel`, `[context] compaction_model`): the automatic
//! compaction's summary request goes to another model on another server, its report and
//! usage name it, and a history larger than its input budget is summarised by the
//! conversation's own model instead, with a notice.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::sync::Arc;

use common::*;
use pith_core::summary::compacted_user_text;
use pith_core::{LoopEvent, RequestPurpose};
use pith_providers::SummaryModel;
use pith_testkit::{Protocol, Script, TestServer, Turn};
use serde_json::json;

/// The compaction model's id, and how reports name it.
const CHEAP: &str = "cheap-summarizer";
const CHEAP_SPEC: &str = "elsewhere/cheap-summarizer";

/// A turn that crosses the threshold on its second request, then answers.
fn crossing_turns() -> Vec<Turn> {
    vec![
        Turn::text("Let me look.").with_tool_call("read", json!({"path": "src/lib.rs"})),
        Turn::text("And the tests.")
            .with_tool_call("read", json!({"path": "tests/parser.rs"}))
            .with_usage(OVER_THRESHOLD, 40),
        Turn::text("Done."),
    ]
}

/// A harness of `turns` whose summaries go to a second server as [`CHEAP`], with
/// `input_budget`.
fn with_summary_model(
    protocol: Protocol,
    turns: Vec<Turn>,
    input_budget: u64,
) -> (Harness, Arc<TestServer>) {
    let mut h = harness(protocol, turns);
    let script = Script::new(protocol, vec![Turn::text(SUMMARY).with_usage(9_000, 300)])
        .with_usage_mode(pith_testkit::UsageMode::Fixed);
    let server = Arc::new(TestServer::start(script).unwrap());
    h.agent.set_summary_model(Some(SummaryModel {
        adapter: adapter(protocol, &server),
        model: CHEAP.into(),
        spec: CHEAP_SPEC.into(),
        input_budget,
        max_output_tokens: Some(4_000),
        output_cap: 8_000,
        reasoning: None,
        spend: None,
    }));
    (h, server)
}

for_each_protocol!(
    the_summary_goes_to_the_compaction_model_and_its_usage_is_told_apart,
    a_history_larger_than_its_window_is_summarised_by_the_conversations_model,
);

async fn the_summary_goes_to_the_compaction_model_and_its_usage_is_told_apart(protocol: Protocol) {
    let (mut h, cheap) = with_summary_model(protocol, crossing_turns(), 1_000_000);
    let run = h.turn("fix the parser").await;
    let summary = run.outcome.expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);

    // The main server got the turn's three requests, none of them a summary.
    let main = h.requests();
    assert_eq!(main.len(), 3);
    assert!(main.iter().all(|wire| !wire.is_auto_compaction()));
    // The compaction model's server got the summary request, for its model, with the
    // same conversation as the main model's request before it.
    let summaries: Vec<Wire> = cheap
        .requests()
        .into_iter()
        .map(|r| Wire::new(protocol, r))
        .collect();
    assert_eq!(summaries.len(), 1);
    let request = &summaries[0];
    assert!(request.is_auto_compaction());
    assert_eq!(request.system_text(), SYSTEM);
    if matches!(
        protocol,
        Protocol::OpenAiChat | Protocol::OpenAiResponses | Protocol::Anthropic
    ) {
        assert_eq!(request.body()["model"], CHEAP);
        assert_eq!(main[0].body()["model"], model_id(protocol));
    }
    assert_eq!(
        request.tool_outputs().len(),
        2,
        "the whole history is summarised"
    );
    // No cache breakpoint in its messages: nothing later extends them on that model
    // (the main model's requests keep theirs).
    let marker = match protocol {
        Protocol::Anthropic => Some("cache_control"),
        Protocol::Bedrock => Some("cachePoint"),
        _ => None,
    };
    if let Some(marker) = marker {
        let marks = |wire: &Wire| bytes(&wire.body()["messages"]).matches(marker).count();
        assert_eq!(marks(request), 0, "{:#?}", request.body());
        assert_eq!(marks(&main[1]), 1);
    }
    // The next main request carries the compaction model's summary.
    assert_eq!(
        main[2].user_texts(),
        vec![compacted_user_text(SUMMARY, "fix the parser")]
    );

    // The summary's report names the compaction model; the turn's do not.
    let reports: Vec<_> = run
        .events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::RequestFinished(report) => Some(report.clone()),
            _ => None,
        })
        .collect();
    for report in &reports {
        let expected = (report.purpose == RequestPurpose::Compaction).then_some(CHEAP_SPEC);
        assert_eq!(report.compaction_model.as_deref(), expected, "{report:?}");
    }
    let summary_report = reports
        .iter()
        .find(|r| r.purpose == RequestPurpose::Compaction)
        .unwrap();
    assert_eq!(summary_report.model, CHEAP);
    // Its usage is part of the turn's and is told apart.
    let spent = h.agent.take_compaction_model_usage();
    assert_eq!(spent, summary_report.usage);
    assert_eq!(spent.input_tokens, 9_000);
    assert!(summary.usage.input_tokens >= OVER_THRESHOLD + spent.input_tokens);
    assert_eq!(
        h.agent.take_compaction_model_usage(),
        pith_core::Usage::default()
    );
}

async fn a_history_larger_than_its_window_is_summarised_by_the_conversations_model(
    protocol: Protocol,
) {
    // The conversation's own server answers the summary request.
    let mut turns = crossing_turns();
    turns.insert(2, Turn::text(SUMMARY));
    let (mut h, cheap) = with_summary_model(protocol, turns, 100);
    let run = h.turn("fix the parser").await;
    run.outcome.expect("the turn completes");
    assert_eq!(compaction_events(&run.events), vec!["started", "applied"]);
    assert!(
        cheap.requests().is_empty(),
        "nothing went to the compaction model"
    );
    let main = h.requests();
    assert_eq!(main.len(), 4);
    assert!(main[2].is_auto_compaction());
    let notice = run
        .events
        .iter()
        .find_map(|event| match event {
            LoopEvent::Notice(text) if text.contains(CHEAP_SPEC) => Some(text.clone()),
            _ => None,
        })
        .expect("a notice says the summary went to the conversation's model");
    assert!(
        notice.contains("larger than the input budget") && notice.contains("(100 tokens)"),
        "{notice}"
    );
    assert!(run.events.iter().all(|event| !matches!(
        event,
        LoopEvent::RequestFinished(report) if report.compaction_model.is_some()
    )));
    assert_eq!(
        h.agent.take_compaction_model_usage(),
        pith_core::Usage::default()
    );
}
