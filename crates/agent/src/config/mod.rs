//! The application's configuration: the user's and the project's `config.toml`, read
//! and merged once per conversation or command (see [`crate::workspace`]), and the
//! typed sections pith-agent owns. The provider and model tables inside the files are
//! handed to pith-providers' resolution as `ModelTables`; the `[hooks]`, `[mcp_servers]`,
//! `[agents]` and `[telemetry]` tables are kept raw here and parsed by their owners.
//!
//! - [`file`]: the files, their schema ([`Config`]) and the merge;
//! - [`sections`]: `[limits]`, `[doom_loop]`, `[context]`;
//! - [`error`]: why the configuration cannot be used ([`ConfigError`]).

pub mod error;
pub mod file;
pub mod sections;

pub use error::ConfigError;
pub use file::Config;
pub use sections::CheckpointsConfig;
