//! Which workspace paths the tracker and the snapshot leave out: `.git` anywhere, what a
//! `.gitignore` (in the root or any directory below) or the root's `.git/info/exclude`
//! ignores. The rules apply whether or not the workspace is a git repository, and the same
//! rules judge the walk and the watcher's events, so the two never disagree.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::paths;

/// The ignore rules of one workspace, loaded directory by directory as the walk meets them.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    root: PathBuf,
    /// Each directory's `.gitignore` (relative directory path → its matcher).
    by_dir: HashMap<String, Arc<Gitignore>>,
    exclude: Option<Arc<Gitignore>>,
}

impl Rules {
    /// The rules of `root`, with its `.git/info/exclude` and root `.gitignore` loaded.
    pub(crate) fn new(root: &Path) -> Rules {
        let exclude = matcher(root, &root.join(".git").join("info").join("exclude"));
        let mut rules = Rules {
            root: root.to_path_buf(),
            by_dir: HashMap::new(),
            exclude,
        };
        rules.load_dir("");
        rules
    }

    /// (Re)reads the `.gitignore` of the directory `rel_dir`.
    pub(crate) fn load_dir(&mut self, rel_dir: &str) {
        let dir = paths::absolute(&self.root, rel_dir);
        match matcher(&dir, &dir.join(".gitignore")) {
            Some(gitignore) => {
                self.by_dir.insert(rel_dir.to_owned(), gitignore);
            }
            None => {
                self.by_dir.remove(rel_dir);
            }
        }
    }

    /// True when `rel` (a file, or a directory when `is_dir`) is left out. The deepest
    /// `.gitignore` with an opinion decides, as in git.
    pub(crate) fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel.split('/').any(|part| part == ".git") {
            return true;
        }
        let mut dir = paths::parent(rel);
        loop {
            if let Some(gitignore) = self.by_dir.get(dir) {
                let below = if dir.is_empty() {
                    rel
                } else {
                    &rel[dir.len() + 1..]
                };
                let verdict = gitignore.matched_path_or_any_parents(below, is_dir);
                if verdict.is_ignore() {
                    return true;
                }
                if verdict.is_whitelist() {
                    return false;
                }
            }
            if dir.is_empty() {
                break;
            }
            dir = paths::parent(dir);
        }
        self.exclude
            .as_ref()
            .is_some_and(|exclude| exclude.matched_path_or_any_parents(rel, is_dir).is_ignore())
    }
}

/// The matcher of one ignore file whose patterns are relative to `dir`, if it has any.
fn matcher(dir: &Path, file: &Path) -> Option<Arc<Gitignore>> {
    if !file.is_file() {
        return None;
    }
    let mut builder = GitignoreBuilder::new(dir);
    if let Some(error) = builder.add(file) {
        tracing::debug!("{}: {error}", file.display());
    }
    match builder.build() {
        Ok(gitignore) if !gitignore.is_empty() => Some(Arc::new(gitignore)),
        Ok(_) => None,
        Err(error) => {
            tracing::debug!("{}: {error}", file.display());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_gitignores_and_git_dirs_are_honoured() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!keep.log\nlocal\n").unwrap();
        let mut rules = Rules::new(root);
        rules.load_dir("sub");
        assert!(rules.is_ignored("target", true));
        assert!(rules.is_ignored("target/debug/x", false));
        assert!(
            !rules.is_ignored("target", false),
            "only directories named target"
        );
        assert!(rules.is_ignored("a.log", false));
        assert!(rules.is_ignored("sub/b.log", false));
        assert!(!rules.is_ignored("sub/keep.log", false));
        assert!(rules.is_ignored("sub/local", false));
        assert!(!rules.is_ignored("local", false));
        assert!(rules.is_ignored(".git", true));
        assert!(rules.is_ignored("sub/.git/config", false));
        assert!(!rules.is_ignored("src/main.rs", false));
    }
}
