//! Why a conversation could not be opened, or a command could not be carried out.

use pith_session::SessionError;
use thiserror::Error;

use crate::exit::ExitCode;

/// Why a conversation could not be opened, or a command could not be carried out. The
/// conversation is unchanged after an error.
#[derive(Debug, Error)]
pub enum ConversationError {
    /// Bad options, configuration, model, key or session query.
    #[error("{0}")]
    Usage(String),
    /// The file system or the session store failed.
    #[error("{0}")]
    Failure(String),
}

impl ConversationError {
    /// The process exit code for this error.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::Usage(_) => ExitCode::Usage,
            Self::Failure(_) => ExitCode::Failure,
        }
    }

    /// A usage error saying `error`.
    pub(crate) fn usage(error: impl std::fmt::Display) -> Self {
        Self::Usage(error.to_string())
    }

    /// A failure saying `error`.
    pub(crate) fn failure(error: impl std::fmt::Display) -> Self {
        Self::Failure(error.to_string())
    }

    /// A session store error: a usage error for a bad query, else a failure.
    pub(crate) fn session(error: SessionError) -> Self {
        if error.is_usage() {
            Self::usage(error)
        } else {
            Self::failure(error)
        }
    }
}
