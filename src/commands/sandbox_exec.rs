//! `pith sandbox-exec --spec JSON` (hidden): runs one `bash` command for an editor's
//! terminal with the sandbox and secret filter of the session that asked for it
//! (`pith_tools::run_wrapped`). Its exit code is the command's.

use crate::cli::SandboxExecArgs;
use pith_tools::{run_wrapped, WrappedCommand};

/// Exit code when the command could not be started at all.
const COULD_NOT_START: i32 = 126;

/// Runs the wrapped command; returns the code to exit with.
pub fn run(args: SandboxExecArgs) -> i32 {
    let wrapped = match WrappedCommand::from_spec(&args.spec) {
        Ok(wrapped) => wrapped,
        Err(error) => {
            eprintln!("pith: {error}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("pith: cannot start the async runtime: {error}");
            return COULD_NOT_START;
        }
    };
    match runtime.block_on(run_wrapped(&wrapped)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("pith: {error}");
            COULD_NOT_START
        }
    }
}
