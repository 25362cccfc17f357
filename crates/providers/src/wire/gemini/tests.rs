use std::sync::Arc;

use pith_core::{Image, Message, Part, Reasoning, ToolCall, ToolDefinition, Usage};
use serde_json::json;

use super::decode::Parser;
use super::*;
use crate::wire::adapter::StreamChunk;
use crate::wire::reasoning::ReasoningEffort;

/// Every chunk of `events`, then the end of the stream.
fn parse(events: &[&str]) -> Result<Vec<StreamChunk>, ProviderError> {
    let mut parser = Parser::default();
    let mut out = Vec::new();
    for event in events {
        out.extend(parser.event(event)?);
    }
    out.extend(parser.finish()?);
    Ok(out
        .into_iter()
        .filter(|c| !matches!(c, StreamChunk::ArgumentBytes { .. }))
        .collect())
}

fn request(messages: Vec<Message>) -> ModelRequest {
    ModelRequest {
        model: "gemini-2.5-pro".into(),
        system: "sys".into(),
        messages: Arc::new(messages),
        tools: vec![ToolDefinition {
            name: "read".into(),
            description: "Read".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_output_tokens: None,
        temperature: None,
        reasoning: None,
        output: None,
        cache: Default::default(),
    }
}

fn call(id: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
    }
}

/// A thinking model's tool turn as the API streams it: thought summaries, a function
/// call carrying the signature, usage with cached and thinking tokens.
#[test]
fn a_thinking_tool_turn_keeps_its_signature_before_the_call() {
    let events = [
        r#"{"candidates":[{"content":{"parts":[{"text":"Looking at ","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":900,"totalTokenCount":900},"modelVersion":"gemini-2.5-pro"}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":"the file.","thought":true}],"role":"model"},"index":0}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":"Let me read it."}],"role":"model"},"index":0}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"read","args":{"path":"a.rs"}},"thoughtSignature":"c2lnLTE="},{"functionCall":{"name":"read","args":{"path":"b.rs"}}}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":600,"candidatesTokenCount":40,"thoughtsTokenCount":120,"totalTokenCount":1160}}"#,
    ];
    let chunks = parse(&events).unwrap();
    assert_eq!(chunks[0], StreamChunk::Reasoning("Looking at ".into()));
    assert_eq!(chunks[1], StreamChunk::Reasoning("the file.".into()));
    assert_eq!(chunks[2], StreamChunk::Text("Let me read it.".into()));
    assert_eq!(
        chunks[3],
        StreamChunk::ReasoningPart(Reasoning {
            origin: "gemini".into(),
            text: "Looking at the file.".into(),
            signature: Some("c2lnLTE=".into()),
            ..Reasoning::default()
        })
    );
    let calls: Vec<&ToolCall> = chunks
        .iter()
        .filter_map(|c| match c {
            StreamChunk::ToolCall(call) => Some(call),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].arguments, json!({"path": "a.rs"}));
    assert!(calls[0].id.starts_with(GENERATED_ID_PREFIX));
    assert_ne!(calls[0].id, calls[1].id, "made-up ids are unique");
    assert_eq!(
        chunks[chunks.len() - 2],
        StreamChunk::Usage(Usage {
            input_tokens: 1000,
            cached_input_tokens: 600,
            output_tokens: 160,
            reasoning_tokens: 120,
            ..Usage::default()
        })
    );
    assert_eq!(
        chunks[chunks.len() - 1],
        StreamChunk::Done {
            stop_reason: Some("stop".into())
        }
    );
}

#[test]
fn a_call_id_gemini_sends_is_kept_and_sent_back() {
    let chunks = parse(&[
        r#"{"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-7","name":"read"}}],"role":"model"},"finishReason":"STOP"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        chunks[0],
        StreamChunk::ToolCall(call("fc-7", json!({}))),
        "no args is an empty object"
    );
    let body = request_body(&request(vec![
        Message::user("go"),
        Message::assistant_with_calls("", vec![call("fc-7", json!({}))]),
        Message::tool_result("fc-7", "text", false),
    ]));
    assert_eq!(
        body["contents"][1]["parts"][0]["functionCall"]["id"],
        "fc-7"
    );
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"],
        json!({"id": "fc-7", "name": "read", "response": {"output": "text"}})
    );
}

/// A text answer's signature comes on a final empty text part; it goes back there.
#[test]
fn a_signature_on_the_final_empty_part_goes_back_on_an_empty_part() {
    let chunks = parse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Done."}],"role":"model"}}]}"#,
        r#"{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"sig-end"}],"role":"model"},"finishReason":"STOP"}]}"#,
    ])
    .unwrap();
    assert_eq!(chunks[0], StreamChunk::Text("Done.".into()));
    let StreamChunk::ReasoningPart(reasoning) = &chunks[1] else {
        panic!("{chunks:?}")
    };
    let mut answer = Message::assistant("Done.");
    answer.parts.push(Part::Reasoning(reasoning.clone()));
    let body = request_body(&request(vec![
        Message::user("hi"),
        answer,
        Message::user("more"),
    ]));
    assert_eq!(
        body["contents"][1]["parts"],
        json!([{"text": "Done."}, {"text": "", "thoughtSignature": "sig-end"}])
    );
}

/// What the decoder produced, assembled as the loop does, is encoded back with every
/// signature on the part it came with.
#[test]
fn signatures_go_back_on_their_own_parts_unchanged() {
    let reasoning = |sig: &str| {
        Part::Reasoning(Reasoning {
            origin: "gemini".into(),
            text: "thought".into(),
            signature: Some(sig.into()),
            ..Reasoning::default()
        })
    };
    let mut answer = Message::assistant("Reading.");
    answer.parts.insert(0, reasoning("sig-text"));
    answer.parts.push(reasoning("sig-call"));
    answer
        .parts
        .push(Part::ToolCall(call("gemini-call-1", json!({"path": "a"}))));
    answer
        .parts
        .push(Part::ToolCall(call("gemini-call-2", json!("not json"))));
    // Reasoning of another protocol is not Gemini's to take.
    answer.parts.push(Part::Reasoning(Reasoning {
        origin: "anthropic".into(),
        text: "x".into(),
        signature: Some("anthropic-sig".into()),
        ..Reasoning::default()
    }));
    let body = request_body(&request(vec![
        Message::user("go"),
        answer,
        Message::tool_result("gemini-call-1", "A", false),
        Message::tool_result("gemini-call-2", "", true),
    ]));
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Reading.", "thoughtSignature": "sig-text"},
            {"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "sig-call"},
            {"functionCall": {"name": "read", "args": {"raw_arguments": "not json"}}},
        ]})
    );
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "read", "response": {"output": "A"}}},
            {"functionResponse": {"name": "read", "response": {"error": "(no output)"}}},
        ]}),
        "made-up ids stay in pith; one content answers both calls"
    );
}

#[test]
fn the_body_carries_system_tools_config_and_images() {
    let mut with_image = Message::user("look");
    with_image.parts.push(Part::Image(Image {
        path: "s.png".into(),
        media_type: "image/png".into(),
        data: "iVBO".into(),
        width: 1,
        height: 1,
    }));
    let mut req = request(vec![
        Message::assistant("first"),
        Message::system("extra"),
        with_image,
    ]);
    req.max_output_tokens = Some(1000);
    req.temperature = Some(0.5);
    req.tools.push(ToolDefinition {
        name: "ls".into(),
        description: "List".into(),
        parameters: json!({}),
    });
    let body = request_body(&req);
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "sys\n\nextra"}]})
    );
    assert_eq!(
        body["contents"][0],
        json!({"role": "user", "parts": [{"text": "(conversation continues)"}]})
    );
    assert_eq!(
        body["contents"][2]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBO"}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["type"],
        "object"
    );
    assert!(body["tools"][0]["functionDeclarations"][1]
        .get("parametersJsonSchema")
        .is_none());
    assert_eq!(
        body["generationConfig"],
        json!({"maxOutputTokens": 1000, "temperature": 0.5})
    );
}

#[test]
fn reasoning_asks_for_thoughts_by_level_on_gemini_3_and_by_budget_before() {
    let mut req = request(vec![Message::user("hi")]);
    req.reasoning = Some(ReasoningEffort::Medium);
    assert_eq!(
        request_body(&req)["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 10000})
    );
    req.model = "gemini-3-pro-preview".into();
    req.reasoning = Some(ReasoningEffort::Low);
    assert_eq!(
        request_body(&req)["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingLevel": "low"})
    );
    req.reasoning = Some(ReasoningEffort::Off);
    assert!(request_body(&req).get("generationConfig").is_none());
}

/// Every request shape of the shared corpus: contents start with the user, roles
/// alternate, no content is empty, every call is answered by the next content.
#[test]
fn every_varied_request_is_well_formed() {
    for req in crate::wire::adapter::tests::varied_requests() {
        let body = request_body(&req);
        let contents = body["contents"].as_array().unwrap();
        for (i, content) in contents.iter().enumerate() {
            let expected = if i % 2 == 0 { "user" } else { "model" };
            assert_eq!(content["role"], expected, "{req:?}");
            let parts = content["parts"].as_array().unwrap();
            assert!(!parts.is_empty(), "{req:?}");
            let calls = parts
                .iter()
                .filter(|p| p.get("functionCall").is_some())
                .count();
            if calls > 0 {
                let answers = contents[i + 1]["parts"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p.get("functionResponse").is_some())
                    .count();
                assert_eq!(answers, calls, "{req:?}");
            }
        }
        assert_eq!(
            encode_body(&req),
            encode_body(&req.clone()),
            "deterministic"
        );
    }
}

#[test]
fn google_errors_inside_the_stream_are_classified() {
    let error = |code: u16, status: &str, message: &str| {
        let event = json!({"error": {"code": code, "message": message, "status": status}});
        parse(&[&event.to_string()]).unwrap_err()
    };
    assert!(matches!(
        error(429, "RESOURCE_EXHAUSTED", "Resource exhausted"),
        ProviderError::RateLimited { .. }
    ));
    let overloaded = error(503, "UNAVAILABLE", "The model is overloaded.");
    assert!(
        matches!(overloaded, ProviderError::Overloaded { status: 503, .. }),
        "{overloaded:?}"
    );
    assert!(error(500, "INTERNAL", "An internal error has occurred.").is_retryable());
    let long = error(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
    );
    assert!(
        matches!(long, ProviderError::ContextLengthExceeded { .. }),
        "{long:?}"
    );
    assert!(!error(400, "INVALID_ARGUMENT", "bad field").is_retryable());
}

#[test]
fn http_errors_in_googles_format_are_classified() {
    let body = r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
    assert!(matches!(
        ProviderError::from_http(400, None, body),
        ProviderError::ContextLengthExceeded { .. }
    ));
    let key = r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT"}}"#;
    let error = ProviderError::from_http(400, None, key);
    assert!(error.to_string().contains("API key not valid"), "{error}");
}

#[test]
fn a_stream_without_a_finish_reason_is_broken_and_bad_events_are_errors() {
    let cut = parse(&[r#"{"candidates":[{"content":{"parts":[{"text":"Hal"}]}}]}"#]);
    assert!(matches!(cut, Err(ProviderError::Stream(_))), "{cut:?}");
    assert!(matches!(
        parse(&[r#"{"candidates":[{"content":"#]),
        Err(ProviderError::Stream(_))
    ));
    let blocked = parse(&[r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#]).unwrap_err();
    assert!(blocked.to_string().contains("SAFETY"), "{blocked}");
    assert!(!blocked.is_retryable());
}

#[test]
fn an_answer_gemini_withholds_is_an_error_and_a_malformed_call_is_retried() {
    let withheld = parse(&[r#"{"candidates":[{"finishReason":"SAFETY","index":0}]}"#]).unwrap_err();
    assert!(
        matches!(&withheld, ProviderError::Provider(m) if m.contains("SAFETY")),
        "{withheld:?}"
    );
    assert!(!withheld.is_retryable());
    let malformed = parse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":""}]},"finishReason":"MALFORMED_FUNCTION_CALL"}]}"#,
    ])
    .unwrap_err();
    assert!(malformed.is_retryable(), "{malformed:?}");
    // What arrived before a stop is kept: the stop is then only the stop reason.
    let partial = parse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"Part of it"}]},"finishReason":"RECITATION"}]}"#,
    ])
    .unwrap();
    assert_eq!(
        partial.last(),
        Some(&StreamChunk::Done {
            stop_reason: Some("recitation".into())
        })
    );
}

#[test]
fn max_tokens_is_the_loops_length_stop() {
    let chunks = parse(&[
        r#"{"candidates":[{"content":{"parts":[{"text":"cut"}]},"finishReason":"MAX_TOKENS"}]}"#,
    ])
    .unwrap();
    assert!(
        crate::tool_loop::guard::Truncation::from_stop_reason(match chunks.last() {
            Some(StreamChunk::Done { stop_reason }) => stop_reason.as_deref(),
            _ => None,
        })
        .is_some()
    );
}

#[test]
fn the_key_never_goes_in_the_url() {
    let adapter = Gemini::new("http://127.0.0.1:9/v1beta/", Some("secret-key")).unwrap();
    let url = adapter.stream_url("gemini-2.5-pro").unwrap();
    assert_eq!(
        url,
        "http://127.0.0.1:9/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert!(!url.contains("secret-key") && !format!("{adapter:?}").contains("secret-key"));
    assert_eq!(
        adapter.stream_url("tunedModels/mine-1").unwrap(),
        "http://127.0.0.1:9/v1beta/tunedModels/mine-1:streamGenerateContent?alt=sse"
    );
    for bad in ["gemini 2.5", "../x", "a?key=1", "models/"] {
        assert!(adapter.stream_url(bad).is_err(), "{bad}");
    }
}
