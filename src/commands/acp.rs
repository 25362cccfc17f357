//! `pith acp`: glue between the command line and pith-acp.

use anyhow::Result;
use pith_agent::{Frontend, Overrides};
use pith_tools::PermissionMode;

use crate::cli::{AcpArgs, ReplApprovalArg};
use crate::exit::ExitError;

/// Serves the editor on stdin/stdout until it closes them.
pub fn run(args: AcpArgs) -> Result<()> {
    let cwd = std::env::current_dir()
        .map_err(|e| ExitError::usage(format!("cannot read the current directory: {e}")))?;
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
        max_cost: args.max_cost,
        sandbox: args.sandbox,
        allow_network: args.allow_network,
        reasoning: args.reasoning,
        // Each session's workspace is the editor's `cwd`.
        cwd,
        ..Overrides::default()
    };
    let options = pith_acp::AgentOptions {
        overrides,
        env: Frontend::process_env().env,
    };
    pith_acp::run(options)?;
    Ok(())
}
