//! The bash tool under hostile commands: runaway output, timeouts, cancellation, children
//! that ignore SIGTERM, invalid UTF-8, background processes. Timings are generous bounds
//! that prove "no hang", never performance assertions.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

#[path = "../../core/tests/support/ci_log.rs"]
mod ci_log;

use std::time::Duration;

use common::{process_is_dead, read_pid, Fixture};
use pith_tools::{run_command, CommandSpec, Termination};
use pith_tools::{Limits, PermissionMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn quick_limits() -> Limits {
    Limits {
        bash_kill_grace: Duration::from_millis(300),
        bash_drain_after_exit: Duration::from_millis(300),
        bash_memory_cap_bytes: 64 * 1024,
        spill_cap_bytes: 4 * 1024 * 1024,
        ..Limits::default()
    }
}

/// Signals are delivered asynchronously: a killed process may need a moment to die.
/// Polls for up to 10 s (a bound that proves "killed", not a speed requirement).
async fn eventually_dead(pid: i32) -> bool {
    for _ in 0..200 {
        if process_is_dead(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

fn full() -> Fixture {
    Fixture::build(PermissionMode::Full, None, quick_limits())
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_order_with_the_exit_code() {
    let fx = full();
    let result = fx
        .call(
            "bash",
            json!({"command": "echo one; echo two >&2; echo three; exit 3"}),
        )
        .await;
    assert!(result.is_error, "exit 3 is an error result");
    assert_eq!(result.content, "one\ntwo\nthree\n[exit code: 3]");
}

#[tokio::test]
async fn commands_run_in_the_workspace_with_empty_stdin() {
    let fx = full();
    fx.write("marker.txt", "here");
    let result = fx
        .call("bash", json!({"command": "cat marker.txt; cat; pwd"}))
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        format!("here{}\n[exit code: 0]", fx.root().display())
    );
}

#[tokio::test]
async fn invalid_utf8_and_nul_bytes_in_output_do_not_break_the_result() {
    let fx = full();
    let result = fx
        .call(
            "bash",
            json!({"command": "printf 'caf\\xe9 \\x00\\xff\\xfe ok\\n'"}),
        )
        .await;
    assert!(result.content.contains('\u{FFFD}'), "{:?}", result.content);
    assert!(result.content.contains(" ok"), "{:?}", result.content);
    assert!(result.content.ends_with("[exit code: 0]"));
}

#[tokio::test]
async fn yes_without_end_is_stopped_by_the_timeout_with_bounded_memory_and_a_spill_file() {
    let fx = full();
    let result = fx
        .call("bash", json!({"command": "yes", "timeout_ms": 1500}))
        .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("[timed out after 1500 ms"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("lines omitted]"),
        "the gap must be marked: {}",
        result.content
    );
    let spill = fx
        .spill_path(&result.content)
        .expect("the result ends naming the spill file");
    assert!(spill.starts_with(fx.spill_dir()), "{spill:?}");
    let size = std::fs::metadata(&spill).unwrap().len();
    assert_eq!(
        size,
        4 * 1024 * 1024,
        "the spill file stops at the spill cap"
    );
    assert!(
        result.content.len() < 64 * 1024,
        "the model sees a bounded text, got {} bytes",
        result.content.len()
    );
}

#[tokio::test]
async fn runaway_output_is_held_in_memory_only_up_to_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let spill_file = dir.path().join("spill.txt");
    let opener_path = spill_file.clone();
    let cap = 32 * 1024;
    let spec = CommandSpec {
        command: "yes pith-memory-test | head -c 50000000".into(),
        cwd: dir.path().to_path_buf(),
        timeout: Duration::from_secs(120),
        kill_grace: Duration::from_millis(300),
        drain_after_exit: Duration::from_millis(300),
        memory_cap: cap,
        spill_cap: 1024 * 1024,
        spill_opener: Box::new(move || {
            let file = std::fs::File::create(&opener_path)?;
            Ok((opener_path, file))
        }),
        env_remove: Vec::new(),
        env_set: Vec::new(),
        confinement: None,
    };
    let outcome = run_command(spec, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.termination, Termination::Exited(0));
    let output = &outcome.output;
    assert_eq!(output.total_bytes, 50_000_000, "every byte was read");
    assert!(
        output.peak_memory_bytes <= cap,
        "peak in-memory output {} exceeded the cap {cap}",
        output.peak_memory_bytes
    );
    assert_eq!(std::fs::metadata(&spill_file).unwrap().len(), 1024 * 1024);
    assert_eq!(
        output.spill.as_ref().unwrap().discarded,
        50_000_000 - 1024 * 1024
    );
}

#[tokio::test]
async fn timeout_ends_a_sleeping_command() {
    let fx = full();
    let result = fx
        .call("bash", json!({"command": "sleep 100", "timeout_ms": 300}))
        .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("[timed out after 300 ms"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn children_that_ignore_sigterm_are_killed_with_the_group() {
    let fx = full();
    let pid_file = fx.root().join("child.pid");
    let command = format!(
        "bash -c 'trap \"\" TERM; echo $$ > {}; while true; do sleep 0.05; done' & \
         trap '' TERM; sleep 100",
        pid_file.display()
    );
    let result = fx
        .call("bash", json!({"command": command, "timeout_ms": 2000}))
        .await;
    assert!(result.content.contains("[timed out"), "{}", result.content);
    let pid = read_pid(&pid_file);
    assert!(
        eventually_dead(pid).await,
        "child {pid} ignoring SIGTERM must be SIGKILLed after the grace period"
    );
}

#[tokio::test]
async fn cancellation_mid_command_ends_the_call_and_its_processes() {
    let fx = full();
    let pid_file = fx.root().join("sleeper.pid");
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let watched = pid_file.clone();
    tokio::spawn(async move {
        // Cancel once the command has really started.
        for _ in 0..600 {
            if std::fs::read_to_string(&watched).is_ok_and(|pid| pid.ends_with('\n')) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        canceller.cancel();
    });
    let command = format!("sleep 100 & echo $! > {}; wait", pid_file.display());
    let result = fx
        .call_with("bash", json!({"command": command}), &cancel)
        .await;
    assert!(result.is_error);
    assert_eq!(result.content, "cancelled");
    let pid = read_pid(&pid_file);
    assert!(
        eventually_dead(pid).await,
        "background sleep {pid} must be ended"
    );
}

#[tokio::test]
async fn dropping_the_call_future_kills_the_process_group() {
    let fx = std::sync::Arc::new(full());
    let pid_file = fx.root().join("dropped.pid");
    let command = format!("sleep 100 & echo $! > {}; wait", pid_file.display());
    let running = {
        let fx = fx.clone();
        tokio::spawn(async move {
            let call = fx.next_call("bash", json!({ "command": command }));
            fx.registry.execute(&call, &CancellationToken::new()).await
        })
    };
    for _ in 0..3000 {
        if pid_file.exists() && !std::fs::read_to_string(&pid_file).unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!running.is_finished(), "the call should still be running");
    running.abort();
    let _ = running.await;
    let pid = read_pid(&pid_file);
    assert!(
        eventually_dead(pid).await,
        "sleep {pid} survived its dropped tool call"
    );
}

#[tokio::test]
async fn background_processes_holding_the_output_are_ended_after_the_drain_window() {
    let fx = full();
    let result = fx
        .call("bash", json!({"command": "echo started; sleep 100 &"}))
        .await;
    assert!(
        result.content.starts_with("started\n"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("[exit code: 0]"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("background processes"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn large_output_is_squashed_and_the_raw_output_spilled() {
    let fx = full();
    let result = fx.call("bash", json!({"command": "seq 1 20000"})).await;
    let spill = fx
        .spill_path(&result.content)
        .expect("a squashed result names its spill file");
    let raw = std::fs::read_to_string(&spill).unwrap();
    let expected: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    assert_eq!(raw, expected, "the spill file holds the exact raw output");
    assert!(
        result.content.len() < expected.len() / 4,
        "{}",
        result.content.len()
    );
    assert!(
        result
            .content
            .contains("\n[exit code: 0]\n[full output: $PITH_SPILL_DIR/1.txt]"),
        "status first, spill marker last: {}",
        result.content
    );
    // The model can use the marker's path as written, with read and with bash.
    let read = fx
        .call(
            "read",
            json!({"path": "$PITH_SPILL_DIR/1.txt", "offset": 19999}),
        )
        .await;
    assert!(!read.is_error, "{}", read.content);
    assert!(read.content.contains("19999\t19999\n"), "{}", read.content);
    let counted = fx
        .call(
            "bash",
            json!({"command": "wc -l < \"$PITH_SPILL_DIR/1.txt\""}),
        )
        .await;
    assert!(
        counted.content.starts_with("20000\n"),
        "{}",
        counted.content
    );
}

#[tokio::test]
async fn a_one_megabyte_cat_of_a_ci_log_keeps_its_failures_within_the_view_budget() {
    // Default limits: the log is twice the memory cap, so only the spill file holds its
    // middle, where the failures are.
    let fx = Fixture::build(PermissionMode::Full, None, Limits::default());
    let log = ci_log::ci_log(1 << 20);
    assert!(log.len() > 2 * Limits::default().bash_memory_cap_bytes);
    fx.write("big.log", &log);
    let result = fx.call("bash", json!({"command": "cat big.log"})).await;
    ci_log::assert_keeps_everything(&result.content, "cat big.log through the bash tool");
    let body = result
        .content
        .strip_suffix("\n[exit code: 0]\n[full output: $PITH_SPILL_DIR/1.txt]")
        .unwrap_or_else(|| panic!("status and spill marker last: {}", result.content));
    assert!(
        body.len() <= pith_core::context::SquashConfig::default().view_budget_bytes,
        "{} bytes:\n{body}",
        body.len()
    );
    assert_eq!(
        std::fs::read_to_string(fx.spill_dir().join("1.txt")).unwrap(),
        log
    );
}

#[tokio::test]
async fn timeout_arguments_are_validated_and_clamped() {
    let limits = Limits {
        bash_timeout_max: Duration::from_millis(400),
        bash_timeout_default: Duration::from_millis(400),
        ..quick_limits()
    };
    let fx = Fixture::build(PermissionMode::Full, None, limits);
    let zero = fx
        .call("bash", json!({"command": "true", "timeout_ms": 0}))
        .await;
    assert!(zero.is_error && zero.content.contains("invalid arguments"));
    let clamped = fx
        .call(
            "bash",
            json!({"command": "sleep 100", "timeout_ms": 99999999}),
        )
        .await;
    assert!(
        clamped.content.contains("above the maximum"),
        "{}",
        clamped.content
    );
    assert!(
        clamped.content.contains("[timed out after 400 ms"),
        "{}",
        clamped.content
    );
}

#[tokio::test]
async fn read_only_and_headless_ask_modes_refuse_commands_without_running_them() {
    for mode in [
        PermissionMode::ReadOnly,
        PermissionMode::Ask,
        PermissionMode::AutoEdit,
    ] {
        let fx = Fixture::build(mode, None, quick_limits());
        let result = fx.call("bash", json!({"command": "touch ran.txt"})).await;
        assert!(result.is_error, "{mode}: {}", result.content);
        assert!(
            result.content.starts_with("permission denied"),
            "{mode}: {}",
            result.content
        );
        assert!(
            !fx.root().join("ran.txt").exists(),
            "{mode}: the command ran"
        );
    }
}

#[tokio::test]
async fn secret_looking_variables_are_not_passed_to_commands() {
    let names = [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "aws_secret_access_key",
        "PATH",
        "HOME",
    ]
    .map(String::from);
    let removed = pith_tools::secret_env_names(
        names.into_iter(),
        &pith_tools::DEFAULT_BASH_ENV_EXCLUDE.map(String::from),
    );
    assert_eq!(
        removed,
        ["OPENAI_API_KEY", "GITHUB_TOKEN", "aws_secret_access_key"]
    );
    // The removal really reaches the child process.
    let dir = tempfile::tempdir().unwrap();
    let spec = CommandSpec {
        command: "echo \"home=${HOME:-unset}\"".into(),
        cwd: dir.path().to_path_buf(),
        timeout: Duration::from_secs(60),
        kill_grace: Duration::from_millis(300),
        drain_after_exit: Duration::from_millis(300),
        memory_cap: 4096,
        spill_cap: 4096,
        spill_opener: Box::new(|| Err(std::io::Error::other("no spill expected"))),
        env_remove: vec!["HOME".into()],
        env_set: Vec::new(),
        confinement: None,
    };
    let outcome = run_command(spec, &CancellationToken::new()).await.unwrap();
    assert_eq!(outcome.output.head, b"home=unset\n");
}

#[tokio::test]
async fn a_huge_single_line_without_newline_stays_bounded() {
    let fx = full();
    let result = fx
        .call(
            "bash",
            json!({"command": "head -c 3000000 /dev/zero | tr '\\0' a"}),
        )
        .await;
    assert!(
        result.content.len() < 64 * 1024,
        "{} bytes shown",
        result.content.len()
    );
    let spill = fx.spill_path(&result.content).expect("spill named");
    assert_eq!(std::fs::metadata(spill).unwrap().len(), 3_000_000);
    assert!(
        result.content.contains("[exit code: 0]"),
        "{}",
        result.content.len()
    );
}

#[tokio::test]
#[ignore = "needs the setsid command (util-linux): .ci/run installs it and runs this"]
async fn a_process_that_leaves_the_group_cannot_hang_the_call() {
    let fx = full();
    // setsid puts sleep out of pith's reach; it holds the output pipe for 3 s.
    let result = fx
        .call("bash", json!({"command": "setsid sleep 3 & echo launched"}))
        .await;
    assert!(
        result.content.starts_with("launched\n"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("[exit code: 0]"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn a_background_process_writing_forever_is_ended_after_the_drain_window() {
    let fx = full();
    let result = fx
        .call(
            "bash",
            json!({"command": "(yes background &); echo foreground", "timeout_ms": 60000}),
        )
        .await;
    assert!(
        !result.content.contains("timed out"),
        "the drain window, not the timeout, must end it: {}",
        result.content
    );
    assert!(
        result.content.contains("[exit code: 0]"),
        "{}",
        result.content
    );
    assert!(
        result.content.contains("background processes"),
        "{}",
        result.content
    );
}
