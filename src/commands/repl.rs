//! `pith` with no subcommand: glue between the command line and pith-repl.

use anyhow::Result;
use pith_agent::{Overrides, SessionChoice};
use pith_tools::PermissionMode;

use crate::cli::{ReplApprovalArg, ReplArgs};
use crate::exit::ExitError;

/// Runs the interactive REPL in the current directory.
pub fn run(args: ReplArgs) -> Result<()> {
    let cwd = std::env::current_dir()
        .map_err(|e| ExitError::usage(format!("cannot read the current directory: {e}")))?;
    let session = match (args.continue_latest, args.resume) {
        (_, Some(id)) => SessionChoice::Resume(id),
        (true, None) => SessionChoice::Latest,
        (false, None) => SessionChoice::New,
    };
    let overrides = Overrides {
        model: args.model,
        context_window: args.context_window,
        approval: args.approval.map(|mode| match mode {
            ReplApprovalArg::Ask => PermissionMode::Ask,
            ReplApprovalArg::ReadOnly => PermissionMode::ReadOnly,
            ReplApprovalArg::AutoEdit => PermissionMode::AutoEdit,
            ReplApprovalArg::Full => PermissionMode::Full,
        }),
        no_auto_compact: args.no_auto_compact,
        max_turns: None,
        max_cost: args.max_cost,
        max_duration: None,
        sandbox: args.sandbox,
        allow_network: args.allow_network,
        reasoning: args.reasoning,
        session,
        cwd,
        trust_project: false,
        extra_mcp_servers: Vec::new(),
    };
    pith_repl::run(overrides).map_err(|error| {
        ExitError {
            code: error.exit_code(),
            message: error.to_string(),
        }
        .into()
    })
}
