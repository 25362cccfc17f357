//! The sandbox modes (`read-only`, `workspace-write`, `off`) and their names.

use serde::{Deserialize, Serialize};

use crate::permission::PermissionMode;

/// How far `bash` commands are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SandboxMode {
    /// No writes anywhere except the sandbox's private temporary directory and the
    /// session's spill directory; reads everywhere except the deny list.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// Writes in the workspace, the private temporary directory and the spill directory
    /// only; reads everywhere except the deny list.
    #[serde(rename = "workspace-write")]
    WorkspaceWrite,
    /// No sandbox: commands can do anything the user can.
    #[serde(rename = "off")]
    Off,
}

impl SandboxMode {
    /// Every mode, from the most to the least confined.
    pub const ALL: [SandboxMode; 3] = [Self::ReadOnly, Self::WorkspaceWrite, Self::Off];

    /// The name users type (`read-only`, `workspace-write`, `off`), as in `--sandbox MODE`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Off => "off",
        }
    }

    /// The default for a permission mode: `read-only` approval runs commands (where it
    /// runs them at all) in `read-only`; `ask`, `auto-edit` and `full` in
    /// `workspace-write`.
    pub fn for_permission(mode: PermissionMode) -> Self {
        match mode {
            PermissionMode::ReadOnly => Self::ReadOnly,
            PermissionMode::Ask | PermissionMode::AutoEdit | PermissionMode::Full => {
                Self::WorkspaceWrite
            }
        }
    }

    /// True for the modes that confine commands.
    pub fn is_sandboxed(self) -> bool {
        self != Self::Off
    }
}

/// A sandbox mode name that is not one of `read-only | workspace-write | off`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown sandbox mode `{0}` (expected read-only, workspace-write or off)")]
pub struct UnknownSandboxMode(pub String);

pith_core::named_enum_text!(SandboxMode, UnknownSandboxMode);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip_through_from_str_display_and_serde() {
        for mode in SandboxMode::ALL {
            assert_eq!(mode.as_str().parse::<SandboxMode>().unwrap(), mode);
            assert_eq!(mode.to_string(), mode.as_str());
            assert_eq!(
                serde_json::to_string(&mode).unwrap(),
                format!("\"{}\"", mode.as_str())
            );
        }
        let err = "danger".parse::<SandboxMode>().unwrap_err();
        assert!(err
            .to_string()
            .contains("read-only, workspace-write or off"));
    }
}
