//! Each protocol's answers read by a real HTTP client: event order, text and tool-call
//! argument fragments that reassemble into the script, usage placement, non-streaming JSON,
//! and — for the OpenAI kinds — that async-openai's strict typed structs accept every event.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{call_json, stream, Event};
use pith_testkit::{Script, TestServer, ToolCall, Turn};
use serde_json::{json, Value};

fn read_args() -> Value {
    json!({"path": "src/lib.rs", "limit": 200, "note": "quotes \" and unicode ✓"})
}

fn event_names(events: &[Event]) -> Vec<String> {
    events.iter().map(|event| event.name.clone()).collect()
}

/// Collapses consecutive repeats so an order check does not depend on fragment counts.
fn collapsed(names: &[String]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for name in names {
        if order.last() != Some(name) {
            order.push(name.clone());
        }
    }
    order
}

// ---------------------------------------------------------------- OpenAI Chat Completions

/// The text a Chat Completions stream carries (all `content` deltas joined).
fn chat_text(events: &[Event]) -> String {
    events
        .iter()
        .filter(|event| event.data != "[DONE]")
        .filter_map(|event| {
            event.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

#[tokio::test]
async fn chat_stream_has_role_first_then_text_and_tool_call_fragments_then_usage_and_done() {
    let text = "Let me look at the library file first.";
    let server = TestServer::start(Script::openai_chat([Turn::text(text)
        .with_tool_call("read", read_args())
        .with_usage(120_000, 40)
        .with_cached_input(100_000)]))
    .unwrap();
    let streamed = stream(
        &server.endpoint_url(),
        &json!({"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
                "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert!(streamed.body_error.is_none(), "{:?}", streamed.body_error);
    let events = streamed.events().await;
    assert_eq!(
        events.last().map(|e| e.data.as_str()),
        Some("[DONE]"),
        "the stream ends with data: [DONE]"
    );
    assert!(
        events.iter().all(|e| e.name == "message"),
        "Chat Completions streams carry no event: lines"
    );
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Event::json).collect();
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "gpt-test", "the request's model is echoed");
        serde_json::from_value::<async_openai::types::chat::CreateChatCompletionStreamResponse>(
            chunk.clone(),
        )
        .unwrap_or_else(|error| panic!("async-openai rejects chunk {chunk}: {error}"));
    }
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let text_pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|piece| !piece.is_empty())
        .collect();
    assert!(text_pieces.len() > 1, "text is split over several chunks");
    assert_eq!(text_pieces.concat(), text);

    let tool_deltas: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0))
        .collect();
    let opening = tool_deltas[0];
    assert_eq!(opening["index"], 0);
    assert_eq!(opening["id"], "call_1");
    assert_eq!(opening["type"], "function");
    assert_eq!(opening["function"]["name"], "read");
    assert_eq!(opening["function"]["arguments"], "");
    let fragments: Vec<&str> = tool_deltas[1..]
        .iter()
        .map(|d| {
            assert!(
                d.get("id").is_none(),
                "only the first tool delta carries the id"
            );
            assert_eq!(d["index"], 0);
            d["function"]["arguments"].as_str().unwrap()
        })
        .collect();
    assert!(
        fragments.len() > 1,
        "arguments are split over several chunks"
    );
    let arguments: Value = serde_json::from_str(&fragments.concat()).unwrap();
    assert_eq!(
        arguments,
        read_args(),
        "argument fragments reassemble the script"
    );

    let finish: Vec<&Value> = chunks
        .iter()
        .filter(|c| !c["choices"][0]["finish_reason"].is_null())
        .filter(|c| c["choices"].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    assert_eq!(finish.len(), 1, "exactly one chunk finishes the choice");
    assert_eq!(finish[0]["choices"][0]["finish_reason"], "tool_calls");

    let usage_chunk = chunks.last().unwrap();
    assert_eq!(
        usage_chunk["choices"],
        json!([]),
        "usage comes in a choice-less chunk"
    );
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 120_000);
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 40);
    assert_eq!(usage_chunk["usage"]["total_tokens"], 120_040);
    assert_eq!(
        usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"],
        100_000
    );
    assert!(
        chunks[..chunks.len() - 1]
            .iter()
            .all(|c| c.get("usage") == Some(&Value::Null)),
        "with include_usage every other chunk carries usage: null"
    );
}

#[tokio::test]
async fn chat_stream_without_include_usage_sends_no_usage_and_stops() {
    let server = TestServer::start(Script::openai_chat([Turn::text("Done.")])).unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "m", "stream": true, "messages": []}),
    )
    .await
    .events()
    .await;
    let chunks: Vec<Value> = events[..events.len() - 1].iter().map(Event::json).collect();
    assert!(
        chunks.iter().all(|c| c.get("usage").is_none()),
        "no usage field unless stream_options.include_usage is set"
    );
    assert!(chunks
        .iter()
        .all(|c| c["choices"].as_array().unwrap().len() == 1));
    assert_eq!(
        chunks.last().unwrap()["choices"][0]["finish_reason"],
        "stop"
    );
}

#[tokio::test]
async fn chat_tool_call_ids_are_generated_across_the_script_and_explicit_ones_kept() {
    let server = TestServer::start(Script::openai_chat([
        Turn::tool_call("read", json!({"path": "a"})).with_tool_call("grep", json!({"q": "b"})),
        Turn::default()
            .with_call(ToolCall::new("bash", json!({"cmd": "ls"})).with_id("call_custom"))
            .with_tool_call("read", json!({"path": "c"})),
    ]))
    .unwrap();
    let request = json!({"model": "m", "stream": true, "messages": []});
    let mut seen = Vec::new();
    for _ in 0..2 {
        for event in stream(&server.endpoint_url(), &request)
            .await
            .events()
            .await
        {
            if event.data == "[DONE]" {
                continue;
            }
            let chunk = event.json();
            if let Some(calls) = chunk["choices"][0]["delta"]["tool_calls"].as_array() {
                for call in calls.iter().filter(|call| call.get("id").is_some()) {
                    seen.push((call["index"].clone(), call["id"].clone()));
                }
            }
        }
    }
    assert_eq!(
        seen,
        vec![
            (json!(0), json!("call_1")),
            (json!(1), json!("call_2")),
            (json!(0), json!("call_custom")),
            (json!(1), json!("call_4")),
        ]
    );
}

#[tokio::test]
async fn chat_streams_reasoning_as_reasoning_content_deltas_before_the_text() {
    let server = TestServer::start(Script::openai_chat([
        Turn::text("Answer.").with_reasoning("Thinking it through.")
    ]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "m", "stream": true, "messages": []}),
    )
    .await
    .events()
    .await;
    let deltas: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| e.json()["choices"][0]["delta"].clone())
        .collect();
    let reasoning: String = deltas
        .iter()
        .filter_map(|d| d["reasoning_content"].as_str())
        .collect();
    assert_eq!(reasoning, "Thinking it through.");
    let first_reasoning = deltas
        .iter()
        .position(|d| d.get("reasoning_content").is_some());
    let first_text = deltas
        .iter()
        .position(|d| d["content"].as_str().is_some_and(|c| !c.is_empty()));
    assert!(
        first_reasoning < first_text,
        "reasoning streams before the text"
    );
}

#[tokio::test]
async fn chat_without_stream_answers_one_chat_completion_json() {
    let server = TestServer::start(Script::openai_chat([
        Turn::text("Reading.")
            .with_tool_call("read", read_args())
            .with_usage(500, 7),
        Turn::text("Done."),
    ]))
    .unwrap();
    let (status, headers, body) = call_json(
        &server.endpoint_url(),
        &json!({"model": "gpt-test", "messages": []}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "application/json");
    serde_json::from_value::<async_openai::types::chat::CreateChatCompletionResponse>(body.clone())
        .unwrap_or_else(|error| panic!("async-openai rejects {body}: {error}"));
    assert_eq!(body["object"], "chat.completion");
    let choice = &body["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Reading.");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["id"], "call_1");
    assert_eq!(call["function"]["name"], "read");
    let arguments: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, read_args());
    assert_eq!(body["usage"]["prompt_tokens"], 500);
    assert_eq!(body["usage"]["completion_tokens"], 7);
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let (_, _, second) = call_json(
        &server.endpoint_url(),
        &json!({"model": "gpt-test", "stream": false, "messages": []}),
    )
    .await;
    assert_eq!(second["choices"][0]["finish_reason"], "stop");
    assert!(second["choices"][0]["message"].get("tool_calls").is_none());
}

// ------------------------------------------------------------------------ OpenAI Responses

#[tokio::test]
async fn responses_stream_emits_typed_events_in_order_with_sequence_numbers() {
    let text = "Let me look at the library file first.";
    let server = TestServer::start(Script::openai_responses([Turn::text(text)
        .with_tool_call("read", read_args())
        .with_usage(120_000, 40)
        .with_cached_input(90_000)]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "gpt-5-test", "stream": true, "input": "hi"}),
    )
    .await
    .events()
    .await;
    let payloads: Vec<Value> = events.iter().map(Event::json).collect();
    for (index, (event, payload)) in events.iter().zip(&payloads).enumerate() {
        assert_eq!(
            payload["type"],
            event.name.as_str(),
            "event: line = data.type"
        );
        assert_eq!(
            payload["sequence_number"], index,
            "sequence numbers count from 0"
        );
        serde_json::from_value::<async_openai::types::responses::ResponseStreamEvent>(
            payload.clone(),
        )
        .unwrap_or_else(|error| panic!("async-openai rejects event {payload}: {error}"));
    }
    assert_eq!(
        collapsed(&event_names(&events)),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let of_type = |name: &'static str| payloads.iter().filter(move |p| p["type"] == name);

    let added: Vec<&Value> = of_type("response.output_item.added").collect();
    assert_eq!(added[0]["item"]["type"], "message");
    assert_eq!(added[1]["item"]["type"], "function_call");
    assert_eq!(added[1]["item"]["call_id"], "call_1");
    assert_eq!(added[1]["item"]["name"], "read");
    assert_eq!(added[1]["item"]["arguments"], "");

    let text_deltas: Vec<&str> = of_type("response.output_text.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert!(text_deltas.len() > 1, "text is split over several deltas");
    assert_eq!(text_deltas.concat(), text);
    assert_eq!(
        of_type("response.output_text.done").next().unwrap()["text"],
        text
    );

    let argument_deltas: Vec<&Value> = of_type("response.function_call_arguments.delta").collect();
    assert!(
        argument_deltas.len() > 1,
        "arguments are split over several deltas"
    );
    let fc_id = &added[1]["item"]["id"];
    assert!(argument_deltas.iter().all(|d| &d["item_id"] == fc_id));
    let joined: String = argument_deltas
        .iter()
        .map(|d| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(serde_json::from_str::<Value>(&joined).unwrap(), read_args());
    let done = of_type("response.function_call_arguments.done")
        .next()
        .unwrap();
    assert_eq!(done["arguments"], joined.as_str());

    let completed = &payloads.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["model"], "gpt-5-test");
    assert_eq!(completed["output"].as_array().unwrap().len(), 2);
    let usage = &completed["usage"];
    assert_eq!(usage["input_tokens"], 120_000);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 90_000);
    assert_eq!(usage["output_tokens"], 40);
    assert_eq!(usage["total_tokens"], 120_040);
    assert!(
        payloads[0]["response"]["usage"].is_null(),
        "usage arrives only with response.completed"
    );
}

#[tokio::test]
async fn responses_stream_reasoning_as_a_summary_item_first() {
    let server = TestServer::start(Script::openai_responses([
        Turn::text("Answer.").with_reasoning("Thinking it through.")
    ]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "m", "stream": true, "input": "hi"}),
    )
    .await
    .events()
    .await;
    let payloads: Vec<Value> = events.iter().map(Event::json).collect();
    for payload in &payloads {
        serde_json::from_value::<async_openai::types::responses::ResponseStreamEvent>(
            payload.clone(),
        )
        .unwrap_or_else(|error| panic!("async-openai rejects event {payload}: {error}"));
    }
    let first_item = payloads
        .iter()
        .find(|p| p["type"] == "response.output_item.added")
        .unwrap();
    assert_eq!(first_item["item"]["type"], "reasoning");
    let summary: String = payloads
        .iter()
        .filter(|p| p["type"] == "response.reasoning_summary_text.delta")
        .map(|p| p["delta"].as_str().unwrap())
        .collect();
    assert_eq!(summary, "Thinking it through.");
}

#[tokio::test]
async fn responses_without_stream_answer_one_response_object() {
    let server = TestServer::start(Script::openai_responses([Turn::text("Reading.")
        .with_tool_call("read", read_args())
        .with_usage(500, 7)]))
    .unwrap();
    let (status, _, body) = call_json(
        &server.endpoint_url(),
        &json!({"model": "gpt-5-test", "input": "hi"}),
    )
    .await;
    assert_eq!(status, 200);
    serde_json::from_value::<async_openai::types::responses::Response>(body.clone())
        .unwrap_or_else(|error| panic!("async-openai rejects {body}: {error}"));
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    let output = body["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["content"][0]["type"], "output_text");
    assert_eq!(output[0]["content"][0]["text"], "Reading.");
    assert_eq!(output[1]["type"], "function_call");
    assert_eq!(output[1]["call_id"], "call_1");
    let arguments: Value = serde_json::from_str(output[1]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(arguments, read_args());
    assert_eq!(body["usage"]["input_tokens"], 500);
    assert_eq!(body["usage"]["output_tokens"], 7);
}

// ---------------------------------------------------------------------- Anthropic Messages

#[tokio::test]
async fn anthropic_stream_follows_the_messages_event_flow() {
    let text = "Let me look at the library file first.";
    let server = TestServer::start(Script::anthropic([Turn::text(text)
        .with_tool_call("read", read_args())
        .with_usage(120_000, 40)
        .with_cached_input(100_000)]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "claude-test", "max_tokens": 1024, "stream": true, "messages": []}),
    )
    .await
    .events()
    .await;
    let payloads: Vec<Value> = events.iter().map(Event::json).collect();
    for (event, payload) in events.iter().zip(&payloads) {
        assert_eq!(
            payload["type"],
            event.name.as_str(),
            "event: line = data.type"
        );
    }
    assert_eq!(
        collapsed(&event_names(&events)),
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let message = &payloads[0]["message"];
    assert_eq!(message["model"], "claude-test");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["content"], json!([]));
    assert_eq!(
        message["usage"]["input_tokens"], 20_000,
        "Anthropic input_tokens exclude the cache read"
    );
    assert_eq!(message["usage"]["cache_read_input_tokens"], 100_000);

    let starts: Vec<&Value> = payloads
        .iter()
        .filter(|p| p["type"] == "content_block_start")
        .collect();
    assert_eq!(starts[0]["index"], 0);
    assert_eq!(
        starts[0]["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(starts[1]["index"], 1);
    assert_eq!(
        starts[1]["content_block"],
        json!({"type": "tool_use", "id": "toolu_1", "name": "read", "input": {}})
    );

    let deltas = |index: u64, kind: &str, field: &str| -> Vec<String> {
        payloads
            .iter()
            .filter(|p| p["type"] == "content_block_delta" && p["index"] == index)
            .map(|p| {
                assert_eq!(p["delta"]["type"], kind);
                p["delta"][field].as_str().unwrap().to_owned()
            })
            .collect()
    };
    let text_pieces = deltas(0, "text_delta", "text");
    assert!(text_pieces.len() > 1, "text is split over several deltas");
    assert_eq!(text_pieces.concat(), text);
    let json_pieces = deltas(1, "input_json_delta", "partial_json");
    assert!(
        json_pieces.iter().filter(|p| !p.is_empty()).count() > 1,
        "partial_json is split over several deltas"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&json_pieces.concat()).unwrap(),
        read_args()
    );

    let message_delta = &payloads[payloads.len() - 2];
    assert_eq!(message_delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(message_delta["usage"]["output_tokens"], 40);
    assert_eq!(message_delta["usage"]["cache_read_input_tokens"], 100_000);
}

#[tokio::test]
async fn anthropic_streams_thinking_first_and_ends_a_text_turn_with_end_turn() {
    let server = TestServer::start(Script::anthropic([
        Turn::text("Answer.").with_reasoning("Thinking it through.")
    ]))
    .unwrap();
    let events = stream(
        &server.endpoint_url(),
        &json!({"model": "m", "max_tokens": 64, "stream": true, "messages": []}),
    )
    .await
    .events()
    .await;
    let payloads: Vec<Value> = events.iter().map(Event::json).collect();
    let first_block = payloads
        .iter()
        .find(|p| p["type"] == "content_block_start")
        .unwrap();
    assert_eq!(first_block["content_block"]["type"], "thinking");
    let thinking: String = payloads
        .iter()
        .filter(|p| p["delta"]["type"] == "thinking_delta")
        .map(|p| p["delta"]["thinking"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "Thinking it through.");
    assert!(payloads
        .iter()
        .any(|p| p["delta"]["type"] == "signature_delta"));
    let message_delta = payloads
        .iter()
        .find(|p| p["type"] == "message_delta")
        .unwrap();
    assert_eq!(message_delta["delta"]["stop_reason"], "end_turn");
}

#[tokio::test]
async fn anthropic_without_stream_answers_one_message_json() {
    let server = TestServer::start(Script::anthropic([Turn::text("Reading.")
        .with_tool_call("read", read_args())
        .with_usage(500, 7)]))
    .unwrap();
    let (status, _, body) = call_json(
        &server.endpoint_url(),
        &json!({"model": "claude-test", "max_tokens": 1024, "messages": []}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["stop_reason"], "tool_use");
    assert_eq!(
        body["content"],
        json!([
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": read_args()}
        ])
    );
    assert_eq!(body["usage"]["input_tokens"], 500);
    assert_eq!(body["usage"]["output_tokens"], 7);
}

// ------------------------------------------------------------------- a whole script in JSON

#[tokio::test]
async fn the_issue_example_script_plays_turn_by_turn() {
    let script = Script::from_json(
        r###"{"protocol": "openai-chat",
             "turns": [
               {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "src/lib.rs"}}],
                "usage": {"input_tokens": 120000, "output_tokens": 40}},
               {"text": "## Goal\n...", "chunk_delay_ms": 5},
               {"fault": "http_429", "retry_after_s": 1},
               {"text": "Done."}
             ]}"###,
    )
    .unwrap();
    let server = TestServer::start(script).unwrap();
    let request = json!({"model": "m", "stream": true,
                         "stream_options": {"include_usage": true}, "messages": []});

    let first = stream(&server.endpoint_url(), &request)
        .await
        .events()
        .await;
    let usage = first[first.len() - 2].json()["usage"].clone();
    assert_eq!(
        usage["prompt_tokens"], 120_000,
        "turn 1 reports the scripted usage"
    );

    let second = stream(&server.endpoint_url(), &request)
        .await
        .events()
        .await;
    assert_eq!(chat_text(&second), "## Goal\n...");

    let (status, headers, _) = call_json(&server.endpoint_url(), &request).await;
    assert_eq!(
        (status, headers["retry-after"].to_str().unwrap()),
        (429, "1")
    );

    let last = stream(&server.endpoint_url(), &request)
        .await
        .events()
        .await;
    assert_eq!(
        chat_text(&last),
        "Done.",
        "the retried request gets the next turn"
    );
    assert_eq!(server.turns_served(), 4);
    assert_eq!(server.request_count(), 4);
}
