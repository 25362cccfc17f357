//! How the check names a file: relative to the workspace root where it can.

use std::path::{Path, PathBuf};

/// `file` relative to `root`, or as given when it is not under it.
pub fn relative(root: &Path, file: &Path) -> String {
    file.strip_prefix(root)
        .map(PathBuf::from)
        .unwrap_or_else(|_| file.to_path_buf())
        .display()
        .to_string()
}
