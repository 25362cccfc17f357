//! End-to-end: `pith run --output-schema FILE` through the real binary against the
//! testkit, on every protocol: the structured answer, the one correction (forced where
//! the protocol can force it), and the "schema not met" exit code.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::path::PathBuf;

use common::{json_lines, kinds, model_of, records, stderr, stdout, Sandbox};
use pith_testkit::{Protocol, RecordedRequest, Script, TestServer, Turn};
use serde_json::{json, Value};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "verdict": {"enum": ["pass", "fail"]},
            "failures": {"type": "integer", "minimum": 0}
        },
        "required": ["verdict", "failures"],
        "additionalProperties": false
    })
}

fn write_schema(sandbox: &Sandbox) -> PathBuf {
    let path = sandbox.root.path().join("verdict.schema.json");
    std::fs::write(&path, schema().to_string()).unwrap();
    path
}

fn run_json(sandbox: &Sandbox, server: &TestServer, extra: &[&str]) -> std::process::Output {
    let schema = write_schema(sandbox);
    let mut args = vec![
        "--model",
        model_of(server.protocol()),
        "--output-schema",
        schema.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push("run the tests and report");
    sandbox.run(server, &args)
}

/// The text of every user message of a request body, whatever the protocol.
fn user_texts(request: &RecordedRequest) -> String {
    request.body.to_string()
}

/// What the protocol's request carries natively for the schema: `(guide, forced)` checks.
fn assert_native(protocol: Protocol, request: &RecordedRequest, forced: bool) {
    let body = &request.body;
    match protocol {
        Protocol::OpenAiResponses => {
            assert_eq!(
                body["text"]["format"]["type"],
                json!("json_schema"),
                "{body}"
            );
            assert_eq!(body["text"]["format"]["schema"], schema());
            assert_eq!(body["text"]["format"]["strict"], json!(true));
            assert_eq!(body.get("tool_choice").is_some(), forced, "{body}");
            if forced {
                assert_eq!(body["tool_choice"], json!("none"));
            }
        }
        Protocol::OpenAiChat => {
            assert_eq!(body["response_format"]["type"], json!("json_schema"));
            assert_eq!(body["response_format"]["json_schema"]["schema"], schema());
            assert_eq!(body.get("tool_choice").is_some(), forced, "{body}");
        }
        Protocol::Gemini => {
            let config = &body["generationConfig"];
            if forced {
                assert_eq!(config["responseJsonSchema"], schema(), "{body}");
                assert_eq!(config["responseMimeType"], json!("application/json"));
                assert_eq!(
                    body["toolConfig"]["functionCallingConfig"]["mode"],
                    json!("NONE")
                );
            } else {
                assert!(config.get("responseJsonSchema").is_none(), "{body}");
            }
        }
        Protocol::Anthropic => {
            if forced {
                assert_eq!(
                    body["tool_choice"],
                    json!({"type": "tool", "name": "structured_output"})
                );
                let last = body["tools"].as_array().unwrap().last().unwrap();
                assert_eq!(last["name"], json!("structured_output"));
                assert_eq!(last["input_schema"], schema());
            } else {
                assert!(body.get("tool_choice").is_none(), "{body}");
            }
        }
        Protocol::Bedrock => {
            if forced {
                assert_eq!(
                    body["toolConfig"]["toolChoice"],
                    json!({"tool": {"name": "structured_output"}})
                );
                assert!(body["toolConfig"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["toolSpec"]["name"] == "structured_output"));
            } else {
                assert!(body["toolConfig"].get("toolChoice").is_none(), "{body}");
            }
        }
    }
}

/// A job that works with tools, then answers with JSON matching the schema: the result
/// carries `structured_output`, the prompt carried the schema, every request asked for it
/// natively where the protocol can alongside tools, and nothing was corrected.
fn a_schema_job_returns_valid_structured_output(protocol: Protocol) {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("report.txt"), "0 failures\n").unwrap();
    let server = TestServer::start(Script::new(
        protocol,
        vec![
            Turn::text("Let me look.").with_tool_call("read", json!({"path": "report.txt"})),
            Turn::text(r#"{"verdict": "pass", "failures": 0}"#),
        ],
    ))
    .unwrap();
    let output = run_json(&sandbox, &server, &["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let result: Value = serde_json::from_str(stdout(&output).trim()).unwrap();
    assert_eq!(
        result["structured_output"],
        json!({"verdict": "pass", "failures": 0})
    );
    assert_eq!(result["error"], Value::Null);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(user_texts(&requests[0]).contains("<output_schema>"));
    for request in &requests {
        assert_native(protocol, request, false);
    }
}

/// A model that answers with prose is asked once to correct itself — the errors quoted,
/// the answer forced where the protocol can — and when it answers with prose again the
/// job ends with the schema exit code, both turns recorded.
fn a_prose_answer_is_corrected_once_then_fails_with_the_schema_exit_code(protocol: Protocol) {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::new(
        protocol,
        vec![
            Turn::text("All tests pass."),
            Turn::text("I said: all tests pass."),
            Turn::text("never asked for"),
        ],
    ))
    .unwrap();
    let output = run_json(&sandbox, &server, &["--format", "stream-json"]);
    assert_eq!(output.status.code(), Some(4), "stderr: {}", stderr(&output));
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "exactly one correction");
    assert_native(protocol, &requests[0], false);
    assert_native(protocol, &requests[1], true);
    let correction = user_texts(&requests[1]);
    assert!(
        correction.contains("does not match the required output schema")
            && correction.contains("not JSON"),
        "the validation errors are quoted: {correction}"
    );
    let lines = json_lines(&output);
    let result = lines.last().unwrap();
    assert_eq!(result["type"], json!("result"));
    assert!(result.get("structured_output").is_none());
    assert!(result["error"].as_str().unwrap().contains("output schema"));
    assert!(lines
        .iter()
        .any(|l| l["type"] == "notice" && l["text"].as_str().unwrap().contains("correct")));
    assert!(
        stderr(&output).contains("output schema"),
        "{}",
        stderr(&output)
    );
    let records = records(&sandbox.only_transcript());
    let kinds = kinds(&records);
    assert_eq!(
        kinds.iter().filter(|k| *k == "user_message").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(kinds.last().unwrap(), "assistant_turn");
}

/// The correction succeeds: on Anthropic and Bedrock the model answers through the
/// forced `structured_output` tool, whose input becomes the answer; elsewhere with JSON.
fn a_corrected_answer_is_the_structured_output(protocol: Protocol) {
    let sandbox = Sandbox::new();
    let answer = json!({"verdict": "fail", "failures": 3});
    let corrected = match protocol {
        Protocol::Anthropic | Protocol::Bedrock => {
            Turn::tool_call("structured_output", answer.clone())
        }
        _ => Turn::text(answer.to_string()),
    };
    let server = TestServer::start(Script::new(
        protocol,
        vec![Turn::text("Three tests fail."), corrected],
    ))
    .unwrap();
    let output = run_json(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    // Text mode prints the JSON answer alone, for `| jq`.
    let printed: Value = serde_json::from_str(stdout(&output).trim())
        .unwrap_or_else(|e| panic!("{e}: {:?}", stdout(&output)));
    assert_eq!(printed, answer);
    assert_eq!(server.request_count(), 2);
    // The forced call is recorded as the answer's text: no dangling tool call.
    let last = records(&sandbox.only_transcript()).pop().unwrap();
    let text = last.to_string();
    assert!(!text.contains("\"tool_call\""), "{last}");
}

every_protocol!(
    a_schema_job_returns_valid_structured_output,
    a_prose_answer_is_corrected_once_then_fails_with_the_schema_exit_code,
    a_corrected_answer_is_the_structured_output,
);

#[test]
fn a_bad_schema_is_a_usage_error_before_anything_runs() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::text("never")])).unwrap();
    let bad = sandbox.root.path().join("bad.json");
    for (text, expected) in [
        ("{not json", "not JSON"),
        (r#"{"type": 12}"#, "not usable"),
        (r#"[1, 2]"#, "not usable"),
    ] {
        std::fs::write(&bad, text).unwrap();
        let output = sandbox.run(
            &server,
            &[
                "--model",
                "anthropic/claude-sonnet-4-5",
                "--output-schema",
                bad.to_str().unwrap(),
                "go",
            ],
        );
        assert_eq!(output.status.code(), Some(2), "{text}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
    }
    let missing = sandbox.run(
        &server,
        &["--output-schema", "/nonexistent/schema.json", "go"],
    );
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(server.request_count(), 0);
    assert!(
        common::transcripts(&sandbox.pith_home()).is_empty(),
        "no session"
    );
}
