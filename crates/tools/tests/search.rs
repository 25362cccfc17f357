//! grep, glob and ls: .gitignore honoured (also without a git repository), binary files
//! skipped, output formats, caps, and concurrent read-only calls.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use common::Fixture;
use pith_tools::{Limits, PermissionMode};
use serde_json::json;

fn project() -> Fixture {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n");
    fx.write("src/lib.rs", "pub fn hello() {}\n// TODO: more\n");
    fx.write("src/deep/mod.rs", "// hello from deep\n");
    fx.write("README.md", "# Hello project\n");
    fx.write("target/debug/out.rs", "fn hello() {}\n");
    fx.write("build.log", "hello log\n");
    fx.write("blob.bin", b"hello\0binary");
    fx.write(".github/ci.yml", "name: hello\n");
    fx.write(".git/config", "hello = git internals\n");
    fx
}

#[tokio::test]
async fn grep_prints_path_line_text_and_honours_gitignore() {
    let fx = project();
    let result = fx.call("grep", json!({"pattern": "hello"})).await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(
        result.content,
        ".github/ci.yml:1:name: hello\nsrc/deep/mod.rs:1:// hello from deep\nsrc/lib.rs:1:pub fn hello() {}\n"
    );
}

#[tokio::test]
async fn grep_filters_by_glob_path_and_case() {
    let fx = project();
    let ci = fx
        .call(
            "grep",
            json!({"pattern": "hello", "glob": "*.md", "case_insensitive": true}),
        )
        .await;
    assert_eq!(ci.content, "README.md:1:# Hello project\n");
    let scoped = fx
        .call("grep", json!({"pattern": "hello", "path": "src/deep"}))
        .await;
    assert_eq!(scoped.content, "src/deep/mod.rs:1:// hello from deep\n");
    let nested_glob = fx
        .call("grep", json!({"pattern": "hello", "glob": "src/**/*.rs"}))
        .await;
    assert!(
        nested_glob.content.contains("src/deep/mod.rs:1:"),
        "{}",
        nested_glob.content
    );
    let none = fx.call("grep", json!({"pattern": "zzzz"})).await;
    assert!(!none.is_error);
    assert!(
        none.content.starts_with("No matches for `zzzz`"),
        "{}",
        none.content
    );
}

#[tokio::test]
async fn grep_results_are_capped_with_a_note() {
    let fx = Fixture::build(
        PermissionMode::ReadOnly,
        None,
        Limits {
            grep_max_matches: 5,
            ..Limits::default()
        },
    );
    let many: String = (0..50).map(|i| format!("match {i}\n")).collect();
    fx.write("many.txt", many);
    let result = fx.call("grep", json!({"pattern": "match"})).await;
    assert_eq!(
        result.content.matches("many.txt:").count(),
        5,
        "{}",
        result.content
    );
    assert!(
        result.content.contains("[stopped after 5 matches"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn glob_uses_real_glob_semantics_and_skips_ignored_files() {
    let fx = project();
    let all = fx.call("glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(all.content, "src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n");
    let top = fx.call("glob", json!({"pattern": "*.md"})).await;
    assert_eq!(top.content, "README.md\n");
    let under = fx
        .call("glob", json!({"pattern": "*.rs", "path": "src"}))
        .await;
    assert_eq!(under.content, "src/lib.rs\nsrc/main.rs\n");
    let absolute = format!("{}/src/**/*.rs", fx.root().display());
    let abs = fx.call("glob", json!({ "pattern": absolute })).await;
    assert_eq!(abs.content, "src/deep/mod.rs\nsrc/lib.rs\nsrc/main.rs\n");
    let none = fx.call("glob", json!({"pattern": "**/*.py"})).await;
    assert!(
        none.content.starts_with("No files match"),
        "{}",
        none.content
    );
}

#[tokio::test]
async fn ls_shows_types_sizes_and_links() {
    let fx = project();
    std::os::unix::fs::symlink("src/main.rs", fx.root().join("main-link")).unwrap();
    let result = fx.call("ls", json!({})).await;
    assert!(!result.is_error, "{}", result.content);
    let lines: Vec<&str> = result.content.lines().collect();
    assert_eq!(lines[0], "./ (9 entries)", "{}", result.content);
    assert!(
        lines.contains(&"file          16  README.md"),
        "{}",
        result.content
    );
    assert!(
        lines.contains(&"dir            -  src/"),
        "{}",
        result.content
    );
    assert!(
        lines.contains(&"link           -  main-link -> src/main.rs"),
        "{}",
        result.content
    );
    let missing = fx.call("ls", json!({"path": "nope"})).await;
    assert!(missing.is_error);
    assert!(
        missing.content.contains("no such file"),
        "{}",
        missing.content
    );
}

#[tokio::test]
async fn concurrent_read_only_calls_give_the_same_results_as_sequential_ones() {
    let fx = project();
    let calls = [
        ("grep", json!({"pattern": "hello"})),
        ("glob", json!({"pattern": "**/*.rs"})),
        ("ls", json!({"path": "src"})),
        ("read", json!({"path": "src/main.rs"})),
    ];
    let mut sequential = Vec::new();
    for (tool, args) in &calls {
        sequential.push(fx.call(tool, args.clone()).await.content);
    }
    let concurrent = futures_join(&fx, &calls).await;
    for round in concurrent.chunks(calls.len()) {
        assert_eq!(round, sequential.as_slice());
    }
}

async fn futures_join(fx: &Fixture, calls: &[(&str, serde_json::Value)]) -> Vec<String> {
    let mut pending = Vec::new();
    for _ in 0..8 {
        for (tool, args) in calls {
            pending.push(fx.call(tool, args.clone()));
        }
    }
    // All calls are polled at once: they run concurrently (their blocking work goes to
    // tokio's blocking pool).
    futures::future::join_all(pending)
        .await
        .into_iter()
        .map(|result| {
            assert!(!result.is_error, "{}", result.content);
            result.content
        })
        .collect()
}
