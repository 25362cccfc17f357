//! Exit codes and error reporting shared by every command.
//!
//! 0 success, 1 agent or provider error, 2 usage or configuration error, 130 interrupted.

use std::fmt;

/// An error that carries the process exit code it should end with.
#[derive(Debug)]
pub struct ExitError {
    /// Process exit code.
    pub code: i32,
    /// Message printed on stderr after `pith: `.
    pub message: String,
}

impl ExitError {
    /// A usage or configuration error (exit 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
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
        Ok(()) => 0,
        Err(err) => {
            let code = err.downcast_ref::<ExitError>().map_or(1, |e| e.code);
            eprintln!("pith: {err:#}");
            code
        }
    }
}
