//! pith-mcp: MCP servers as tools, with the context discipline of pith's own tools.
//!
//! - [`config`]: `[mcp_servers.NAME]` (config files) and `.mcp.json` (project) entries.
//! - [`connection`]: one live client session (rmcp) to a stdio or Streamable HTTP server,
//!   with its process, stderr tail and a filter that names garbage on stdout.
//! - [`server`]: one server over a conversation — start-up timeout, tool timeout, one
//!   restart after a crash, errors worded for the model.
//! - [`hub`]: all servers of a conversation — started in the background, installed into
//!   each tool registry (advertised or deferred), reported by `pith mcp list`.
//! - [`names`]: `mcp__SERVER__TOOL`, valid for every provider, unique, stable.
//! - [`schema`]: input schemas checked before a provider sees them.
//! - [`tool`]: an MCP tool as a `pith_core::Tool` (permission, call, capture).
//! - [`result`]: a call's result as text (structured content as compact JSON, images
//!   and resources as placeholders).
//! - [`deferred`]: the loader tool and its one-line catalog.
//!
//! Dependencies point down: pith-agent → pith-mcp → {pith-tools, pith-core}. User
//! documentation: docs/mcp.md.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod config;
mod connection;
mod deferred;
mod hub;
mod names;
mod result;
mod schema;
mod server;
mod tool;

pub use config::{from_mcp_json, from_toml, ConfigError, Origin, ServerConfig, Transport};
pub use connection::{Connect, Connection, Diagnostics, EnvLookup};
pub use deferred::{reload_from_history, LOAD_TOOL};
pub use hub::{Installed, McpHub, ServerReport};
pub use names::is_mcp_tool_name;
pub use server::{CallError, McpServer, Status};

/// True for a definition that belongs to MCP: an MCP tool or the loader tool (the
/// `/context` row "MCP definitions").
pub fn is_mcp_definition(name: &str) -> bool {
    is_mcp_tool_name(name) || name == LOAD_TOOL
}
