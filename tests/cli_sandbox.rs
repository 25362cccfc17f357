//! End-to-end: `pith run --approval full` cannot write outside the workspace or read the
//! deny list through `bash`, and `--sandbox` / `sandbox =` choose the mode.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::{records, stderr, Sandbox};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::json;

/// A job whose model runs `command` with bash, then answers "done".
fn bash_job(command: &str) -> TestServer {
    TestServer::start(Script::anthropic([
        Turn::tool_call("bash", json!({"command": command})),
        Turn::text("done"),
    ]))
    .unwrap()
}

/// The bash result the model saw in the job's transcript.
fn bash_result(sandbox: &Sandbox) -> String {
    let transcript = records(&sandbox.only_transcript());
    transcript
        .iter()
        .filter(|r| r["kind"] == "assistant_turn")
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .find(|p| p["type"] == "tool_result")
        .map(|p| p["content"].as_str().unwrap_or("").to_owned())
        .expect("the bash call has a result")
}

/// A planted key and the path a command would write outside the workspace (the test's
/// HOME is the sandbox root, outside the workspace).
fn plant_secrets(sandbox: &Sandbox) -> std::path::PathBuf {
    let ssh = sandbox.root.path().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE-KEY-MATERIAL\n").unwrap();
    sandbox.root.path().join("escaped.txt")
}

#[test]
fn full_approval_cannot_write_outside_or_read_keys_through_bash() {
    let sandbox = Sandbox::new();
    let outside = plant_secrets(&sandbox);
    let server = bash_job(&format!(
        "echo leak > {}; cat ~/.ssh/id_rsa; echo inside > in-workspace.txt; cat in-workspace.txt",
        outside.display()
    ));
    let output = sandbox.run(
        &server,
        &[
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--approval",
            "full",
            "go",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        !outside.exists(),
        "nothing was written outside the workspace"
    );
    let result = bash_result(&sandbox);
    assert!(
        !result.contains("PRIVATE-KEY-MATERIAL"),
        "the key never reached the model: {result}"
    );
    assert!(
        result.contains("the sandbox denied this command"),
        "the model is told plainly: {result}"
    );
    assert!(
        result.contains("inside"),
        "the workspace is writable: {result}"
    );
    assert!(sandbox.workspace().join("in-workspace.txt").exists());
}

#[test]
fn sandbox_off_on_the_command_line_or_in_config_runs_bash_unconfined() {
    for how in ["flag", "config"] {
        let sandbox = Sandbox::new();
        let outside = plant_secrets(&sandbox);
        let server = bash_job(&format!("echo written > {}", outside.display()));
        let mut args = vec![
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--approval",
            "full",
        ];
        if how == "flag" {
            args.extend(["--sandbox", "off"]);
        } else {
            let dir = sandbox.root.path().join("config").join("pith");
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("config.toml"), "sandbox = \"off\"\n").unwrap();
        }
        args.push("go");
        let output = sandbox.run(&server, &args);
        assert_eq!(output.status.code(), Some(0), "{how}: {}", stderr(&output));
        assert!(outside.exists(), "{how}: --sandbox off does not confine");
    }
}

#[test]
fn an_unknown_sandbox_mode_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let server = bash_job("true");
    let output = sandbox.run(&server, &["--sandbox", "bogus", "go"]);
    assert_eq!(output.status.code(), Some(2), "stderr: {}", stderr(&output));
    assert!(stderr(&output).contains("bogus"), "{}", stderr(&output));
    assert_eq!(server.request_count(), 0, "nothing ran");
}
