//! `pith rewind`: glue between the command line and
//! `pith_agent::rewind_session`, and the text or JSON it prints.

use std::fmt::Write as _;

use anyhow::Result;
use pith_agent::ExitCode;
use pith_agent::RewindPlan;
use pith_agent::{rewind_plan_lines, rewind_turn_lines};
use pith_agent::{rewind_session, RewindOutcome, RewindRequest};
use pith_session::RewindMode;
use serde_json::json;

use crate::cli::RewindArgs;
use crate::exit::ExitError;

/// Runs `pith rewind …`.
pub fn run(args: RewindArgs) -> Result<()> {
    let mode = if args.code {
        RewindMode::Code
    } else if args.conversation {
        RewindMode::Conversation
    } else {
        RewindMode::Both
    };
    let request = RewindRequest {
        session: args.session.clone(),
        turn: args.to,
        mode,
        dry_run: args.dry_run,
        force: args.force,
        undo: args.undo,
        skip_omitted: args.skip_omitted,
    };
    let env: pith_agent::Env = std::sync::Arc::new(|name: &str| std::env::var(name).ok());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ExitError::usage(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime
        .block_on(rewind_session(request, &env))
        .map_err(|error| ExitError {
            code: error.exit_code(),
            message: error.to_string(),
        })?;
    let blocked = matches!(outcome, RewindOutcome::Planned { blocked: true, .. });
    let not_as_planned =
        matches!(&outcome, RewindOutcome::Done { done, .. } if !done.not_as_planned.is_empty());
    let text = if args.json {
        format!("{}\n", outcome_json(&outcome))
    } else {
        outcome_text(&outcome, &args.session)
    };
    print!("{text}");
    if not_as_planned {
        return Err(ExitError {
            code: ExitCode::Failure,
            message: "the rewind is not done as planned: see the files above".into(),
        }
        .into());
    }
    if blocked {
        return Err(ExitError {
            code: ExitCode::Usage,
            message: "files changed outside pith would be overwritten: nothing was written \
                      (see them above; --force overwrites them)"
                .into(),
        }
        .into());
    }
    Ok(())
}

fn plan_json(plan: &RewindPlan) -> serde_json::Value {
    json!({
        "turn": plan.turn,
        "mode": plan.mode.as_str(),
        "writes": plan.writes(),
        "changed_outside": plan.changed_outside(),
        "skipped": plan.skipped(),
    })
}

fn outcome_json(outcome: &RewindOutcome) -> serde_json::Value {
    match outcome {
        RewindOutcome::Turns { session, turns } => json!({"session": session, "turns": turns}),
        RewindOutcome::Planned { plan, blocked } => {
            let mut value = plan_json(plan);
            value["done"] = json!(false);
            value["blocked"] = json!(blocked);
            value
        }
        RewindOutcome::Done { plan, done } => {
            let mut value = plan_json(plan);
            value["done"] = json!(true);
            value["restored"] = json!(done.record.restored);
            value["not_as_planned"] = json!(done.not_as_planned);
            value
        }
    }
}

fn outcome_text(outcome: &RewindOutcome, session: &str) -> String {
    let mut out = String::new();
    match outcome {
        RewindOutcome::Turns { session, turns } => {
            let _ = writeln!(out, "Session {session}: {} turn(s)", turns.len());
            for line in rewind_turn_lines(turns) {
                let _ = writeln!(out, "{line}");
            }
            let _ = writeln!(
                out,
                "Rewind with `pith rewind {session} --to TURN [--code|--conversation|--both]`."
            );
        }
        RewindOutcome::Planned { plan, blocked } => {
            describe(&mut out, plan);
            let _ = writeln!(
                out,
                "{}",
                if *blocked {
                    "Not done: run again with --force to overwrite the files changed outside pith."
                } else {
                    "Dry run: nothing was written."
                }
            );
        }
        RewindOutcome::Done { plan, done } => {
            describe(&mut out, plan);
            if done.not_as_planned.is_empty() {
                let _ = writeln!(
                    out,
                    "Done: {} file(s) restored, each re-read; the rewind is recorded (`pith rewind {session} --undo` undoes it).",
                    done.record.restored.len(),
                );
            } else {
                let _ = writeln!(
                    out,
                    "Not done as planned: re-read after the rewind, {} are not in the state it wrote (something changed them meanwhile).",
                    done.not_as_planned.join(", ")
                );
            }
        }
    }
    out
}

fn describe(out: &mut String, plan: &RewindPlan) {
    for line in rewind_plan_lines(plan) {
        let _ = writeln!(out, "{line}");
    }
}
