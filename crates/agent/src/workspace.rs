//! The workspace a conversation or command works in, and its configuration, read once.
//!
//! [`Workspace::open`] is the one place pith reads its configuration files (see
//! [`crate::config`]): a conversation opens one (a subagent shares its parent's), `pith
//! mcp list` and `pith compress` open one, and the REPL opens one before it asks about
//! the project's files. Everything else receives what it resolved.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pith_core::context::ContextConfig;

use crate::config::Config;
use crate::error::ConversationError;

/// A workspace directory and its merged configuration. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The directory, canonical.
    cwd: PathBuf,
    /// The user's and the project's configuration files, merged.
    config: Arc<Config>,
}

impl Workspace {
    /// Opens `dir` as the workspace: its canonical path, and the user's configuration file
    /// merged with the project's (`env` says where the user's is). A directory that
    /// cannot be used or a configuration file that cannot be read or parsed is a usage
    /// error.
    pub fn open(
        dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ConversationError> {
        let cwd = std::fs::canonicalize(dir).map_err(|e| {
            ConversationError::usage(format!(
                "cannot use {} as the workspace: {e}",
                dir.display()
            ))
        })?;
        let config = Config::load(&cwd, env).map_err(ConversationError::usage)?;
        Ok(Self::with_config(cwd, config))
    }

    /// The workspace `cwd` (canonical) with `config` as its configuration.
    pub fn with_config(cwd: PathBuf, config: Config) -> Self {
        Self {
            cwd,
            config: Arc::new(config),
        }
    }

    /// The directory, canonical.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// The merged configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The `[context]` settings (squash, prune and micro thresholds), with the defaults
    /// for every key not given.
    pub fn context(&self) -> Result<ContextConfig, ConversationError> {
        self.config
            .context_config()
            .map_err(ConversationError::usage)
    }
}
