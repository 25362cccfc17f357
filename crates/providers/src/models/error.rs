//! Why a model could not be resolved or reached.

use thiserror::Error;

use crate::wire::error::ProviderError;

/// A model that cannot be used: a bad `provider/model`, an unknown provider, a missing
/// key, an adapter that cannot be built, a `local` server that does not answer (exit
/// code 2 in the binary).
#[derive(Debug, Error)]
pub enum ModelError {
    /// `--model` is not of the form `provider/model` or names an unknown provider, or
    /// the server of a `local` model does not answer.
    #[error("{0}")]
    Model(String),
    /// The provider needs a key and its environment variable is not set.
    #[error("{provider} needs an API key: set {env}")]
    MissingKey {
        /// Provider name.
        provider: String,
        /// Environment variable to set.
        env: String,
    },
    /// The adapter could not be built.
    #[error(transparent)]
    Provider(#[from] ProviderError),
}
