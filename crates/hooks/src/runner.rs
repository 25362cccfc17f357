//! Running one hook program: `sh -c COMMAND` in the workspace, in its own process group,
//! with the event's JSON on stdin and its stdout and stderr captured (bounded), until it
//! exits and both streams are closed — or until its timeout or the turn's cancellation,
//! when the whole process group is killed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use pith_tools::{isolate_process_group, KillOnDrop, ProcessGroup};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

/// Bytes of each stream kept; the rest is read and dropped (so the program never blocks
/// on a full pipe) and counted.
pub const CAPTURE_CAP_BYTES: usize = 1024 * 1024;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The program exited with this code.
    Exited(i32),
    /// The program was ended by this signal (a crash, or killed from outside).
    Signalled(i32),
    /// It ran past its timeout (or kept its output open that long); its group was killed.
    TimedOut,
    /// The turn was cancelled; its group was killed.
    Cancelled,
    /// It could not be started.
    SpawnFailed(String),
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct Captured {
    /// How it ended.
    pub ended: Ended,
    /// Its stdout, up to [`CAPTURE_CAP_BYTES`].
    pub stdout: Vec<u8>,
    /// Its stderr, up to [`CAPTURE_CAP_BYTES`].
    pub stderr: Vec<u8>,
    /// Bytes of stdout dropped past the cap.
    pub stdout_dropped: u64,
    /// Bytes of stderr dropped past the cap.
    pub stderr_dropped: u64,
    /// Wall time.
    pub duration: Duration,
}

/// One program to run.
#[derive(Debug, Clone, Copy)]
pub struct Invocation<'a> {
    /// The command line, for `sh -c`.
    pub command: &'a str,
    /// The working directory (the workspace).
    pub cwd: &'a Path,
    /// Written to its stdin, which is then closed.
    pub input: &'a [u8],
    /// How long it may run.
    pub timeout: Duration,
    /// Extra environment variables.
    pub env: &'a [(&'a str, String)],
}

async fn read_bounded(mut stream: impl AsyncRead + Unpin) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut dropped = 0u64;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = CAPTURE_CAP_BYTES.saturating_sub(kept.len());
                let take = n.min(room);
                kept.extend_from_slice(&chunk[..take]);
                dropped += (n - take) as u64;
            }
        }
    }
    (kept, dropped)
}

/// Runs `invocation`; never fails (a program that cannot start is [`Ended::SpawnFailed`]).
pub async fn run(invocation: Invocation<'_>, cancel: &CancellationToken) -> Captured {
    let started = Instant::now();
    let failed = |message: String| Captured {
        ended: Ended::SpawnFailed(message),
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_dropped: 0,
        stderr_dropped: 0,
        duration: started.elapsed(),
    };
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(invocation.command)
        .current_dir(invocation.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    isolate_process_group(&mut command);
    for (name, value) in invocation.env {
        command.env(name, value);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => return failed(format!("cannot start `sh`: {error}")),
    };
    let mut guard = KillOnDrop::new(ProcessGroup::of(&child));
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return failed("its standard streams could not be opened".into());
    };
    let input = invocation.input.to_vec();
    // A hook need not read its input: a closed pipe is fine, and writing happens beside
    // the reads so a large input never deadlocks against a full output pipe.
    let writer = async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
        drop(stdin);
    };
    let work = async {
        let (_, (stdout, stdout_dropped), (stderr, stderr_dropped), status) = tokio::join!(
            writer,
            read_bounded(stdout),
            read_bounded(stderr),
            child.wait()
        );
        (status, stdout, stdout_dropped, stderr, stderr_dropped)
    };
    let outcome = tokio::select! {
        biased;
        () = cancel.cancelled() => Err(Ended::Cancelled),
        () = tokio::time::sleep(invocation.timeout) => Err(Ended::TimedOut),
        done = work => Ok(done),
    };
    match outcome {
        Ok((status, stdout, stdout_dropped, stderr, stderr_dropped)) => {
            guard.disarm();
            let ended = match status {
                Ok(status) => match (
                    status.code(),
                    std::os::unix::process::ExitStatusExt::signal(&status),
                ) {
                    (Some(code), _) => Ended::Exited(code),
                    (None, Some(signal)) => Ended::Signalled(signal),
                    (None, None) => Ended::SpawnFailed("it ended without a status".into()),
                },
                Err(error) => Ended::SpawnFailed(format!("cannot wait for it: {error}")),
            };
            Captured {
                ended,
                stdout,
                stderr,
                stdout_dropped,
                stderr_dropped,
                duration: started.elapsed(),
            }
        }
        Err(ended) => {
            // The readers were dropped with `work`: the guard kills the group, then the
            // shell is reaped.
            drop(guard);
            let _ = tokio::time::timeout(Duration::from_secs(2), child.wait()).await;
            Captured {
                ended,
                stdout: Vec::new(),
                stderr: Vec::new(),
                stdout_dropped: 0,
                stderr_dropped: 0,
                duration: started.elapsed(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation<'a>(command: &'a str, cwd: &'a Path, timeout_ms: u64) -> Invocation<'a> {
        Invocation {
            command,
            cwd,
            input: b"{\"hello\": 1}",
            timeout: Duration::from_millis(timeout_ms),
            env: &[],
        }
    }

    #[tokio::test]
    async fn input_on_stdin_output_and_exit_code_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let run = run(
            invocation("cat; echo oops >&2; exit 3", dir.path(), 5_000),
            &cancel,
        )
        .await;
        assert_eq!(run.ended, Ended::Exited(3));
        assert_eq!(run.stdout, b"{\"hello\": 1}");
        assert_eq!(run.stderr, b"oops\n");
    }

    #[tokio::test]
    async fn a_hook_that_sleeps_forever_costs_its_timeout_and_its_group_dies() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!("sleep 1000 & echo $! > {}; wait", pid_file.display());
        let cancel = CancellationToken::new();
        let started = Instant::now();
        let run = run(invocation(&command, dir.path(), 300), &cancel).await;
        assert_eq!(run.ended, Ended::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let pid: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The background `sleep` was in the group: it is gone (or a zombie being reaped).
        std::thread::sleep(Duration::from_millis(100));
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "the grandchild survived: {state}"
        );
    }

    #[tokio::test]
    async fn a_background_child_holding_stdout_open_ends_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let run = run(invocation("sleep 1000 & exit 0", dir.path(), 300), &cancel).await;
        assert_eq!(run.ended, Ended::TimedOut);
    }

    #[tokio::test]
    async fn cancellation_kills_the_group_and_huge_output_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let run_cancelled = run(invocation("sleep 1000", dir.path(), 60_000), &cancel).await;
        assert_eq!(run_cancelled.ended, Ended::Cancelled);

        let cancel = CancellationToken::new();
        let run = run(
            invocation("head -c 3000000 /dev/zero", dir.path(), 10_000),
            &cancel,
        )
        .await;
        assert_eq!(run.ended, Ended::Exited(0));
        assert_eq!(run.stdout.len(), CAPTURE_CAP_BYTES);
        assert_eq!(run.stdout_dropped, 3_000_000 - CAPTURE_CAP_BYTES as u64);
    }

    #[tokio::test]
    async fn a_crash_is_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        let cancel = CancellationToken::new();
        let run = run(invocation("kill -SEGV $$", dir.path(), 5_000), &cancel).await;
        assert_eq!(run.ended, Ended::Signalled(libc::SIGSEGV));
    }
}
