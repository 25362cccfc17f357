//! A command run by someone else's process: when an editor runs `bash` commands in its own
//! terminal (ACP `terminal/create`), pith cannot start the shell itself, so it asks the
//! editor to run `pith sandbox-exec --spec JSON` instead. That hidden subcommand
//! ([`run_wrapped`]) does in its own process what [`super::process`] does in pith's: it
//! applies the same sandbox (the policy is rebuilt from the same settings), removes the
//! same secret variables, starts `bash -c COMMAND` in a process group of its own, ends
//! that group when it is asked to stop, and exits with the shell's code.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;

use serde::{Deserialize, Serialize};

use crate::process_group::{self, KillOnDrop, ProcessGroup};
use crate::sandbox::{Sandbox, SandboxConfig, SandboxMode};
use crate::workspace::SPILL_DIR_VAR;
use crate::UserDirs;

/// The subcommand of the `pith` binary that runs a [`WrappedCommand`].
pub const SUBCOMMAND: &str = "sandbox-exec";

/// Everything [`run_wrapped`] needs to run one command as the `bash` tool would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedCommand {
    /// The command line, passed to `bash -c`.
    pub command: String,
    /// The working directory (the workspace root).
    pub cwd: PathBuf,
    /// The sandbox of this run (its fields stand at the top level of the spec).
    #[serde(flatten)]
    pub sandbox: WrappedSandbox,
    /// The session's spill directory (writable, and named by `$PITH_SPILL_DIR`).
    pub spill_dir: PathBuf,
    /// Patterns of environment variable names removed before the shell starts (secrets;
    /// matched against this process's own environment, which is the editor's).
    pub env_exclude: Vec<String>,
    /// How long to wait after SIGTERM before SIGKILL when asked to stop, in milliseconds.
    pub kill_grace_ms: u64,
    /// Where to write the command's process group id once it started, so that pith can end
    /// the whole group at a timeout or a cancel (an editor's `terminal/kill` may end only
    /// this wrapper).
    #[serde(default)]
    pub group_file: Option<PathBuf>,
}

/// The sandbox settings a [`WrappedCommand`] carries: what the wrapper rebuilds the
/// session's sandbox policy from in its own process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedSandbox {
    /// The sandbox mode of this run (`off` runs it unconfined).
    pub mode: SandboxMode,
    /// Whether sandboxed commands may use the network.
    pub allow_network: bool,
    /// Extra paths the sandbox denies.
    pub extra_deny: Vec<PathBuf>,
    /// Extra directories a `workspace-write` command may write.
    pub extra_writable: Vec<PathBuf>,
    /// The home directory the deny list is computed from (`None`: the environment's).
    pub home: Option<PathBuf>,
}

impl WrappedSandbox {
    /// The settings of `config` for a run in `mode`.
    pub fn new(mode: SandboxMode, config: &SandboxConfig) -> Self {
        Self {
            mode,
            allow_network: config.allow_network,
            extra_deny: config.extra_deny.clone(),
            extra_writable: config.extra_writable.clone(),
            home: config.user_dirs.home.clone(),
        }
    }

    /// The sandbox configuration again, in the wrapper's process (the user directories
    /// are this process's, but for the home directory given).
    fn config(&self) -> SandboxConfig {
        let mut user_dirs = UserDirs::from_env();
        if let Some(home) = &self.home {
            user_dirs.home = Some(home.clone());
        }
        SandboxConfig {
            mode: Some(self.mode),
            allow_network: self.allow_network,
            extra_deny: self.extra_deny.clone(),
            extra_writable: self.extra_writable.clone(),
            user_dirs,
            assume_landlock_abi: None,
        }
    }
}

/// Why a wrapped command could not be started.
#[derive(Debug, thiserror::Error)]
pub enum WrapperError {
    /// The `--spec` argument is not a [`WrappedCommand`].
    #[error("`pith {SUBCOMMAND} --spec` takes the JSON of a wrapped command: {0}")]
    Spec(#[from] serde_json::Error),
    /// The sandbox could not be prepared.
    #[error("could not prepare the `{mode}` sandbox: {detail}")]
    Sandbox {
        /// The mode asked for.
        mode: SandboxMode,
        /// What failed.
        detail: String,
    },
    /// The shell could not be started.
    #[error("could not start bash: {0}")]
    Spawn(std::io::Error),
}

impl WrappedCommand {
    /// The arguments after the program name: `sandbox-exec --spec JSON`.
    pub fn args(&self) -> Vec<String> {
        // Serialising plain strings, paths and numbers cannot fail.
        let spec = serde_json::to_string(self).unwrap_or_default();
        vec![SUBCOMMAND.to_owned(), "--spec".to_owned(), spec]
    }

    /// The command described by `--spec`'s value.
    pub fn from_spec(spec: &str) -> Result<Self, WrapperError> {
        Ok(serde_json::from_str(spec)?)
    }
}

/// Runs `wrapped` with this process's stdout and stderr as the command's (the editor's
/// terminal), and returns the exit code to exit with: the shell's, `128 + N` when a
/// signal N ended it, or 126 when it could not start (the reason on stderr). SIGTERM,
/// SIGINT or SIGHUP to this process end the command's whole process group.
pub async fn run_wrapped(wrapped: &WrappedCommand) -> Result<i32, WrapperError> {
    let mode = wrapped.sandbox.mode;
    let sandbox = Sandbox::new(wrapped.sandbox.config());
    let confinement = sandbox
        .prepare(mode, &wrapped.cwd, &wrapped.spill_dir)
        .map_err(|err| WrapperError::Sandbox {
            mode,
            detail: err.to_string(),
        })?;
    let args = ["-c", wrapped.command.as_str()];
    let mut command = match &confinement {
        Some(confinement) => confinement.command("bash", &args),
        None => {
            let mut command = tokio::process::Command::new("bash");
            command.args(args);
            command
        }
    };
    let names = std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned());
    for name in secret_env_names(names, &wrapped.env_exclude) {
        command.env_remove(name);
    }
    if let Some(confinement) = &confinement {
        for (name, value) in confinement.env() {
            command.env(name, value);
        }
    }
    command.env(SPILL_DIR_VAR, OsString::from(&wrapped.spill_dir));
    command
        .current_dir(&wrapped.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    process_group::isolate(&mut command);
    let mut child = command.spawn().map_err(WrapperError::Spawn)?;
    let group = ProcessGroup::of(&child);
    let mut guard = KillOnDrop::new(group);
    if let (Some(path), Some(group)) = (&wrapped.group_file, group) {
        if let Err(error) = std::fs::write(path, group.id().to_string()) {
            // This runs as `pith sandbox-exec` in the editor's terminal: its stderr is the
            // command's, where the user sees it.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("pith: could not record the command's process group: {error}");
            }
        }
    }
    let grace = std::time::Duration::from_millis(wrapped.kill_grace_ms);
    let status = tokio::select! {
        status = child.wait() => status.map_err(WrapperError::Spawn)?,
        () = stop_requested() => {
            if let Some(group) = group {
                group.end(&mut child, grace).await;
            }
            child.wait().await.map_err(WrapperError::Spawn)?
        }
    };
    guard.disarm();
    Ok(exit_code(status))
}

/// Resolves when this process gets SIGTERM, SIGINT or SIGHUP (never, if the handlers
/// cannot be installed).
async fn stop_requested() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
}

/// Names (from `names`) that contain one of `patterns`, case-insensitively: the
/// variables `bash` does not pass on, so a command cannot print API keys into the
/// transcript. Default patterns: `KEY`, `SECRET`, `TOKEN` (like Codex CLI).
pub fn secret_env_names(names: impl Iterator<Item = String>, patterns: &[String]) -> Vec<String> {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_ascii_uppercase()).collect();
    names
        .filter(|name| {
            let upper = name.to_ascii_uppercase();
            patterns
                .iter()
                .any(|p| !p.is_empty() && upper.contains(p.as_str()))
        })
        .collect()
}

/// The code a shell's `status` is reported with: its exit code, or `128 + signal`.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(command: &str, cwd: PathBuf) -> WrappedCommand {
        WrappedCommand {
            command: command.into(),
            spill_dir: cwd.join(".spill"),
            cwd,
            sandbox: WrappedSandbox {
                mode: SandboxMode::Off,
                allow_network: true,
                extra_deny: Vec::new(),
                extra_writable: vec![PathBuf::from("/cache")],
                home: Some(PathBuf::from("/home/u")),
            },
            env_exclude: vec!["KEY".into()],
            kill_grace_ms: 100,
            group_file: None,
        }
    }

    #[test]
    fn the_spec_round_trips_through_the_arguments() {
        let original = wrapped("echo 'a b' \"$X\"", PathBuf::from("/w"));
        let args = original.args();
        assert_eq!(args[0], SUBCOMMAND);
        assert_eq!(args[1], "--spec");
        assert_eq!(WrappedCommand::from_spec(&args[2]).unwrap(), original);
        assert!(matches!(
            WrappedCommand::from_spec("{\"command\": 1}"),
            Err(WrapperError::Spec(_))
        ));
    }

    #[tokio::test]
    async fn the_shell_s_exit_code_and_a_signal_become_the_wrapper_s() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        assert_eq!(
            run_wrapped(&wrapped("exit 7", root.clone())).await.unwrap(),
            7
        );
        assert_eq!(
            run_wrapped(&wrapped("kill -9 $$", root.clone()))
                .await
                .unwrap(),
            137
        );
        // It runs in the workspace, with the spill variable set.
        let probe = wrapped(
            "test \"$PWD\" = \"$(pwd -P)\" && test -n \"$PITH_SPILL_DIR\"",
            root,
        );
        assert_eq!(run_wrapped(&probe).await.unwrap(), 0);
    }
}
