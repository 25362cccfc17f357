//! What a model is: its configuration, catalog entry and window, and what the system
//! prompt needs from the project.
//!
//! - [`config`]: config files, built-in and custom providers, `provider/model` resolution.
//! - [`catalog`]: context windows, output caps and prices of hosted models.
//! - [`probe`]: asking an OpenAI-compatible server for its context window.
//! - [`project`]: the project's instruction files and the system prompt built from them.

pub mod catalog;
pub mod config;
pub mod probe;
pub mod project;
