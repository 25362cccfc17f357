//! The headless job: open the conversation, run one turn while printing its events, print
//! the result, map the outcome to an exit code.

use std::io::Write;

use pith_agent::{Conversation, ExitCode, Frontend, OutputSchema, Overrides, TurnOutcome};
use pith_core::{AutoCompaction, EventSink, LoopEvent};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::report::{self, CompactionCost, CompactionReport, RequestEntry, RunReport};

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
    if job.prompt.trim().is_empty() {
        let _ = writeln!(err, "pith: the prompt is empty");
        return ExitCode::Usage;
    }
    let schema = match job.output_schema.as_deref().map(OutputSchema::load) {
        Some(Err(error)) => {
            let _ = writeln!(err, "pith: {error}");
            return ExitCode::Usage;
        }
        Some(Ok(schema)) => Some(schema),
        None => None,
    };
    let opened = match Conversation::open(overrides, frontend) {
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
    conversation.set_output_schema(schema);
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
    let (outcome, requests) = {
        let mut printer = Printer {
            stream_json,
            include_partial: job.include_partial,
            requests: Vec::new(),
            out: &mut *out,
            err: &mut *err,
        };
        let outcome = conversation
            .run_turn(&job.prompt, &mut printer, &cancel)
            .await;
        (outcome, printer.requests)
    };
    let code = outcome.exit_code();
    print_result(&job, &conversation, &outcome, requests, out);
    if code == ExitCode::Interrupted {
        let _ = writeln!(
            err,
            "pith: interrupted; session {} is saved",
            conversation.session_id()
        );
    } else if let Some(error) = &outcome.error {
        let _ = writeln!(err, "pith: {error}");
    }
    if let Some(record_error) = &outcome.record_error {
        let _ = writeln!(err, "pith: {record_error}");
    }
    conversation.close();
    code
}

fn print_result(
    job: &Job,
    conversation: &Conversation,
    outcome: &TurnOutcome,
    requests: Vec<RequestEntry>,
    out: &mut (dyn Write + Send),
) {
    let result = RunReport {
        session_id: conversation.session_id().to_owned(),
        model: conversation.model_spec(),
        text: outcome.text.clone(),
        turns: outcome.summary.requests,
        usage: outcome.total_usage(),
        cost: total_cost(conversation, outcome),
        reasoning_cost: reasoning_cost(conversation, &outcome.summary.usage),
        compactions: outcome
            .compactions
            .iter()
            .map(CompactionReport::from)
            .collect(),
        compaction: CompactionCost {
            totals: outcome.compaction,
            cost: cost(conversation, &outcome.compaction.usage),
        },
        requests,
        children: outcome.children.clone(),
        structured_output: outcome.structured_output.clone(),
        error: outcome
            .error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| outcome.record_error.clone()),
    };
    match job.format {
        // With a schema met, the answer is its JSON, for `| jq`.
        OutputFormat::Text if result.structured_output.is_some() => {
            emit(out, &result.structured_output);
        }
        OutputFormat::Text if result.text.is_empty() => {}
        OutputFormat::Text if result.text.ends_with('\n') => {
            let _ = out.write_all(result.text.as_bytes());
        }
        OutputFormat::Text => {
            let _ = writeln!(out, "{}", result.text);
        }
        OutputFormat::Json => emit(out, &result),
        OutputFormat::StreamJson => {
            let mut value = serde_json::to_value(&result).unwrap_or(Value::Null);
            value["type"] = Value::from("result");
            emit(out, &value);
        }
    }
    let _ = out.flush();
}

/// What the job cost: the provider's own figure when it reported one, else the catalog's
/// or configured prices applied to the usage.
fn cost(conversation: &Conversation, usage: &pith_core::Usage) -> Option<f64> {
    pith_core::usage_cost(usage, conversation.settings().model.pricing.as_ref())
}

/// The cost of the turn and its subagents: a child that ran the parent's model is priced
/// like the parent; one that ran another model counts only with a provider-reported
/// cost, else the total is unknown.
fn total_cost(conversation: &Conversation, outcome: &TurnOutcome) -> Option<f64> {
    let mut total = cost(conversation, &outcome.summary.usage)?;
    for child in &outcome.children {
        total += if child.usage.provider_cost_nanousd > 0 {
            child.usage.provider_cost_nanousd as f64 / 1e9
        } else if child.model == conversation.model_spec() {
            cost(conversation, &child.usage)?
        } else {
            return None;
        };
    }
    Some(total)
}

/// The reasoning part of the cost: reasoning tokens at the output price (a provider-
/// reported cost is split in the same proportion).
fn reasoning_cost(conversation: &Conversation, usage: &pith_core::Usage) -> Option<f64> {
    if usage.reasoning_tokens == 0 {
        return None;
    }
    if let Some(pricing) = conversation.settings().model.pricing {
        return Some(pricing.reasoning_cost(usage));
    }
    let total = cost(conversation, usage)?;
    let share = usage.reasoning_tokens.min(usage.output_tokens) as f64
        / (usage.input_tokens + usage.output_tokens).max(1) as f64;
    Some(total * share)
}

fn emit(out: &mut (dyn Write + Send), value: &impl serde::Serialize) {
    let _ = serde_json::to_writer(&mut *out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// Prints the turn's events as they happen: stream-json lines, or in text mode the
/// notices on stderr. Collects the requests for the result.
struct Printer<'a> {
    stream_json: bool,
    include_partial: bool,
    requests: Vec<RequestEntry>,
    out: &'a mut (dyn Write + Send),
    err: &'a mut (dyn Write + Send),
}

impl EventSink for Printer<'_> {
    fn emit(&mut self, event: LoopEvent) {
        if let LoopEvent::RequestFinished(report) = &event {
            self.requests.push(RequestEntry::from(report));
        }
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
