//! pith-tools: the agent's tools (read, write, edit, bash, grep, glob, ls, update_plan) implementing
//! `pith_core::Tool`, the permission policy (read-only / ask / auto-edit / full), workspace
//! confinement, the kernel sandbox of `bash` ([`sandbox`]), and squash-at-capture with
//! spill files for large outputs.
//!
//! Entry point: [`build_registry`] (or [`Toolset`] when the front-end also needs the
//! permission handle) turns a [`ToolsConfig`] into the `pith_core::ToolRegistry` the tool
//! loop executes calls through. Every tool call goes: parse arguments → resolve paths
//! ([`workspace`]) → ask the policy ([`permission`]) → do the work → squash and spill
//! ([`capture`], except `read`). Every tool's arguments are parsed by one scaffold
//! ([`typed`]); the read-only tools share another above it ([`read_only`]). User
//! documentation: `docs/tools.md`.

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod arguments;
mod bash;
mod capture;
mod config;
mod diff;
mod disk_probe;
mod edit;
mod files;
mod fingerprint;
mod glob;
mod grep;
mod image;
mod ls;
mod permission;
mod plan;
mod process_group;
mod read;
mod read_only;
mod sandbox;
mod setters;
mod squash;
mod toolset;
mod typed;
mod walk;
mod workspace;
mod write;

pub use bash::output::{capture_reader, OutputBuffer};
pub use bash::process::{run_command, CommandSpec, Termination};
pub use bash::terminal::{CommandTerminal, TerminalOutcome, TerminalRequest};
pub use bash::wrapper::{run_wrapped, WrappedCommand, WrappedSandbox};
pub use bash::{model_text, secret_env_names};
pub use capture::{Capture, Finished, RawOutput, SpillDir};
pub use config::{Limits, ToolEnv, ToolsConfig, ToolsConfigError, DEFAULT_BASH_ENV_EXCLUDE};
pub use files::TextFiles;
pub use image::{base64 as image_base64, from_bytes as image_from_bytes, load as load_image};
pub use permission::{
    Action, Approval, Approver, AutoApprove, PermissionMode, PermissionPolicy, PermissionRequest,
    UnknownPermissionMode,
};
pub use plan::PlanTool;
pub use process_group::{isolate as isolate_process_group, KillOnDrop, ProcessGroup};
pub use sandbox::{policy::UserDirs, SandboxConfig, SandboxMode, UnknownSandboxMode};
pub use toolset::{build_registry, Toolset};
