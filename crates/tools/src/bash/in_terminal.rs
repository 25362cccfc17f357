//! Running one `bash` command in a front-end's terminal ([`super::terminal`]): the
//! wrapper's settings, pith's own clock (the timeout and the cancel end the command's
//! process group, whose id the wrapper reports), and the output captured as pith's own
//! runs are.

use std::io;
use std::time::Duration;

use pith_core::ToolError;
use tokio_util::sync::CancellationToken;

use super::process::{CommandOutcome, Termination};
use super::terminal::{
    captured, truncated_note, valid_cwd, CommandTerminal, TerminalOutcome, TerminalRequest,
};
use super::wrapper::{WrappedCommand, WrappedSandbox};
use crate::config::ToolEnv;
use crate::process_group::ProcessGroup;
use crate::sandbox::SandboxMode;

/// How long a terminal gets past the timeout and the kill grace before pith stops waiting.
const TERMINAL_BACKSTOP: Duration = Duration::from_secs(5);

/// Most output bytes an editor's terminal is asked to keep.
const MAX_TERMINAL_OUTPUT: u64 = 16 * 1024 * 1024;

/// One `bash` command to run in a front-end's terminal.
#[derive(Debug, Clone, Copy)]
pub struct TerminalCall<'a> {
    /// The session's tool environment.
    pub env: &'a ToolEnv,
    /// The tool call's id.
    pub call_id: &'a str,
    /// The command line.
    pub command: &'a str,
    /// Its timeout.
    pub timeout: Duration,
    /// The sandbox mode of this run.
    pub mode: SandboxMode,
    /// The turn's cancellation.
    pub cancel: &'a CancellationToken,
}

/// Runs `call` in `terminal` and captures what it printed like pith's own runs; a note
/// joins `notes` when the terminal kept only the end of the output.
pub async fn run_in_terminal(
    terminal: &dyn CommandTerminal,
    call: TerminalCall<'_>,
    notes: &mut Vec<String>,
) -> Result<CommandOutcome, ToolError> {
    let env = call.env;
    let limits = &env.limits;
    let mut wrapped = WrappedCommand {
        command: call.command.to_owned(),
        cwd: env.workspace.root().to_path_buf(),
        sandbox: WrappedSandbox::new(call.mode, env.sandbox.config()),
        spill_dir: env.capture.spill_dir().path().to_path_buf(),
        env_exclude: env.bash_env_exclude.clone(),
        kill_grace_ms: u64::try_from(limits.bash_kill_grace.as_millis()).unwrap_or(u64::MAX),
        group_file: None,
    };
    valid_cwd(&wrapped.cwd).map_err(|err| ToolError::Failed(err.to_string()))?;
    let output_limit = limits.spill_cap_bytes.min(MAX_TERMINAL_OUTPUT);
    let group_file = GroupFile::new(env, call.call_id);
    wrapped.group_file = group_file.as_ref().map(|g| g.path.clone());
    // pith keeps the clock: at the timeout or a cancel it ends the command's process group
    // itself; the terminal then sees the wrapper exit. The terminal's own stop is the
    // backstop for a wrapper that never reported its group.
    let stop = CancellationToken::new();
    let backstop = call.timeout + limits.bash_kill_grace + TERMINAL_BACKSTOP;
    let request = TerminalRequest {
        wrapped: &wrapped,
        output_limit,
        timeout: backstop,
    };
    let run = terminal.run(request, &stop);
    tokio::pin!(run);
    let ended_by_pith = tokio::select! {
        outcome = &mut run => {
            return finish_outcome(env, outcome, None, output_limit, notes).await;
        }
        () = tokio::time::sleep(call.timeout) => Termination::TimedOut,
        () = call.cancel.cancelled() => Termination::Cancelled,
    };
    match group_file.as_ref().and_then(GroupFile::group) {
        Some(group) => group.end_detached(limits.bash_kill_grace).await,
        None => stop.cancel(),
    }
    let outcome = match tokio::time::timeout(TERMINAL_BACKSTOP, &mut run).await {
        Ok(outcome) => outcome,
        Err(_) => {
            stop.cancel();
            run.await
        }
    };
    finish_outcome(env, outcome, Some(ended_by_pith), output_limit, notes).await
}

/// The file the wrapper writes its command's process group id to (in the spill
/// directory), removed when dropped.
struct GroupFile {
    path: std::path::PathBuf,
}

impl GroupFile {
    fn new(env: &ToolEnv, call_id: &str) -> Option<Self> {
        let dir = env.capture.spill_dir().path();
        std::fs::create_dir_all(dir).ok()?;
        let safe: String = call_id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .take(64)
            .collect();
        let path = dir.join(format!(".terminal-{safe}-{}.pgid", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Some(Self { path })
    }

    fn group(&self) -> Option<ProcessGroup> {
        let text = std::fs::read_to_string(&self.path).ok()?;
        ProcessGroup::from_id(text.trim().parse().ok()?)
    }
}

impl Drop for GroupFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The [`CommandOutcome`] of a terminal run (`ended_by_pith`: the timeout or the cancel
/// that pith acted on, which is how the run ended whatever the terminal reports).
async fn finish_outcome(
    env: &ToolEnv,
    outcome: io::Result<TerminalOutcome>,
    ended_by_pith: Option<Termination>,
    output_limit: u64,
    notes: &mut Vec<String>,
) -> Result<CommandOutcome, ToolError> {
    let limits = &env.limits;
    let outcome = outcome.map_err(|err| {
        ToolError::Failed(format!(
            "the editor could not run the command in its terminal: {err}"
        ))
    })?;
    if outcome.truncated {
        notes.push(truncated_note(output_limit));
    }
    let spill = env.capture.spill_dir().clone();
    let output = captured(
        &outcome.output,
        limits.bash_memory_cap_bytes,
        limits.spill_cap_bytes,
        Box::new(move || spill.create()),
    )
    .await;
    Ok(CommandOutcome {
        termination: ended_by_pith.unwrap_or(outcome.termination),
        output,
        stragglers_killed: false,
    })
}
