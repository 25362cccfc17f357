//! `bash` through a front-end's terminal (`pith_tools::CommandTerminal`), with a scripted
//! terminal: what it is asked to run, the squash of what it returns, and pith's own clock
//! ending a run the terminal never ends.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::Fixture;
use pith_tools::Termination;
use pith_tools::WrappedCommand;
use pith_tools::{CommandTerminal, TerminalOutcome, TerminalRequest};
use pith_tools::{Limits, PermissionMode, SandboxConfig, SandboxMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A terminal that prints `output` and exits 0, or (`hang`) runs until it is stopped.
#[derive(Debug, Default)]
struct ScriptedTerminal {
    output: String,
    truncated: bool,
    hang: bool,
    asked: Mutex<Vec<(WrappedCommand, u64, Duration)>>,
}

#[async_trait]
impl CommandTerminal for ScriptedTerminal {
    async fn run(
        &self,
        request: TerminalRequest<'_>,
        cancel: &CancellationToken,
    ) -> io::Result<TerminalOutcome> {
        self.asked.lock().unwrap().push((
            request.wrapped.clone(),
            request.output_limit,
            request.timeout,
        ));
        if self.hang {
            cancel.cancelled().await;
            return Ok(TerminalOutcome {
                termination: Termination::Cancelled,
                output: "partial\n".into(),
                truncated: false,
            });
        }
        Ok(TerminalOutcome {
            termination: Termination::Exited(0),
            output: self.output.clone(),
            truncated: self.truncated,
        })
    }
}

fn fixture(terminal: Arc<ScriptedTerminal>, sandbox: SandboxMode) -> Fixture {
    let limits = Limits {
        bash_kill_grace: Duration::from_millis(50),
        ..Limits::default()
    };
    Fixture::build_with(PermissionMode::Full, None, limits, move |_, config| {
        config
            .with_sandbox(SandboxConfig::default().with_mode(Some(sandbox)))
            .with_terminal(terminal)
    })
}

#[tokio::test]
async fn the_terminal_runs_the_wrapper_and_its_output_is_squashed_like_pith_s_own() {
    let lines: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
    let terminal = Arc::new(ScriptedTerminal {
        output: lines,
        truncated: true,
        ..ScriptedTerminal::default()
    });
    let fx = fixture(terminal.clone(), SandboxMode::WorkspaceWrite);
    let result = fx.call("bash", json!({"command": "seq 5000"})).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("line 1\n"), "{}", result.content);
    assert!(result.content.contains("line 5000"), "{}", result.content);
    assert!(
        result.content.len() < 5000 * 8,
        "5,000 lines are squashed: {} bytes",
        result.content.len()
    );
    assert!(
        result.content.contains("kept only the last"),
        "{}",
        result.content
    );
    let asked = terminal.asked.lock().unwrap();
    let (wrapped, limit, _) = &asked[0];
    assert_eq!(wrapped.command, "seq 5000");
    assert_eq!(wrapped.sandbox.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(wrapped.cwd, std::fs::canonicalize(fx.root()).unwrap());
    assert!(wrapped.group_file.is_some());
    assert!(*limit > 0 && *limit <= 16 * 1024 * 1024);
    assert_eq!(wrapped.args()[0], "sandbox-exec");
}

#[tokio::test]
async fn pith_ends_a_run_the_terminal_never_ends_at_the_timeout() {
    let terminal = Arc::new(ScriptedTerminal {
        hang: true,
        ..ScriptedTerminal::default()
    });
    let fx = fixture(terminal.clone(), SandboxMode::Off);
    let result = fx
        .call("bash", json!({"command": "sleep 100", "timeout_ms": 50}))
        .await;
    assert!(result.is_error);
    assert!(
        result.content.contains("timed out after 50 ms"),
        "{}",
        result.content
    );
    assert!(result.content.contains("partial"), "{}", result.content);
    let asked = terminal.asked.lock().unwrap();
    assert_eq!(asked[0].0.sandbox.mode, SandboxMode::Off);
}
