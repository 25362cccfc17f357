//! The checkpointer: the first snapshot, then observations of what changed, with both
//! sides of every change in the store.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use pith_checkpoint::{
    hash_bytes, CheckpointConfig, Checkpointer, StoreConfig, TrackerConfig, TrackerMode,
};
use pith_core::{FileChange, FileState};

fn file(bytes: &[u8], mode: u32) -> FileState {
    FileState::File {
        hash: hash_bytes(bytes),
        size: bytes.len() as u64,
        mode,
    }
}

fn paths(changes: &[FileChange]) -> Vec<&str> {
    changes.iter().map(|c| c.path.as_str()).collect()
}

fn config(track: bool, max_watches: usize) -> CheckpointConfig {
    CheckpointConfig {
        store: StoreConfig {
            max_file_bytes: 1000,
            ..StoreConfig::default()
        },
        tracker: TrackerConfig {
            max_watches,
            ..TrackerConfig::default()
        },
        track,
    }
}

fn seed(root: &Path) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
    fs::write(root.join("README"), "hello\n").unwrap();
    fs::write(root.join("big.bin"), vec![7u8; 2000]).unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/out"), "ignored").unwrap();
}

async fn scripted_changes(checkpointer: &Checkpointer, root: &Path) {
    // sed -i: a new file renamed over the old one.
    fs::write(root.join("src/.sedtmp"), "fn main() { run() }\n").unwrap();
    fs::rename(root.join("src/.sedtmp"), root.join("src/main.rs")).unwrap();
    fs::remove_file(root.join("README")).unwrap();
    fs::set_permissions(root.join(".gitignore"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("src/main.rs", root.join("main-link")).unwrap();
    fs::write(root.join("target/out"), "still ignored").unwrap();
    let observation = checkpointer.observe().await.unwrap();
    assert_eq!(
        paths(&observation.changes),
        [".gitignore", "README", "main-link", "src/main.rs"]
    );
    let by_path = |p: &str| observation.changes.iter().find(|c| c.path == p).unwrap();
    assert_eq!(
        *by_path("src/main.rs"),
        FileChange {
            path: "src/main.rs".into(),
            before: file(b"fn main() {}\n", 0o644),
            after: file(b"fn main() { run() }\n", 0o644),
        }
    );
    assert_eq!(by_path("README").after, FileState::Absent);
    assert_eq!(by_path(".gitignore").after, file(b"target/\n", 0o600));
    assert_eq!(
        by_path("main-link").after,
        FileState::Symlink {
            target: "src/main.rs".into()
        }
    );
    assert_eq!(observation.bytes_added, 20);
    // Both sides are in the store.
    let store = checkpointer.store();
    assert_eq!(
        store.get(&hash_bytes(b"fn main() {}\n")).unwrap().unwrap(),
        b"fn main() {}\n"
    );
    assert!(store
        .get(&hash_bytes(b"fn main() { run() }\n"))
        .unwrap()
        .is_some());
    // Nothing more.
    assert_eq!(checkpointer.observe().await.unwrap().changes, []);
}

#[tokio::test]
async fn snapshot_then_observe_finds_each_kind_of_change() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    seed(work.path());
    umask_safe_modes(work.path());
    let checkpointer =
        Checkpointer::start(work.path(), store.path(), config(true, usize::MAX)).unwrap();
    let report = checkpointer.snapshot_report().await.unwrap();
    assert_eq!(report.files, 4);
    assert_eq!(report.reused, 0);
    assert_eq!(
        report.omitted,
        [(
            "big.bin".to_owned(),
            "over the per-file cap of 1000 B".to_owned()
        )]
    );
    assert_eq!(
        checkpointer.known_state("big.bin").await.unwrap(),
        FileState::Omitted {
            size: 2000,
            reason: "over the per-file cap of 1000 B".into()
        }
    );
    scripted_changes(&checkpointer, work.path()).await;
}

#[tokio::test]
async fn the_snapshot_s_walk_watches_every_directory_with_its_ignore_rules() {
    // The tracker no longer walks the tree itself: the first snapshot adds its watches
    // and loads each directory's .gitignore as it enters it.
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::create_dir_all(root.join("a/b/c/d")).unwrap();
    fs::create_dir_all(root.join("e")).unwrap();
    fs::write(root.join("a/b/.gitignore"), "*.log\n").unwrap();
    fs::write(root.join("a/b/c/d/deep.txt"), "one\n").unwrap();
    fs::write(root.join("e/flat.txt"), "one\n").unwrap();
    let checkpointer = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    let tracker = checkpointer.tracker().await.unwrap().unwrap();
    // The root, a, a/b, a/b/c, a/b/c/d and e.
    assert_eq!(tracker.mode(), TrackerMode::Watching { watches: 6 });
    fs::write(root.join("a/b/c/d/deep.txt"), "two\n").unwrap();
    fs::write(root.join("a/b/c/noise.log"), "ignored below a/b\n").unwrap();
    fs::write(root.join("e/new.txt"), "new\n").unwrap();
    let changes = checkpointer.observe().await.unwrap().changes;
    assert_eq!(paths(&changes), ["a/b/c/d/deep.txt", "e/new.txt"]);
}

#[tokio::test]
async fn without_watches_the_scan_finds_the_same_changes() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    seed(work.path());
    umask_safe_modes(work.path());
    let checkpointer = Checkpointer::start(work.path(), store.path(), config(true, 0)).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    scripted_changes(&checkpointer, work.path()).await;
}

#[tokio::test]
async fn without_a_tracker_observe_compares_the_tree_and_observe_paths_reads_given_paths() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    seed(work.path());
    umask_safe_modes(work.path());
    let checkpointer =
        Checkpointer::start(work.path(), store.path(), config(false, usize::MAX)).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    fs::write(work.path().join("src/main.rs"), "v2").unwrap();
    let observation = checkpointer
        .observe_paths(&["src/main.rs".into()])
        .await
        .unwrap();
    assert_eq!(paths(&observation.changes), ["src/main.rs"]);
    assert_eq!(observation.changes[0].after, file(b"v2", 0o644));
    fs::write(work.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    let observation = checkpointer
        .observe_paths(&["src/main.rs".into()])
        .await
        .unwrap();
    assert_eq!(observation.changes[0].after, file(b"fn main() {}\n", 0o644));
    assert!(checkpointer.observe_paths(&["../x".into()]).await.is_err());
    assert_eq!(checkpointer.observe().await.unwrap().changes, []);
    scripted_changes(&checkpointer, work.path()).await;
}

#[tokio::test]
async fn a_directory_moved_away_shows_its_paths_absent_and_a_new_one_its_paths() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::create_dir_all(root.join("a/b")).unwrap();
    fs::write(root.join("a/b/f"), "f").unwrap();
    fs::write(root.join("a/g"), "g").unwrap();
    let checkpointer = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    fs::rename(root.join("a"), root.join("z")).unwrap();
    let observation = checkpointer.observe().await.unwrap();
    assert_eq!(
        paths(&observation.changes),
        ["a", "a/b", "a/b/f", "a/g", "z", "z/b", "z/b/f", "z/g"]
    );
    assert_eq!(observation.changes[0].after, FileState::Absent);
    assert!(matches!(
        observation.changes[4].after,
        FileState::Dir { .. }
    ));
    assert_eq!(observation.bytes_added, 0, "same content, already stored");
}

#[tokio::test]
async fn the_next_session_reuses_the_index() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::create_dir_all(root.join("d")).unwrap();
    for i in 0..20 {
        fs::write(root.join(format!("d/{i}")), i.to_string()).unwrap();
    }
    // Old enough that the index trusts them.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for i in 0..20 {
        fs::File::options()
            .write(true)
            .open(root.join(format!("d/{i}")))
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    let first = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    assert_eq!(first.snapshot_report().await.unwrap().reused, 0);
    drop(first);
    // The index's base is written atomically (a new inode): a session whose snapshot
    // reuses it whole leaves it as it is, one that found a change appends to its journal
    // (index.log) and leaves the base as it is.
    let index_inode = || {
        use std::os::unix::fs::MetadataExt;
        fs::metadata(store.path().join("index.bin")).unwrap().ino()
    };
    let written = index_inode();
    let unchanged = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    assert_eq!(unchanged.snapshot_report().await.unwrap().reused, 20);
    drop(unchanged);
    assert_eq!(index_inode(), written, "nothing changed: not rewritten");
    fs::write(root.join("d/3"), "changed").unwrap();
    let second = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    let report = second.snapshot_report().await.unwrap();
    assert_eq!(report.files, 20);
    assert_eq!(report.reused, 19);
    assert_eq!(
        second.known_state("d/3").await.unwrap(),
        file(b"changed", 0o644)
    );
    assert_eq!(
        index_inode(),
        written,
        "a changed file: the base is not rewritten"
    );
    let journal = fs::read(store.path().join("index.log")).unwrap();
    assert!(
        journal.windows(3).any(|w| w == b"d/3") && journal.len() < 300,
        "one record in the journal: {} bytes",
        journal.len()
    );
    drop(second);
    let third = Checkpointer::start(root, store.path(), config(true, usize::MAX)).unwrap();
    assert_eq!(
        third.known_state("d/3").await.unwrap(),
        file(b"changed", 0o644)
    );
}

/// The tests expect 0o644 files whatever the umask.
fn umask_safe_modes(root: &Path) {
    for path in ["src/main.rs", "README", "big.bin", ".gitignore"] {
        fs::set_permissions(root.join(path), fs::Permissions::from_mode(0o644)).unwrap();
    }
}

#[tokio::test]
async fn a_change_of_the_ignore_rules_never_hides_a_tracked_file_nor_an_unignored_one() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::create_dir_all(root.join("data")).unwrap();
    fs::write(root.join("data/keep.csv"), "a,b\n").unwrap();
    fs::create_dir_all(root.join("target")).unwrap();
    fs::write(root.join("target/out.txt"), "old build\n").unwrap();
    fs::write(root.join(".gitignore"), "target/\n").unwrap();
    for track in [true, false] {
        let store = tempfile::tempdir_in(store.path()).unwrap();
        let checkpointer =
            Checkpointer::start(root, store.path(), config(track, usize::MAX)).unwrap();
        checkpointer.snapshot_report().await.unwrap();
        // `echo data/ >> .gitignore && rm -rf data`: the tracked file's removal is kept.
        fs::write(root.join(".gitignore"), "target/\ndata/\n").unwrap();
        fs::remove_dir_all(root.join("data")).unwrap();
        let changes = checkpointer.observe().await.unwrap().changes;
        let removed = changes
            .iter()
            .find(|c| c.path == "data/keep.csv")
            .unwrap_or_else(|| panic!("track {track}: {:?}", paths(&changes)));
        assert_eq!(removed.after, FileState::Absent, "track {track}");
        // Un-ignoring `target/`: what changes in it from then on is recorded.
        fs::write(root.join(".gitignore"), "data/\n").unwrap();
        checkpointer.observe().await.unwrap();
        fs::write(root.join("target/out.txt"), "new build\n").unwrap();
        let changes = checkpointer.observe().await.unwrap().changes;
        assert!(
            changes.iter().any(|c| c.path == "target/out.txt"),
            "track {track}: {:?}",
            paths(&changes)
        );
        // Put the workspace back for the next round.
        fs::create_dir_all(root.join("data")).unwrap();
        fs::write(root.join("data/keep.csv"), "a,b\n").unwrap();
        fs::write(root.join("target/out.txt"), "old build\n").unwrap();
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
    }
}

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

/// Every file under `dir` and its size: what is on disk below it.
fn disk_usage(dir: &Path) -> (usize, u64) {
    let mut found = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                found.0 += 1;
                found.1 += meta.len();
            }
        }
    }
    found
}

/// In a git repository the first snapshot copies only what git does not hold: files as
/// committed are recorded by their blob id, and their bytes come from git's object store
/// when they change, so the change's `before` is in pith's store all the same and a
/// rewind brings it back. `.git` is never written.
#[tokio::test]
async fn in_git_the_first_snapshot_copies_only_what_git_does_not_hold() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    git(root, &["init", "-q"]);
    fs::create_dir_all(root.join("src")).unwrap();
    for i in 0..50 {
        fs::write(
            root.join(format!("src/f{i}.rs")),
            format!("fn f{i}() {{}}\n"),
        )
        .unwrap();
    }
    // git's index must be written after the files' mtimes (racily clean files are read).
    std::thread::sleep(std::time::Duration::from_millis(20));
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "seed"]);
    fs::write(root.join("src/f1.rs"), "modified before pith started\n").unwrap();
    fs::write(root.join("untracked.txt"), "not in git\n").unwrap();
    let git_before = disk_usage(&root.join(".git"));
    let checkpointer =
        Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
    let report = checkpointer.snapshot_report().await.unwrap();
    assert_eq!(
        report.from_git, 49,
        "every committed file but the modified one"
    );
    assert_eq!(report.files, 51);
    assert_eq!(
        report.added_bytes,
        ("modified before pith started\n".len() + "not in git\n".len()) as u64,
        "only the modified and the untracked file are copied"
    );

    // A committed file changes: its `before` comes from git, into pith's store.
    fs::write(root.join("src/f7.rs"), "rewritten\n").unwrap();
    fs::remove_file(root.join("src/f8.rs")).unwrap();
    let changes = checkpointer.observe().await.unwrap().changes;
    assert_eq!(paths(&changes), ["src/f7.rs", "src/f8.rs"]);
    assert_eq!(changes[0].before, file(b"fn f7() {}\n", 0o644));
    assert_eq!(changes[1].before, file(b"fn f8() {}\n", 0o644));
    let FileState::File { hash, .. } = &changes[0].before else {
        panic!("a file")
    };
    assert_eq!(
        checkpointer.store().get(hash).unwrap().unwrap(),
        b"fn f7() {}\n"
    );
    // The known state of an unchanged committed file is its real content's.
    assert_eq!(
        checkpointer.known_state("src/f9.rs").await.unwrap(),
        file(b"fn f9() {}\n", 0o644)
    );

    let targets = pith_checkpoint::rewind_targets(&changes);
    let plan = checkpointer.plan_rewind(targets).await.unwrap();
    checkpointer.rewind(plan).await.unwrap();
    assert_eq!(
        fs::read_to_string(root.join("src/f7.rs")).unwrap(),
        "fn f7() {}\n"
    );
    assert_eq!(
        fs::read_to_string(root.join("src/f8.rs")).unwrap(),
        "fn f8() {}\n"
    );
    assert_eq!(
        disk_usage(&root.join(".git")),
        git_before,
        "nothing written under .git"
    );
}
