//! The one walk of a workspace tree: depth first, never following symlinks, skipping what
//! the [`Rules`] ignore and loading each directory's `.gitignore` before its entries.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::paths;
use crate::rules::Rules;

/// What stat says about a file, enough to tell that it changed without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct StatKey {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
}

impl StatKey {
    /// The key of lstat's `meta`.
    pub(crate) fn of(meta: &Metadata) -> StatKey {
        StatKey {
            size: meta.size(),
            mtime_ns: meta
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// Visits every entry below `start` (a relative directory, `""` for the root) that the
/// rules keep, with its lstat metadata; directories before their contents. Entries whose
/// names are not UTF-8 are skipped (a checkpoint cannot name them). `visit` returns false
/// to stop the walk. Directories that vanish or cannot be read are skipped.
pub(crate) fn walk(
    root: &Path,
    start: &str,
    rules: &mut Rules,
    mut visit: impl FnMut(&str, &Metadata) -> bool,
) {
    walk_entries(root, start, rules, |rel, entry, _| {
        // DirEntry::metadata does not follow symlinks.
        match entry.metadata() {
            Ok(meta) => visit(rel, &meta),
            Err(_) => true,
        }
    });
}

/// [`walk`] without the metadata: each entry's path and whether it is a directory, from
/// the directory listing's own file type (no `lstat` per entry where the file system
/// gives it, which is most of them). For the tracker, which only watches directories.
pub(crate) fn walk_names(
    root: &Path,
    start: &str,
    rules: &mut Rules,
    mut visit: impl FnMut(&str, bool) -> bool,
) {
    walk_entries(root, start, rules, |rel, _, is_dir| visit(rel, is_dir));
}

fn walk_entries(
    root: &Path,
    start: &str,
    rules: &mut Rules,
    mut visit: impl FnMut(&str, &std::fs::DirEntry, bool) -> bool,
) {
    let mut pending = vec![start.to_owned()];
    while let Some(dir) = pending.pop() {
        // Every directory's `.gitignore` is read as the walk enters it, the root's too:
        // a rescan after the rules changed must see them as they are now.
        rules.load_dir(&dir);
        let entries = match std::fs::read_dir(paths::absolute(root, &dir)) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::debug!("walk: {dir:?}: {error}");
                continue;
            }
        };
        let dir_rules = rules.in_kept_dir(&dir);
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                tracing::debug!("walk: skipping a name that is not UTF-8 in {dir:?}");
                continue;
            };
            let rel = paths::join(&dir, name);
            // The listing's file type does not follow symlinks either.
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let is_dir = kind.is_dir();
            // The walk entered `dir`, so none of its parents is ignored.
            if dir_rules.is_ignored(&rel, is_dir) {
                continue;
            }
            if !visit(&rel, &entry, is_dir) {
                return;
            }
            if is_dir {
                pending.push(rel);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_skips_ignored_and_does_not_follow_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(root.join("build/x")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "x").unwrap();
        std::fs::write(root.join("src/deep/a.rs"), "a").unwrap();
        std::os::unix::fs::symlink("src", root.join("link")).unwrap();
        let mut rules = Rules::new(root);
        let mut seen = Vec::new();
        walk(root, "", &mut rules, |rel, _| {
            seen.push(rel.to_owned());
            true
        });
        seen.sort();
        assert_eq!(
            seen,
            [".gitignore", "link", "src", "src/deep", "src/deep/a.rs"]
        );
        let mut names = Vec::new();
        walk_names(root, "", &mut rules, |rel, is_dir| {
            names.push((rel.to_owned(), is_dir));
            true
        });
        names.sort();
        assert_eq!(
            names,
            [
                (".gitignore".to_owned(), false),
                ("link".to_owned(), false),
                ("src".to_owned(), true),
                ("src/deep".to_owned(), true),
                ("src/deep/a.rs".to_owned(), false)
            ],
            "the same entries, a symlink to a directory not one"
        );
    }
}
