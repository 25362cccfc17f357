//! End-to-end: `pith run --model gemini/…` against the testkit speaking Gemini — a
//! thinking tool loop with an automatic compaction, thought signatures sent back (the
//! testkit refuses a call without its signature), persisted, replayed and resumed; the
//! key only ever in the `x-goog-api-key` header (never in a URL, never across a redirect);
//! hostile Gemini streams held to the same bounds as the other protocols'.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::{kinds, records, stderr, stdout, Sandbox};
use pith_testkit::{Script, TestServer, Turn, REDACTED};
use serde_json::{json, Value};

const MODEL: &str = "gemini/gemini-2.5-pro";
/// The key `Sandbox::pith` gives the binary.
const KEY: &str = "gemini-test-key";
const SUMMARY: &str = "## Goal\nRead the notes.\n## Key Instructions\nNone.";
/// Reported input above the automatic threshold of the catalog's 1,048,576-token window
/// (about 896,000) and below its input budget.
const OVER_THRESHOLD: u64 = 950_000;

/// A thinking tool turn over the threshold, the private summary, the final answer, then
/// an answer for a resumed session.
fn script() -> Script {
    Script::gemini([
        Turn::text("Let me look.")
            .with_reasoning("The notes first.")
            .with_tool_call("read", json!({"path": "notes.txt"}))
            .with_usage(OVER_THRESHOLD, 40)
            .with_cached_input(900_000)
            .with_reasoning_tokens(12),
        Turn::text(SUMMARY),
        Turn::text("Done.").with_reasoning("All read."),
        Turn::text("Second answer."),
    ])
}

fn text_of(content: &Value) -> String {
    content["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

#[test]
fn a_gemini_tool_loop_compacts_persists_replays_and_resumes() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let server = TestServer::start(script()).unwrap();
    sandbox.believe_scripted_usage();
    let first = sandbox.run(
        &server,
        &[
            "--model",
            MODEL,
            "--reasoning",
            "medium",
            "--format",
            "json",
            "read the notes",
        ],
    );
    assert_eq!(first.status.code(), Some(0), "stderr: {}", stderr(&first));
    let result: Value = serde_json::from_str(stdout(&first).trim()).expect("one JSON object");
    assert_eq!(result["text"], json!("Let me look.\nDone."));
    assert_eq!(result["compactions"][0]["trigger"], json!("auto"));
    assert_eq!(result["error"], Value::Null);
    assert!(result["usage"]["input_tokens"].as_u64().unwrap() >= OVER_THRESHOLD);
    assert!(result["usage"]["cached_input_tokens"].as_u64().unwrap() >= 900_000);
    assert!(result["usage"]["reasoning_tokens"].as_u64().unwrap() >= 12);
    assert!(result["cost"].as_f64().unwrap() > 0.0, "catalog prices");
    let session_id = result["session_id"].as_str().unwrap().to_owned();

    // On the wire: the model in the path, the key in the header only, thinking asked for.
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "parent, summary, parent");
    for request in &requests {
        assert_eq!(
            request.path,
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
        );
        assert_eq!(request.query, "alt=sse");
        assert_eq!(request.header("x-goog-api-key"), Some(REDACTED));
        assert!(!request.body.to_string().contains(KEY));
    }
    assert_eq!(
        requests[0].body["generationConfig"]["thinkingConfig"],
        json!({"includeThoughts": true, "thinkingBudget": 10_000})
    );
    // The summary request is the parent request plus the prompt: the signed call is in
    // it (the testkit would have refused it otherwise) and so is the tool's output.
    let summary = &requests[1].body["contents"];
    assert_eq!(
        summary[1]["parts"][1],
        json!({"functionCall": {"id": "fc_1", "name": "read", "args": {"path": "notes.txt"}},
               "thoughtSignature": "testkit-signature-1"})
    );
    assert!(summary.to_string().contains("remember the milk"));
    // After the compaction: one user content, the compacted context.
    let after = requests[2].body["contents"].as_array().unwrap();
    assert_eq!(after.len(), 1);
    assert!(text_of(&after[0]).starts_with("<compacted_context>## Goal"));

    // Persisted: the pair is in the transcript, with the signature; the key is not.
    let transcript = sandbox.only_transcript();
    let records = records(&transcript);
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
    assert!(records[2].to_string().contains("testkit-signature-1"));
    assert!(records[2].to_string().contains("remember the milk"));
    assert!(!std::fs::read_to_string(&transcript).unwrap().contains(KEY));

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

    // Resumed: the session's model, from the compacted history, the last answer's
    // signature (on its empty last part) sent back as it came.
    let second = sandbox.run(&server, &["--session", &session_id, "and now?"]);
    assert_eq!(second.status.code(), Some(0), "stderr: {}", stderr(&second));
    assert_eq!(stdout(&second), "Second answer.\n");
    let resumed = server.requests().pop().unwrap();
    assert_eq!(
        resumed.path,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    );
    let contents = resumed.body["contents"].as_array().unwrap();
    assert!(text_of(&contents[0]).starts_with("<compacted_context>"));
    assert_eq!(
        contents[1]["parts"],
        json!([{"text": "Done."}, {"text": "", "thoughtSignature": "testkit-signature-3"}])
    );
    assert_eq!(text_of(contents.last().unwrap()), "and now?");
}

#[test]
fn google_api_key_works_too_and_a_missing_key_names_both_variables() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::gemini([Turn::text("Hi.")])).unwrap();
    let output = sandbox
        .pith(Some(&server))
        .env_remove("GEMINI_API_KEY")
        .env("GOOGLE_API_KEY", "google-test-key")
        .args(["run", "--model", "gemini/gemini-2.5-flash", "hello"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Hi.\n");
    assert_eq!(
        server.requests()[0].header("x-goog-api-key"),
        Some(REDACTED)
    );

    let missing = sandbox
        .pith(Some(&server))
        .env_remove("GEMINI_API_KEY")
        .args(["run", "--model", MODEL, "hello"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("set GEMINI_API_KEY (or GOOGLE_API_KEY)"),
        "{}",
        stderr(&missing)
    );
}

fn write_config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

/// `pith run --format json` with the Gemini model.
fn run_json(sandbox: &Sandbox, server: &TestServer) -> (std::process::Output, Value) {
    let output = sandbox.run(server, &["--model", MODEL, "--format", "json", "go"]);
    let result = serde_json::from_str(stdout(&output).trim()).unwrap_or(Value::Null);
    (output, result)
}

/// With redirects allowed, a 307 to another origin is followed without the key: the
/// `x-goog-api-key` header is a credential like any other.
#[test]
fn a_followed_redirect_never_carries_the_gemini_key_to_another_origin() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "[providers.gemini]\nfollow_redirects = true\n");
    let target = TestServer::start(Script::gemini([Turn::text("reached elsewhere")])).unwrap();
    let location = format!(
        "{}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        target.origin()
    );
    let server = TestServer::start(Script::gemini([
        Turn::fault(pith_testkit::Fault::Redirect).with_redirect_to(location)
    ]))
    .unwrap();
    let (output, result) = run_json(&sandbox, &server);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(result["text"], "reached elsewhere");
    assert_eq!(
        server.requests()[0].header("x-goog-api-key"),
        Some(REDACTED)
    );
    let arrived = target.requests();
    assert_eq!(arrived.len(), 1);
    assert_eq!(
        arrived[0].header("x-goog-api-key"),
        None,
        "the key stayed home"
    );
    assert_eq!(arrived[0].query, "alt=sse", "and it was never in the URL");
}

/// The bounds hold for Gemini streams too: endless text is cut at the output cap, and
/// 10,000 calls in one answer are refused before any runs.
#[test]
fn hostile_gemini_streams_meet_the_same_bounds() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::gemini([Turn::fault(
        pith_testkit::Fault::EndlessText,
    )]))
    .unwrap();
    let (output, result) = run_json(&sandbox, &server);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("cut off: output cap"),
        "{}",
        stderr(&output)
    );
    assert!(result["text"]
        .as_str()
        .unwrap()
        .starts_with("word0 number 0"));

    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::gemini([Turn::fault(
        pith_testkit::Fault::ManyToolCalls,
    )
    .with_count(10_000)]))
    .unwrap();
    let (output, _) = run_json(&sandbox, &server);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("more than 256 tool calls"),
        "{}",
        stderr(&output)
    );
    let last = records(&sandbox.only_transcript()).pop().unwrap();
    assert!(!last.to_string().contains("tool_result"), "no call ran");
}
