//! `pith` with no subcommand: glue between the command line and pith-repl.

use anyhow::Result;
use pith_agent::{Overrides, SessionChoice};

use crate::cli::ReplArgs;
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
        session,
        ..super::options::overrides(args.session, cwd)
    };
    pith_repl::run(overrides).map_err(|error| {
        ExitError {
            code: error.exit_code(),
            message: error.to_string(),
        }
        .into()
    })
}
