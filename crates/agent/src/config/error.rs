//! Why the configuration cannot be used.

use std::path::PathBuf;

use pith_providers::models::error::ModelError;
use thiserror::Error;

/// A configuration problem (exit code 2 in the binary).
#[derive(Debug, Error)]
pub enum ConfigError {
    /// A file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file is not valid TOML or does not match the schema.
    #[error("invalid configuration in {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line when known.
        message: String,
    },
    /// The settings cannot work with the model (a cost ceiling without its prices).
    #[error("{0}")]
    Model(String),
    /// The model cannot be resolved or reached.
    #[error(transparent)]
    Resolve(#[from] ModelError),
}
