//! The headless job: resolve configuration, open or create the session, run one turn,
//! persist every event, print the result.

use std::io::Write;

use pith_core::{LoopEvent, Message};
use pith_providers::config::Config;
use pith_providers::setup::{build_agent_loop, resolve_choice, LoopFlags, ModelChoice};
use pith_providers::{AgentLoop, LoopError};
use pith_session::{Event, NewSession, Observed, Session, SessionStore, TurnRecorder};
use pith_tools::{build_registry, PermissionMode, ToolsConfig};
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio_util::sync::CancellationToken;

use crate::options::{OutputFormat, RunOptions};
use crate::report::{self, CompactionReport, RunReport};

/// The job succeeded.
pub const EXIT_OK: i32 = 0;
/// The agent or the provider failed; the partial result was printed.
pub const EXIT_RUN_ERROR: i32 = 1;
/// Usage or configuration error; nothing ran.
pub const EXIT_USAGE: i32 = 2;
/// Interrupted (SIGINT / SIGTERM); the transcript is consistent.
pub const EXIT_INTERRUPTED: i32 = 130;

/// A failure before the job could start, with its exit code.
struct Refusal {
    code: i32,
    message: String,
}

fn usage(message: impl std::fmt::Display) -> Refusal {
    Refusal {
        code: EXIT_USAGE,
        message: message.to_string(),
    }
}

fn failure(message: impl std::fmt::Display) -> Refusal {
    Refusal {
        code: EXIT_RUN_ERROR,
        message: message.to_string(),
    }
}

/// Everything set up for the turn.
struct Job {
    agent: AgentLoop,
    session: Session,
    model_spec: String,
    pricing: Option<pith_providers::catalog::Pricing>,
    resumed: bool,
}

/// Runs the job and returns the process exit code. `env` looks up environment variables
/// (keys, base URLs, config locations); `cancel` is cancelled on SIGINT / SIGTERM.
pub async fn run(
    options: RunOptions,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    out: &mut dyn Write,
    err: &mut dyn Write,
    cancel: CancellationToken,
) -> i32 {
    let mut job = match prepare(&options, env, err) {
        Ok(job) => job,
        Err(refusal) => {
            let _ = writeln!(err, "pith: {}", refusal.message);
            return refusal.code;
        }
    };
    let session_id = job.session.id().to_owned();
    let stream_json = options.format == OutputFormat::StreamJson;
    if stream_json {
        emit(
            out,
            &report::session_started(
                &session_id,
                &job.model_spec,
                &options.cwd.display().to_string(),
                job.resumed,
            ),
        );
    }

    let user = Message::user(options.prompt.clone());
    if let Err(error) = job.session.append(Event::UserMessage {
        message: user.clone(),
    }) {
        let _ = writeln!(err, "pith: cannot record the prompt: {error}");
        return EXIT_RUN_ERROR;
    }

    let mut recorder = TurnRecorder::new();
    let mut persist_error: Option<String> = None;
    let (tx, mut rx) = unbounded_channel();
    let outcome = {
        let turn = job.agent.run_turn(user, &tx, &cancel);
        tokio::pin!(turn);
        loop {
            tokio::select! {
                biased;
                Some(event) = rx.recv() => handle_event(&event, &mut recorder, &mut job.session, &mut persist_error, stream_json, out, err),
                result = &mut turn => break result,
            }
        }
    };
    drop(tx);
    while let Ok(event) = rx.try_recv() {
        handle_event(
            &event,
            &mut recorder,
            &mut job.session,
            &mut persist_error,
            stream_json,
            out,
            err,
        );
    }

    let (summary, error) = match outcome {
        Ok(summary) => (summary, None),
        Err(failure) => (failure.summary, Some(failure.error)),
    };
    let interrupted = matches!(error, Some(LoopError::Cancelled));
    let error_text = error
        .as_ref()
        .map(|e| e.to_string())
        .or(persist_error.clone());
    if let Err(e) = recorder.finish(
        &mut job.session,
        interrupted,
        error.as_ref().map(|e| e.to_string()),
    ) {
        let _ = writeln!(err, "pith: cannot record the end of the turn: {e}");
    }

    let text = recorder.final_text();
    let result = RunReport {
        session_id,
        model: job.model_spec.clone(),
        text: text.clone(),
        turns: summary.requests,
        usage: summary.usage,
        cost: job.pricing.map(|p| p.cost(&summary.usage)),
        compactions: recorder
            .compactions()
            .iter()
            .map(CompactionReport::from)
            .collect(),
        error: error_text.clone(),
    };
    match options.format {
        OutputFormat::Text => {
            if !text.is_empty() {
                let _ = out.write_all(text.as_bytes());
                if !text.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
            }
        }
        OutputFormat::Json => {
            let _ = serde_json::to_writer(&mut *out, &result);
            let _ = out.write_all(b"\n");
        }
        OutputFormat::StreamJson => {
            let mut value = serde_json::to_value(&result).unwrap_or(Value::Null);
            value["type"] = Value::from("result");
            emit(out, &value);
        }
    }
    let _ = out.flush();
    match (&error, &persist_error) {
        (Some(LoopError::Cancelled), _) => {
            let _ = writeln!(
                err,
                "pith: interrupted; session {} is saved",
                result.session_id
            );
            EXIT_INTERRUPTED
        }
        (Some(error), _) => {
            let _ = writeln!(err, "pith: {error}");
            EXIT_RUN_ERROR
        }
        (None, Some(persist)) => {
            let _ = writeln!(err, "pith: {persist}");
            EXIT_RUN_ERROR
        }
        (None, None) => EXIT_OK,
    }
}

fn emit(out: &mut dyn Write, value: &Value) {
    let _ = serde_json::to_writer(&mut *out, value);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

#[allow(clippy::too_many_arguments)]
fn handle_event(
    event: &LoopEvent,
    recorder: &mut TurnRecorder,
    session: &mut Session,
    persist_error: &mut Option<String>,
    stream_json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) {
    match recorder.observe(event, session) {
        Ok(Observed::Compacted(note)) if stream_json => {
            let report = CompactionReport::from(&note);
            emit(
                out,
                &serde_json::json!({"type": "compaction", "trigger": report.trigger, "tokens_before": report.tokens_before, "tokens_after": report.tokens_after}),
            );
        }
        Ok(_) => {}
        Err(error) => {
            let message = format!("cannot persist a compaction: {error}");
            let _ = writeln!(err, "pith: {message}");
            persist_error.get_or_insert(message);
        }
    }
    if !stream_json {
        if let LoopEvent::Notice(text) = event {
            let _ = writeln!(err, "pith: {text}");
        }
        return;
    }
    let value = match event {
        LoopEvent::MessageAppended(message) if message.role == pith_core::Role::Assistant => {
            report::assistant_message(message)
        }
        LoopEvent::ToolCallFinished { call, result } => report::tool_result(call, result),
        LoopEvent::AutoCompaction(pith_core::AutoCompaction::Started { .. }) => {
            serde_json::json!({"type": "compaction_started"})
        }
        LoopEvent::AutoCompaction(pith_core::AutoCompaction::Cancelled) => {
            serde_json::json!({"type": "compaction_cancelled"})
        }
        LoopEvent::AutoCompaction(pith_core::AutoCompaction::Failed { reason }) => {
            serde_json::json!({"type": "compaction_failed", "reason": reason})
        }
        LoopEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => {
            serde_json::json!({"type": "retry", "attempt": attempt, "delay_ms": delay_ms, "reason": reason})
        }
        LoopEvent::Notice(text) => serde_json::json!({"type": "notice", "text": text}),
        _ => return,
    };
    emit(out, &value);
}

fn prepare(
    options: &RunOptions,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
    err: &mut dyn Write,
) -> Result<Job, Refusal> {
    if options.prompt.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    if options.approval == PermissionMode::Ask {
        return Err(usage(
            "--approval ask needs the interactive REPL; use read-only, auto-edit or full",
        ));
    }
    let cwd = std::fs::canonicalize(&options.cwd).map_err(|e| {
        usage(format!(
            "cannot use {} as the workspace: {e}",
            options.cwd.display()
        ))
    })?;
    let config = Config::load(&cwd, env).map_err(usage)?;
    let context = config.context_config().map_err(usage)?;
    let store = SessionStore::from_env().map_err(usage)?;

    let resumed = match &options.session {
        Some(query) => {
            let resumed =
                store
                    .resume(query)
                    .map_err(|e| if e.is_usage() { usage(&e) } else { failure(&e) })?;
            for warning in &resumed.warnings {
                let _ = writeln!(err, "pith: warning: {warning}");
            }
            Some(resumed)
        }
        None => None,
    };

    let choice = ModelChoice {
        requested: options.model.clone(),
        recorded: resumed.as_ref().and_then(|r| r.recorded_model.clone()),
        context_window: options.context_window,
    };
    let resolved = resolve_choice(&choice, &config, env).map_err(usage)?;
    for warning in &resolved.warnings {
        let _ = writeln!(err, "pith: {warning}");
    }

    let (session, history, was_resumed) = match resumed {
        Some(resumed) => (resumed.session, resumed.history, true),
        None => {
            let session = store
                .create(NewSession {
                    cwd: cwd.clone(),
                    provider: resolved.provider.clone(),
                    model: resolved.model.clone(),
                })
                .map_err(failure)?;
            (session, Vec::new(), false)
        }
    };
    let spill_dir = session.spill_dir().map_err(failure)?;
    let mut tools_config = ToolsConfig::new(&cwd, spill_dir).with_mode(options.approval);
    tools_config.squash = context.squash.clone();
    let tools = build_registry(tools_config).map_err(usage)?;

    let flags = LoopFlags {
        no_auto_compact: options.no_auto_compact,
        max_requests_per_turn: options.max_turns,
    };
    let mut agent =
        build_agent_loop(&resolved, &config, &context, &cwd, tools, flags).map_err(usage)?;
    agent.set_history(history);
    Ok(Job {
        agent,
        session,
        model_spec: resolved.spec(),
        pricing: resolved.pricing,
        resumed: was_resumed,
    })
}
