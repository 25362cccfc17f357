//! What a model is: the provider and model tables, `provider/model` resolution, its
//! window (catalog, configuration or the server's own report), and what the system prompt
//! needs from the project. Nothing here reads a configuration file: pith-agent reads and
//! merges them and hands over the [`tables::ModelTables`].
//!
//! - [`tables`]: `[providers.NAME]` and `[models."provider/model"]`, the protocols, and
//!   what resolution reads from the configuration.
//! - [`builtin`]: the built-in providers, their key variables, the default model.
//! - [`resolve`]: `provider/model` → a [`resolve::ResolvedModel`] ready to build its
//!   adapter.
//! - [`capabilities`]: what a resolved model can take (images, reasoning, thinking room);
//!   pith-agent asks instead of matching protocols.
//! - [`window`]: the window a server reports, applied to a resolved model; a `local`
//!   server that does not answer.
//! - [`probe`]: asking an OpenAI-compatible server for its context window.
//! - [`catalog`]: context windows, output caps and prices of hosted models.
//! - [`error`]: why a model cannot be used.
//! - [`project`]: the project's instruction files and the system prompt built from them.

pub mod builtin;
pub mod capabilities;
pub mod catalog;
pub mod error;
pub mod probe;
pub mod project;
pub mod resolve;
pub mod tables;
pub mod window;
