//! read, write and edit through the registry, including hostile paths (traversal,
//! symlink escapes) and hostile files (binary, invalid UTF-8, directories).

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::os::unix::fs::{symlink, PermissionsExt};

use common::Fixture;
use pith_tools::PermissionMode;
use serde_json::json;

#[tokio::test]
async fn read_returns_numbered_lines_and_is_never_squashed() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    let content: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    fx.write("big.txt", &content);
    let page = fx.call("read", json!({"path": "big.txt"})).await;
    assert!(!page.is_error, "{}", page.content);
    assert!(page.content.starts_with("     1\tline 1\n"));
    assert!(page.content.contains("  2000\tline 2000\n"));
    assert!(
        !page.content.contains("lines omitted"),
        "read output is never squashed"
    );
    assert!(
        page.content
            .contains("[showing lines 1-2000 of 3000; call read with offset=2001 to read on]"),
        "{}",
        &page.content[page.content.len() - 200..]
    );
    let next = fx
        .call(
            "read",
            json!({"path": "big.txt", "offset": 2001, "limit": 2}),
        )
        .await;
    assert!(next
        .content
        .starts_with("  2001\tline 2001\n  2002\tline 2002\n"));
}

#[tokio::test]
async fn read_refuses_binary_files_and_directories_clearly() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write("data.bin", b"\x7fELF\x02\x01\x01\0\0\0\0\0");
    fx.write("image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    std::fs::create_dir(fx.root().join("src")).unwrap();
    let binary = fx.call("read", json!({"path": "data.bin"})).await;
    assert!(binary.is_error);
    assert!(binary.content.contains("binary file"), "{}", binary.content);
    // An image is refused as an image when the model takes none (see tests/images.rs).
    let image = fx.call("read", json!({"path": "image.png"})).await;
    assert!(image.is_error);
    assert!(
        image.content.contains("is an image (PNG)"),
        "{}",
        image.content
    );
    let dir = fx.call("read", json!({"path": "src"})).await;
    assert!(dir.is_error);
    assert!(dir.content.contains("use ls"), "{}", dir.content);
}

#[tokio::test]
async fn read_shows_invalid_utf8_with_a_note() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write("latin1.txt", b"na\xefve\n");
    let result = fx.call("read", json!({"path": "latin1.txt"})).await;
    assert!(!result.is_error);
    assert!(
        result.content.contains("na\u{FFFD}ve"),
        "{}",
        result.content
    );
    assert!(result.content.contains("not valid UTF-8"));
}

#[tokio::test]
async fn hostile_arguments_become_error_results() {
    let fx = Fixture::new(PermissionMode::Full);
    for (tool, args) in [
        ("read", json!("{\"path\": ")),
        ("read", json!({"path": 7})),
        ("read", json!({"path": "a", "offset": 0})),
        ("write", json!({"path": "x"})),
        (
            "edit",
            json!({"path": "x", "old_string": "", "new_string": "y"}),
        ),
        ("grep", json!({"pattern": "("})),
        ("glob", json!({"pattern": "[unclosed"})),
    ] {
        let result = fx.call(tool, args.clone()).await;
        assert!(
            result.is_error,
            "{tool} {args} should fail: {}",
            result.content
        );
        assert!(
            result.content.starts_with("invalid arguments"),
            "{tool} {args}: {}",
            result.content
        );
    }
}

#[tokio::test]
async fn write_creates_and_replaces_atomically_with_a_diff() {
    let fx = Fixture::new(PermissionMode::AutoEdit);
    let created = fx
        .call(
            "write",
            json!({"path": "src/lib.rs", "content": "a\nb\nc\n"}),
        )
        .await;
    assert!(!created.is_error, "{}", created.content);
    assert_eq!(created.content, "Created src/lib.rs (3 lines, 6 bytes)");
    std::fs::set_permissions(
        fx.root().join("src/lib.rs"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let updated = fx
        .call(
            "write",
            json!({"path": "src/lib.rs", "content": "a\nB\nc\n"}),
        )
        .await;
    assert!(
        updated.content.contains("+1 -1 lines"),
        "{}",
        updated.content
    );
    assert!(updated.content.contains("-b\n+B"), "{}", updated.content);
    assert_eq!(
        std::fs::read_to_string(fx.root().join("src/lib.rs")).unwrap(),
        "a\nB\nc\n"
    );
    let mode = std::fs::metadata(fx.root().join("src/lib.rs"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o640,
        "permissions of the replaced file are kept"
    );
}

#[tokio::test]
async fn edit_replaces_a_unique_match_and_refuses_ambiguity() {
    let fx = Fixture::new(PermissionMode::AutoEdit);
    fx.write("f.rs", "let x = 1;\nlet y = 1;\nlet x = 1;\n");
    let ambiguous = fx
        .call(
            "edit",
            json!({"path": "f.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}),
        )
        .await;
    assert!(ambiguous.is_error);
    assert!(
        ambiguous.content.contains("occurs 2 times"),
        "{}",
        ambiguous.content
    );
    assert!(
        ambiguous.content.contains("lines 1, 3"),
        "{}",
        ambiguous.content
    );
    assert_eq!(
        std::fs::read_to_string(fx.root().join("f.rs")).unwrap(),
        "let x = 1;\nlet y = 1;\nlet x = 1;\n",
        "a refused edit changes nothing"
    );
    let unique = fx
        .call(
            "edit",
            json!({"path": "f.rs", "old_string": "let y = 1;", "new_string": "let y = 5;"}),
        )
        .await;
    assert!(!unique.is_error, "{}", unique.content);
    assert!(unique
        .content
        .starts_with("Edited f.rs: replaced 1 occurrence\n"));
    assert!(
        unique.content.contains("-let y = 1;\n+let y = 5;"),
        "{}",
        unique.content
    );
    let all = fx
        .call(
            "edit",
            json!({"path": "f.rs", "old_string": "x = 1", "new_string": "x = 9", "replace_all": true}),
        )
        .await;
    assert!(
        all.content.contains("replaced 2 occurrences"),
        "{}",
        all.content
    );
    assert_eq!(
        std::fs::read_to_string(fx.root().join("f.rs")).unwrap(),
        "let x = 9;\nlet y = 5;\nlet x = 9;\n"
    );
}

#[tokio::test]
async fn edit_refuses_missing_text_binary_and_non_utf8_files() {
    let fx = Fixture::new(PermissionMode::Full);
    fx.write("a.txt", "hello\n");
    fx.write("b.bin", b"ab\0cd");
    fx.write("c.txt", b"caf\xe9\n");
    let missing = fx
        .call(
            "edit",
            json!({"path": "a.txt", "old_string": "bye", "new_string": "x"}),
        )
        .await;
    assert!(
        missing.content.contains("was not found"),
        "{}",
        missing.content
    );
    let binary = fx
        .call(
            "edit",
            json!({"path": "b.bin", "old_string": "ab", "new_string": "x"}),
        )
        .await;
    assert!(binary.content.contains("binary"), "{}", binary.content);
    let latin = fx
        .call(
            "edit",
            json!({"path": "c.txt", "old_string": "caf", "new_string": "x"}),
        )
        .await;
    assert!(
        latin.content.contains("not valid UTF-8"),
        "{}",
        latin.content
    );
    let absent = fx
        .call(
            "edit",
            json!({"path": "none.txt", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(
        absent.content.contains("use write to create it"),
        "{}",
        absent.content
    );
    assert_eq!(std::fs::read(fx.root().join("b.bin")).unwrap(), b"ab\0cd");
}

#[tokio::test]
async fn writes_and_edits_cannot_escape_the_workspace() {
    let fx = Fixture::new(PermissionMode::Full);
    let secret = fx.outside().join("secret.txt");
    std::fs::write(&secret, "secret\n").unwrap();
    symlink(fx.outside(), fx.root().join("linkdir")).unwrap();
    symlink(&secret, fx.root().join("linkfile")).unwrap();
    let attempts = [
        (
            "write",
            json!({"path": "../outside/new.txt", "content": "x"}),
        ),
        (
            "write",
            json!({"path": "a/../../outside/new.txt", "content": "x"}),
        ),
        (
            "write",
            json!({"path": secret.to_str().unwrap(), "content": "x"}),
        ),
        ("write", json!({"path": "linkdir/new.txt", "content": "x"})),
        ("write", json!({"path": "linkfile", "content": "x"})),
        (
            "edit",
            json!({"path": "linkfile", "old_string": "secret", "new_string": "x"}),
        ),
        (
            "edit",
            json!({"path": "../outside/secret.txt", "old_string": "secret", "new_string": "x"}),
        ),
    ];
    for (tool, args) in attempts {
        let result = fx.call(tool, args.clone()).await;
        assert!(result.is_error, "{tool} {args} must be refused");
        assert!(
            result.content.contains("outside the workspace"),
            "{tool} {args}: {}",
            result.content
        );
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "secret\n");
    assert_eq!(
        std::fs::read_dir(fx.outside()).unwrap().count(),
        1,
        "nothing was created outside"
    );
}

#[tokio::test]
async fn spill_files_are_readable_in_every_mode() {
    for mode in pith_tools::PermissionMode::ALL {
        let fx = Fixture::new(mode);
        std::fs::create_dir_all(fx.spill_dir()).unwrap();
        let spilled = fx.spill_dir().join("1.txt");
        std::fs::write(&spilled, "raw output\n").unwrap();
        for path in [spilled.to_str().unwrap(), "$PITH_SPILL_DIR/1.txt"] {
            let result = fx.call("read", json!({ "path": path })).await;
            assert!(!result.is_error, "{mode} {path}: {}", result.content);
            assert_eq!(result.content, "     1\traw output\n");
        }
    }
}

#[tokio::test]
async fn reads_outside_the_workspace_follow_the_mode() {
    for (mode, allowed) in [
        (PermissionMode::ReadOnly, true),
        (PermissionMode::Ask, false),
        (PermissionMode::AutoEdit, true),
        (PermissionMode::Full, true),
    ] {
        let fx = Fixture::new(mode);
        let outside = fx.outside().join("notes.txt");
        std::fs::write(&outside, "n\n").unwrap();
        symlink(&outside, fx.root().join("notes-link")).unwrap();
        for path in [
            outside.to_str().unwrap(),
            "../outside/notes.txt",
            "notes-link",
        ] {
            let result = fx.call("read", json!({ "path": path })).await;
            assert_eq!(
                !result.is_error, allowed,
                "{mode} {path}: {}",
                result.content
            );
        }
    }
}
