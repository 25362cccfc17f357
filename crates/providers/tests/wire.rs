//! The real adapters on the testkit's wire formats, driven by the loop, for every
//! protocol: request shape and headers, tool calls and results, reasoning, usage
//! accounting, and manual compaction.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use std::sync::atomic::Ordering;

use common::*;
use pith_core::prompts::TOOLS_DISABLED_DURING_COMPACTION;
use pith_core::summary::manual_prompt;
use pith_core::InMemory;
use pith_core::{LoopEvent, Message, Usage};
use pith_providers::LoopError;
use pith_testkit::{Protocol, Turn, REDACTED};
use serde_json::{json, Value};
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

for_each_protocol!(
    requests_reach_the_documented_endpoint_with_auth_and_streaming,
    several_tool_calls_in_one_answer_run_and_are_answered_in_call_order,
    reasoning_streams_apart_from_the_answer,
    usage_per_request_and_per_turn_is_what_the_provider_reported,
    manual_compaction_streams_the_summary_and_leaves_one_user_message,
    manual_compaction_refuses_tool_calls_visibly_and_keeps_the_final_text,
    a_failed_manual_compaction_leaves_history_unchanged,
    a_cancelled_manual_compaction_leaves_history_unchanged,
    broken_arguments_and_unknown_tools_get_tool_errors_and_are_replayed_faithfully,
);

async fn requests_reach_the_documented_endpoint_with_auth_and_streaming(protocol: Protocol) {
    let mut h = harness(protocol, vec![Turn::text("Hi.")]);
    h.turn("hello").await.outcome.expect("the turn completes");
    let request = h.server.requests().pop().unwrap();
    assert_eq!(request.method, "POST");
    if protocol == Protocol::Gemini {
        // The model is in the path, streaming in the method and the query.
        assert_eq!(
            request.path,
            "/v1beta/models/test-model:streamGenerateContent"
        );
        assert_eq!(request.query, "alt=sse", "the key never goes in the URL");
    } else if protocol == Protocol::Bedrock {
        // The model and the streaming are in the path.
        assert_eq!(
            request.path,
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
    } else {
        assert_eq!(request.path, protocol.endpoint_path());
        assert!(request.is_streaming(), "pith always streams");
        assert_eq!(request.body["model"], "test-model");
    }
    let wire = Wire::new(protocol, request.clone());
    assert_eq!(wire.system_text(), SYSTEM);
    assert_eq!(wire.user_texts(), vec!["hello".to_owned()]);
    match protocol {
        Protocol::OpenAiChat => {
            assert_eq!(request.header("authorization"), Some(REDACTED));
            assert_eq!(request.body["stream_options"]["include_usage"], true);
            assert_eq!(request.body["tools"][0]["type"], "function");
            assert_eq!(request.body["tools"][0]["function"]["name"], "read");
        }
        Protocol::OpenAiResponses => {
            assert_eq!(request.header("authorization"), Some(REDACTED));
            assert_eq!(
                request.body["store"], false,
                "stateless: the whole input every time"
            );
            assert_eq!(request.body["tools"][0]["name"], "read");
        }
        Protocol::Anthropic => {
            assert_eq!(request.header("x-api-key"), Some(REDACTED));
            assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
            assert!(request.body["max_tokens"].as_u64().unwrap() > 0);
            assert_eq!(request.body["tools"][0]["name"], "read");
            assert!(request.body["tools"][0]["input_schema"].is_object());
        }
        Protocol::Gemini => {
            assert_eq!(request.header("x-goog-api-key"), Some(REDACTED));
            assert!(request.header("authorization").is_none());
            let declaration = &request.body["tools"][0]["functionDeclarations"][0];
            assert_eq!(declaration["name"], "read");
            assert!(declaration["parametersJsonSchema"].is_object());
        }
        Protocol::Bedrock => {
            assert_eq!(request.header("authorization"), Some(REDACTED));
            assert_eq!(request.header("content-type"), Some("application/json"));
            assert_eq!(
                request.header("accept"),
                Some("application/vnd.amazon.eventstream")
            );
            assert!(request.header("x-amz-date").is_some());
            assert!(
                request.body["inferenceConfig"]["maxTokens"]
                    .as_u64()
                    .unwrap()
                    > 0
            );
            assert_eq!(
                request.body["toolConfig"]["tools"][0]["toolSpec"]["name"],
                "read"
            );
            assert!(
                request.body["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]
                    .is_object()
            );
        }
    }
}

async fn several_tool_calls_in_one_answer_run_and_are_answered_in_call_order(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"}))
                .with_tool_call("read", json!({"path": "b/c.rs"})),
            Turn::text("Both read."),
        ],
    );
    let run = h.turn("read both").await;
    let summary = run.outcome.expect("the turn completes");
    assert_eq!(summary.tool_calls, 2);
    assert_eq!(h.tool.runs.load(Ordering::SeqCst), 2);
    let prefix = protocol.tool_call_id_prefix();
    let outputs = h.requests()[1].tool_outputs();
    let answered: Vec<(String, String)> = outputs
        .into_iter()
        .map(|o| (o.call_id, o.content))
        .collect();
    assert_eq!(
        answered,
        vec![
            (format!("{prefix}1"), "contents of a.rs".to_owned()),
            (format!("{prefix}2"), "contents of b/c.rs".to_owned()),
        ]
    );
    let history = h.agent.history();
    let calls: Vec<_> = history[1].tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[1].arguments,
        json!({"path": "b/c.rs"}),
        "arguments reassembled"
    );
    assert_eq!(visible_text(&run.events), "Both read.");
}

async fn reasoning_streams_apart_from_the_answer(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![Turn::text("The answer.").with_reasoning("Checked the tests first.")],
    );
    let run = h.turn("why?").await;
    run.outcome.expect("the turn completes");
    let reasoning: String = run
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Checked the tests first.");
    assert_eq!(visible_text(&run.events), "The answer.");
    assert_eq!(h.agent.history()[1].text_content(), "The answer.");
}

async fn usage_per_request_and_per_turn_is_what_the_provider_reported(protocol: Protocol) {
    // The testkit reports `input_tokens` as the whole prompt (OpenAI's meaning); to
    // Anthropic it sends input − cached as `input_tokens` and the cached part as
    // `cache_read_input_tokens`, which pith adds back: the same Usage for every protocol.
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "a.rs"}))
                .with_usage(1_000, 20),
            Turn::text("Done.")
                .with_usage(1_500, 30)
                .with_cached_input(1_200),
        ],
    );
    let run = h.turn("go").await;
    let summary = run.outcome.expect("the turn completes");
    let reported: Vec<Usage> = run
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Usage(u) => Some(*u),
            _ => None,
        })
        .collect();
    let first = Usage {
        input_tokens: 1_000,
        cached_input_tokens: 0,
        output_tokens: 20,
        ..Default::default()
    };
    let second = Usage {
        input_tokens: 1_500,
        cached_input_tokens: 1_200,
        output_tokens: 30,
        ..Default::default()
    };
    assert_eq!(reported, vec![first, second]);
    let total = Usage {
        input_tokens: 2_500,
        cached_input_tokens: 1_200,
        output_tokens: 50,
        ..Default::default()
    };
    assert_eq!(summary.usage, total);
    assert!(run
        .events
        .iter()
        .any(|e| matches!(e, LoopEvent::TurnFinished { usage } if *usage == total)));
}

async fn manual_compaction_streams_the_summary_and_leaves_one_user_message(protocol: Protocol) {
    let focus = "the API changes";
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Hello."),
            Turn::text(SUMMARY),
            Turn::text("Continuing."),
        ],
    );
    h.turn("hi").await.outcome.expect("first turn");
    let (tx, mut rx) = unbounded_channel();
    let result = h
        .agent
        .compact(
            Some(focus),
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the manual compaction succeeds");
    let events = drain(&mut rx);
    let deltas = events
        .iter()
        .filter(|e| matches!(e, LoopEvent::TextDelta(_)))
        .count();
    assert!(deltas >= 2, "the summary streams in pieces, got {deltas}");
    assert_eq!(
        visible_text(&events),
        SUMMARY,
        "the manual summary is visible"
    );
    assert_eq!(result.summary, SUMMARY);
    assert_eq!(h.agent.history(), &[Message::user(SUMMARY)]);

    let requests = h.requests();
    let (parent, compaction) = (&requests[0], &requests[1]);
    let prompt = compaction.last_user_text();
    assert_eq!(prompt, manual_prompt(Some(focus)));
    assert!(prompt.contains(focus));
    assert_eq!(bytes(&compaction.system()), bytes(&parent.system()));
    assert_eq!(
        bytes(&compaction.tools()),
        bytes(&parent.tools()),
        "tools stay advertised"
    );
    let strip =
        |items: Vec<Value>| -> Vec<Value> { items.iter().map(without_cache_control).collect() };
    assert_eq!(
        strip(compaction.conversation())[..1],
        strip(parent.conversation())[..],
        "the history prefix is unchanged"
    );

    h.turn("next")
        .await
        .outcome
        .expect("the turn after compaction");
    let after = &h.requests()[2];
    assert_eq!(after.system_text(), SYSTEM);
    assert_eq!(
        after.user_texts(),
        vec![SUMMARY.to_owned(), "next".to_owned()]
    );
}

async fn manual_compaction_refuses_tool_calls_visibly_and_keeps_the_final_text(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Hello."),
            Turn::text("Let me check.").with_tool_call("read", json!({"path": "x.rs"})),
            Turn::text(SUMMARY),
        ],
    );
    h.turn("hi").await.outcome.expect("first turn");
    let (tx, mut rx) = unbounded_channel();
    let result = h
        .agent
        .compact(
            None,
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect("the compaction succeeds after the refusal");
    assert_eq!(
        result.summary, SUMMARY,
        "only the text after the last tool activity"
    );
    assert_eq!(h.tool.runs.load(Ordering::SeqCst), 0, "nothing ran");
    let events = drain(&mut rx);
    let refused = events.iter().find_map(|e| match e {
        LoopEvent::ToolCallFinished { result, .. } => Some(result.clone()),
        _ => None,
    });
    let refused = refused.expect("the refusal is shown as a tool card");
    assert_eq!(refused.content, TOOLS_DISABLED_DURING_COMPACTION);
    assert!(refused.is_error);
    let denial = h.requests()[2].tool_outputs().pop().unwrap();
    assert_eq!(denial.content, TOOLS_DISABLED_DURING_COMPACTION);
    assert_eq!(h.agent.history(), &[Message::user(SUMMARY)]);
}

async fn a_failed_manual_compaction_leaves_history_unchanged(protocol: Protocol) {
    let mut h = harness(protocol, vec![Turn::text("Hello."), Turn::default()]);
    h.turn("hi").await.outcome.expect("first turn");
    let before = h.agent.history().to_vec();
    let (tx, _rx) = unbounded_channel();
    let error = h
        .agent
        .compact(
            None,
            &mut InMemory::new(tx.clone()),
            &CancellationToken::new(),
        )
        .await
        .expect_err("an empty summary is rejected");
    assert!(
        matches!(error, LoopError::Compaction(ref r) if r.contains("empty")),
        "{error:?}"
    );
    assert_eq!(h.agent.history(), &before[..]);
}

async fn a_cancelled_manual_compaction_leaves_history_unchanged(protocol: Protocol) {
    let mut h = harness(
        protocol,
        vec![
            Turn::text("Hello."),
            Turn::text(SUMMARY.repeat(4)).with_chunk_delay_ms(200),
        ],
    );
    h.turn("hi").await.outcome.expect("first turn");
    let before = h.agent.history().to_vec();
    let (tx, mut rx) = unbounded_channel();
    let cancel = CancellationToken::new();
    let esc = cancel.clone();
    let watcher = tokio::spawn(async move {
        let mut shown = String::new();
        while let Some(event) = rx.recv().await {
            if let LoopEvent::TextDelta(text) = event {
                shown.push_str(&text);
                esc.cancel(); // Esc once the summary is visibly streaming
            }
        }
        shown
    });
    let outcome = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        h.agent
            .compact(None, &mut InMemory::new(tx.clone()), &cancel),
    )
    .await
    .expect("the cancellation is honoured at once");
    drop(tx);
    let shown = watcher.await.unwrap();
    assert!(matches!(outcome, Err(LoopError::Cancelled)), "{outcome:?}");
    assert!(!shown.is_empty() && shown.len() < SUMMARY.len() * 4);
    assert_eq!(h.agent.history(), &before[..], "history unchanged");
}

async fn broken_arguments_and_unknown_tools_get_tool_errors_and_are_replayed_faithfully(
    protocol: Protocol,
) {
    let broken = "{\"path\": \"a.rs";
    let mut h = harness(
        protocol,
        vec![
            Turn::tool_call("read", json!(broken)).with_tool_call("delete_everything", json!({})),
            Turn::text("Sorry."),
        ],
    );
    let run = h.turn("go").await;
    run.outcome.expect("the turn goes on after the tool errors");
    let request = &h.requests()[1];
    let outputs = request.tool_outputs();
    assert_eq!(outputs.len(), 2, "every call is answered");
    assert!(
        outputs[1]
            .content
            .starts_with("unknown tool `delete_everything`"),
        "{:?}",
        outputs[1]
    );
    // The model's own (invalid) argument text goes back as it was written.
    let replayed = match protocol {
        Protocol::OpenAiChat => {
            request.body()["messages"][2]["tool_calls"][0]["function"]["arguments"].clone()
        }
        Protocol::OpenAiResponses => request
            .conversation()
            .iter()
            .find(|item| item["type"] == "function_call")
            .map(|item| item["arguments"].clone())
            .unwrap(),
        Protocol::Anthropic => {
            request.conversation()[1]["content"][0]["input"]["raw_arguments"].clone()
        }
        Protocol::Gemini => {
            request.conversation()[1]["parts"][0]["functionCall"]["args"]["raw_arguments"].clone()
        }
        Protocol::Bedrock => {
            request.conversation()[1]["content"][0]["toolUse"]["input"]["raw_arguments"].clone()
        }
    };
    assert_eq!(replayed, json!(broken));
}

/// The public Gemini API sends function calls without ids: pith makes its own up, never
/// sends them, and Gemini pairs the responses with the calls by order — signature and
/// all (the testkit finds the turn by the call's name and arguments).
#[tokio::test]
async fn gemini_calls_without_ids_are_answered_in_order_without_made_up_ids() {
    use pith_core::{BpeCounter, ContextBudget, Encoding, RequestEstimator, ToolRegistry};
    use pith_testkit::{Script, TestServer};
    use std::sync::Arc;

    let server = TestServer::start(
        Script::gemini([
            Turn::tool_call("read", json!({"path": "a.rs"}))
                .with_tool_call("read", json!({"path": "b.rs"}))
                .with_reasoning("Both files."),
            Turn::text("Read."),
        ])
        .without_call_ids(),
    )
    .unwrap();
    let tool = Arc::new(ReadTool {
        runs: std::sync::atomic::AtomicUsize::new(0),
    });
    let mut agent = pith_providers::AgentLoop::new(pith_providers::LoopSetup {
        adapter: adapter(Protocol::Gemini, &server),
        model: "test-model".into(),
        budget: ContextBudget::for_window(WINDOW),
        system_prompt: SYSTEM.into(),
        tools: ToolRegistry::new(vec![tool.clone()]),
        estimator: RequestEstimator::new(Arc::new(BpeCounter::new(Encoding::O200kBase))),
        options: fast_options(),
    });
    let (tx, _rx) = unbounded_channel();
    agent
        .run_turn(
            Message::user("read both"),
            &mut InMemory::new(tx),
            &CancellationToken::new(),
        )
        .await
        .expect("the server took the calls and their signature back");
    assert_eq!(tool.runs.load(Ordering::SeqCst), 2);
    let ids: Vec<String> = agent.history()[1]
        .tool_calls()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(
        ids[0].starts_with("gemini-call-") && ids[0] != ids[1],
        "{ids:?}"
    );
    let second = &server.requests()[1].body;
    assert_eq!(
        second["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "read", "args": {"path": "a.rs"}}, "thoughtSignature": "testkit-signature-1"},
            {"functionCall": {"name": "read", "args": {"path": "b.rs"}}},
        ])
    );
    assert_eq!(
        second["contents"][2]["parts"],
        json!([
            {"functionResponse": {"name": "read", "response": {"output": "contents of a.rs"}}},
            {"functionResponse": {"name": "read", "response": {"output": "contents of b.rs"}}},
        ])
    );
}
