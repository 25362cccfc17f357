//! End-to-end: `pith run` against servers that misbehave the way runaway and hostile
//! ones do (pith-testkit's hostile faults). Each case checks the error, what was kept,
//! and the peak resident memory of the `pith` process (its own `VmHWM`).
#![allow(clippy::unwrap_used, missing_docs, clippy::print_stderr)] // test code: a failed unwrap is a failed test, helpers need no docs, the measured peak is shown

mod common;

use common::{records, run_measuring_peak_rss, stderr, stdout, Sandbox};
use pith_testkit::{Fault, Protocol, Script, TestServer, Turn};
use serde_json::Value;

/// Peak memory allowed to `pith run` against any hostile server: "a few hundred MB",
/// whatever the server sends (the o200k tables alone take ~70 MiB).
const PEAK_RSS_LIMIT_KIB: u64 = 300 * 1024;

fn model(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Anthropic => "anthropic/claude-sonnet-4-5",
        Protocol::OpenAiChat => "openai-chat/gpt-4o",
        Protocol::OpenAiResponses => "openai/gpt-4o",
        Protocol::Gemini => "gemini/gemini-2.5-flash",
        Protocol::Bedrock => "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
    }
}

/// Runs `pith run --format json` against `server`, measuring its peak RSS.
fn run(sandbox: &Sandbox, server: &TestServer, extra: &[&str]) -> (std::process::Output, u64) {
    let mut command = sandbox.pith(Some(server));
    command
        .args([
            "run",
            "--format",
            "json",
            "--model",
            model(server.protocol()),
        ])
        .args(extra)
        .arg("go");
    let (output, peak) = run_measuring_peak_rss(command);
    eprintln!("peak RSS of pith run: {} MiB", peak / 1024);
    assert!(
        peak > 0 && peak < PEAK_RSS_LIMIT_KIB,
        "peak RSS {} MiB (limit {} MiB); stderr: {}",
        peak / 1024,
        PEAK_RSS_LIMIT_KIB / 1024,
        stderr(&output)
    );
    (output, peak)
}

fn result(output: &std::process::Output) -> Value {
    serde_json::from_str(stdout(output).trim()).expect("the json result is printed")
}

fn transcript_bytes(sandbox: &Sandbox) -> u64 {
    std::fs::metadata(sandbox.only_transcript())
        .map(|m| m.len())
        .unwrap_or(0)
}

fn write_config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

#[test]
fn endless_deltas_are_cut_at_the_output_cap_and_the_job_goes_on() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([Turn::fault(Fault::EndlessText)])).unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("cut off: output cap (67,200 tokens)"),
        "the user is told: {}",
        stderr(&output)
    );
    let text = result(&output)["text"].as_str().unwrap().to_owned();
    // 64,000 tokens of the model's cap + a 5% margin, at about 4 bytes a token.
    assert!(
        text.len() > 150_000 && text.len() < 400_000,
        "kept up to the cap: {} bytes",
        text.len()
    );
    assert!(text.starts_with("word0 number 0"));
    let transcript = records(&sandbox.only_transcript());
    let last = transcript.last().unwrap();
    assert!(
        last.to_string().contains("truncated: output cap"),
        "marked in the transcript"
    );
    assert!(
        last["messages"]
            .to_string()
            .contains("[pith] Your previous answer was cut off"),
        "the model is told in its history"
    );
    assert!(
        transcript_bytes(&sandbox) < 2 * 1024 * 1024,
        "the transcript stays near the cap: {} bytes",
        transcript_bytes(&sandbox)
    );
}

#[test]
fn a_degenerate_stream_repeating_one_line_ends_after_fifty_repeats() {
    let sandbox = Sandbox::new();
    let server =
        TestServer::start(Script::openai_chat([Turn::fault(Fault::RepeatedLine)])).unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("the same line repeated 50 times in a row"),
        "{}",
        stderr(&output)
    );
    let text = result(&output)["text"].as_str().unwrap().to_owned();
    assert_eq!(text.matches("Echo echo echo echo.").count(), 50);
}

#[test]
fn one_event_of_200_mb_is_refused_at_the_event_bound_and_not_retried() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::openai_chat([
        Turn::fault(Fault::HugeEvent).with_size_mb(200),
        Turn::text("a retry must not happen"),
    ]))
    .unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("a server-sent event exceeded 32 MiB (max_event_bytes)"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.request_count(), 1, "a bound passed is never retried");
}

#[test]
fn one_event_of_200_mb_is_refused_by_the_anthropic_adapter_too() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::fault(Fault::HugeEvent).with_size_mb(200)
    ]))
    .unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("max_event_bytes"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn one_bedrock_frame_of_200_mb_is_refused_from_its_length_prefix() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::bedrock([
        Turn::fault(Fault::HugeEvent).with_size_mb(200),
        Turn::text("a retry must not happen"),
    ]))
    .unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("exceeded 32 MiB (max_event_bytes)"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.request_count(), 1, "a bound passed is never retried");
}

#[test]
fn tool_arguments_of_100_mb_stop_at_the_output_cap_and_nothing_runs() {
    for protocol in [
        Protocol::OpenAiResponses,
        Protocol::Anthropic,
        Protocol::Bedrock,
    ] {
        let sandbox = Sandbox::new();
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::HugeToolArguments).with_size_mb(100)],
        ))
        .unwrap();
        let (output, _) = run(&sandbox, &server, &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("cut off: output cap"),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert_eq!(server.request_count(), 1);
        let transcript = records(&sandbox.only_transcript())
            .last()
            .unwrap()
            .to_string();
        assert!(
            !transcript.contains("tool_result") && !transcript.contains("tool_call"),
            "the cut call was not run: {transcript:.300}"
        );
    }
}

#[test]
fn with_a_huge_output_cap_100_mb_of_arguments_meet_the_argument_bound() {
    for protocol in [
        Protocol::OpenAiResponses,
        Protocol::Anthropic,
        Protocol::Bedrock,
    ] {
        let sandbox = Sandbox::new();
        write_config(
            &sandbox,
            &format!(
                "[models.\"{}\"]\nmax_output_tokens = 1000000000\n",
                model(protocol)
            ),
        );
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::HugeToolArguments).with_size_mb(100)],
        ))
        .unwrap();
        let (output, _) = run(&sandbox, &server, &[]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("a tool call's arguments exceeded 16 MiB"),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert_eq!(server.request_count(), 1, "a bound passed is never retried");
        let transcript = records(&sandbox.only_transcript())
            .last()
            .unwrap()
            .to_string();
        assert!(!transcript.contains("tool_result"), "nothing ran");
    }
}

#[test]
fn ten_thousand_tool_calls_in_one_answer_are_refused() {
    for protocol in [Protocol::Anthropic, Protocol::OpenAiChat, Protocol::Bedrock] {
        let sandbox = Sandbox::new();
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::ManyToolCalls).with_count(10_000)],
        ))
        .unwrap();
        let (output, _) = run(&sandbox, &server, &[]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("more than 256 tool calls"),
            "{protocol:?}: {}",
            stderr(&output)
        );
        let transcript = records(&sandbox.only_transcript());
        assert!(
            !transcript
                .last()
                .unwrap()
                .to_string()
                .contains("tool_result"),
            "no call ran"
        );
    }
}

/// A server on another port (another origin) that records what reaches it.
fn elsewhere(protocol: Protocol) -> TestServer {
    TestServer::start(Script::new(protocol, [Turn::text("reached elsewhere")])).unwrap()
}

#[test]
fn a_cross_origin_redirect_is_an_error_naming_the_target_and_no_key_leaves() {
    for protocol in [
        Protocol::Anthropic,
        Protocol::OpenAiChat,
        Protocol::OpenAiResponses,
    ] {
        let sandbox = Sandbox::new();
        let target = elsewhere(protocol);
        let location = format!("{}{}", target.origin(), protocol.endpoint_path());
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::Redirect).with_redirect_to(location.clone())],
        ))
        .unwrap();
        let (output, _) = run(&sandbox, &server, &[]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{protocol:?}: {}",
            stderr(&output)
        );
        let said = stderr(&output);
        assert!(
            said.contains("HTTP 307") && said.contains(&location) && said.contains("base URL"),
            "{protocol:?}: {said}"
        );
        assert_eq!(
            target.request_count(),
            0,
            "{protocol:?}: nothing went elsewhere"
        );
    }
}

#[test]
fn with_redirects_allowed_the_request_reaches_the_other_origin_without_any_credential() {
    for (protocol, provider, key_header) in [
        (Protocol::Anthropic, "anthropic", "x-api-key"),
        (Protocol::OpenAiChat, "openai-chat", "authorization"),
        (Protocol::OpenAiResponses, "openai", "authorization"),
    ] {
        let sandbox = Sandbox::new();
        write_config(
            &sandbox,
            &format!("[providers.{provider}]\nfollow_redirects = true\n"),
        );
        let target = elsewhere(protocol);
        let location = format!("{}{}", target.origin(), protocol.endpoint_path());
        let server = TestServer::start(Script::new(
            protocol,
            [Turn::fault(Fault::Redirect).with_redirect_to(location)],
        ))
        .unwrap();
        let (output, _) = run(&sandbox, &server, &[]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{protocol:?}: {}",
            stderr(&output)
        );
        assert_eq!(result(&output)["text"], "reached elsewhere");
        let arrived = target.requests();
        assert_eq!(arrived.len(), 1);
        assert_eq!(
            arrived[0].header(key_header),
            None,
            "{protocol:?}: the key must not reach another origin"
        );
        assert!(
            server.requests()[0].header(key_header).is_some(),
            "the key went to the configured origin"
        );
    }
}

#[test]
fn a_stream_of_keep_alives_alone_ends_at_the_no_content_timeout() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, "[limits]\nno_content_timeout_s = 2\n");
    let server =
        TestServer::start(Script::anthropic([Turn::fault(Fault::HeartbeatsOnly)])).unwrap();
    let (output, _) = run(&sandbox, &server, &[]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("sent no content for more than 2s"),
        "{}",
        stderr(&output)
    );
    assert_eq!(server.request_count(), 1, "not retried");
}

#[test]
fn a_50_mb_error_body_is_read_only_up_to_its_bound_and_quoted_short() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::fault(Fault::HugeErrorBody).with_size_mb(50),
        Turn::text("Recovered."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args([
        "run",
        "--format",
        "stream-json",
        "--model",
        model(Protocol::Anthropic),
        "go",
    ]);
    let (output, peak) = run_measuring_peak_rss(command);
    assert!(peak < PEAK_RSS_LIMIT_KIB, "peak {} MiB", peak / 1024);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let events: Vec<Value> = stdout(&output)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let retry = events
        .iter()
        .find(|e| e["type"] == "retry")
        .expect("retried");
    let reason = retry["reason"].as_str().unwrap();
    assert!(reason.contains("HTTP 500"), "{reason}");
    assert!(
        reason.len() < 1_000,
        "quoted shortened: {} bytes",
        reason.len()
    );
    assert_eq!(events.last().unwrap()["text"], "Recovered.");
}
