//! Running one shell command: `bash -c` in its own process group, stdout and stderr
//! through one pipe (so they interleave in the order written), stdin from /dev/null, a
//! deadline, and cancellation.
//!
//! Ending a command means ending its whole process group: SIGTERM to the group, a grace
//! period for clean exits, then SIGKILL to whatever is left (children that ignore SIGTERM
//! included). That happens on timeout, on cancellation, if the future is dropped (a guard
//! kills the group), and when processes left in the background keep the output pipe open
//! longer than `drain_after_exit` after the shell itself exited. Background processes that
//! redirected their output elsewhere (`server > log 2>&1 &`) are left running. Processes
//! that leave the group on purpose (`setsid`) are out of reach by design.
//!
//! With a [`Confinement`] the shell starts inside the sandbox (`crate::sandbox`), which
//! every process it starts inherits, and gets the sandbox's variables (`TMPDIR`).

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

use super::output::{CapturedOutput, OutputBuffer, SpillOpener};
use crate::process_group::{self, KillOnDrop, ProcessGroup};
use crate::sandbox::Confinement;

/// What to run and the limits to run it under.
pub struct CommandSpec {
    /// The command line, passed to `bash -c`.
    pub command: String,
    /// Working directory.
    pub cwd: PathBuf,
    /// Deadline for the command.
    pub timeout: Duration,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long to keep reading after the shell exited while background processes
    /// still hold the output pipe.
    pub drain_after_exit: Duration,
    /// Output bytes held in memory at most.
    pub memory_cap: usize,
    /// Output bytes written to the spill file at most.
    pub spill_cap: u64,
    /// Creates the spill file on first overflow.
    pub spill_opener: SpillOpener,
    /// Environment variables removed from the inherited environment (secrets).
    pub env_remove: Vec<String>,
    /// Environment variables set for the command (after the removals).
    pub env_set: Vec<(String, std::ffi::OsString)>,
    /// The sandbox to start the command in; `None` runs it unconfined.
    pub confinement: Option<Confinement>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// The shell exited with this code.
    Exited(i32),
    /// The shell was killed by this signal (not by pith).
    Signaled(i32),
    /// The deadline passed; pith ended the process group.
    TimedOut,
    /// The turn was cancelled; pith ended the process group.
    Cancelled,
}

/// The result of [`run_command`].
#[derive(Debug, Clone)]
pub struct CommandOutcome {
    /// How it ended.
    pub termination: Termination,
    /// What it printed.
    pub output: CapturedOutput,
    /// True when background processes still held the output open after the shell exited
    /// and were ended.
    pub stragglers_killed: bool,
}

/// A close-on-exec pipe `(read end, write end)`: the child gets the write end as both
/// stdout and stderr, so the two streams interleave in the order they were written.
fn output_pipe() -> io::Result<(OwnedFd, std::io::PipeWriter)> {
    let (reader, writer) = std::io::pipe()?;
    Ok((OwnedFd::from(reader), writer))
}

/// The `bash -c` command of `spec`: confined when it asks, in its own process group,
/// stdin from /dev/null, stdout and stderr into `writer`, pagers off, and its
/// environment.
fn shell_command(spec: &CommandSpec, writer: std::io::PipeWriter) -> io::Result<Command> {
    let writer_for_stderr = writer.try_clone()?;
    let shell_args = ["-c", spec.command.as_str()];
    let mut command = match &spec.confinement {
        Some(confinement) => confinement.command("bash", &shell_args),
        None => {
            let mut command = Command::new("bash");
            command.args(shell_args);
            command
        }
    };
    command
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_for_stderr))
        .env("PAGER", "cat")
        .env("GIT_PAGER", "cat")
        .env("GIT_TERMINAL_PROMPT", "0");
    process_group::isolate(&mut command);
    for name in &spec.env_remove {
        command.env_remove(name);
    }
    for (name, value) in &spec.env_set {
        command.env(name, value);
    }
    for (name, value) in spec.confinement.iter().flat_map(|c| c.env()) {
        command.env(name, value);
    }
    Ok(command)
}

/// Runs `spec`, returning when the command and its output are done (or it was ended).
/// Errors only when the shell cannot be started.
pub async fn run_command(
    spec: CommandSpec,
    cancel: &CancellationToken,
) -> io::Result<CommandOutcome> {
    let (reader, writer) = output_pipe()?;
    let mut command = shell_command(&spec, writer)?;
    let mut child = command.spawn()?;
    // The parent's copies of the write end must be closed, or EOF never comes.
    drop(command);
    let group = ProcessGroup::of(&child)
        .ok_or_else(|| io::Error::other("the shell exited before its id was known"))?;
    let mut guard = KillOnDrop::new(Some(group));
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(reader)?;

    let mut buffer = OutputBuffer::new(spec.memory_cap, spec.spill_cap, spec.spill_opener);
    let deadline = Instant::now() + spec.timeout;
    let mut chunk = vec![0u8; 64 * 1024];
    let mut exit: Option<ExitStatus> = None;
    let mut drain_deadline = deadline;
    let mut eof = false;
    let mut ended_by_pith: Option<Termination> = None;
    let mut drain_expired = false;

    loop {
        if eof && exit.is_some() {
            break;
        }
        tokio::select! {
            biased;
            () = cancel.cancelled() => {
                ended_by_pith = Some(Termination::Cancelled);
                break;
            }
            () = sleep_until(deadline) => {
                ended_by_pith = Some(Termination::TimedOut);
                break;
            }
            status = child.wait(), if exit.is_none() => {
                exit = Some(status?);
                drain_deadline = Instant::now() + spec.drain_after_exit;
            }
            // Output before the drain deadline: a slow poll must not mistake pending
            // output for a straggler.
            read = pipe.read(&mut chunk), if !eof => match read {
                Ok(0) => eof = true,
                Ok(n) => {
                    buffer.push(&chunk[..n]).await;
                    // A background process that never stops writing keeps this arm
                    // ready forever; the drain deadline must still end it.
                    if exit.is_some() && Instant::now() >= drain_deadline {
                        drain_expired = true;
                        break;
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => eof = true,
            },
            () = sleep_until(drain_deadline), if exit.is_some() => {
                drain_expired = true;
                break;
            }
        }
    }

    // After the drain window, only processes still in the group are stragglers (the
    // pipe may also be held by one that left the group, which pith cannot end).
    let stragglers_killed = drain_expired && group.is_alive();
    if ended_by_pith.is_some() || stragglers_killed {
        group.end(&mut child, spec.kill_grace).await;
    }
    guard.disarm();
    // Whatever is still buffered in the pipe after the group ended is part of the output.
    if !eof {
        drain_ready(&mut pipe, &mut buffer, &mut chunk).await;
    }
    let termination = match ended_by_pith {
        Some(reason) => reason,
        None => match exit {
            Some(status) => classify(status),
            None => classify(child.wait().await?),
        },
    };
    Ok(CommandOutcome {
        termination,
        output: buffer.finish().await,
        stragglers_killed,
    })
}

/// Reads what is left in the pipe once the group was ended: until EOF, but never longer
/// than a short bound (a process that left the group could hold the pipe open forever).
async fn drain_ready(
    pipe: &mut tokio::net::unix::pipe::Receiver,
    buffer: &mut OutputBuffer,
    chunk: &mut [u8],
) {
    let give_up = Instant::now() + Duration::from_millis(500);
    loop {
        match tokio::time::timeout_at(give_up, pipe.read(chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return,
            Ok(Ok(n)) => buffer.push(&chunk[..n]).await,
        }
    }
}

fn classify(status: ExitStatus) -> Termination {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Termination::Exited(code),
        (None, Some(signal)) => Termination::Signaled(signal),
        (None, None) => Termination::Exited(-1),
    }
}
