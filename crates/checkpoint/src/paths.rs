//! Workspace-relative paths: `/`-separated strings, `""` for the root.

use std::path::{Path, PathBuf};

/// The directory part of a relative path (`""` at the top).
pub(crate) fn parent(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir/name`, or `name` at the top.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// The absolute path of `rel` under `root`.
pub(crate) fn absolute(root: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// True when `path` is `dir` itself or below it.
pub(crate) fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || (path.len() > dir.len() && path.starts_with(dir) && path.as_bytes()[dir.len()] == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_compose() {
        assert_eq!(parent("a/b/c"), "a/b");
        assert_eq!(parent("a"), "");
        assert_eq!(join("", "a"), "a");
        assert_eq!(join("a/b", "c"), "a/b/c");
        assert!(is_within("a/b", "a"));
        assert!(is_within("a", "a"));
        assert!(!is_within("ab", "a"));
        assert!(is_within("x", ""));
        assert_eq!(absolute(Path::new("/r"), ""), PathBuf::from("/r"));
        assert_eq!(absolute(Path::new("/r"), "a/b"), PathBuf::from("/r/a/b"));
    }
}
