//! What a tool call did to the workspace, as the tool knows it.
//!
//! Effects ride on a [`crate::ToolResult`] into the history and the transcript, but are
//! never sent to the model: they are the facts the session ledger is built from (which
//! files were read, in which lines, and what their content was; which were written,
//! edited, created, deleted or changed by a command). A fingerprint lets the ledger tell
//! later whether a file on disk still is what the model last saw.

use serde::{Deserialize, Serialize};

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FileAction {
    /// Read (the `read` tool, or a command that prints it).
    #[serde(rename = "read")]
    Read,
    /// Created by a write.
    #[serde(rename = "created")]
    Created,
    /// Replaced by a write.
    #[serde(rename = "written")]
    Written,
    /// Changed by an edit.
    #[serde(rename = "edited")]
    Edited,
    /// Removed.
    #[serde(rename = "deleted")]
    Deleted,
    /// Changed by a command (seen by the session's change tracker, or by the command's write forms).
    #[serde(rename = "changed")]
    Changed,
}

impl FileAction {
    /// True for every action that changes the file.
    pub fn changes_file(self) -> bool {
        self != FileAction::Read
    }

    /// The word the ledger shows.
    pub fn word(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Created => "created",
            FileAction::Written => "written",
            FileAction::Edited => "edited",
            FileAction::Deleted => "deleted",
            FileAction::Changed => "changed by a command",
        }
    }
}

/// One file a tool call touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEffect {
    /// The path, relative to the workspace when inside it.
    #[serde(rename = "path")]
    pub path: String,
    /// What happened.
    #[serde(rename = "action")]
    pub action: FileAction,
    /// Lines read, 1-based and inclusive, when only part of the file was shown.
    #[serde(rename = "lines", default, skip_serializing_if = "Option::is_none")]
    pub lines: Option<(u64, u64)>,
    /// Fingerprint of the content the model saw or wrote (see [`fingerprint`]).
    #[serde(
        rename = "fingerprint",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub fingerprint: Option<String>,
}

/// FNV-1a, 64 bit: stable across Rust versions and platforms (unlike `DefaultHasher`),
/// which matters for anything persisted or compared across runs.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The fingerprint of a file's content: its length and FNV-1a hash.
pub fn fingerprint(content: &[u8]) -> String {
    format!("{}:{:016x}", content.len(), fnv1a64(content))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_stable_and_distinguish_contents() {
        assert_eq!(fingerprint(b""), "0:cbf29ce484222325");
        assert_eq!(fingerprint(b"a"), fingerprint(b"a"));
        assert_ne!(fingerprint(b"a"), fingerprint(b"b"));
    }

    #[test]
    fn an_effect_has_the_documented_shape() {
        let effect = FileEffect {
            path: "src/lib.rs".into(),
            action: FileAction::Read,
            lines: Some((1, 40)),
            fingerprint: Some("3:0".into()),
        };
        assert_eq!(
            serde_json::to_value(&effect).unwrap(),
            serde_json::json!({"path": "src/lib.rs", "action": "read", "lines": [1, 40], "fingerprint": "3:0"})
        );
    }
}
