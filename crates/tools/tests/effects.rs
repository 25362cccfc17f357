//! The file effects tools attach to their results (the session ledger's facts).

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::Fixture;
use pith_core::{effect::fingerprint, FileAction, FileEffect};
use pith_tools::PermissionMode;
use serde_json::json;

#[tokio::test]
async fn read_reports_the_lines_shown_and_the_files_fingerprint() {
    let fx = Fixture::new(PermissionMode::Full);
    let text: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    std::fs::write(fx.root().join("a.txt"), &text).unwrap();
    let page = fx
        .call("read", json!({"path": "a.txt", "offset": 10, "limit": 5}))
        .await;
    assert_eq!(
        page.effects,
        [FileEffect {
            path: "a.txt".into(),
            action: FileAction::Read,
            lines: Some((10, 14)),
            fingerprint: Some(fingerprint(text.as_bytes())),
        }]
    );
    let whole = fx.call("read", json!({"path": "a.txt"})).await;
    assert_eq!(whole.effects[0].lines, None, "the whole file was shown");
}

#[tokio::test]
async fn write_and_edit_report_what_they_did_with_the_new_content() {
    let fx = Fixture::new(PermissionMode::Full);
    let created = fx
        .call("write", json!({"path": "n.txt", "content": "one\n"}))
        .await;
    assert_eq!(created.effects[0].action, FileAction::Created);
    assert_eq!(
        created.effects[0].fingerprint.as_deref(),
        Some(fingerprint(b"one\n").as_str())
    );
    let written = fx
        .call("write", json!({"path": "n.txt", "content": "two\n"}))
        .await;
    assert_eq!(written.effects[0].action, FileAction::Written);
    let edited = fx
        .call(
            "edit",
            json!({"path": "n.txt", "old_string": "two", "new_string": "three"}),
        )
        .await;
    assert_eq!(
        edited.effects,
        [FileEffect {
            path: "n.txt".into(),
            action: FileAction::Edited,
            lines: None,
            fingerprint: Some(fingerprint(b"three\n")),
        }]
    );
}

#[tokio::test]
async fn bash_in_a_git_work_tree_reports_the_files_the_command_changed() {
    let fx = Fixture::new(PermissionMode::Full);
    let root = fx.root();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    std::fs::write(root.join("src.py"), "x = 1\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-qm", "start"]);
    let result = fx
        .call(
            "bash",
            json!({"command": "python3 -c \"open('src.py','w').write('x = 2\\n')\"; echo made > out.log"}),
        )
        .await;
    let mut changed: Vec<(String, FileAction)> = result
        .effects
        .iter()
        .map(|e| (e.path.clone(), e.action))
        .collect();
    changed.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        changed,
        [
            ("out.log".to_owned(), FileAction::Changed),
            ("src.py".to_owned(), FileAction::Changed)
        ],
        "{}",
        result.content
    );
}
