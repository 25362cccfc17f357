//! The file walk shared by `grep` and `glob`: ripgrep's `ignore` walker, honouring
//! `.gitignore` (also outside a git repository), `.ignore` and global git excludes,
//! including hidden files but never descending into `.git`, in sorted path order so the
//! same call gives the same result (and the same prompt-cache prefix).

use std::path::Path;

/// A walker over `base` (a directory, or a single file).
pub(crate) fn walker(base: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_path(|a, b| a.cmp(b))
        .build()
}
