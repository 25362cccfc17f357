//! pith-tools: the agent's tools (read, write, edit, bash, grep, glob, ls, update_plan) implementing
//! `pith_core::Tool`, the permission policy (read-only / ask / auto-edit / full), workspace
//! confinement, the kernel sandbox of `bash` ([`sandbox`]), and squash-at-capture with
//! spill files for large outputs.
//!
//! Entry point: [`build_registry`] (or [`Toolset`] when the front-end also needs the
//! permission handle) turns a [`ToolsConfig`] into the `pith_core::ToolRegistry` the tool
//! loop executes calls through. Every tool call goes: parse arguments → resolve paths
//! ([`workspace`]) → ask the policy ([`permission`]) → do the work → squash and spill
//! ([`capture`], except `read`); the read-only tools share that scaffold
//! ([`read_only`]). User documentation: `docs/tools.md`.

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod arguments;
pub mod bash;
pub mod capture;
pub mod config;
mod diff;
pub mod disk_probe;
pub mod edit;
pub mod files;
pub mod fingerprint;
pub mod glob;
pub mod grep;
pub mod image;
pub mod ls;
pub mod permission;
pub mod plan;
pub mod process_group;
pub mod read;
pub mod read_only;
pub mod sandbox;
pub mod squash;
pub mod toolset;
mod walk;
pub mod workspace;
pub mod write;

pub use config::{Limits, ToolEnv, ToolsConfig, ToolsConfigError};
pub use files::TextFiles;
pub use permission::{
    Action, Approval, Approver, AutoApprove, PermissionMode, PermissionPolicy, PermissionRequest,
};
pub use sandbox::{policy::UserDirs, SandboxConfig, SandboxMode};
pub use toolset::{build_registry, Toolset};
