//! Which files a command changed, seen from outside it: in a git work tree, `git status`
//! before and after the command, plus the size and modification time of every path it
//! lists (so a second change to an already modified file is seen too). Outside a git
//! work tree nothing is reported here; the session ledger then recognises the command's
//! common write forms itself (redirections, `sed -i`, `tee`, `mv`/`cp` targets).
//!
//! `git status` runs in pith's own process, outside any sandbox, with a short timeout; a
//! workspace where it fails or times out simply reports nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use pith_core::{FileAction, FileEffect};

/// Longest `git status` is given.
const GIT_TIMEOUT: Duration = Duration::from_secs(3);

/// Most paths one snapshot keeps (a command that touches more is reported by its first).
const MAX_PATHS: usize = 2_000;

/// What `git status` listed, with the size and modification time of each path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    entries: BTreeMap<String, (String, Option<(u64, SystemTime)>)>,
}

/// The status of the work tree at `root`; `None` outside a git work tree or when git
/// fails.
pub async fn snapshot(root: &Path) -> Option<Snapshot> {
    let output = tokio::time::timeout(
        GIT_TIMEOUT,
        tokio::process::Command::new("git")
            .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            .current_dir(root)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .ok()?
    .ok()?;
    if !output.status.success() {
        return None;
    }
    let mut entries = BTreeMap::new();
    let mut fields = output.stdout.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(field) = fields.next() {
        if field.len() < 4 || entries.len() >= MAX_PATHS {
            continue;
        }
        let status = String::from_utf8_lossy(&field[..2]).into_owned();
        let path = String::from_utf8_lossy(&field[3..]).into_owned();
        // A rename or copy is followed by its source path.
        if status.starts_with('R') || status.starts_with('C') {
            fields.next();
        }
        let stamp = std::fs::metadata(root.join(&path))
            .ok()
            .and_then(|m| Some((m.len(), m.modified().ok()?)));
        entries.insert(path, (status, stamp));
    }
    Some(Snapshot { entries })
}

/// The files that differ between two snapshots, as effects: deleted, or changed (with
/// the fingerprint of what is on disk now).
pub fn changed(before: &Snapshot, after: &Snapshot, root: &Path) -> Vec<FileEffect> {
    let mut effects = Vec::new();
    for (path, now) in &after.entries {
        if before.entries.get(path) == Some(now) {
            continue;
        }
        let deleted = now.0.contains('D') || now.1.is_none();
        effects.push(FileEffect {
            path: path.clone(),
            action: if deleted {
                FileAction::Deleted
            } else {
                FileAction::Changed
            },
            lines: None,
            fingerprint: if deleted {
                None
            } else {
                crate::fingerprint::of_file(&root.join(path))
            },
        });
    }
    // Listed before, not after: the command reverted it (or committed it).
    for path in before.entries.keys() {
        if !after.entries.contains_key(path) {
            let full = root.join(path);
            effects.push(FileEffect {
                path: path.clone(),
                action: if full.exists() {
                    FileAction::Changed
                } else {
                    FileAction::Deleted
                },
                lines: None,
                fingerprint: crate::fingerprint::of_file(&full),
            });
        }
    }
    effects
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[tokio::test]
    async fn changes_between_two_snapshots_are_the_files_the_command_touched() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("kept.txt"), "same").unwrap();
        std::fs::write(root.join("edited.txt"), "one").unwrap();
        std::fs::write(root.join("gone.txt"), "x").unwrap();
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "start"]);
        std::fs::write(root.join("edited.txt"), "two").unwrap();
        let before = snapshot(root).await.expect("a git work tree");
        std::fs::write(root.join("edited.txt"), "three, longer").unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        let after = snapshot(root).await.unwrap();
        let mut effects = changed(&before, &after, root);
        effects.sort_by(|a, b| a.path.cmp(&b.path));
        let summary: Vec<(&str, FileAction)> = effects
            .iter()
            .map(|e| (e.path.as_str(), e.action))
            .collect();
        assert_eq!(
            summary,
            [
                ("edited.txt", FileAction::Changed),
                ("gone.txt", FileAction::Deleted),
                ("new.txt", FileAction::Changed),
            ],
            "an already modified file changed again is seen; the untouched one is not"
        );
        assert_eq!(
            effects[0].fingerprint.as_deref(),
            Some(pith_core::effect::fingerprint(b"three, longer").as_str())
        );
    }

    #[tokio::test]
    async fn outside_a_git_work_tree_there_is_no_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(snapshot(dir.path()).await, None);
    }
}
