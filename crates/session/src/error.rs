//! The one error type of the session store.
//!
//! Every failure names the session or file it concerns and what pith was doing, so a
//! front-end can print it as is. Corrupt transcript lines carry their 1-based line number.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong while storing, reading or listing sessions.
#[derive(Debug, Error)]
pub enum SessionError {
    /// Another process holds the session's writer lock.
    #[error("session {id} is in use by {}", holder_text(*.pid))]
    InUse {
        /// The session id.
        id: String,
        /// The pid written in the lock file, when it could be read.
        pid: Option<u32>,
    },
    /// No session matches the id, id prefix or path the user gave.
    #[error("no session matches {query:?}")]
    NotFound {
        /// What the user asked for.
        query: String,
    },
    /// An id prefix matches more than one session.
    #[error("{query:?} matches {} sessions: {}; give more of the id", candidates.len(), candidates.join(", "))]
    Ambiguous {
        /// What the user asked for.
        query: String,
        /// The matching session ids.
        candidates: Vec<String>,
    },
    /// A complete transcript line could not be understood.
    #[error("{}: line {line} is corrupt: {reason}", path.display())]
    CorruptLine {
        /// The transcript.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A file-system operation failed.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What pith was doing, e.g. "cannot append to".
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// None of `PITH_HOME`, `XDG_DATA_HOME`, `HOME` gives a place for sessions.
    #[error("cannot locate the sessions directory: set PITH_HOME (or XDG_DATA_HOME or HOME)")]
    NoDataDir,
    /// An event could not be serialised (e.g. a non-finite number in tool arguments).
    #[error("cannot encode a {kind} record: {source}")]
    Encode {
        /// The event kind.
        kind: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// A record of an unknown kind was handed to `append`; this version cannot write it.
    #[error("cannot append a record of unknown kind {kind:?}")]
    UnknownKind {
        /// The kind.
        kind: String,
    },
    /// An earlier failure left the session handle in a state where writing could lose
    /// data; reopen the session to continue (recovery runs on open).
    #[error("session {id} is no longer writable: {reason}")]
    Poisoned {
        /// The session id.
        id: String,
        /// What went wrong first.
        reason: String,
    },
    /// The existing transcript's last record cannot be continued (written by a newer
    /// pith, or corrupt).
    #[error("session {id} cannot be continued: {reason}")]
    NotContinuable {
        /// The session id.
        id: String,
        /// Why.
        reason: String,
    },
}

fn holder_text(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("pid {pid}"),
        None => "another process".to_owned(),
    }
}

impl SessionError {
    /// Wraps an I/O error with what pith was doing and on which path.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// True for errors caused by what the user asked for (unknown or ambiguous id,
    /// session in use): front-ends map these to a usage exit code.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. } | Self::Ambiguous { .. } | Self::InUse { .. } | Self::NoDataDir
        )
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = SessionError> = std::result::Result<T, E>;
