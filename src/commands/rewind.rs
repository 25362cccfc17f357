//! `pith rewind`: glue between the command line and
//! `pith_agent::checkpoints::offline::rewind_session`, and the text or JSON it prints.

use std::fmt::Write as _;

use anyhow::Result;
use pith_agent::checkpoints::offline::{rewind_session, RewindOutcome, RewindRequest};
use pith_agent::checkpoints::rewind::RewindPlan;
use pith_agent::ExitCode;
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
        session: args.session,
        turn: args.to,
        mode,
        dry_run: args.dry_run,
        force: args.force,
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
    let text = if args.json {
        format!("{}\n", outcome_json(&outcome))
    } else {
        outcome_text(&outcome)
    };
    print!("{text}");
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
            value
        }
    }
}

fn outcome_text(outcome: &RewindOutcome) -> String {
    let mut out = String::new();
    match outcome {
        RewindOutcome::Turns { session, turns } => {
            let _ = writeln!(out, "Session {session}: {} turn(s)", turns.len());
            for turn in turns {
                let files = if turn.files.is_empty() {
                    String::new()
                } else {
                    format!("  [{}]", turn.files.join(", "))
                };
                let _ = writeln!(
                    out,
                    "{:>4}  {}  {}{files}",
                    turn.number, turn.ts, turn.preview
                );
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
            let _ = writeln!(
                out,
                "Done: {} file(s) restored; the rewind is recorded (and can itself be rewound).",
                done.record.restored.len()
            );
        }
    }
    out
}

fn describe(out: &mut String, plan: &RewindPlan) {
    let _ = writeln!(
        out,
        "Rewind to before turn {} ({}): {}",
        plan.turn.number,
        plan.turn.preview,
        plan.mode.describe()
    );
    for path in plan.writes() {
        let _ = writeln!(out, "  restore {path}");
    }
    for path in plan.changed_outside() {
        let _ = writeln!(out, "  changed outside pith since: {path}");
    }
    if plan.mode.rewinds_conversation() {
        let _ = writeln!(
            out,
            "  the conversation continues from before turn {}",
            plan.turn.number
        );
    }
}
