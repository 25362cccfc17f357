//! The `bash` tool: runs a shell command in the workspace and reports its interleaved
//! output and exit code. Process handling is in [`process`], bounded output capture in
//! [`output`], the kernel sandbox in [`crate::sandbox`]; this module owns the arguments,
//! the permission check, the sandbox mode of each run, the escalation path and the text
//! the model sees.
//!
//! A run the sandbox denied ([`crate::sandbox::denial`]) ends with a note telling the
//! model so and not to retry variants. When the permission mode asks before commands
//! (`ask`, `auto-edit`) and an approver is there, the user is first asked whether to run
//! it once more without the sandbox; if allowed, the result is that second run's.

mod changes;
pub mod in_terminal;
pub mod output;
pub mod process;
pub mod terminal;
pub mod wrapper;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pith_core::{ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use self::in_terminal::TerminalCall;
use self::output::CapturedOutput;
use self::process::{run_command, CommandOutcome, CommandSpec, Termination};
pub use self::wrapper::secret_env_names;
use crate::arguments::object_schema;
use crate::capture::{Capture, Finished, Overflow, RawOutput};
use crate::config::ToolEnv;
use crate::permission::Action;
use crate::sandbox::{self, denial::Denial, Confinement, SandboxConfig, SandboxMode};
use crate::typed::TypedTool;
use crate::workspace::SPILL_DIR_VAR;

/// `bash {command, timeout_ms?}`.
pub struct BashTool {
    env: Arc<ToolEnv>,
    description: String,
}

impl BashTool {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        let description = describe(env.sandbox.config());
        Self { env, description }
    }
}

/// The tool description, with the sandbox's limits unless it is configured off.
fn describe(sandbox: &SandboxConfig) -> String {
    let mut text = String::from(
        "Run a shell command with `bash -c` in the workspace root. stdout and stderr are \
         returned interleaved, followed by the exit code. stdin is empty (no interactive \
         programs). Long outputs are shortened and the full output saved to a file named \
         at the end (`$PITH_SPILL_DIR/N.txt`; the variable is set for commands). The \
         command and every process it started are ended at the timeout (default 120000 \
         ms).",
    );
    if sandbox.mode != Some(SandboxMode::Off) {
        text.push_str(
            " Commands run in a sandbox: they cannot write outside the workspace (use \
             $TMPDIR for temporary files) or read credentials such as ~/.ssh",
        );
        text.push_str(if sandbox.allow_network {
            "."
        } else {
            ", and have no network (their own 127.0.0.1 only)."
        });
    }
    text
}

/// The arguments of `bash`.
#[derive(Deserialize)]
pub struct BashArgs {
    command: String,
    timeout_ms: Option<u64>,
}

#[async_trait]
impl TypedTool for BashTool {
    const NAME: &'static str = "bash";
    type Args = BashArgs;

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        object_schema(
            json!({
                "command": {"type": "string", "description": "The command line to run."},
                "timeout_ms": {
                    "type": "integer",
                    "minimum": 1,
                    "description": format!(
                        "Timeout in milliseconds (default {}, maximum {}).",
                        self.env.limits.bash_timeout_default.as_millis(),
                        self.env.limits.bash_timeout_max.as_millis()
                    )
                }
            }),
            &["command"],
        )
    }

    async fn call(&self, args: BashArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`command` must not be empty".into(),
            ));
        }
        let limits = &self.env.limits;
        let mut notes = Vec::new();
        let timeout = match args.timeout_ms {
            Some(0) => {
                return Err(ToolError::InvalidArguments(
                    "`timeout_ms` must be at least 1".into(),
                ))
            }
            Some(ms) if Duration::from_millis(ms) > limits.bash_timeout_max => {
                notes.push(format!(
                    "[timeout_ms {ms} is above the maximum; used {} ms]",
                    limits.bash_timeout_max.as_millis()
                ));
                limits.bash_timeout_max
            }
            Some(ms) => Duration::from_millis(ms),
            None => limits.bash_timeout_default,
        };
        self.env
            .permissions
            .authorize_call(
                Action::Execute {
                    command: args.command.clone(),
                },
                ctx,
            )
            .await?;

        // Files the command changes, seen from outside it (the session's change tracker).
        let feed = self.env.changes.as_deref();
        let before = changes::mark(feed).await;
        let output = self
            .run_authorized(&args.command, timeout, notes, ctx)
            .await?;
        let effects = changes::since(feed, before, self.env.workspace.root()).await;
        Ok(effects.into_iter().fold(output, ToolOutput::with_effect))
    }
}

impl BashTool {
    /// Runs an authorised command in its sandbox, with the escalation path, and renders
    /// its result.
    async fn run_authorized(
        &self,
        command: &str,
        timeout: Duration,
        mut notes: Vec<String>,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let mode = self.env.sandbox.mode_for(self.env.permissions.mode());
        let network = !mode.is_sandboxed() || self.env.sandbox.config().allow_network;
        let outcome = self
            .execute(command, timeout, mode, ctx, &mut notes)
            .await?;
        if outcome.termination == Termination::Cancelled {
            return Err(ToolError::Cancelled);
        }
        let call = CommandCall {
            call_id: &ctx.call_id,
            command,
            timeout,
        };
        let Some(denial) = denial_in(&outcome, mode, network) else {
            return self.finish(&call, outcome, notes, Vec::new());
        };
        if !self.env.permissions.offers_escalation() {
            let after = vec![denial.note()];
            return self.finish(&call, outcome, notes, after);
        }
        let reason = format!(
            "The sandbox ({}) denied it:\n{}",
            denial.limits(),
            denial.quoted()
        );
        let escalation = Action::RunUnsandboxed {
            command: command.to_owned(),
            reason,
        };
        match self.env.permissions.authorize_call(escalation, ctx).await {
            Ok(()) => {
                notes.push(format!(
                    "[the sandbox denied the first run of this command:\n{}\nThe user \
                         allowed one run without the sandbox; this is its output]",
                    denial.quoted()
                ));
                let outcome = self
                    .execute(command, timeout, SandboxMode::Off, ctx, &mut notes)
                    .await?;
                self.finish(&call, outcome, notes, Vec::new())
            }
            Err(ToolError::Denied(why)) => {
                let after = vec![
                    denial.note(),
                    format!("[running it without the sandbox was not allowed: {why}]"),
                ];
                self.finish(&call, outcome, notes, after)
            }
            Err(other) => Err(other),
        }
    }
}

/// The call a result answers: what [`BashTool`]'s result names besides the outcome.
#[derive(Clone, Copy)]
struct CommandCall<'a> {
    /// The tool call's id (names its spill file).
    call_id: &'a str,
    /// The command line as the model wrote it.
    command: &'a str,
    /// The timeout it ran under.
    timeout: Duration,
}

/// The sandbox denial visible in a run's output, if it ran sandboxed.
fn denial_in(outcome: &CommandOutcome, mode: SandboxMode, network: bool) -> Option<Denial> {
    let rendered = render_output(&outcome.output);
    let text = match &rendered.tail {
        Some(tail) => format!("{}\n{tail}", rendered.head),
        None => rendered.head,
    };
    sandbox::denial::detect(&text, mode, network)
}

impl BashTool {
    /// Runs `command` in `mode`'s sandbox to its end: in the front-end's terminal when it
    /// offers one (a note about its output joins `notes`), else as pith's own child.
    async fn execute(
        &self,
        command: &str,
        timeout: Duration,
        mode: SandboxMode,
        ctx: &ToolContext,
        notes: &mut Vec<String>,
    ) -> Result<CommandOutcome, ToolError> {
        if let Some(terminal) = &self.env.terminal {
            let call = TerminalCall {
                env: &self.env,
                call_id: &ctx.call_id,
                command,
                timeout,
                mode,
                cancel: &ctx.cancel,
            };
            return in_terminal::run_in_terminal(terminal.as_ref(), call, notes).await;
        }
        let confinement = self
            .env
            .sandbox
            .prepare(
                mode,
                self.env.workspace.root(),
                self.env.capture.spill_dir().path(),
            )
            .map_err(|err| ToolError::Failed(err.to_string()))?;
        let cancel = &ctx.cancel;
        let limits = &self.env.limits;
        let spill = self.env.capture.spill_dir().clone();
        let spill_path = spill.path().as_os_str().to_owned();
        let confined_mode = confinement.as_ref().map(Confinement::mode);
        let spec = CommandSpec {
            command: command.to_owned(),
            cwd: self.env.workspace.root().to_path_buf(),
            timeout,
            kill_grace: limits.bash_kill_grace,
            drain_after_exit: limits.bash_drain_after_exit,
            memory_cap: limits.bash_memory_cap_bytes,
            spill_cap: limits.spill_cap_bytes,
            spill_opener: Box::new(move || spill.create()),
            env_remove: secret_env_names(
                std::env::vars_os().map(|(name, _)| name.to_string_lossy().into_owned()),
                &self.env.bash_env_exclude,
            ),
            // Spill markers name files as `$PITH_SPILL_DIR/N.txt`.
            env_set: vec![(SPILL_DIR_VAR.to_owned(), spill_path)],
            confinement,
        };
        run_command(spec, cancel)
            .await
            .map_err(|err| match confined_mode {
                None => ToolError::Failed(format!("could not start bash: {err}")),
                Some(mode) => ToolError::Failed(format!(
                    "could not start bash in the `{mode}` sandbox: {err} (entering the network \
                 namespace or applying the Landlock rules failed); the command was not run. \
                 Allowing the network (`--allow-network`) skips the network namespace; \
                 `--sandbox off` runs commands without the sandbox"
                )),
            })
    }

    /// The result the model sees for `outcome`: the output, then the `before` notes
    /// (arguments, escalation), the status lines (exit code, …) and the `after` notes
    /// (sandbox denial).
    fn finish(
        &self,
        call: &CommandCall<'_>,
        outcome: CommandOutcome,
        before: Vec<String>,
        after: Vec<String>,
    ) -> Result<ToolOutput, ToolError> {
        let CommandCall {
            call_id,
            command,
            timeout,
        } = *call;
        let limits = &self.env.limits;
        let mut status = before;
        let exit_code = match outcome.termination {
            Termination::Cancelled => return Err(ToolError::Cancelled),
            Termination::Exited(code) => {
                status.push(format!("[exit code: {code}]"));
                Some(code)
            }
            Termination::Signaled(signal) => {
                status.push(format!("[killed by signal {signal}]"));
                None
            }
            Termination::TimedOut => {
                status.push(format!(
                    "[timed out after {} ms; the command and all its processes were ended]",
                    timeout.as_millis()
                ));
                None
            }
        };
        if outcome.stragglers_killed {
            status.push(format!(
                "[background processes still writing {} ms after the command exited were \
                 ended; redirect their output to a file to keep them running]",
                limits.bash_drain_after_exit.as_millis()
            ));
        }
        let output = &outcome.output;
        if let Some(spill) = &output.spill {
            if spill.discarded > 0 {
                status.push(format!(
                    "[output was {} bytes; only the first {} were saved]",
                    output.total_bytes, spill.written
                ));
            }
        }
        if let Some(err) = &output.spill_error {
            status.push(format!("[the full output could not be saved: {err}]"));
        }
        status.extend(after);
        let trailer = status.join("\n");
        let content = model_text(
            &self.env.capture,
            call_id,
            Some(command),
            exit_code,
            output,
            &trailer,
        )
        .text;
        let failed = exit_code != Some(0);
        Ok(ToolOutput {
            content,
            is_error: failed,
            effects: Vec::new(),
            images: Vec::new(),
            child: None,
        })
    }
}

/// The text the model sees for a command's captured output, then `trailer` (exit code and
/// notes): the output squashed by [`Capture`] — whole, read back from the spill file when
/// it overflowed memory and fits [`Capture::whole_max_bytes`] — and the spill marker.
/// `(no output)` stands for an empty output. `pith compress` calls this too, so both
/// give the same bytes for the same output.
pub fn model_text(
    capture: &Capture,
    call_id: &str,
    command: Option<&str>,
    exit_code: Option<i32>,
    output: &CapturedOutput,
    trailer: &str,
) -> Finished {
    let rendered = render_output(output);
    let complete = output
        .spill
        .as_ref()
        .is_some_and(|s| s.discarded == 0 && output.spill_error.is_none());
    let mut finished = capture.finish_with_stats(
        call_id,
        RawOutput {
            tool: "bash",
            command,
            exit_code,
            text: &rendered.head,
            overflow: rendered.tail.as_deref().map(|tail| Overflow {
                omitted_lines: rendered.omitted_lines,
                tail,
                spilled: output.spill.as_ref().map(|s| s.path.as_path()),
                complete,
            }),
            trailer,
        },
    );
    if rendered.head.is_empty() && rendered.tail.is_none() {
        finished.text = if finished.text.is_empty() {
            "(no output)".to_owned()
        } else {
            format!("(no output)\n{}", finished.text)
        };
    }
    finished
}

/// The captured output as text.
pub struct RenderedOutput {
    /// All of the output, or its head (ending at a line boundary) when it overflowed.
    pub head: String,
    /// The tail (starting at a line boundary) when the output overflowed.
    pub tail: Option<String>,
    /// Lines in neither part.
    pub omitted_lines: usize,
}

/// Decodes the captured bytes (invalid UTF-8 shown as U+FFFD), cutting head and tail at
/// line boundaries when the output overflowed memory.
pub fn render_output(output: &CapturedOutput) -> RenderedOutput {
    if !output.overflowed() {
        return RenderedOutput {
            head: String::from_utf8_lossy(&output.head).into_owned(),
            tail: None,
            omitted_lines: 0,
        };
    }
    let head = match output.head.iter().rposition(|&b| b == b'\n') {
        Some(end) => &output.head[..=end],
        None => &output.head[..],
    };
    let tail = match output.tail.iter().position(|&b| b == b'\n') {
        Some(start) if start + 1 < output.tail.len() => &output.tail[start + 1..],
        _ => &output.tail[..],
    };
    let newlines = |bytes: &[u8]| bytes.iter().filter(|&&b| b == b'\n').count() as u64;
    let omitted = output
        .total_lines
        .saturating_sub(newlines(head) + newlines(tail))
        .max(1);
    RenderedOutput {
        head: String::from_utf8_lossy(head).into_owned(),
        tail: Some(String::from_utf8_lossy(tail).into_owned()),
        omitted_lines: usize::try_from(omitted).unwrap_or(usize::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_states_the_sandbox_unless_it_is_off() {
        let default = describe(&SandboxConfig::default());
        assert!(
            default.contains("cannot write outside the workspace"),
            "{default}"
        );
        assert!(default.contains("no network"), "{default}");
        let network = describe(&SandboxConfig::default().with_network(true));
        assert!(!network.contains("no network"), "{network}");
        let off = describe(&SandboxConfig::default().with_mode(Some(SandboxMode::Off)));
        assert!(!off.contains("sandbox"), "{off}");
    }
}
