//! The crate's error type.

use std::io;

/// A path a rewind refuses to write, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The workspace path.
    pub path: String,
    /// Why, in words for the user.
    pub reason: String,
}

/// What went wrong in the tracker, the store, a snapshot or a rewind.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, with the path.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A rewind was asked to apply a plan with refusals: nothing was written.
    #[error("the rewind was refused: {}", describe_refusals(.0))]
    Refused(Vec<Refusal>),
    /// A blob a rewind needs is missing from the store or damaged.
    #[error("the checkpoint store has no intact copy of {path} (blob {hash})")]
    MissingBlob {
        /// The workspace path whose content is missing.
        path: String,
        /// The blob's address.
        hash: String,
    },
    /// A path is unsafe to write (it escapes the workspace or crosses a symlink).
    #[error("{path}: {reason}")]
    Unsafe {
        /// The workspace path.
        path: String,
        /// Why it is unsafe, in words for the user.
        reason: String,
    },
    /// The background snapshot could not run (its thread failed).
    #[error("the first snapshot failed: {0}")]
    Snapshot(String),
}

fn describe_refusals(refusals: &[Refusal]) -> String {
    refusals
        .iter()
        .map(|r| format!("{} ({})", r.path, r.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A closure turning an `io::Error` into [`CheckpointError::Io`] with `context`.
pub(crate) fn io_context(context: impl Into<String>) -> impl FnOnce(io::Error) -> CheckpointError {
    let context = context.into();
    move |source| CheckpointError::Io { context, source }
}

/// The crate's result type.
pub type Result<T, E = CheckpointError> = std::result::Result<T, E>;
