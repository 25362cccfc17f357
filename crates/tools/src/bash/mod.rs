//! The `bash` tool: runs a shell command in the workspace and reports its interleaved
//! output and exit code. Process handling is in [`process`], bounded output capture in
//! [`output`]; this module owns the arguments, the permission check and the text the
//! model sees.

pub mod output;
pub mod process;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pith_core::{Tool, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use self::output::CapturedOutput;
use self::process::{run_command, CommandSpec, Termination};
use crate::capture::{Capture, Finished, Overflow, RawOutput};
use crate::config::ToolEnv;
use crate::permission::Action;
use crate::workspace::SPILL_DIR_VAR;

/// `bash {command, timeout_ms?}`.
pub struct BashTool {
    env: Arc<ToolEnv>,
}

impl BashTool {
    /// The tool over `env`.
    pub fn new(env: Arc<ToolEnv>) -> Self {
        Self { env }
    }
}

#[derive(Deserialize)]
struct BashArgs {
    command: String,
    timeout_ms: Option<u64>,
}

#[async_trait]
impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn description(&self) -> &str {
        "Run a shell command with `bash -c` in the workspace root. stdout and stderr are \
         returned interleaved, followed by the exit code. stdin is empty (no interactive \
         programs). Long outputs are shortened and the full output saved to a file named \
         at the end (`$PITH_SPILL_DIR/N.txt`; the variable is set for commands). The \
         command and every process it started are ended at the timeout (default 120000 \
         ms)."
    }

    fn parameters(&self) -> serde_json::Value {
        json!({
            "type": "object",
            "properties": {
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
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        false
    }

    async fn run(
        &self,
        arguments: serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let args: BashArgs = crate::parse_args(arguments)?;
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
            .authorize(
                Action::Execute {
                    command: args.command.clone(),
                },
                &ctx.cancel,
            )
            .await?;

        let spill = self.env.capture.spill_dir().clone();
        let spill_path = spill.path().as_os_str().to_owned();
        let spec = CommandSpec {
            command: args.command.clone(),
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
        };
        let outcome = run_command(spec, &ctx.cancel)
            .await
            .map_err(|err| ToolError::Failed(format!("could not start bash: {err}")))?;

        let exit_code = match outcome.termination {
            Termination::Cancelled => return Err(ToolError::Cancelled),
            Termination::Exited(code) => {
                notes.push(format!("[exit code: {code}]"));
                Some(code)
            }
            Termination::Signaled(signal) => {
                notes.push(format!("[killed by signal {signal}]"));
                None
            }
            Termination::TimedOut => {
                notes.push(format!(
                    "[timed out after {} ms; the command and all its processes were ended]",
                    timeout.as_millis()
                ));
                None
            }
        };
        if outcome.stragglers_killed {
            notes.push(format!(
                "[background processes still writing {} ms after the command exited were \
                 ended; redirect their output to a file to keep them running]",
                limits.bash_drain_after_exit.as_millis()
            ));
        }
        let output = &outcome.output;
        if let Some(spill) = &output.spill {
            if spill.discarded > 0 {
                notes.push(format!(
                    "[output was {} bytes; only the first {} were saved]",
                    output.total_bytes, spill.written
                ));
            }
        }
        if let Some(err) = &output.spill_error {
            notes.push(format!("[the full output could not be saved: {err}]"));
        }
        let trailer = notes.join("\n");
        let content = model_text(
            &self.env.capture,
            &ctx.call_id,
            Some(&args.command),
            exit_code,
            output,
            &trailer,
        )
        .text;
        let failed = exit_code != Some(0);
        Ok(ToolOutput {
            content,
            is_error: failed,
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
