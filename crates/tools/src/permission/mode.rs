//! The permission modes (`read-only`, `ask`, `auto-edit`, `full`) and their names.

use serde::{Deserialize, Serialize};

/// How much the agent may do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum PermissionMode {
    /// Only reading tools run; write, edit and bash are refused.
    #[serde(rename = "read-only")]
    ReadOnly,
    /// Reading runs; writes, edits, commands and reads outside the workspace ask first.
    #[default]
    #[serde(rename = "ask")]
    Ask,
    /// Reading, writing and editing run; commands ask first.
    #[serde(rename = "auto-edit")]
    AutoEdit,
    /// Everything runs without asking (writes stay confined to the workspace).
    #[serde(rename = "full")]
    Full,
}

impl PermissionMode {
    /// Every mode, in increasing order of autonomy.
    pub const ALL: [PermissionMode; 4] = [Self::ReadOnly, Self::Ask, Self::AutoEdit, Self::Full];

    /// The name users type (`read-only`, `ask`, `auto-edit`, `full`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::Ask => "ask",
            Self::AutoEdit => "auto-edit",
            Self::Full => "full",
        }
    }
}

/// A mode name that is not one of `read-only | ask | auto-edit | full`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode `{0}` (expected read-only, ask, auto-edit or full)")]
pub struct UnknownPermissionMode(pub String);

pith_core::named_enum_text!(PermissionMode, UnknownPermissionMode);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_names_round_trip() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>().unwrap(), mode);
            assert_eq!(
                serde_json::to_string(&mode).unwrap(),
                format!("\"{}\"", mode.as_str())
            );
        }
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
