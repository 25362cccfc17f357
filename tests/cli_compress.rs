//! End-to-end checks of `pith compress` through the real binary.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use assert_cmd::Command;

/// `pith` with `home` as its HOME and working directory: no user or project config of
/// the machine running the tests.
fn pith(home: &std::path::Path) -> Command {
    let mut command =
        Command::cargo_bin("pith").expect("the pith binary is built for integration tests");
    command
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .current_dir(home);
    command
}

fn pytest_output() -> String {
    let mut text = String::from("============================= test session starts ==============================\ncollected 300 items\n\n");
    for i in 0..200 {
        text.push_str(&format!(
            "tests/test_mod.py::test_case_{i} PASSED   [ {}%]\n",
            i / 3
        ));
    }
    text.push_str("FAILED tests/test_mod.py::test_broken - assert 2 == 3\n");
    text.push_str(
        "========================= 1 failed, 200 passed in 1.23s =========================\n",
    );
    text
}

#[test]
fn squashed_output_ends_with_a_spill_file_holding_the_raw_input() {
    let tmp = tempfile::tempdir().unwrap();
    let input = pytest_output();
    let out = pith(tmp.path())
        .env("TMPDIR", tmp.path())
        .args([
            "compress",
            "--tool",
            "bash",
            "--command",
            "pytest tests",
            "--exit-code",
            "1",
        ])
        .write_stdin(input.clone())
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stdout.contains("FAILED tests/test_mod.py::test_broken - assert 2 == 3"),
        "{stdout}"
    );
    assert!(stdout.contains("lines omitted]"), "{stdout}");
    let last = stdout.trim_end().lines().last().unwrap();
    let path = last
        .strip_prefix("[full output: ")
        .and_then(|p| p.strip_suffix(']'))
        .unwrap_or_else(|| panic!("last line must be the spill marker: {last}"));
    assert!(
        path.starts_with(tmp.path().to_str().unwrap()),
        "spill under TMPDIR: {path}"
    );
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        input,
        "nothing is lost"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "spill files are private");
    }
    assert!(
        stderr.contains("bytes") && stderr.contains("tokens ->"),
        "stats line: {stderr}"
    );
}

#[test]
fn without_a_command_the_family_is_detected_from_content() {
    let tmp = tempfile::tempdir().unwrap();
    let out = pith(tmp.path())
        .env("TMPDIR", tmp.path())
        .args(["compress", "--tool", "bash"])
        .write_stdin(pytest_output())
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("test_runner"),
        "family should be detected: {stderr}"
    );
}

#[test]
fn small_and_read_outputs_pass_unchanged_without_a_spill() {
    let tmp = tempfile::tempdir().unwrap();
    pith(tmp.path())
        .args(["compress", "-"])
        .write_stdin("short output\n")
        .assert()
        .success()
        .stdout("short output\n");
    let big = "x = 1\n".repeat(2_000);
    pith(tmp.path())
        .args(["compress", "--tool", "read"])
        .write_stdin(big.clone())
        .assert()
        .success()
        .stdout(big);
}

#[test]
fn a_missing_file_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    pith(tmp.path())
        .args(["compress", "/definitely/not/here.txt"])
        .assert()
        .code(2);
}

#[test]
fn the_context_section_of_the_configuration_applies_as_in_pith_run() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join(".config/pith")).unwrap();
    std::fs::write(
        tmp.path().join(".config/pith/config.toml"),
        "[context]\nfloor_bytes = 1000000\n",
    )
    .unwrap();
    let input = pytest_output();
    pith(tmp.path())
        .env("TMPDIR", tmp.path())
        .args(["compress", "--command", "pytest tests"])
        .write_stdin(input.clone())
        .assert()
        .success()
        .stdout(input);
    std::fs::write(
        tmp.path().join(".config/pith/config.toml"),
        "[context]\nflor_bytes = 10\n",
    )
    .unwrap();
    pith(tmp.path())
        .args(["compress", "--command", "pytest tests"])
        .write_stdin(pytest_output())
        .assert()
        .code(2);
}
