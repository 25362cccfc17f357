//! Error reporting shared by every command; the exit codes are `pith_agent::ExitCode`.

use std::fmt;

use pith_agent::ExitCode;

/// An error that carries the process exit code it should end with.
#[derive(Debug)]
pub struct ExitError {
    /// Process exit code.
    pub code: ExitCode,
    /// Message printed on stderr after `pith: `.
    pub message: String,
}

impl ExitError {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: ExitCode::Usage,
            message: message.into(),
        }
    }
}

impl fmt::Display for ExitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExitError {}

/// Prints the error (if any) on stderr and returns the exit code.
pub fn report(outcome: anyhow::Result<()>) -> i32 {
    match outcome {
        Ok(()) => ExitCode::Ok.code(),
        Err(err) => {
            let code = err
                .downcast_ref::<ExitError>()
                .map_or(ExitCode::Failure, |e| e.code);
            eprintln!("pith: {err:#}");
            code.code()
        }
    }
}
