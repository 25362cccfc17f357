//! End-to-end checks of `pith tokens`, `--version` and `--help` through the real binary.

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
