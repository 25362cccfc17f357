//! End-to-end checks of `pith tokens`, `--version` and `--help` through the real binary.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use assert_cmd::Command;

fn pith() -> Command {
    Command::cargo_bin("pith").expect("the pith binary is built for integration tests")
}

#[test]
fn counts_hello_world_from_stdin_as_two_tokens() {
    pith()
        .arg("tokens")
        .write_stdin("hello world")
        .assert()
        .success()
        .stdout("2\n");
}

#[test]
fn cl100k_encoding_is_selectable() {
    pith()
        .args(["tokens", "--encoding", "cl100k", "-"])
        .write_stdin("hello world")
        .assert()
        .success()
        .stdout("2\n");
}

#[test]
fn counts_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.txt");
    std::fs::write(&path, "hello world").unwrap();
    pith()
        .arg("tokens")
        .arg(&path)
        .assert()
        .success()
        .stdout("2\n");
}

/// A large input (over 1 MiB: counted on two threads) of real session text, with a
/// 100 kB run of letters (one pre-token: merged through the heap) and CJK text in it.
fn large_input() -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/core/tests/data/corpus-sample");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the vendored corpus sample exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut text = String::new();
    for file in files.iter().cycle() {
        if text.len() > 1_300_000 {
            break;
        }
        text.push_str(&std::fs::read_to_string(file).expect("corpus files are UTF-8"));
        text.push_str("\n日本語のテキストです。한국어 문장입니다.\n");
    }
    text.push_str(&"abc".repeat(35_000));
    text
}

#[test]
fn a_large_file_counts_exactly_as_tiktoken_in_both_encodings() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.txt");
    let text = large_input();
    std::fs::write(&path, &text).unwrap();
    for (flag, reference) in [
        ("o200k", tiktoken_rs::o200k_base_singleton()),
        ("cl100k", tiktoken_rs::cl100k_base_singleton()),
    ] {
        let output = pith()
            .args(["tokens", "--encoding", flag])
            .arg(&path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        let counted: usize = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .unwrap();
        assert_eq!(counted, reference.encode_ordinary(&text).len(), "{flag}");
    }
}

#[test]
fn unreadable_file_exits_2_with_a_clear_message() {
    let output = pith()
        .args(["tokens", "/definitely/not/here.txt"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot read /definitely/not/here.txt"),
        "{stderr}"
    );
}

#[test]
fn invalid_utf8_is_counted_lossily_with_a_warning() {
    let output = pith()
        .arg("tokens")
        .write_stdin(b"abc\xff\xfedef".to_vec())
        .output()
        .unwrap();
    assert!(output.status.success());
    let count: usize = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap();
    assert!(count >= 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("not valid UTF-8"));
}

#[test]
fn version_and_help_work() {
    let version = pith().arg("--version").output().unwrap();
    assert!(version.status.success());
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("pith "));
    let help = pith().arg("--help").output().unwrap();
    assert!(help.status.success());
    let text = String::from_utf8_lossy(&help.stdout);
    for command in ["run", "tokens", "compress", "sessions", "replay"] {
        assert!(
            text.contains(command),
            "--help does not list {command}:\n{text}"
        );
    }
}
