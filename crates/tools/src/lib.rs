//! pith-tools: the agent's tools (read, write, edit, bash, grep, glob, ls) implementing
//! `pith_core::Tool`, the permission policy (read-only / ask / auto-edit / full), workspace
//! confinement, the kernel sandbox of `bash` ([`sandbox`]), and squash-at-capture with
//! spill files for large outputs.
//!
//! Entry point: [`build_registry`] (or [`Toolset`] when the front-end also needs the
//! permission handle) turns a [`ToolsConfig`] into the `pith_core::ToolRegistry` the tool
//! loop executes calls through. Every tool call goes: parse arguments → resolve paths
//! ([`workspace`]) → ask the policy ([`permission`]) → do the work → squash and spill
//! ([`capture`], except `read`). User documentation: `docs/tools.md`.

#![warn(missing_docs)]

pub mod bash;
pub mod capture;
pub mod config;
mod diff;
pub mod disk_probe;
pub mod edit;
pub mod fingerprint;
pub mod glob;
pub mod grep;
pub mod image;
pub mod ls;
pub mod permission;
pub mod process_group;
pub mod read;
pub mod sandbox;
pub mod squash;
pub mod toolset;
mod walk;
pub mod workspace;
pub mod write;

pub use config::{Limits, ToolEnv, ToolsConfig, ToolsConfigError};
pub use permission::{
    Action, Approval, Approver, AutoApprove, PermissionMode, PermissionPolicy, PermissionRequest,
};
pub use sandbox::{policy::UserDirs, SandboxConfig, SandboxMode};
pub use toolset::{build_registry, Toolset};

use pith_core::ToolError;
use serde::de::DeserializeOwned;

/// Parses a call's arguments into the tool's argument struct; a mismatch is an
/// [`ToolError::InvalidArguments`] naming the problem.
pub(crate) fn parse_args<T: DeserializeOwned>(
    arguments: serde_json::Value,
) -> Result<T, ToolError> {
    if !arguments.is_object() {
        return Err(ToolError::InvalidArguments(format!(
            "arguments must be a JSON object, got {}",
            match arguments {
                serde_json::Value::String(_) => "a string (was the JSON malformed?)",
                serde_json::Value::Null => "null",
                serde_json::Value::Array(_) => "an array",
                _ => "a scalar",
            }
        )));
    }
    serde_json::from_value(arguments).map_err(|err| ToolError::InvalidArguments(err.to_string()))
}

/// Resolves a path argument for reading and asks the policy when it lies outside the
/// workspace and the spill directory. Shared by read, grep, glob and ls.
pub(crate) async fn authorize_read(
    env: &ToolEnv,
    tool: &str,
    raw: &str,
    ctx: &pith_core::ToolContext,
) -> Result<workspace::ReadTarget, ToolError> {
    let target = env.workspace.resolve_read(raw)?;
    if target.scope == workspace::PathScope::Outside {
        env.permissions
            .authorize_call(
                Action::ReadOutside {
                    tool: tool.to_owned(),
                    path: target.path.display().to_string(),
                },
                ctx,
            )
            .await?;
    }
    Ok(target)
}
