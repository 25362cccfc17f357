//! The file effects tools attach to their results (the session ledger's facts).

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::Fixture;
use pith_core::{effect::fingerprint, FileAction, FileEffect};
use pith_tools::{Limits, PermissionMode, ToolsConfig};
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
async fn bash_reports_the_files_the_command_changed_as_the_session_s_tracker_saw_them() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("src.py"), "x = 1\n").unwrap();
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    let tracker =
        pith_checkpoint::Tracker::start(&root, pith_checkpoint::TrackerConfig::default()).unwrap();
    let fx = Fixture::build_with(
        PermissionMode::Full,
        None,
        Limits::default(),
        |_, config| {
            ToolsConfig {
                workspace_root: root.clone(),
                ..config
            }
            .with_changes(std::sync::Arc::new(tracker))
        },
    );
    let result = fx
        .call(
            "bash",
            json!({"command": "python3 -c \"open('src.py','w').write('x = 2\\n')\"; echo made > out.log; mkdir -p build && echo o > build/x.o"}),
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
        "ignored paths are not reported: {}",
        result.content
    );
    assert_eq!(
        result
            .effects
            .iter()
            .find(|e| e.path == "src.py")
            .unwrap()
            .fingerprint
            .as_deref(),
        Some(pith_core::effect::fingerprint(b"x = 2\n").as_str())
    );
    // A second command sees only its own change.
    let again = fx.call("bash", json!({"command": "rm out.log"})).await;
    let effects: Vec<(String, FileAction)> = again
        .effects
        .iter()
        .map(|e| (e.path.clone(), e.action))
        .collect();
    assert_eq!(effects, [("out.log".to_owned(), FileAction::Deleted)]);
}
