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

    /// True when `rel` (a file, or a directory when `is_dir`) is left out: when one of
    /// its parent directories is, or its own name matches. For each path the deepest
    /// `.gitignore` with an opinion decides, as in git, and a parent's whitelisting does
    /// not un-ignore what a pattern matches below it (`!build/` does not keep
    /// `build/x.log` from `*.log`), as in git.
    pub(crate) fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel.split('/').any(|part| part == ".git") {
            return true;
        }
        let mut end = 0;
        while let Some(slash) = rel[end..].find('/') {
            end += slash;
            if self.matches_itself(&rel[..end], true) {
                return true;
            }
            end += 1;
        }
        self.matches_itself(rel, is_dir)
    }

    /// [`Rules::is_ignored`] for an entry of a directory a walk entered, so none of its
    /// parents is ignored: only the entry itself is judged, not every parent again (a
    /// third of a large walk's time otherwise).
    #[cfg(test)]
    pub(crate) fn is_ignored_in_kept_dir(&self, rel: &str, is_dir: bool) -> bool {
        self.in_kept_dir(paths::parent(rel)).is_ignored(rel, is_dir)
    }

    /// The rules for the entries of `dir`, a directory a walk entered: the `.gitignore`s
    /// that can judge them are looked up once for the whole listing, not per entry.
    pub(crate) fn in_kept_dir(&self, dir: &str) -> DirRules<'_> {
        let mut chain = Vec::new();
        let mut at = dir;
        loop {
            if let Some(gitignore) = self.by_dir.get(at) {
                chain.push((at.len(), &**gitignore));
            }
            if at.is_empty() {
                break;
            }
            at = paths::parent(at);
        }
        DirRules {
            chain,
            exclude: self.exclude.as_deref(),
        }
    }

    /// Whether the rules ignore `rel` itself (its parents aside): the deepest `.gitignore`
    /// with an opinion on it decides, then `.git/info/exclude`.
    fn matches_itself(&self, rel: &str, is_dir: bool) -> bool {
        let mut dir = paths::parent(rel);
        loop {
            if let Some(gitignore) = self.by_dir.get(dir) {
                let below = if dir.is_empty() {
                    rel
                } else {
                    &rel[dir.len() + 1..]
                };
                let verdict = gitignore.matched(below, is_dir);
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
            .is_some_and(|exclude| exclude.matched(rel, is_dir).is_ignore())
    }
}

/// The rules for the entries of one directory a walk entered ([`Rules::in_kept_dir`]).
pub(crate) struct DirRules<'a> {
    /// The `.gitignore`s of the directory and its parents, deepest first, each with the
    /// length of its directory's relative path.
    chain: Vec<(usize, &'a Gitignore)>,
    exclude: Option<&'a Gitignore>,
}

impl DirRules<'_> {
    /// [`Rules::is_ignored_in_kept_dir`] for `rel`, an entry of the directory: `.git`, or
    /// the deepest `.gitignore` with an opinion on it, then `.git/info/exclude`.
    pub(crate) fn is_ignored(&self, rel: &str, is_dir: bool) -> bool {
        if rel.rsplit('/').next() == Some(".git") {
            return true;
        }
        for (dir_len, gitignore) in &self.chain {
            let below = if *dir_len == 0 {
                rel
            } else {
                rel.get(dir_len + 1..).unwrap_or(rel)
            };
            let verdict = gitignore.matched(below, is_dir);
            if verdict.is_ignore() {
                return true;
            }
            if verdict.is_whitelist() {
                return false;
            }
        }
        self.exclude
            .is_some_and(|exclude| exclude.matched(rel, is_dir).is_ignore())
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

    #[test]
    fn a_walk_s_check_agrees_with_the_full_one_below_kept_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join(".gitignore"),
            "build/\n*.log\nlogs/\n!logs/keep.txt\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join("a/build")).unwrap();
        std::fs::write(root.join("a/.gitignore"), "!build/\nlocal\n").unwrap();
        std::fs::create_dir_all(root.join(".git/info")).unwrap();
        std::fs::write(root.join(".git/info/exclude"), "secret*\n").unwrap();
        let mut rules = Rules::new(root);
        rules.load_dir("a");
        // Every path below a directory the full check keeps: the two checks agree.
        let cases = [
            ("a", true),
            ("a/build", true),
            ("a/build/x.rs", false),
            ("a/build/x.log", false),
            ("a/local", false),
            ("a/local", true),
            ("a/.git", true),
            ("a/secret.txt", false),
            ("src", true),
            ("src/build", true),
            ("src/build", false),
            ("src/deep/y.log", false),
            ("src/logs", true),
            ("src/main.rs", false),
            ("build", true),
            ("logs", true),
            ("secret.key", false),
        ];
        for (rel, is_dir) in cases {
            let parents_kept = {
                let mut parent = paths::parent(rel);
                let mut kept = true;
                while !parent.is_empty() {
                    kept &= !rules.is_ignored(parent, true);
                    parent = paths::parent(parent);
                }
                kept
            };
            assert!(parents_kept, "{rel}: the case must sit in kept directories");
            assert_eq!(
                rules.is_ignored_in_kept_dir(rel, is_dir),
                rules.is_ignored(rel, is_dir),
                "{rel} (dir: {is_dir})"
            );
        }
        // As in git: `!build/` keeps the directory, `*.log` still ignores the log in it.
        assert!(rules.is_ignored("a/build/x.log", false));
        assert!(!rules.is_ignored_in_kept_dir("a/build/x.rs", false));
        assert!(rules.is_ignored_in_kept_dir("a/.git", true));
    }
}
