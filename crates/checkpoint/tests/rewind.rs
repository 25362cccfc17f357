//! Rewind end to end on a real tree: scripted changes, then plan and apply restore the
//! tree byte for byte; refusals; changed-outside; undo.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::Path;

use pith_checkpoint::{
    apply, plan, rewind_targets, verify, CheckpointConfig, CheckpointError, Checkpointer, Target,
};
use pith_core::{FileChange, FileState};

/// Every path below `root` (directories too, with their modes) with what it holds, and
/// which files are one inode (hard links).
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let meta = fs::symlink_metadata(&path).unwrap();
            let desc = if meta.file_type().is_symlink() {
                format!("link -> {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                pending.push(path.clone());
                format!("dir {:o}", meta.permissions().mode() & 0o7777)
            } else {
                let links = if meta.nlink() > 1 {
                    format!(" (inode {})", meta.ino())
                } else {
                    String::new()
                };
                format!(
                    "{:o} {}{links}",
                    meta.permissions().mode() & 0o7777,
                    String::from_utf8_lossy(&fs::read(&path).unwrap())
                )
            };
            out.insert(rel, desc);
        }
    }
    out
}

fn set_mode(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn seed(root: &Path) {
    fs::create_dir_all(root.join("src")).unwrap();
    fs::create_dir_all(root.join("dir/sub")).unwrap();
    fs::write(root.join("a.txt"), "alpha\n").unwrap();
    fs::write(root.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
    fs::write(root.join("script.sh"), "#!/bin/sh\necho hi\n").unwrap();
    fs::write(root.join("dir/sub/file"), "deep\n").unwrap();
    fs::write(root.join("to_delete"), "bye\n").unwrap();
    symlink("a.txt", root.join("link")).unwrap();
    for file in ["a.txt", "src/lib.rs", "dir/sub/file", "to_delete"] {
        set_mode(&root.join(file), 0o644);
    }
    set_mode(&root.join("script.sh"), 0o755);
}

fn change(root: &Path) {
    fs::write(root.join("a.txt"), "alpha, edited\n").unwrap();
    fs::remove_file(root.join("to_delete")).unwrap();
    fs::create_dir_all(root.join("new/deep")).unwrap();
    fs::write(root.join("new/deep/file.txt"), "created\n").unwrap();
    fs::rename(root.join("src/lib.rs"), root.join("src/core.rs")).unwrap();
    set_mode(&root.join("script.sh"), 0o644);
    fs::remove_file(root.join("link")).unwrap();
    symlink("src", root.join("link")).unwrap();
    symlink("../a.txt", root.join("src/up")).unwrap();
    fs::remove_dir_all(root.join("dir/sub")).unwrap();
    // A file where a directory was.
    fs::write(root.join("dir/sub"), "now a file\n").unwrap();
}

struct Session {
    work: tempfile::TempDir,
    _store: tempfile::TempDir,
    checkpointer: Checkpointer,
    before: BTreeMap<String, String>,
    after: BTreeMap<String, String>,
    changes: Vec<FileChange>,
}

async fn session() -> Session {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    seed(work.path());
    let before = tree(work.path());
    let checkpointer =
        Checkpointer::start(work.path(), store.path(), CheckpointConfig::default()).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    change(work.path());
    let changes = checkpointer.observe().await.unwrap().changes;
    let after = tree(work.path());
    Session {
        work,
        _store: store,
        checkpointer,
        before,
        after,
        changes,
    }
}

#[tokio::test]
async fn rewind_restores_the_tree_byte_for_byte_and_can_be_undone() {
    let s = session().await;
    let root = s.work.path();
    let store = s.checkpointer.store();
    assert_eq!(
        s.changes
            .iter()
            .map(|c| c.path.as_str())
            .collect::<Vec<_>>(),
        [
            "a.txt",
            "dir/sub",
            "dir/sub/file",
            "link",
            "new",
            "new/deep",
            "new/deep/file.txt",
            "script.sh",
            "src/core.rs",
            "src/lib.rs",
            "src/up",
            "to_delete"
        ]
    );
    let targets = rewind_targets(&s.changes);
    let rewind = plan(root, store, &targets).unwrap();
    assert_eq!(rewind.refused, []);
    assert_eq!(rewind.changed_outside, Vec::<String>::new());
    assert_eq!(rewind.writes.len(), 12);
    let applied = apply(&rewind, store).unwrap();
    assert_eq!(tree(root), s.before, "the tree is back as it was");
    // Planning again finds nothing to do.
    assert_eq!(plan(root, store, &targets).unwrap().writes, []);
    // Undo: the rewind's own changes, rewound.
    let undo = plan(root, store, &rewind_targets(&applied)).unwrap();
    assert_eq!(undo.refused, []);
    apply(&undo, store).unwrap();
    assert_eq!(tree(root), s.after, "the undo puts the changed tree back");
}

#[tokio::test]
async fn files_changed_outside_pith_are_named() {
    let s = session().await;
    let root = s.work.path();
    fs::write(root.join("a.txt"), "edited by hand\n").unwrap();
    fs::write(root.join("src/core.rs"), "also by hand\n").unwrap();
    let rewind = plan(root, s.checkpointer.store(), &rewind_targets(&s.changes)).unwrap();
    assert_eq!(rewind.changed_outside, ["a.txt", "src/core.rs"]);
    let applied = apply(&rewind, s.checkpointer.store()).unwrap();
    assert_eq!(tree(root), s.before);
    // What was overwritten is kept: the undo brings the hand edit back.
    apply(
        &plan(root, s.checkpointer.store(), &rewind_targets(&applied)).unwrap(),
        s.checkpointer.store(),
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "edited by hand\n"
    );
}

#[tokio::test]
async fn a_parent_replaced_by_a_symlink_out_of_the_workspace_is_refused() {
    let s = session().await;
    let root = s.work.path();
    let outside = tempfile::tempdir().unwrap();
    // dir/sub is a file now; make `dir` itself a link to a directory outside.
    fs::remove_dir_all(root.join("dir")).unwrap();
    symlink(outside.path(), root.join("dir")).unwrap();
    let targets = rewind_targets(&s.changes);
    let rewind = plan(root, s.checkpointer.store(), &targets).unwrap();
    let refused: Vec<&str> = rewind.refused.iter().map(|r| r.path.as_str()).collect();
    // `dir/sub`, to be a directory again, and the file to be written below it would
    // both be written through the link: refused.
    assert_eq!(refused, ["dir/sub", "dir/sub/file"]);
    assert!(
        rewind.refused[0].reason.contains("symlink"),
        "{}",
        rewind.refused[0].reason
    );
    let error = apply(&rewind, s.checkpointer.store()).unwrap_err();
    assert!(matches!(error, CheckpointError::Refused(_)));
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).unwrap(),
        "alpha, edited\n",
        "nothing written at all"
    );
}

#[tokio::test]
async fn hostile_paths_are_refused() {
    let s = session().await;
    let mut targets = BTreeMap::new();
    for path in ["../escape", "/etc/passwd", "a/../../x"] {
        targets.insert(
            path.to_owned(),
            Target {
                restore: FileState::Absent,
                last_known: FileState::Absent,
            },
        );
    }
    let rewind = plan(s.work.path(), s.checkpointer.store(), &targets).unwrap();
    assert_eq!(rewind.refused.len(), 3);
    assert!(rewind.writes.is_empty());
}

#[tokio::test]
async fn a_missing_or_damaged_blob_is_refused() {
    let s = session().await;
    let root = s.work.path();
    let store = s.checkpointer.store();
    let targets = rewind_targets(&s.changes);
    let FileState::File { hash, .. } = &targets["a.txt"].restore else {
        panic!("a.txt was a file")
    };
    // A small blob is in a pack: its bytes there are changed.
    let bytes = store.get(hash).unwrap().unwrap();
    let packs: Vec<_> = fs::read_dir(store.dir().join("packs"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    for pack in &packs {
        let mut content = fs::read(pack).unwrap();
        if let Some(at) = content
            .windows(bytes.len())
            .position(|window| window == bytes.as_slice())
        {
            content[at] ^= 1;
            fs::write(pack, content).unwrap();
        }
    }
    let rewind = plan(root, store, &targets).unwrap();
    assert_eq!(rewind.refused.len(), 1);
    assert_eq!(rewind.refused[0].path, "a.txt");
    assert!(rewind.refused[0]
        .reason
        .contains("no longer in the checkpoint store"));
    // Gone with its pack (and the other files' blobs with it): each is refused.
    for pack in &packs {
        fs::remove_file(pack).unwrap();
    }
    let refused = plan(root, store, &targets).unwrap().refused;
    assert!(refused.iter().any(|refusal| refusal.path == "a.txt"));
}

#[tokio::test]
async fn a_state_left_out_by_the_cap_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let store_dir = tempfile::tempdir().unwrap();
    fs::write(work.path().join("huge"), vec![1u8; 64]).unwrap();
    let config = CheckpointConfig {
        store: pith_checkpoint::StoreConfig {
            max_file_bytes: 32,
            ..Default::default()
        },
        ..Default::default()
    };
    let checkpointer = Checkpointer::start(work.path(), store_dir.path(), config).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    fs::write(work.path().join("huge"), "small now").unwrap();
    let changes = checkpointer.observe().await.unwrap().changes;
    let rewind = plan(work.path(), checkpointer.store(), &rewind_targets(&changes)).unwrap();
    assert_eq!(rewind.refused.len(), 1);
    assert!(
        rewind.refused[0]
            .reason
            .contains("over the per-file cap of 32 B"),
        "{}",
        rewind.refused[0].reason
    );
}

#[tokio::test]
async fn the_checkpointer_rewinds_and_keeps_its_shadow_in_step() {
    let s = session().await;
    let root = s.work.path();
    fs::write(root.join("a.txt"), "edited by hand\n").unwrap();
    let plan = s
        .checkpointer
        .plan_rewind(rewind_targets(&s.changes))
        .await
        .unwrap();
    assert_eq!(plan.changed_outside, ["a.txt"]);
    let rewound = s.checkpointer.rewind(plan).await.unwrap();
    // The hand edit is found before the rewind, as its own change.
    assert_eq!(rewound.pending.changes.len(), 1);
    assert_eq!(rewound.pending.changes[0].path, "a.txt");
    assert_eq!(rewound.applied.len(), 12, "10 files and 2 directories");
    let FileState::File { hash, .. } = &rewound
        .applied
        .iter()
        .find(|c| c.path == "a.txt")
        .unwrap()
        .before
    else {
        panic!("a.txt was a file")
    };
    assert_eq!(
        s.checkpointer.store().get(hash).unwrap().unwrap(),
        b"edited by hand\n"
    );
    assert_eq!(tree(root), s.before);
    // The rewind is not reported again.
    assert_eq!(s.checkpointer.observe().await.unwrap().changes, []);
    // A refused plan is refused before anything happens.
    let mut targets = BTreeMap::new();
    targets.insert(
        "../x".to_owned(),
        Target {
            restore: FileState::Absent,
            last_known: FileState::Absent,
        },
    );
    let refused = s.checkpointer.plan_rewind(targets).await.unwrap();
    assert!(matches!(
        s.checkpointer.rewind(refused).await,
        Err(CheckpointError::Refused(_))
    ));
}

#[tokio::test]
async fn a_path_already_in_its_target_state_is_neither_written_nor_an_alarm() {
    let s = session().await;
    let root = s.work.path();
    // The turn created this file; the rewind would delete it; it was deleted by hand.
    fs::remove_file(root.join("new/deep/file.txt")).unwrap();
    let rewind = plan(root, s.checkpointer.store(), &rewind_targets(&s.changes)).unwrap();
    assert_eq!(rewind.changed_outside, Vec::<String>::new());
    assert_eq!(rewind.refused, []);
    assert!(rewind.writes.iter().all(|w| w.path != "new/deep/file.txt"));
    apply(&rewind, s.checkpointer.store()).unwrap();
    // Everything is back; the directories the turn made for that file stay (the user
    // emptied them, not the rewind).
    let mut now = tree(root);
    now.retain(|path, _| !path.starts_with("new"));
    assert_eq!(now, s.before);
}

#[tokio::test]
async fn a_file_that_became_a_directory_can_be_rewound_again_and_again() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::write(root.join("notes.txt"), "notes\n").unwrap();
    let checkpointer =
        Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    let before = tree(root);
    // The turn: `rm notes.txt && mkdir notes.txt && echo x > notes.txt/inner.txt`.
    fs::remove_file(root.join("notes.txt")).unwrap();
    fs::create_dir(root.join("notes.txt")).unwrap();
    fs::write(root.join("notes.txt/inner.txt"), "x\n").unwrap();
    let changes = checkpointer.observe().await.unwrap().changes;
    let targets = rewind_targets(&changes);
    for attempt in 1..=2 {
        let rewind = plan(root, checkpointer.store(), &targets).unwrap();
        assert_eq!(rewind.refused, [], "attempt {attempt}");
        assert_eq!(
            rewind.changed_outside,
            Vec::<String>::new(),
            "attempt {attempt}"
        );
        apply(&rewind, checkpointer.store()).unwrap();
        assert_eq!(tree(root), before, "attempt {attempt}");
    }
}

#[tokio::test]
async fn verify_names_a_path_that_is_not_as_the_rewind_wrote_it() {
    let s = session().await;
    let root = s.work.path();
    let store = s.checkpointer.store();
    let rewind = plan(root, store, &rewind_targets(&s.changes)).unwrap();
    apply(&rewind, store).unwrap();
    let cap = store.config().max_file_bytes;
    assert_eq!(verify(&rewind, cap).unwrap(), Vec::<String>::new());
    // Something rewrites a restored file, and recreates a removed one, before the check.
    fs::write(root.join("a.txt"), "rewritten meanwhile\n").unwrap();
    fs::create_dir_all(root.join("new/deep")).unwrap();
    fs::write(root.join("new/deep/file.txt"), "back\n").unwrap();
    assert_eq!(
        verify(&rewind, cap).unwrap(),
        ["a.txt", "new", "new/deep", "new/deep/file.txt"]
    );
}

/// Empty directories, directory modes and hard links are part of the state: a rewind
/// puts back an empty directory a turn filled (and keeps one it did not touch), a removed
/// 0700 tree with its empty subdirectory, a directory's changed mode, and a hard-linked
/// pair written through one name, still one file.
#[tokio::test]
async fn directories_modes_and_hard_links_come_back() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::create_dir_all(root.join("logs")).unwrap();
    fs::create_dir_all(root.join("private/empty")).unwrap();
    fs::write(root.join("private/key"), "secret\n").unwrap();
    set_mode(&root.join("private/key"), 0o600);
    set_mode(&root.join("private"), 0o700);
    fs::create_dir_all(root.join("docs")).unwrap();
    set_mode(&root.join("docs"), 0o755);
    fs::create_dir_all(root.join("sub")).unwrap();
    fs::write(root.join("a.txt"), "v0\n").unwrap();
    set_mode(&root.join("a.txt"), 0o644);
    fs::hard_link(root.join("a.txt"), root.join("sub/b.txt")).unwrap();
    let before = tree(root);
    let checkpointer =
        Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
    checkpointer.snapshot_report().await.unwrap();

    fs::write(root.join("logs/run.log"), "started\n").unwrap();
    fs::remove_dir_all(root.join("private")).unwrap();
    set_mode(&root.join("docs"), 0o700);
    fs::create_dir(root.join("made")).unwrap();
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(root.join("a.txt"))
        .unwrap();
    std::io::Write::write_all(&mut file, b"v1\n").unwrap();
    drop(file);
    let after = tree(root);
    // As the tracker names them: the paths written, not every path below.
    let named: Vec<String> = ["logs/run.log", "private", "docs", "made", "a.txt"]
        .map(String::from)
        .to_vec();
    let changes = checkpointer.observe_paths(&named).await.unwrap().changes;
    let shown: Vec<String> = changes.iter().map(FileChange::shown_path).collect();
    assert_eq!(
        shown,
        [
            "a.txt",
            "docs/",
            "logs/run.log",
            "made/",
            "private/",
            "private/empty/",
            "private/key",
            "sub/b.txt"
        ],
        "the other name of a.txt and the removed tree's directories are changes too"
    );

    let rewind = plan(root, checkpointer.store(), &rewind_targets(&changes)).unwrap();
    assert_eq!(rewind.refused, []);
    assert_eq!(rewind.changed_outside, Vec::<String>::new());
    let applied = apply(&rewind, checkpointer.store()).unwrap();
    assert_eq!(verify(&rewind, u64::MAX).unwrap(), Vec::<String>::new());
    assert_eq!(
        tree(root),
        before,
        "contents, modes, the empty directories and the hard link are back"
    );
    assert_eq!(
        fs::metadata(root.join("a.txt")).unwrap().ino(),
        fs::metadata(root.join("sub/b.txt")).unwrap().ino(),
        "one file under two names"
    );

    // And the undo puts the changed tree back, directories included.
    let undo = plan(root, checkpointer.store(), &rewind_targets(&applied)).unwrap();
    assert_eq!(undo.refused, []);
    apply(&undo, checkpointer.store()).unwrap();
    assert_eq!(tree(root), after);
}

/// A name outside the rewind keeps its content: a file that shares an inode with a path
/// the rewind restores, but that the rewind does not name, is not written through.
#[tokio::test]
async fn a_hard_link_the_rewind_does_not_name_is_left_alone() {
    let work = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let root = work.path();
    fs::write(root.join("a.txt"), "mine\n").unwrap();
    fs::write(root.join("other.txt"), "theirs\n").unwrap();
    let checkpointer =
        Checkpointer::start(root, store.path(), CheckpointConfig::default()).unwrap();
    checkpointer.snapshot_report().await.unwrap();
    // a.txt becomes another name of other.txt (`ln -f other.txt a.txt`).
    fs::remove_file(root.join("a.txt")).unwrap();
    fs::hard_link(root.join("other.txt"), root.join("a.txt")).unwrap();
    let changes = checkpointer
        .observe_paths(&["a.txt".into()])
        .await
        .unwrap()
        .changes;
    let rewind = plan(root, checkpointer.store(), &rewind_targets(&changes)).unwrap();
    apply(&rewind, checkpointer.store()).unwrap();
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "mine\n");
    assert_eq!(
        fs::read_to_string(root.join("other.txt")).unwrap(),
        "theirs\n"
    );
}
