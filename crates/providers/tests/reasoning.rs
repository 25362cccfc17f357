//! Reasoning round trips against the testkit, which refuses what the real APIs refuse:
//! Anthropic thinking blocks go back with their signatures in the tool loop (and through
//! an automatic compaction), Responses reasoning items go back with their encrypted
//! content in their place, Chat keeps reasoning for the transcript only; reasoning tokens
//! are reported apart. Plus the per-server output-cap field of Chat Completions.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

#[macro_use]
mod common;

use common::*;
use pith_core::{LoopEvent, Part, Role};
use pith_providers::wire::openai_chat::{ChatOptions, MaxTokensField, OpenAiChat};
use pith_providers::wire::ReasoningEffort;
use pith_providers::{AgentLoop, LoopError, LoopOptions};
use pith_testkit::{Protocol, Script, TestServer, Turn};
use serde_json::{json, Value};

for_each_protocol!(
    reasoning_goes_back_in_its_place_between_tool_calls,
    a_compaction_inside_a_thinking_tool_loop_is_accepted,
);

fn thinking_options() -> LoopOptions {
    LoopOptions {
        reasoning: Some(ReasoningEffort::Medium),
        temperature: Some(0.2),
        ..fast_options()
    }
}

async fn reasoning_goes_back_in_its_place_between_tool_calls(protocol: Protocol) {
    let mut h = harness_with(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "src/lib.rs"}))
                .with_reasoning("Look at lib.rs first.")
                .with_reasoning_tokens(12),
            Turn::text("Done.").with_reasoning("Now answer."),
        ],
        WINDOW,
        thinking_options(),
    );
    let run = h.turn("fix it").await;
    let summary = run.outcome.expect("the server took the reasoning back");
    assert_eq!(visible_text(&run.events), "Done.");
    // The history keeps the reasoning in its place, never as answer text.
    let answer = &h.agent.history()[1];
    assert_eq!(answer.role, Role::Assistant);
    assert!(matches!(answer.parts[0], Part::Reasoning(_)), "{answer:?}");
    assert!(matches!(answer.parts[1], Part::ToolCall(_)), "{answer:?}");
    assert_eq!(answer.text_content(), "");
    let Part::Reasoning(reasoning) = &answer.parts[0] else {
        unreachable!()
    };
    assert_eq!(reasoning.text, "Look at lib.rs first.");
    assert_eq!(reasoning.origin, protocol.name());

    let requests = h.server.requests();
    let (first, second) = (&requests[0].body, &requests[1].body);
    match protocol {
        Protocol::Anthropic => {
            assert_eq!(
                first["thinking"],
                json!({"type": "enabled", "budget_tokens": 10_000})
            );
            assert!(
                first["temperature"].is_null(),
                "no temperature with thinking"
            );
            assert_eq!(
                second["messages"][1]["content"][0],
                json!({"type": "thinking", "thinking": "Look at lib.rs first.", "signature": "testkit-signature-1"})
            );
            assert_eq!(summary.usage.reasoning_tokens, 0, "Anthropic reports none");
        }
        Protocol::Bedrock => {
            assert_eq!(
                first["additionalModelRequestFields"]["thinking"],
                json!({"type": "enabled", "budget_tokens": 10_000})
            );
            assert!(
                first["inferenceConfig"]["temperature"].is_null(),
                "no temperature with thinking"
            );
            assert_eq!(
                second["messages"][1]["content"][0],
                json!({"reasoningContent": {"reasoningText": {"text": "Look at lib.rs first.", "signature": "testkit-signature-1"}}})
            );
            assert_eq!(summary.usage.reasoning_tokens, 0, "Bedrock reports none");
        }
        Protocol::OpenAiResponses => {
            assert_eq!(first["include"], json!(["reasoning.encrypted_content"]));
            assert_eq!(first["reasoning"]["effort"], "medium");
            let input = second["input"].as_array().unwrap();
            let at = |kind: &str| input.iter().position(|i| i["type"] == kind).unwrap();
            assert!(at("reasoning") < at("function_call"), "{input:?}");
            assert_eq!(
                input[at("reasoning")],
                json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Look at lib.rs first."}], "encrypted_content": "testkit-encrypted-1"})
            );
            assert_eq!(summary.usage.reasoning_tokens, 12);
        }
        Protocol::Gemini => {
            assert_eq!(
                first["generationConfig"]["thinkingConfig"],
                json!({"includeThoughts": true, "thinkingBudget": 10_000})
            );
            assert_eq!(
                second["contents"][1]["parts"][0],
                json!({"functionCall": {"id": "fc_1", "name": "read", "args": {"path": "src/lib.rs"}},
                       "thoughtSignature": "testkit-signature-1"}),
                "the signature goes back on the call it came with"
            );
            assert!(
                !second.to_string().contains("Look at lib.rs"),
                "thought summaries are not sent back"
            );
            assert_eq!(summary.usage.reasoning_tokens, 12);
        }
        Protocol::OpenAiChat => {
            let text = second.to_string();
            assert!(
                !text.contains("Look at lib.rs"),
                "Chat never sends reasoning"
            );
            assert_eq!(summary.usage.reasoning_tokens, 12);
        }
    }
    let reported: u64 = run
        .events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Usage(usage) => Some(usage.reasoning_tokens),
            _ => None,
        })
        .sum();
    assert_eq!(reported, summary.usage.reasoning_tokens);
}

async fn a_compaction_inside_a_thinking_tool_loop_is_accepted(protocol: Protocol) {
    let mut h = harness_with(
        protocol,
        vec![
            Turn::tool_call("read", json!({"path": "a.rs"}))
                .with_reasoning("Read a.rs.")
                .with_usage(OVER_THRESHOLD, 40),
            // The private summary request: its parent history ends with the thinking
            // tool loop, which must still carry its thinking block.
            Turn::text(SUMMARY),
            Turn::text("Finished.").with_reasoning("All good."),
        ],
        WINDOW,
        thinking_options(),
    );
    let run = h.turn("go").await;
    run.outcome.expect("every request was accepted");
    assert_eq!(
        compaction_events(&run.events),
        vec!["started", "applied"],
        "{:?}",
        run.events
    );
    assert_eq!(visible_text(&run.events), "Finished.");
    let requests = h.server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request still carried it (the API refuses a tool loop without it)…
    let kept = match protocol {
        Protocol::Anthropic | Protocol::Bedrock => Some("testkit-signature"),
        Protocol::OpenAiResponses => Some("testkit-encrypted"),
        Protocol::Gemini => Some("testkit-signature"),
        Protocol::OpenAiChat => None,
    };
    if let Some(kept) = kept {
        assert!(requests[1].body.to_string().contains(kept), "{kept}");
    }
    // …then it was old content the compaction replaced, like everything else.
    let after = requests[2].body.to_string();
    for gone in ["Read a.rs.", "testkit-signature", "testkit-encrypted"] {
        assert!(
            !after.contains(gone),
            "{gone} survived the compaction: {after}"
        );
    }
}

#[tokio::test]
async fn redacted_thinking_goes_back_unchanged() {
    let mut h = harness_with(
        Protocol::Anthropic,
        vec![
            Turn::tool_call("read", json!({"path": "x"})).with_redacted_thinking(),
            Turn::text("ok"),
        ],
        WINDOW,
        thinking_options(),
    );
    h.turn("go").await.outcome.expect("accepted");
    let second = &h.server.requests()[1].body;
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"type": "redacted_thinking", "data": "testkit-redacted-1"})
    );
}

#[tokio::test]
async fn bedrock_redacted_reasoning_goes_back_unchanged() {
    let mut h = harness_with(
        Protocol::Bedrock,
        vec![
            Turn::tool_call("read", json!({"path": "x"})).with_redacted_thinking(),
            Turn::text("ok"),
        ],
        WINDOW,
        thinking_options(),
    );
    h.turn("go").await.outcome.expect("accepted");
    let second = &h.server.requests()[1].body;
    assert_eq!(
        second["messages"][1]["content"][0],
        json!({"reasoningContent": {"redactedContent": "testkit-redacted-1"}})
    );
}

#[tokio::test]
async fn without_thinking_no_thinking_block_is_sent() {
    let mut h = harness(
        Protocol::Anthropic,
        vec![
            Turn::tool_call("read", json!({"path": "x"})).with_reasoning("hm"),
            Turn::text("ok"),
        ],
    );
    h.turn("go").await.outcome.expect("accepted");
    let requests = h.server.requests();
    assert!(requests[0].body["thinking"].is_null());
    assert!(!requests[1].body.to_string().contains("\"thinking\""));
}

/// A Chat loop whose adapter puts the cap in `field`, against a server that accepts only
/// `accepted`.
fn capped_chat(field: MaxTokensField, accepted: &str, text: &str) -> (AgentLoop, TestServer) {
    let server = TestServer::start(
        Script::openai_chat(vec![Turn::text(text), Turn::text("short")]).accepting_only(accepted),
    )
    .unwrap();
    let adapter = OpenAiChat::new(&server.base_url(), Some(API_KEY))
        .unwrap()
        .with_chat_options(ChatOptions {
            max_tokens_field: field,
            headers: Vec::new(),
            penalties: Default::default(),
        });
    let agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: std::sync::Arc::new(adapter),
        model: "o4-mini".into(),
        budget: pith_core::ContextBudget::for_window(WINDOW),
        system_prompt: SYSTEM.into(),
        tools: pith_core::ToolRegistry::default(),
        estimator: pith_core::RequestEstimator::new(std::sync::Arc::new(
            pith_core::BpeCounter::new(pith_core::Encoding::O200kBase),
        )),
        options: LoopOptions {
            max_output_tokens: Some(5),
            ..fast_options()
        },
    });
    (agent, server)
}

#[tokio::test]
async fn the_cap_goes_in_the_field_the_server_honours() {
    let long = "word ".repeat(200);
    let (mut agent, server) = capped_chat(
        MaxTokensField::MaxCompletionTokens,
        "max_completion_tokens",
        &long,
    );
    let mut sink = pith_core::InMemory::new(Vec::new());
    agent
        .run_turn(
            pith_core::Message::user("talk"),
            &mut sink,
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect("the capped answer is accepted");
    let events = sink.events;
    let body: &Value = &server.requests()[0].body;
    assert_eq!(body["max_completion_tokens"], 5);
    assert!(body["max_tokens"].is_null());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::OutputTruncated { .. })),
        "the server cut the answer at the cap: {events:?}"
    );
    assert!(
        visible_text(&events).len() <= 20,
        "{}",
        visible_text(&events)
    );
}

#[tokio::test]
async fn the_wrong_cap_field_is_refused_as_openai_does() {
    let (mut agent, _server) =
        capped_chat(MaxTokensField::MaxTokens, "max_completion_tokens", "hi");
    let failure = agent
        .run_turn(
            pith_core::Message::user("talk"),
            &mut pith_core::InMemory::new(Vec::new()),
            &tokio_util::sync::CancellationToken::new(),
        )
        .await
        .expect_err("refused");
    let LoopError::Provider(error) = failure.error else {
        panic!("{:?}", failure.error)
    };
    assert!(
        error
            .to_string()
            .contains("Unsupported parameter: 'max_tokens'"),
        "{error}"
    );
}

/// Overflow fitting in a thinking tool loop: the oldest history goes, the signed answer of
/// the active turn goes back whole (the testkit refuses a cut or missing thinking block).
/// The first request of the turn fits; the tool result of the thinking turn pushes the
/// second one over the budget, so the fit happens inside the active tool loop.
#[tokio::test]
async fn overflow_fitting_keeps_the_active_thinking_tool_loop_whole() {
    for protocol in [
        Protocol::Anthropic,
        Protocol::OpenAiResponses,
        Protocol::Bedrock,
    ] {
        // The read tool echoes its path: a long one makes a large result.
        let long_path = format!("a.rs{}", " detail".repeat(2_500));
        let mut h = harness_with(
            protocol,
            vec![
                Turn::tool_call("read", json!({ "path": long_path })).with_reasoning("Read a.rs."),
                Turn::text("Finished.").with_reasoning("All good."),
            ],
            20_000,
            LoopOptions {
                auto_compaction: false,
                // The scripted 100 input tokens are not believed: pith counts.
                usage_band: Default::default(),
                ..thinking_options()
            },
        );
        let old = "background detail ".repeat(6_000);
        h.agent.set_history(vec![
            pith_core::Message::user(old.clone()),
            pith_core::Message::assistant("Noted."),
        ]);
        let run = h.turn("now fix a.rs").await;
        run.outcome.expect("the fitted requests were accepted");
        let fits = run
            .events
            .iter()
            .filter(|e| matches!(e, LoopEvent::Notice(n) if n.contains("too large")))
            .count();
        assert_eq!(fits, 1, "{protocol:?}: the second request was fitted");
        let requests = h.server.requests();
        assert!(
            requests[0].body.to_string().contains(&old[..2_000]),
            "{protocol:?}: the first request fit as it was"
        );
        let last_request = requests.last().unwrap();
        assert!(
            pith_testkit::request_tokens(&last_request.body) <= 15_904,
            "{protocol:?}: the fitted request is within the input budget"
        );
        let last = last_request.body.to_string();
        let kept = match protocol {
            Protocol::Anthropic | Protocol::Bedrock => "testkit-signature-1",
            _ => "testkit-encrypted-1",
        };
        assert!(last.contains(kept), "{protocol:?}: {last}");
        assert!(
            last.contains("Read a.rs."),
            "{protocol:?}: the thinking went back uncut"
        );
    }
}
