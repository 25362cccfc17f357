//! `bash` commands run in a front-end's terminal instead of a child of pith: an editor that
//! offers terminals (ACP `terminal/*`) shows the command running live where the user
//! works. The front-end runs `pith sandbox-exec` ([`super::wrapper`]), so the sandbox and
//! the secret filter still apply; pith waits, ends the command at the timeout or when the
//! turn is cancelled, reads back the output, and squashes it as it squashes its own runs.

use std::io;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::output::{CapturedOutput, OutputBuffer, SpillOpener};
use super::process::Termination;
use super::wrapper::WrappedCommand;

/// How a front-end's terminal run ended, and what it printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalOutcome {
    /// How it ended.
    pub termination: Termination,
    /// The output the terminal kept (interleaved stdout and stderr).
    pub output: String,
    /// True when the terminal dropped the beginning of the output to stay in its limit.
    pub truncated: bool,
}

/// What a front-end's terminal is asked to run, and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalRequest<'a> {
    /// `pith` is run with `wrapped.args()`, in `wrapped.cwd`.
    pub wrapped: &'a WrappedCommand,
    /// Most bytes of output the terminal keeps.
    pub output_limit: u64,
    /// The terminal ends the command after this long (`TimedOut`).
    pub timeout: Duration,
}

/// A front-end that runs commands in terminals of its own.
#[async_trait]
pub trait CommandTerminal: Send + Sync + std::fmt::Debug {
    /// Runs `request` in a new terminal of the front-end; ends it after its timeout
    /// (`TimedOut`) or when `cancel` fires (`Cancelled`). The front-end finds the running
    /// `bash` call the terminal belongs to itself (it knows the ids it gave the calls).
    async fn run(
        &self,
        request: TerminalRequest<'_>,
        cancel: &CancellationToken,
    ) -> io::Result<TerminalOutcome>;
}

/// The [`CapturedOutput`] of a terminal's `output`, through the same bounded buffer (and
/// spill file) as pith's own runs, so the squash sees the same shape.
pub async fn captured(
    output: &str,
    memory_cap: usize,
    spill_cap: u64,
    opener: SpillOpener,
) -> CapturedOutput {
    let mut buffer = OutputBuffer::new(memory_cap, spill_cap, opener);
    buffer.push(output.as_bytes()).await;
    buffer.finish().await
}

/// The note added to the result when the terminal kept only the end of the output.
pub fn truncated_note(output_limit: u64) -> String {
    format!(
        "[the editor's terminal kept only the last {output_limit} bytes of the output; the \
         beginning is not shown]"
    )
}

/// The working directory check the front-end relies on: `cwd` must be absolute.
pub fn valid_cwd(cwd: &Path) -> io::Result<()> {
    if cwd.is_absolute() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a terminal's working directory must be absolute: {}",
                cwd.display()
            ),
        ))
    }
}
