//! `read`, `edit` and `write` over a front-end's text files (an editor's buffers): the
//! tools see and change the buffers' text, and the disk is left alone.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use common::Fixture;
use pith_tools::{Limits, PermissionMode, TextFiles};
use serde_json::json;

/// Buffers in memory, in the directions given.
#[derive(Debug, Default)]
struct Buffers {
    texts: Mutex<HashMap<PathBuf, String>>,
    writes_allowed: bool,
    reads_allowed: bool,
    written: Mutex<Vec<PathBuf>>,
}

impl Buffers {
    fn both() -> Arc<Self> {
        Arc::new(Self {
            reads_allowed: true,
            writes_allowed: true,
            ..Self::default()
        })
    }

    fn set(&self, path: PathBuf, text: &str) {
        self.texts.lock().unwrap().insert(path, text.to_owned());
    }

    fn get(&self, path: &Path) -> Option<String> {
        self.texts.lock().unwrap().get(path).cloned()
    }
}

#[async_trait]
impl TextFiles for Buffers {
    fn reads(&self) -> bool {
        self.reads_allowed
    }

    fn writes(&self) -> bool {
        self.writes_allowed
    }

    async fn read_text(&self, path: &Path) -> io::Result<Option<String>> {
        Ok(self.get(path))
    }

    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()> {
        self.written.lock().unwrap().push(path.to_path_buf());
        self.set(path.to_path_buf(), text);
        Ok(())
    }
}

fn fixture(buffers: Arc<Buffers>) -> Fixture {
    Fixture::build_with(
        PermissionMode::Full,
        None,
        Limits::default(),
        |_, config| config.with_files(buffers),
    )
}

#[tokio::test]
async fn read_shows_the_buffer_not_the_disk() {
    let buffers = Buffers::both();
    let fx = fixture(buffers.clone());
    let path = fx.write("a.txt", "on disk\n");
    buffers.set(path, "unsaved\nbuffer\n");
    let page = fx.call("read", json!({"path": "a.txt"})).await;
    assert!(!page.is_error, "{}", page.content);
    assert_eq!(page.content, "     1\tunsaved\n     2\tbuffer\n");
    let paged = fx
        .call("read", json!({"path": "a.txt", "offset": 2, "limit": 1}))
        .await;
    assert_eq!(paged.content, "     2\tbuffer\n");
}

#[tokio::test]
async fn read_still_refuses_binary_files_and_directories_on_disk() {
    let buffers = Buffers::both();
    let fx = fixture(buffers.clone());
    let path = fx.write("bin", b"\x7fELF\0\0\0");
    buffers.set(path, "text the editor made of it");
    let binary = fx.call("read", json!({"path": "bin"})).await;
    assert!(
        binary.is_error && binary.content.contains("binary file"),
        "{}",
        binary.content
    );
    std::fs::create_dir(fx.root().join("d")).unwrap();
    let dir = fx.call("read", json!({"path": "d"})).await;
    assert!(
        dir.is_error && dir.content.contains("is a directory"),
        "{}",
        dir.content
    );
}

#[tokio::test]
async fn edit_changes_the_buffer_and_leaves_the_disk_alone() {
    let buffers = Buffers::both();
    let fx = fixture(buffers.clone());
    let path = fx.write("a.rs", "fn main() {}\n");
    buffers.set(path.clone(), "fn main() { unsaved(); }\n");
    let edited = fx
        .call(
            "edit",
            json!({"path": "a.rs", "old_string": "unsaved()", "new_string": "saved()"}),
        )
        .await;
    assert!(!edited.is_error, "{}", edited.content);
    assert!(
        edited.content.contains("+fn main() { saved(); }"),
        "{}",
        edited.content
    );
    assert_eq!(buffers.get(&path).unwrap(), "fn main() { saved(); }\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn main() {}\n");
    // Text only on disk is not in the buffer: the edit says so and changes nothing.
    let missed = fx
        .call(
            "edit",
            json!({"path": "a.rs", "old_string": "fn main() {}", "new_string": "x"}),
        )
        .await;
    assert!(
        missed.is_error && missed.content.contains("was not found"),
        "{}",
        missed.content
    );
}

#[tokio::test]
async fn edit_of_a_file_the_editor_does_not_have_says_it_does_not_exist() {
    let buffers = Buffers::both();
    let fx = fixture(buffers.clone());
    // An unsaved new buffer, not on disk yet, is edited in the editor.
    let unsaved = fx.root().join("unsaved.txt");
    buffers.set(unsaved.clone(), "draft\n");
    let edited = fx
        .call(
            "edit",
            json!({"path": "unsaved.txt", "old_string": "draft", "new_string": "final"}),
        )
        .await;
    assert!(!edited.is_error, "{}", edited.content);
    assert_eq!(buffers.get(&unsaved).unwrap(), "final\n");
    assert!(!unsaved.exists());
    fx.write("gone.txt", "x\n");
    let edited = fx
        .call(
            "edit",
            json!({"path": "gone.txt", "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(
        edited.is_error && edited.content.contains("does not exist"),
        "{}",
        edited.content
    );
    assert_eq!(
        std::fs::read_to_string(fx.root().join("gone.txt")).unwrap(),
        "x\n"
    );
}

#[tokio::test]
async fn write_diffs_against_the_buffer_and_writes_to_it() {
    let buffers = Buffers::both();
    let fx = fixture(buffers.clone());
    let path = fx.write("w.txt", "disk\n");
    buffers.set(path.clone(), "buffer\n");
    let written = fx
        .call("write", json!({"path": "w.txt", "content": "new\n"}))
        .await;
    assert!(!written.is_error, "{}", written.content);
    assert!(written.content.contains("-buffer"), "{}", written.content);
    assert_eq!(buffers.get(&path).unwrap(), "new\n");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "disk\n");
    // A new file goes to the editor too, which creates it.
    let created = fx
        .call("write", json!({"path": "sub/new.txt", "content": "hi\n"}))
        .await;
    assert!(
        created.content.starts_with("Created"),
        "{}",
        created.content
    );
    assert_eq!(buffers.get(&fx.root().join("sub/new.txt")).unwrap(), "hi\n");
    assert!(!fx.root().join("sub/new.txt").exists());
}

#[tokio::test]
async fn a_direction_the_editor_does_not_serve_stays_on_disk() {
    let buffers = Arc::new(Buffers {
        reads_allowed: true,
        writes_allowed: false,
        ..Buffers::default()
    });
    let fx = fixture(buffers.clone());
    let path = fx.write("a.txt", "disk a\n");
    buffers.set(path.clone(), "buffer a\n");
    let edited = fx
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "buffer", "new_string": "edited"}),
        )
        .await;
    assert!(!edited.is_error, "{}", edited.content);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "edited a\n");
    assert!(buffers.written.lock().unwrap().is_empty());

    let disk_only = Arc::new(Buffers::default());
    let fx = fixture(disk_only.clone());
    let path = fx.write("b.txt", "disk b\n");
    disk_only.set(path.clone(), "buffer b\n");
    let page = fx.call("read", json!({"path": "b.txt"})).await;
    assert_eq!(page.content, "     1\tdisk b\n");
    let written = fx
        .call("write", json!({"path": "b.txt", "content": "new b\n"}))
        .await;
    assert!(!written.is_error, "{}", written.content);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new b\n");
}

/// An editor that never answers.
#[derive(Debug)]
struct Silent;

#[async_trait]
impl TextFiles for Silent {
    fn reads(&self) -> bool {
        true
    }

    fn writes(&self) -> bool {
        true
    }

    async fn read_text(&self, _: &Path) -> io::Result<Option<String>> {
        std::future::pending().await
    }

    async fn write_text(&self, _: &Path, _: &str) -> io::Result<()> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn an_editor_that_never_answers_cannot_hold_a_cancelled_call() {
    let fx = Fixture::build_with(
        PermissionMode::Full,
        None,
        Limits::default(),
        |_, config| config.with_files(Arc::new(Silent)),
    );
    fx.write("a.txt", "x\n");
    for (tool, arguments) in [
        ("read", json!({"path": "a.txt"})),
        (
            "edit",
            json!({"path": "a.txt", "old_string": "x", "new_string": "y"}),
        ),
        ("write", json!({"path": "a.txt", "content": "y\n"})),
    ] {
        let cancel = tokio_util::sync::CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            trigger.cancel();
        });
        let result = fx.call_with(tool, arguments, &cancel).await;
        assert!(result.is_error, "{tool}: {}", result.content);
        assert!(
            result.content.contains("cancelled"),
            "{tool}: {}",
            result.content
        );
    }
    assert_eq!(
        std::fs::read_to_string(fx.root().join("a.txt")).unwrap(),
        "x\n"
    );
}
