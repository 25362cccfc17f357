//! End-to-end: `pith run --model bedrock/<model-id>` against the testkit speaking Bedrock's
//! ConverseStream (binary event stream), signed with fixed credentials through the real
//! AWS credential chain (environment variables; no profile files, no instance metadata).
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{kinds, records, stderr, stdout, Sandbox};
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL_ID: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";

fn model() -> String {
    format!("bedrock/{MODEL_ID}")
}

/// A tool loop whose first answer reports usage over the 200k window's automatic
/// threshold (171,000): pith compacts privately, then the turn continues.
fn compacting_script() -> Script {
    Script::bedrock([
        Turn::text("Let me look.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(180_000, 40)
            .with_cached_input(150_000),
        Turn::text(SUMMARY),
        Turn::text("Done."),
    ])
}

#[test]
fn a_bedrock_tool_loop_compacts_persists_and_replays() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(compacting_script().then(Turn::text("Second answer."))).unwrap();
    sandbox.believe_scripted_usage();
    let first = sandbox.run(
        &server,
        &["--model", &model(), "--format", "json", "read the notes"],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let result: Value = serde_json::from_str(stdout(&first).trim()).unwrap();
    assert_eq!(result["text"], json!("Let me look.\nDone."));
    assert_eq!(result["compactions"][0]["trigger"], json!("auto"));
    assert_eq!(result["error"], Value::Null);
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() >= 180_000);
    assert!(result["usage"]["cached_input_tokens"].as_u64().unwrap() >= 150_000);
    assert!(
        result["cost"].as_f64().unwrap() > 0.0,
        "the Bedrock catalog prices it"
    );
    let session_id = result["session_id"].as_str().unwrap().to_owned();

    // What went over the wire: signed ConverseStream requests to the model's path.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "parent, compaction, parent");
    for request in &requests {
        assert_eq!(
            request.path,
            "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
        );
        assert_eq!(
            request.header("authorization"),
            Some("<redacted>"),
            "signed, and the testkit never records the signature"
        );
        let date = request.header("x-amz-date").unwrap_or_default();
        assert_eq!(date.len(), 16, "an ISO-8601 basic date: {date}");
        assert!(request.header("x-amz-security-token").is_none());
    }
    // The tool really ran, its result went back as a toolResult, and the compaction
    // request carried the auto prompt after it.
    let compaction = requests[1].body.to_string();
    assert!(
        compaction.contains("remember the milk"),
        "{compaction:.400}"
    );
    assert!(compaction.contains("\"toolResult\""));
    let after = &requests[2].body["messages"];
    assert_eq!(after.as_array().unwrap().len(), 1);
    assert!(after[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("<compacted_context>## Goal"));

    // Persisted: the pair recorded, and no credential anywhere in the session's files.
    let transcript_path = sandbox.only_transcript();
    let records = records(&transcript_path);
    assert_eq!(
        kinds(&records),
        [
            "session_started",
            "user_message",
            "assistant_turn",
            "compaction_applied",
            "assistant_turn"
        ]
    );
    let everything = std::fs::read_to_string(&transcript_path).unwrap();
    assert!(!everything.contains("pith-test-secret-key"));
    assert!(!everything.contains("AKIDPITHTEST"));

    // Replayed, then continued from the compacted history with the same model.
    let replay = sandbox
        .pith(None)
        .args(["replay", &session_id])
        .output()
        .unwrap();
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let text = stdout(&replay);
    assert!(
        text.contains("read the notes") && text.contains("Let me look.") && text.contains("Done."),
        "{text}"
    );
    assert!(text.to_lowercase().contains("compact"), "{text}");

    let second = sandbox.run(&server, &["--session", &session_id, "and now?"]);
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    assert_eq!(stdout(&second), "Second answer.\n");
    let request = &server.requests()[3];
    assert!(request.path.contains("us.anthropic.claude-sonnet-4-5"));
    let messages = request.body["messages"].as_array().unwrap();
    assert!(messages[0]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("<compacted_context>"));
}

#[test]
fn bedrock_throttling_and_unavailability_are_retried_and_a_context_overflow_is_typed() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::bedrock([
        Turn::fault(Fault::Http429),
        Turn::fault(Fault::Overloaded),
        Turn::text("Recovered."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", &model(), "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Recovered.\n");
    assert_eq!(
        server.request_count(),
        3,
        "throttling and unavailability retried"
    );

    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::bedrock([
        Turn::fault(Fault::ContextLength).with_usage(250_000, 0),
        Turn::fault(Fault::ContextLength).with_usage(250_000, 0),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", &model(), "go"]);
    assert_eq!(
        output.status.code(),
        Some(3),
        "the context-length exit code; stderr: {}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("context length exceeded"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        server.request_count(),
        2,
        "sent once more after recalibrating, then not retried"
    );
}

#[test]
fn without_a_region_bedrock_says_how_to_set_one() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::bedrock([Turn::text("never")])).unwrap();
    let output = sandbox
        .pith(Some(&server))
        .env_remove("AWS_REGION")
        .args(["run", "--model", &model(), "go"])
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("AWS_REGION"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.request_count(), 0);
}
