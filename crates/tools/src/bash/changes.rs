//! Which files a command changed, seen from outside it: the session's change tracker
//! ([`pith_core::ChangeFeed`], one inotify watcher per session, see `pith-checkpoint`)
//! is marked before the command and asked after it, so the cost does not grow with the
//! repository. Without a tracker (or when it cannot tell) nothing is reported here; the
//! session ledger then recognises the command's common write forms itself
//! (redirections, `sed -i`, `tee`, `mv`/`cp` targets).

use std::path::Path;

use pith_core::{ChangeFeed, ChangeMark, FileAction, FileEffect};

/// Most paths one command reports (a command that touches more is reported by its first,
/// in path order).
const MAX_PATHS: usize = 2_000;

/// A mark taken before a command, on the session's tracker.
pub async fn mark(feed: Option<&dyn ChangeFeed>) -> Option<ChangeMark> {
    match feed {
        Some(feed) => Some(feed.mark().await),
        None => None,
    }
}

/// The files changed since `mark`, as effects: deleted, or changed (with the fingerprint
/// of what is on disk now).
pub async fn since(
    feed: Option<&dyn ChangeFeed>,
    mark: Option<ChangeMark>,
    root: &Path,
) -> Vec<FileEffect> {
    let (Some(feed), Some(mark)) = (feed, mark) else {
        return Vec::new();
    };
    let Some(paths) = feed.changed_since(mark).await else {
        return Vec::new();
    };
    effects(paths, root)
}

/// The effects of `paths` (relative to `root`) as they are on disk now. Directories are
/// left out (the tracker names them for checkpoints; the ledger keeps files): one that is
/// there now, and a gone one whose files are named too.
pub fn effects(paths: Vec<String>, root: &Path) -> Vec<FileEffect> {
    let parents: std::collections::HashSet<String> = paths
        .iter()
        .filter_map(|path| path.rsplit_once('/').map(|(dir, _)| dir.to_owned()))
        .collect();
    paths
        .into_iter()
        .filter_map(|path| {
            let meta = root.join(&path).symlink_metadata();
            let is_dir = match &meta {
                Ok(meta) => meta.is_dir(),
                Err(_) => parents.contains(&path),
            };
            (!is_dir).then_some(path)
        })
        .take(MAX_PATHS)
        .map(|path| {
            let full = root.join(&path);
            let exists = full.symlink_metadata().is_ok();
            FileEffect {
                action: if exists {
                    FileAction::Changed
                } else {
                    FileAction::Deleted
                },
                lines: None,
                fingerprint: if exists {
                    crate::fingerprint::of_file(&full)
                } else {
                    None
                },
                path,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::sync::Mutex;

    /// A tracker that reports `paths` for any mark after the first.
    #[derive(Debug, Default)]
    struct Scripted {
        paths: Option<Vec<String>>,
        marks: Mutex<u64>,
    }

    #[async_trait]
    impl ChangeFeed for Scripted {
        async fn mark(&self) -> ChangeMark {
            let mut marks = self.marks.lock().unwrap();
            *marks += 1;
            ChangeMark(*marks)
        }

        async fn changed_since(&self, _since: ChangeMark) -> Option<Vec<String>> {
            self.paths.clone()
        }
    }

    #[tokio::test]
    async fn the_tracker_s_paths_become_effects_as_the_disk_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("edited.txt"), "three, longer").unwrap();
        let feed = Scripted {
            paths: Some(vec!["edited.txt".into(), "gone.txt".into()]),
            ..Scripted::default()
        };
        let before = mark(Some(&feed)).await;
        let effects = since(Some(&feed), before, root).await;
        let summary: Vec<(&str, FileAction)> = effects
            .iter()
            .map(|e| (e.path.as_str(), e.action))
            .collect();
        assert_eq!(
            summary,
            [
                ("edited.txt", FileAction::Changed),
                ("gone.txt", FileAction::Deleted)
            ]
        );
        assert_eq!(
            effects[0].fingerprint.as_deref(),
            Some(pith_core::effect::fingerprint(b"three, longer").as_str())
        );
    }

    #[test]
    fn directories_are_left_out_of_the_effects() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("made/inner")).unwrap();
        std::fs::write(root.join("made/inner/f"), "f").unwrap();
        let paths = [
            "gone",
            "gone/x",
            "gone_file",
            "made",
            "made/inner",
            "made/inner/f",
        ];
        let effects = effects(paths.map(String::from).to_vec(), root);
        let shown: Vec<&str> = effects.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(shown, ["gone/x", "gone_file", "made/inner/f"]);
    }

    #[tokio::test]
    async fn without_a_tracker_or_an_answer_nothing_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        assert!(since(None, None, dir.path()).await.is_empty());
        let blind = Scripted::default();
        let before = mark(Some(&blind)).await;
        assert!(since(Some(&blind), before, dir.path()).await.is_empty());
    }
}
