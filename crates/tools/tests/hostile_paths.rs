//! Property: whatever path the model sends, write and edit never change anything outside
//! the workspace (the session's spill directory aside), and no tool panics on it.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::os::unix::fs::symlink;

use common::Fixture;
use pith_tools::PermissionMode;
use proptest::prelude::*;
use serde_json::json;

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just("".to_owned()),
        Just("a".to_owned()),
        Just("link-out".to_owned()),
        Just("link-in".to_owned()),
        Just("outside".to_owned()),
        Just("f.txt".to_owned()),
        "[a-z\\x{e9}\\x{1F600} ]{1,6}",
    ]
}

fn hostile_path() -> impl Strategy<Value = (bool, Vec<String>)> {
    (any::<bool>(), prop::collection::vec(segment(), 1..7))
}

fn snapshot(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_file() {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        } else if meta.is_dir() {
            out.push((path.display().to_string(), Vec::new()));
            out.extend(snapshot(&path));
        }
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    #[test]
    fn writes_and_edits_never_touch_anything_outside_the_workspace((absolute, segments) in hostile_path()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let fx = Fixture::new(PermissionMode::Full);
        std::fs::write(fx.outside().join("f.txt"), "outside\n").unwrap();
        symlink(fx.outside(), fx.root().join("link-out")).unwrap();
        std::fs::create_dir(fx.root().join("a")).unwrap();
        symlink(fx.root().join("a"), fx.root().join("link-in")).unwrap();
        let base = if absolute { format!("{}/", fx.root().display()) } else { String::new() };
        let path = format!("{base}{}", segments.join("/"));
        let before = snapshot(&fx.outside());
        let beside = |fx: &Fixture| -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(fx.dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| name != "spill")
                .collect();
            names.sort();
            names
        };
        let parent_before = beside(&fx);
        runtime.block_on(async {
            for (tool, args) in [
                ("write", json!({"path": path, "content": "pwned\n"})),
                ("edit", json!({"path": path, "old_string": "outside", "new_string": "pwned"})),
                ("read", json!({"path": path})),
                ("ls", json!({"path": path})),
            ] {
                let _ = fx.call(tool, args).await;
            }
        });
        prop_assert_eq!(snapshot(&fx.outside()), before, "outside changed via {}", path);
        let parent_after = beside(&fx);
        prop_assert_eq!(parent_before, parent_after, "a file appeared beside the workspace via {}", path);
    }
}
