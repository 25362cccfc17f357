//! The `pith-testkit` binary as end-to-end tests use it: the listening line, serving the
//! script, `--record`, `--port`, clean exit on SIGTERM/SIGINT, and a clear error for a
//! broken script.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{call_json, client};
use pith_testkit::{Script, Turn};
use serde_json::{json, Value};

const BINARY: &str = env!("CARGO_BIN_EXE_pith-testkit");

/// Starts the binary and returns it with the first line it printed.
fn start(arguments: &[&str]) -> (Child, String) {
    let mut child = Command::new(BINARY)
        .args(arguments)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the pith-testkit binary starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// Sends `signal` (e.g. `-TERM`) to the child and waits for it to exit.
fn stop_with(child: &mut Child, signal: &str) -> ExitStatus {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} failed");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("pith-testkit did not exit within 10 s of {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write_script(dir: &Path, script: &Script) -> String {
    let path = dir.join("script.json");
    std::fs::write(&path, script.to_json_pretty()).unwrap();
    path.display().to_string()
}

/// The port in `listening on http://127.0.0.1:PORT\n`, checking the line's exact shape.
fn listening_port(line: &str) -> u16 {
    let port = line
        .strip_prefix("listening on http://127.0.0.1:")
        .and_then(|rest| rest.strip_suffix('\n'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    port.parse()
        .unwrap_or_else(|_| panic!("not a port in {line:?}"))
}

#[tokio::test]
async fn binary_prints_the_listening_line_serves_records_and_exits_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        &Script::anthropic([Turn::text("Hello from the script.")]),
    );
    let record = dir.path().join("record.jsonl");
    let (mut child, line) = start(&["--script", &script, "--record", record.to_str().unwrap()]);
    let port = listening_port(&line);
    assert!(port > 0);

    let response = client()
        .post(format!("http://127.0.0.1:{port}/v1/messages"))
        .header("x-api-key", "sk-ant-not-to-be-recorded")
        .json(&json!({"model": "m", "max_tokens": 16, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["content"][0]["text"], "Hello from the script.");

    let recorded = std::fs::read_to_string(&record).unwrap();
    assert_eq!(recorded.lines().count(), 1, "{recorded}");
    assert!(recorded.ends_with('\n'), "{recorded:?}");
    let line: Value = serde_json::from_str(recorded.trim_end()).unwrap();
    assert_eq!(
        line,
        json!({"model": "m", "max_tokens": 16, "messages": []}),
        "the record file gets the body while the server runs"
    );
    assert!(!recorded.contains("sk-ant"));

    let (status, _, over) = call_json(
        &format!("http://127.0.0.1:{port}/v1/messages"),
        &json!({"model": "m"}),
    )
    .await;
    assert_eq!(status, 500);
    assert!(over.to_string().contains("script exhausted"));

    let exit = stop_with(&mut child, "-TERM");
    assert!(exit.success(), "SIGTERM ends the binary cleanly: {exit:?}");
}

#[test]
fn binary_listens_on_the_given_port_and_exits_on_sigint() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(dir.path(), &Script::openai_chat([]));
    let free_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (mut child, line) = start(&["--script", &script, "--port", &free_port.to_string()]);
    assert_eq!(line, format!("listening on http://127.0.0.1:{free_port}\n"));
    let exit = stop_with(&mut child, "-INT");
    assert!(exit.success(), "SIGINT ends the binary cleanly: {exit:?}");
}

#[test]
fn binary_rejects_a_broken_script_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("broken.json");
    std::fs::write(
        &script,
        r#"{"protocol": "openai-chat", "turns": [{"fault": "http_418"}]}"#,
    )
    .unwrap();
    let output = Command::new(BINARY)
        .args(["--script", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(
        output.stdout.is_empty(),
        "no listening line for a broken script"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("broken.json") && stderr.contains("http_418"),
        "the error names the file and the bad value: {stderr}"
    );
}
