//! The testkit's one error type: what went wrong starting the server, reading a script or
//! waiting for requests, with enough context to fix the test.

use std::time::Duration;

/// Errors from loading scripts, starting the server and waiting for requests.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    /// The script is not valid JSON or does not match the script format.
    #[error("{origin}: not a valid testkit script: {source}")]
    ScriptSyntax {
        /// The file name, or `script` for an in-memory string.
        origin: String,
        /// The serde error, with line and column.
        source: serde_json::Error,
    },
    /// The script parses but breaks a rule (see [`crate::Script::validate`]).
    #[error("invalid testkit script: {0}")]
    InvalidScript(String),
    /// A file or socket operation failed.
    #[error("could not {action}: {source}")]
    Io {
        /// What was being done, e.g. `bind 127.0.0.1:8080`.
        action: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Fewer requests than expected arrived before the timeout.
    #[error("waited {waited:?} for {wanted} request(s) but only {received} arrived")]
    WaitTimedOut {
        /// How many requests the caller waited for.
        wanted: usize,
        /// How many had arrived.
        received: usize,
        /// How long the caller waited.
        waited: Duration,
    },
}
