//! `pith acp`: glue between the command line and pith-acp.

use anyhow::Result;
use pith_agent::Frontend;

use crate::cli::AcpArgs;
use crate::exit::ExitError;

/// Serves the editor on stdin/stdout until it closes them.
pub fn run(args: AcpArgs) -> Result<()> {
    let cwd = std::env::current_dir()
        .map_err(|e| ExitError::usage(format!("cannot read the current directory: {e}")))?;
    // Each session's workspace is the editor's `cwd`.
    let overrides = super::options::overrides(args.session, cwd);
    let options = pith_acp::AgentOptions {
        overrides,
        env: Frontend::process_env().env,
    };
    pith_acp::run(options)?;
    Ok(())
}
