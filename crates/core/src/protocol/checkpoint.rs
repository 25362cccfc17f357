//! Checkpoints: what a workspace path held before and after pith changed it, and the seam
//! through which tools learn which paths changed while they ran.
//!
//! The checkpoint store (`pith-checkpoint`) keeps the contents; the transcript keeps these
//! records of them (`checkpoint` records, docs/session-format.md); a rewind reads them back
//! (docs/rewind.md). Paths are relative to the workspace root, with `/` separators.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What one workspace path held at one moment, as the checkpoint store recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "state")]
pub enum FileState {
    /// Nothing was there.
    #[serde(rename = "absent")]
    Absent,
    /// A regular file whose bytes are in the store under `hash`.
    #[serde(rename = "file")]
    File {
        /// The content's address in the store (lowercase hex SHA-256).
        #[serde(rename = "hash")]
        hash: String,
        /// Its length in bytes.
        #[serde(rename = "size")]
        size: u64,
        /// Its Unix permission bits (`0o644` is 420).
        #[serde(rename = "mode")]
        mode: u32,
    },
    /// A symbolic link (never followed) pointing at `target`.
    #[serde(rename = "symlink")]
    Symlink {
        /// What the link says, verbatim.
        #[serde(rename = "target")]
        target: String,
    },
    /// A directory with its Unix permission bits: an empty directory and a directory's
    /// mode are part of what a rewind puts back.
    #[serde(rename = "dir")]
    Dir {
        /// Its Unix permission bits (`0o755` is 493).
        #[serde(rename = "mode")]
        mode: u32,
    },
    /// A file the store did not keep (over a cap, or unreadable): a rewind to this state
    /// refuses and names the path.
    #[serde(rename = "omitted")]
    Omitted {
        /// Its length in bytes, when known.
        #[serde(rename = "size")]
        size: u64,
        /// Why it was not kept, in words for the user (`over the per-file cap of 16 MiB`).
        #[serde(rename = "reason")]
        reason: String,
    },
}

impl FileState {
    /// True when a rewind can put this state back (everything but [`FileState::Omitted`]).
    pub fn is_restorable(&self) -> bool {
        !matches!(self, FileState::Omitted { .. })
    }

    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        matches!(self, FileState::Dir { .. })
    }
}

/// One path pith saw change: what it held before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The path, relative to the workspace root (`/` separators).
    #[serde(rename = "path")]
    pub path: String,
    /// Its state before the change.
    #[serde(rename = "before")]
    pub before: FileState,
    /// Its state after the change.
    #[serde(rename = "after")]
    pub after: FileState,
}

impl FileChange {
    /// The path as front-ends show it: a directory's with a trailing `/` (`logs/`), so a
    /// list of changes tells directories from files.
    pub fn shown_path(&self) -> String {
        shown_path(&self.path, &self.before, &self.after)
    }
}

/// `path` as front-ends show a change of it between two states: with a trailing `/` when
/// either is a directory.
pub fn shown_path(path: &str, before: &FileState, after: &FileState) -> String {
    if before.is_dir() || after.is_dir() {
        format!("{path}/")
    } else {
        path.to_owned()
    }
}

/// What one checkpoint recorded, as front-ends show it (stream-json `checkpoint`, the
/// REPL's status line): which files pith saw change and kept a copy of.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CheckpointSummary {
    /// The checkpoint's id (the transcript record's sequence number, as text).
    #[serde(rename = "id")]
    pub id: String,
    /// The tool call whose changes these are; `None` for changes found at the start of a
    /// turn (made outside pith).
    #[serde(rename = "call_id", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The paths that changed (relative to the workspace root; a directory ends with `/`).
    #[serde(rename = "files")]
    pub files: Vec<String>,
    /// Bytes this checkpoint added to the store (new contents only: the store dedupes).
    #[serde(rename = "bytes")]
    pub bytes: u64,
    /// The store's size for this project after it, in bytes.
    #[serde(rename = "store_bytes")]
    pub store_bytes: u64,
    /// Paths whose contents the store did not keep (over a cap): a rewind to before them
    /// refuses.
    #[serde(rename = "omitted", default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<String>,
}

/// A point in a [`ChangeFeed`]'s stream of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangeMark(pub u64);

/// Which workspace paths changed, as a session-wide change tracker sees them. The `bash`
/// tool marks before a command and asks after it, instead of scanning the tree: the cost
/// of a question does not grow with the repository.
#[async_trait]
pub trait ChangeFeed: Send + Sync + std::fmt::Debug {
    /// A mark of everything that has happened until now (every change made before this
    /// call is before the mark).
    async fn mark(&self) -> ChangeMark;

    /// The paths (relative to the workspace root, `/` separators, sorted, each once) that
    /// changed after `since` and before this call returns. `None` when the tracker cannot
    /// tell (it overflowed or stopped): the caller then knows nothing about changes.
    async fn changed_since(&self, since: ChangeMark) -> Option<Vec<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_states_have_a_fixed_json_form() {
        let states = [
            (FileState::Absent, r#"{"state":"absent"}"#),
            (
                FileState::File {
                    hash: "ab".into(),
                    size: 3,
                    mode: 0o644,
                },
                r#"{"state":"file","hash":"ab","size":3,"mode":420}"#,
            ),
            (
                FileState::Symlink {
                    target: "../x".into(),
                },
                r#"{"state":"symlink","target":"../x"}"#,
            ),
            (
                FileState::Dir { mode: 0o700 },
                r#"{"state":"dir","mode":448}"#,
            ),
            (
                FileState::Omitted {
                    size: 9,
                    reason: "too big".into(),
                },
                r#"{"state":"omitted","size":9,"reason":"too big"}"#,
            ),
        ];
        for (state, json) in states {
            assert_eq!(serde_json::to_string(&state).unwrap(), json);
            assert_eq!(serde_json::from_str::<FileState>(json).unwrap(), state);
        }
        assert!(!FileState::Omitted {
            size: 1,
            reason: String::new()
        }
        .is_restorable());
        assert!(FileState::Absent.is_restorable());
    }

    #[test]
    fn a_directory_change_is_shown_with_a_slash() {
        let change = |before, after| FileChange {
            path: "logs".into(),
            before,
            after,
        };
        let dir = FileState::Dir { mode: 0o755 };
        assert_eq!(change(FileState::Absent, dir.clone()).shown_path(), "logs/");
        assert_eq!(change(dir, FileState::Absent).shown_path(), "logs/");
        assert_eq!(
            change(FileState::Absent, FileState::Symlink { target: "x".into() }).shown_path(),
            "logs"
        );
    }
}
