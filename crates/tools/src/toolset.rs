//! The session's tool set: the eight built-in tools assembled over one [`ToolEnv`].

use std::sync::Arc;

use pith_core::ToolRegistry;

use crate::config::{ToolEnv, ToolsConfig, ToolsConfigError};
use crate::permission::PermissionPolicy;
use crate::typed::Typed;

/// A session's tools plus the handles a front-end keeps.
#[derive(Debug, Clone)]
pub struct Toolset {
    env: Arc<ToolEnv>,
    registry: ToolRegistry,
}

impl Toolset {
    /// Builds the eight tools over `config`.
    pub fn new(config: ToolsConfig) -> Result<Self, ToolsConfigError> {
        let env = Arc::new(ToolEnv::new(config)?);
        let registry = ToolRegistry::new(vec![
            Arc::new(Typed(crate::read::ReadTool::new(env.clone()))),
            Arc::new(Typed(crate::grep::GrepTool::new(env.clone()))),
            Arc::new(Typed(crate::glob::GlobTool::new(env.clone()))),
            Arc::new(Typed(crate::ls::LsTool::new(env.clone()))),
            Arc::new(Typed(crate::write::WriteTool::new(env.clone()))),
            Arc::new(Typed(crate::edit::EditTool::new(env.clone()))),
            Arc::new(Typed(crate::bash::BashTool::new(env.clone()))),
            Arc::new(crate::plan::PlanTool),
        ]);
        Ok(Self { env, registry })
    }

    /// The registry the tool loop executes calls through (read, grep, glob, ls, write,
    /// edit, bash, update_plan — in that advertisement order).
    pub fn registry(&self) -> ToolRegistry {
        self.registry.clone()
    }

    /// The permission policy, e.g. to switch modes during the session.
    pub fn permissions(&self) -> Arc<PermissionPolicy> {
        self.env.permissions.clone()
    }

    /// The shared environment.
    pub fn env(&self) -> &Arc<ToolEnv> {
        &self.env
    }

    /// The workspace's files as the session ledger sees them (fingerprints, and files
    /// re-attached after a compaction, shown as `read` shows them).
    pub fn disk_probe(&self) -> Arc<crate::disk_probe::DiskProbe> {
        Arc::new(crate::disk_probe::DiskProbe::new(
            self.env.workspace.clone(),
            self.env.limits.clone(),
        ))
    }
}

/// Builds the registry of the eight tools for one session.
pub fn build_registry(config: ToolsConfig) -> Result<ToolRegistry, ToolsConfigError> {
    Ok(Toolset::new(config)?.registry())
}
