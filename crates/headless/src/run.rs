//! The headless job: open the conversation, run one turn while printing its events, print
//! the result, map the outcome to an exit code.

use std::io::Write;

use pith_agent::{ExitCode, Frontend, Overrides, RunReport};
use pith_core::{AutoCompaction, EventSink, LoopEvent};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::report;

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The final answer as plain text (pre-compaction text + post-compaction text).
    #[default]
    Text,
    /// One JSON object at the end (see docs/headless.md).
    Json,
    /// One JSON event per line while the job runs, then the result object.
    StreamJson,
}

/// What `pith run` is asked to do besides the conversation's settings.
#[derive(Debug, Clone)]
pub struct Job {
    /// The user's prompt.
    pub prompt: String,
    /// Output format.
    pub format: OutputFormat,
    /// stream-json also carries text and reasoning deltas.
    pub include_partial: bool,
    /// `--output-schema`: the JSON Schema the final answer must match.
    pub output_schema: Option<std::path::PathBuf>,
    /// `--pin` and `--pin-note`: pinned before the prompt is sent.
    pub pins: Vec<pith_agent::Pin>,
}

/// Runs the job and returns the process exit code. `cancel` is cancelled on SIGINT /
/// SIGTERM: the turn stops and is recorded as interrupted. There is no one to ask, so
/// tool calls that need approval are refused (`pith run` offers no `ask` mode).
pub async fn run(
    job: Job,
    overrides: Overrides,
    frontend: Frontend,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    cancel: CancellationToken,
) -> ExitCode {
    let schema = job.output_schema.as_deref();
    let opened = match pith_agent::open_job(&job.prompt, schema, &job.pins, overrides, frontend) {
        Ok(opened) => opened,
        Err(error) => {
            let _ = writeln!(err, "pith: {error}");
            return error.exit_code();
        }
    };
    for notice in &opened.notices {
        let _ = writeln!(err, "pith: {notice}");
    }
    let mut conversation = opened.value;
    let stream_json = job.format == OutputFormat::StreamJson;
    if stream_json {
        emit(
            out,
            &report::session_started(
                conversation.session_id(),
                &conversation.model_spec(),
                &conversation.cwd().display().to_string(),
                opened.resumed.is_some(),
            ),
        );
        // What the user was warned of at start (an instruction file cut to fit the
        // window, an unknown model's window) is also part of the stream.
        for notice in &opened.notices {
            emit(out, &serde_json::json!({"type": "notice", "text": notice}));
        }
    }
    let mut printer = Printer {
        stream_json,
        include_partial: job.include_partial,
        out: &mut *out,
        err: &mut *err,
    };
    let outcome = conversation
        .run_turn(&job.prompt, &mut printer, &cancel)
        .await;
    let code = outcome.exit_code();
    print_result(&RunReport::of(&conversation, &outcome), job.format, out);
    if code == ExitCode::Interrupted {
        let session = conversation.session_id();
        let _ = writeln!(err, "pith: interrupted; session {session} is saved");
    } else if let Some(error) = &outcome.error {
        let _ = writeln!(err, "pith: {error}");
    }
    if let Some(record_error) = &outcome.record_error {
        let _ = writeln!(err, "pith: {record_error}");
    }
    conversation.close();
    code
}

fn print_result(result: &RunReport, format: OutputFormat, out: &mut (dyn Write + Send)) {
    match (format, &result.structured_output) {
        // With a schema met, the answer is its JSON, for `| jq`.
        (OutputFormat::Text, Some(answer)) => emit(out, answer),
        (OutputFormat::Text, None) => {
            let text = &result.text;
            let newline = !text.is_empty() && !text.ends_with('\n');
            let _ = write!(out, "{text}{}", if newline { "\n" } else { "" });
        }
        (OutputFormat::Json, _) => emit(out, result),
        (OutputFormat::StreamJson, _) => {
            let mut value = serde_json::to_value(result).unwrap_or(Value::Null);
            value["type"] = Value::from("result");
            emit(out, &value);
        }
    }
    let _ = out.flush();
}

fn emit(out: &mut (dyn Write + Send), value: &impl serde::Serialize) {
    let _ = serde_json::to_writer(&mut *out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Prints the turn's events as they happen: stream-json lines, or in text mode the
/// notices on stderr.
struct Printer<'a> {
    stream_json: bool,
    include_partial: bool,
    out: &'a mut (dyn Write + Send),
    err: &'a mut (dyn Write + Send),
}

impl EventSink for Printer<'_> {
    fn emit(&mut self, event: LoopEvent) {
        if !self.stream_json {
            let line = match &event {
                LoopEvent::Notice(text) => text.clone(),
                LoopEvent::Governor(notice) => notice.text(),
                LoopEvent::Hook(run) => match hook_line(run) {
                    Some(line) => line,
                    None => return,
                },
                LoopEvent::OutputTruncated { reason } => {
                    format!("the answer was cut off: {reason}; incomplete tool calls were not run")
                }
                LoopEvent::AutoCompaction(AutoCompaction::Failed { reason }) => {
                    format!("automatic compaction failed: {reason}; the turn went on with the full history")
                }
                _ => return,
            };
            let _ = writeln!(self.err, "pith: {line}");
            return;
        }
        if let Some(value) = report::stream_event(&event, self.include_partial) {
            emit(self.out, &value);
        }
    }
}

/// How a hook run shows on stderr in text mode: blocks, failures and timeouts always, a
/// successful run only when it has a message for the user.
fn hook_line(run: &pith_core::HookRun) -> Option<String> {
    use pith_core::HookOutcome;
    let what = format!("{} hook `{}`", run.event, run.command);
    let message = run.message.as_deref().unwrap_or("");
    match run.outcome {
        HookOutcome::Proceed if message.is_empty() => None,
        HookOutcome::Proceed => Some(format!("{what}: {message}")),
        HookOutcome::Block => Some(format!("{what} blocked: {message}")),
        HookOutcome::Error => Some(format!("{what} failed: {message}")),
        HookOutcome::Timeout => Some(format!("{what} {message}")),
    }
}
