//! What the rule finds: the files a command line reads and writes.

use crate::protocol::effect::FileAction;

/// A file a command printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellRead {
    /// The path (relative paths as the command names them, after any `cd`).
    pub path: String,
    /// The lines printed (1-based, inclusive) when the command says which.
    pub lines: Option<(u64, u64)>,
    /// True when only part of the file was printed and the part is not known (`tail`,
    /// `awk`, `sed` scripts).
    pub partial: bool,
}

/// A file a command changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellWrite {
    /// The path (as for [`ShellRead::path`]).
    pub path: String,
    /// What happened to it.
    pub action: FileAction,
}

/// The files one command line reads and writes, in the order they appear.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellEffects {
    /// Files printed.
    pub reads: Vec<ShellRead>,
    /// Files changed.
    pub writes: Vec<ShellWrite>,
}

/// Adds a write of `path` (when it names a known file).
pub(super) fn push_write(effects: &mut ShellEffects, path: Option<String>, action: FileAction) {
    if let Some(path) = path {
        effects.writes.push(ShellWrite { path, action });
    }
}
