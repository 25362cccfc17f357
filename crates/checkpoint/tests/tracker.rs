//! The change tracker against a real directory: what it sees, what it ignores, its barrier
//! and its fallback to scanning.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::fs;
use std::path::Path;

use pith_checkpoint::{Tracker, TrackerConfig, TrackerMode};
use pith_core::ChangeFeed;

fn start(root: &Path, config: TrackerConfig) -> Tracker {
    Tracker::start(root, config).unwrap()
}

async fn changes(tracker: &Tracker, action: impl FnOnce()) -> Vec<String> {
    let mark = tracker.mark().await;
    action();
    tracker.changed_since(mark).await.unwrap()
}

#[tokio::test]
async fn sees_create_modify_delete_rename_and_mkdir_p() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("a.txt"), "a").unwrap();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/lib.rs"), "x").unwrap();
    let tracker = start(root, TrackerConfig::default());
    assert!(matches!(
        tracker.mode(),
        TrackerMode::Watching { watches: 2 }
    ));

    assert_eq!(
        changes(&tracker, || fs::write(root.join("new.txt"), "n").unwrap()).await,
        ["new.txt"]
    );
    assert_eq!(
        changes(&tracker, || fs::write(root.join("src/lib.rs"), "y")
            .unwrap())
        .await,
        ["src/lib.rs"]
    );
    assert_eq!(
        changes(&tracker, || fs::remove_file(root.join("a.txt")).unwrap()).await,
        ["a.txt"]
    );
    assert_eq!(
        changes(&tracker, || fs::rename(
            root.join("new.txt"),
            root.join("src/moved.txt")
        )
        .unwrap())
        .await,
        ["new.txt", "src/moved.txt"]
    );
    assert_eq!(
        changes(&tracker, || {
            fs::create_dir_all(root.join("d1/d2/d3")).unwrap();
            fs::write(root.join("d1/d2/d3/f"), "f").unwrap();
            fs::write(root.join("d1/top"), "t").unwrap();
        })
        .await,
        ["d1", "d1/d2", "d1/d2/d3", "d1/d2/d3/f", "d1/top"]
    );
    // The new directories are watched: a later change inside them is seen.
    assert_eq!(
        changes(&tracker, || fs::write(root.join("d1/d2/d3/g"), "g")
            .unwrap())
        .await,
        ["d1/d2/d3/g"]
    );
    // A directory moved within the tree: the old name stands for its files, the new
    // files are named, and the moved directory stays watched.
    assert_eq!(
        changes(&tracker, || fs::rename(root.join("d1"), root.join("e1"))
            .unwrap())
        .await,
        [
            "d1",
            "e1",
            "e1/d2",
            "e1/d2/d3",
            "e1/d2/d3/f",
            "e1/d2/d3/g",
            "e1/top"
        ]
    );
    assert_eq!(
        changes(&tracker, || fs::write(root.join("e1/d2/h"), "h").unwrap()).await,
        ["e1/d2/h"]
    );
    // chmod and symlinks.
    assert_eq!(
        changes(&tracker, || {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(root.join("src/lib.rs"), fs::Permissions::from_mode(0o755))
                .unwrap();
            std::os::unix::fs::symlink("src/lib.rs", root.join("link")).unwrap();
        })
        .await,
        ["link", "src/lib.rs"]
    );
    // rm -r: every file and directory is named.
    assert_eq!(
        changes(&tracker, || fs::remove_dir_all(root.join("e1")).unwrap()).await,
        [
            "e1",
            "e1/d2",
            "e1/d2/d3",
            "e1/d2/d3/f",
            "e1/d2/d3/g",
            "e1/d2/h",
            "e1/top"
        ]
    );
    // A directory's mode is a change.
    assert_eq!(
        changes(&tracker, || {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(root.join("src"), fs::Permissions::from_mode(0o700)).unwrap();
        })
        .await,
        ["src"]
    );
}

#[tokio::test]
async fn ignores_gitignored_paths_and_dot_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    fs::create_dir_all(root.join("target/debug")).unwrap();
    fs::create_dir_all(root.join(".git/objects")).unwrap();
    let tracker = start(root, TrackerConfig::default());
    // Only the root is watched: target/ and .git/ are not.
    assert_eq!(tracker.mode(), TrackerMode::Watching { watches: 1 });
    let seen = changes(&tracker, || {
        fs::write(root.join("target/debug/out"), "o").unwrap();
        fs::write(root.join(".git/objects/x"), "o").unwrap();
        fs::write(root.join(".git/index"), "o").unwrap();
        fs::write(root.join("build.log"), "o").unwrap();
        fs::create_dir_all(root.join("sub/target/x")).unwrap();
        fs::write(root.join("sub/target/x/y"), "o").unwrap();
        fs::write(root.join("sub/kept"), "o").unwrap();
    })
    .await;
    assert_eq!(seen, ["sub", "sub/kept"], "a directory is a change too");
    // A .gitignore written later: what is tracked changed, so the tracker cannot say what
    // changed across it (the caller compares the whole tree with what it knows)...
    let mark = tracker.mark().await;
    fs::write(root.join("sub/.gitignore"), "*.tmp\n").unwrap();
    assert_eq!(tracker.changed_since(mark).await, None);
    // ...and the new rule applies from then on.
    let seen = changes(&tracker, || {
        fs::write(root.join("sub/a.tmp"), "o").unwrap();
        fs::write(root.join("sub/b.txt"), "o").unwrap();
    })
    .await;
    assert_eq!(seen, ["sub/b.txt"]);
}

#[tokio::test]
async fn a_write_just_before_the_question_is_always_seen() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir(root.join("d")).unwrap();
    let tracker = start(root, TrackerConfig::default());
    for i in 0..200 {
        let mark = tracker.mark().await;
        let name = format!("d/f{}", i % 7);
        fs::write(root.join(&name), i.to_string()).unwrap();
        assert_eq!(
            tracker.changed_since(mark).await.unwrap(),
            [name],
            "iteration {i}"
        );
        let mark = tracker.mark().await;
        assert_eq!(
            tracker.changed_since(mark).await.unwrap(),
            Vec::<String>::new()
        );
    }
}

#[tokio::test]
async fn with_no_watches_allowed_it_scans() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::create_dir_all(root.join("ignored")).unwrap();
    fs::write(root.join("a/b/old"), "1").unwrap();
    let config = TrackerConfig {
        max_watches: 0,
        ..TrackerConfig::default()
    };
    let tracker = start(root, config);
    assert_eq!(tracker.mode(), TrackerMode::Scanning { over_cap: false });
    let seen = changes(&tracker, || {
        fs::write(root.join("a/b/old"), "22").unwrap();
        fs::create_dir_all(root.join("c/d")).unwrap();
        fs::write(root.join("c/d/new"), "n").unwrap();
        fs::write(root.join("ignored/x"), "n").unwrap();
    })
    .await;
    assert_eq!(seen, ["a/b/old", "c", "c/d", "c/d/new"]);
    assert_eq!(
        changes(&tracker, || fs::remove_file(root.join("c/d/new")).unwrap()).await,
        ["c/d", "c/d/new"],
        "a scan sees the directory's entries change too"
    );
    // The first drain covers the time before scanning started: unknown.
    assert_eq!(tracker.drain().await, None);
    fs::write(root.join("late"), "l").unwrap();
    assert_eq!(tracker.drain().await.unwrap(), ["late"]);
}

#[tokio::test]
async fn running_out_of_watches_midway_falls_back_to_scanning() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("a")).unwrap();
    let config = TrackerConfig {
        max_watches: 3,
        ..TrackerConfig::default()
    };
    let tracker = start(root, config);
    assert_eq!(tracker.mode(), TrackerMode::Watching { watches: 2 });
    let mark = tracker.mark().await;
    fs::create_dir_all(root.join("b/c/d")).unwrap();
    fs::write(root.join("b/c/d/f"), "f").unwrap();
    // Changes around the switch may have been missed: unknown, then scanning answers.
    assert_eq!(tracker.changed_since(mark).await, None);
    assert_eq!(tracker.mode(), TrackerMode::Scanning { over_cap: false });
    assert_eq!(
        changes(&tracker, || fs::write(root.join("b/c/d/f"), "ff").unwrap()).await,
        ["b/c/d/f"]
    );
}

#[tokio::test]
async fn over_the_scan_cap_it_answers_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..5 {
        fs::write(root.join(format!("f{i}")), "x").unwrap();
    }
    let config = TrackerConfig {
        max_watches: 0,
        scan_cap: 3,
        ..TrackerConfig::default()
    };
    let tracker = start(root, config);
    assert_eq!(tracker.mode(), TrackerMode::Scanning { over_cap: true });
    let mark = tracker.mark().await;
    assert_eq!(tracker.changed_since(mark).await, None);
}

#[tokio::test]
async fn drain_returns_each_change_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let tracker = start(root, TrackerConfig::default());
    fs::write(root.join("x"), "1").unwrap();
    assert_eq!(tracker.drain().await.unwrap(), ["x"]);
    assert_eq!(tracker.drain().await.unwrap(), Vec::<String>::new());
    fs::write(root.join("x"), "2").unwrap();
    fs::write(root.join("y"), "2").unwrap();
    assert_eq!(tracker.drain().await.unwrap(), ["x", "y"]);
}
