//! `pith run`: glue between the command line and pith-headless (runtime, signals, exit
//! code).

use std::io::Read;

use anyhow::Result;
use pith_agent::{Frontend, Overrides, SessionChoice};
use pith_headless::{Job, OutputFormat};
use pith_tools::PermissionMode;
use tokio_util::sync::CancellationToken;

use crate::cli::{ApprovalArg, FormatArg, RunArgs};
use crate::exit::ExitError;

/// Runs the job; the process exits with the job's code.
pub fn run(args: RunArgs) -> Result<()> {
    let prompt = match args.prompt.or(args.positional) {
        Some(text) if text == "-" => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| {
                ExitError::usage(format!("cannot read the prompt from standard input: {e}"))
            })?;
            text
        }
        Some(text) => text,
        None => {
            return Err(ExitError::usage(
                "give a prompt: pith run \"…\" (or -p TEXT, or - for stdin)",
            )
            .into())
        }
    };
    let cwd = match args.cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| ExitError::usage(format!("cannot read the current directory: {e}")))?,
    };
    let job = Job {
        prompt,
        format: match args.format {
            FormatArg::Text => OutputFormat::Text,
            FormatArg::Json => OutputFormat::Json,
            FormatArg::StreamJson => OutputFormat::StreamJson,
        },
        include_partial: args.include_partial,
        output_schema: args.output_schema,
        pins: args
            .pin
            .into_iter()
            .map(|path| pith_agent::Pin::File {
                path: path.display().to_string(),
            })
            .chain(
                args.pin_note
                    .into_iter()
                    .map(|text| pith_agent::Pin::Note { text }),
            )
            .collect(),
    };
    let overrides = crate::commands::options::with_model_options(
        args.shared,
        Overrides {
            approval: Some(match args.approval {
                ApprovalArg::ReadOnly => PermissionMode::ReadOnly,
                ApprovalArg::AutoEdit => PermissionMode::AutoEdit,
                ApprovalArg::Full => PermissionMode::Full,
            }),
            max_turns: args.max_turns,
            max_duration: args.max_duration.map(std::time::Duration::from_secs),
            session: match (args.session, args.fork) {
                (Some(query), _) => SessionChoice::Resume(query),
                (None, Some(fork)) => fork_choice(&fork)?,
                (None, None) => SessionChoice::New,
            },
            cwd,
            trust_project: args.trust_project,
            extra_mcp_servers: Vec::new(),
            ..Overrides::default()
        },
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExitError::usage(format!("cannot start the async runtime: {e}")))?;
    let code = runtime.block_on(async move {
        let cancel = CancellationToken::new();
        let on_signal = cancel.clone();
        tokio::spawn(async move {
            wait_for_termination().await;
            on_signal.cancel();
        });
        let mut out = std::io::stdout();
        let mut err = std::io::stderr();
        pith_headless::run(
            job,
            overrides,
            Frontend::process_env(),
            &mut out,
            &mut err,
            cancel,
        )
        .await
    });
    // Background tasks (e.g. a stuck HTTP read) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::exit(code.code());
}

/// Resolves on SIGINT or SIGTERM.
async fn wait_for_termination() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut interrupt), Ok(mut terminate)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => {}
        _ = terminate.recv() => {}
    }
}

/// `--fork ID` or `--fork ID@TURN`.
fn fork_choice(fork: &str) -> Result<SessionChoice> {
    match fork.rsplit_once('@') {
        Some((query, turn)) if !query.is_empty() => {
            let turn: u64 = turn.parse().ok().filter(|t| *t > 0).ok_or_else(|| {
                ExitError::usage(format!(
                    "--fork {fork}: the turn after @ must be a number from 1 (as `pith rewind {query}` lists them)"
                ))
            })?;
            Ok(SessionChoice::ForkAt {
                query: query.to_owned(),
                turn,
            })
        }
        _ => Ok(SessionChoice::Fork(fork.to_owned())),
    }
}
