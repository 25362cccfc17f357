//! The bash sandbox on this machine's kernel, driven through the registry like every
//! other tool test: hostile commands must fail and be reported to the model as sandbox
//! denials; ordinary builds and tests in the workspace must keep working.
//!
//! Each hostile fixture has a fake home (`<tmp>/home`, with a planted `~/.ssh/id_rsa`)
//! given to the sandbox as its user directories, and pith's data directory
//! (`<tmp>/pith-data`) holding the session's spill directory, as in a real session. The
//! real home is never touched: commands that could run unsandboxed name the fake home by
//! its absolute path.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, ScriptedApprover};
use pith_core::ToolResult;
use pith_tools::UserDirs;
use pith_tools::{Approval, Approver, Limits, PermissionMode, SandboxConfig, SandboxMode};
use serde_json::json;

const KEY: &str = "-----BEGIN OPENSSH PRIVATE KEY----- planted-test-key";
const TRANSCRIPT: &str = "{\"secret\":\"planted-transcript\"}";

fn limits() -> Limits {
    Limits {
        bash_kill_grace: Duration::from_millis(300),
        bash_drain_after_exit: Duration::from_millis(300),
        ..Limits::default()
    }
}

/// The fake home of a hostile fixture.
fn home(fx: &Fixture) -> PathBuf {
    fx.dir.path().join("home").canonicalize().unwrap()
}

/// A fixture with a fake home and the spill directory inside pith's data directory;
/// `sandbox` adjusts the sandbox settings.
fn hostile_with(
    mode: PermissionMode,
    approver: Option<Arc<dyn Approver>>,
    sandbox: impl FnOnce(SandboxConfig) -> SandboxConfig,
) -> Fixture {
    Fixture::build_with(mode, approver, limits(), |dir, mut config| {
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".ssh/id_rsa"), KEY).unwrap();
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::write(home.join(".aws/credentials"), KEY).unwrap();
        let data = dir.join("pith-data");
        let session = data.join("sessions/project-1234/session");
        std::fs::create_dir_all(&session).unwrap();
        std::fs::write(session.join("transcript.jsonl"), TRANSCRIPT).unwrap();
        config.spill_dir = session.join("spill");
        let dirs = UserDirs {
            home: Some(home),
            pith_home: Some(data),
            ..UserDirs::default()
        };
        config.with_sandbox(sandbox(SandboxConfig::default().with_user_dirs(dirs)))
    })
}

fn hostile(mode: PermissionMode) -> Fixture {
    hostile_with(mode, None, |sandbox| sandbox)
}

async fn run(fx: &Fixture, command: &str) -> ToolResult {
    fx.call("bash", json!({ "command": command })).await
}

#[track_caller]
fn assert_denied(result: &ToolResult, what: &str) {
    assert!(
        result.is_error,
        "{what}: the command must fail:\n{}",
        result.content
    );
    assert!(
        result.content.contains("[the sandbox denied this command"),
        "{what}: must be reported as a sandbox denial:\n{}",
        result.content
    );
    assert!(
        result
            .content
            .contains("Do not retry variants of this command"),
        "{what}: the model is told to stop:\n{}",
        result.content
    );
    assert!(
        !result.content.contains("planted-"),
        "{what}: a secret leaked:\n{}",
        result.content
    );
}

#[tokio::test]
async fn writing_to_home_outside_the_workspace_is_denied() {
    let fx = hostile(PermissionMode::Full);
    let result = run(&fx, "echo pwned > \"$HOME/pwned.txt\"").await;
    assert_denied(&result, "write to $HOME");
    assert!(!home(&fx).join("pwned.txt").exists());
    let result = run(&fx, "echo \"$HOME\"").await;
    assert!(
        result.content.starts_with(&home(&fx).display().to_string()),
        "the command's HOME is the sandbox's: {}",
        result.content
    );
}

#[tokio::test]
async fn reading_planted_credentials_is_denied() {
    let fx = hostile(PermissionMode::Full);
    assert_denied(&run(&fx, "cat ~/.ssh/id_rsa").await, "read ~/.ssh/id_rsa");
    assert_denied(
        &run(&fx, "cat ~/.aws/credentials").await,
        "read ~/.aws/credentials",
    );
    assert_denied(&run(&fx, "head -c 10 ~/.ssh/*").await, "glob into ~/.ssh");
    // Other files of the home and of the system stay readable.
    std::fs::write(home(&fx).join("notes.txt"), "public notes").unwrap();
    let result = run(&fx, "cat ~/notes.txt && head -1 /etc/passwd >/dev/null").await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("public notes"));
}

#[tokio::test]
async fn symlinks_in_the_workspace_pointing_out_do_not_escape() {
    let fx = hostile(PermissionMode::Full);
    std::os::unix::fs::symlink(fx.outside(), fx.root().join("escape")).unwrap();
    std::os::unix::fs::symlink(home(&fx).join(".ssh"), fx.root().join("keys")).unwrap();
    assert_denied(
        &run(&fx, "echo x > escape/new.txt").await,
        "write through a symlink to a directory outside",
    );
    assert!(!fx.outside().join("new.txt").exists());
    assert_denied(
        &run(&fx, "cat keys/id_rsa").await,
        "read through a symlink to ~/.ssh",
    );
    assert_denied(
        &run(&fx, "ln -s \"$HOME\" h && echo x > h/via-link.txt").await,
        "a symlink the command made itself",
    );
    assert!(!home(&fx).join("via-link.txt").exists());
    // Landlock refuses to link a file into a directory granting more than where it
    // lies (EXDEV), so a hard link cannot launder a denied file into the workspace.
    assert_denied(
        &run(&fx, "ln \"$HOME/.ssh/id_rsa\" stolen && cat stolen").await,
        "a hard link out of ~/.ssh",
    );
    assert!(!fx.root().join("stolen").exists());
}

#[tokio::test]
async fn dot_dot_and_proc_self_tricks_are_denied() {
    let fx = hostile(PermissionMode::Full);
    let dir = fx.dir.path().canonicalize().unwrap();
    let outside = fx.outside();
    let home = home(&fx);
    let cases = [
        ("cd .. && echo x > escaped.txt".to_owned(), "cd .. write"),
        (
            "echo x > inside.txt && mv inside.txt ../moved.txt".to_owned(),
            "move out",
        ),
        (
            format!(
                "echo x > /proc/self/root{}/proc-root.txt",
                outside.display()
            ),
            "/proc/self/root write",
        ),
        (
            "echo x > /proc/self/cwd/../proc-cwd.txt".to_owned(),
            "/proc/self/cwd/.. write",
        ),
        (
            format!("cat /proc/self/root{}/.ssh/id_rsa", home.display()),
            "/proc/self/root read",
        ),
        (
            format!("cat /proc/$PPID/root{}/.ssh/id_rsa", home.display()),
            "/proc/<pith>/root read",
        ),
        (
            "echo x > /tmp/pith-sandbox-escape-$$.txt".to_owned(),
            "write to the shared /tmp",
        ),
    ];
    for (command, what) in &cases {
        assert_denied(&run(&fx, command).await, what);
    }
    for name in ["escaped.txt", "moved.txt", "proc-cwd.txt"] {
        assert!(!dir.join(name).exists(), "{name}");
    }
    assert!(!outside.join("proc-root.txt").exists());
}

#[tokio::test]
async fn a_child_that_leaves_the_process_group_is_still_confined() {
    let fx = hostile(PermissionMode::Full);
    assert_denied(
        &run(
            &fx,
            "setsid -w bash -c 'echo x > \"$HOME/from-setsid.txt\"'",
        )
        .await,
        "write after setsid",
    );
    assert_denied(
        &run(&fx, "setsid -w cat \"$HOME/.ssh/id_rsa\"").await,
        "read after setsid",
    );
    // A detached process that acts after the call returned is confined all the same.
    let late = run(
        &fx,
        "setsid bash -c 'sleep 0.3; echo x > \"$HOME/late.txt\"; \
         cat \"$HOME/.ssh/id_rsa\" > late-key.txt 2>&1; echo done >> late-key.txt' \
         > /dev/null 2>&1 & echo started",
    )
    .await;
    assert!(late.content.starts_with("started"), "{}", late.content);
    let report = fx.root().join("late-key.txt");
    for _ in 0..200 {
        if std::fs::read_to_string(&report).is_ok_and(|t| t.contains("done")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let text = std::fs::read_to_string(&report).unwrap();
    assert!(text.contains("Permission denied"), "{text}");
    assert!(!text.contains("planted-"), "{text}");
    assert!(!home(&fx).join("late.txt").exists());
}

#[tokio::test]
async fn the_network_is_off_even_to_the_hosts_loopback() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let fx = hostile(PermissionMode::Full);
    let result = run(
        &fx,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    )
    .await;
    assert_denied(&result, "TCP to the test's loopback server");
    assert!(result.content.contains("no network"), "{}", result.content);
    assert!(
        matches!(listener.accept(), Err(err) if err.kind() == ErrorKind::WouldBlock),
        "no connection may reach the host's server"
    );
    // The command's own loopback works: local test servers keep working.
    let own = run(
        &fx,
        "python3 -c \"import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); \
         s.listen(); socket.create_connection(s.getsockname()); print('own loopback ok')\"",
    )
    .await;
    assert!(!own.is_error, "{}", own.content);
    assert!(own.content.contains("own loopback ok"), "{}", own.content);
}

#[tokio::test]
async fn commands_of_a_session_share_a_loopback_the_host_cannot_reach() {
    let fx = hostile(PermissionMode::Full);
    let started = run(
        &fx,
        "python3 -c \"import socket; s = socket.socket(); s.settimeout(30); \
         s.bind(('127.0.0.1', 0)); s.listen(); \
         open('port.tmp', 'w').write(str(s.getsockname()[1])); \
         __import__('os').rename('port.tmp', 'port'); \
         c, _ = s.accept(); c.sendall(b'hello from the session')\" > server.log 2>&1 & \
         for i in $(seq 200); do [ -s port ] && break; sleep 0.05; done; cat port",
    )
    .await;
    assert!(!started.is_error, "{}", started.content);
    let port: u16 = std::fs::read_to_string(fx.root().join("port"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the host's loopback is not the sandbox's"
    );
    let answer = run(&fx, "exec 3<>/dev/tcp/127.0.0.1/$(cat port) && cat <&3").await;
    assert!(!answer.is_error, "{}", answer.content);
    assert!(
        answer.content.starts_with("hello from the session"),
        "a later command reaches the server an earlier one started: {}",
        answer.content
    );
}

#[tokio::test]
async fn the_network_can_be_allowed() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let fx = hostile_with(PermissionMode::Full, None, |s| s.with_network(true));
    let result = run(
        &fx,
        &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.starts_with("connected"));
    assert!(listener.accept().is_ok());
    // Files stay confined with the network on.
    assert_denied(&run(&fx, "cat ~/.ssh/id_rsa").await, "read with network");
}

#[tokio::test]
async fn the_private_temp_dir_and_the_devices_work() {
    let fx = hostile(PermissionMode::Full);
    let result = run(
        &fx,
        "case \"$TMPDIR\" in /tmp|/tmp/) exit 9;; esac; \
         echo temp > \"$TMPDIR/t.txt\" && cat \"$TMPDIR/t.txt\" && \
         f=$(mktemp) && echo ok > \"$f\" && cat \"$f\" && \
         echo gone > /dev/null && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom | wc -c",
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "temp\nok\n4\n4\n[exit code: 0]");
    let disks = run(&fx, "cat /dev/mem 2>&1 | head -c 0; ls /dev/null").await;
    assert!(disks.content.contains("/dev/null"), "{}", disks.content);
}

#[tokio::test]
async fn read_only_sandbox_denies_workspace_writes_but_keeps_tmpdir() {
    let fx = hostile_with(PermissionMode::Full, None, |s| {
        s.with_mode(Some(SandboxMode::ReadOnly))
    });
    fx.write("existing.txt", "before");
    assert_denied(&run(&fx, "touch new.txt").await, "create in read-only");
    assert_denied(
        &run(&fx, "echo after > existing.txt").await,
        "overwrite in read-only",
    );
    assert_eq!(
        std::fs::read_to_string(fx.root().join("existing.txt")).unwrap(),
        "before"
    );
    let result = run(
        &fx,
        "cat existing.txt && echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"",
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "beforet\n[exit code: 0]");
}

#[tokio::test]
async fn the_spill_dir_stays_usable_inside_the_denied_data_dir() {
    let fx = hostile(PermissionMode::Full);
    let result = run(&fx, "seq 1 20000").await;
    let spill = fx.spill_path(&result.content).expect("spilled");
    assert!(spill.starts_with(fx.dir.path().join("pith-data")));
    let counted = run(&fx, "wc -l < \"$PITH_SPILL_DIR/1.txt\"").await;
    assert!(
        counted.content.starts_with("20000\n"),
        "{}",
        counted.content
    );
    let written = run(&fx, "echo note > \"$PITH_SPILL_DIR/note.txt\"").await;
    assert!(!written.is_error, "{}", written.content);
    assert_denied(
        &run(&fx, "cat \"$PITH_SPILL_DIR/../transcript.jsonl\"").await,
        "the session's transcript next to the spill dir",
    );
}

#[tokio::test]
async fn ask_mode_offers_one_run_without_the_sandbox() {
    let approver = ScriptedApprover::new(vec![Approval::AllowOnce, Approval::AllowOnce]);
    let fx = hostile_with(PermissionMode::Ask, Some(approver.clone()), |s| s);
    let target = home(&fx).join("escalated.txt");
    let command = format!("echo escalated > {}", target.display());
    let result = run(&fx, &command).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(
        result
            .content
            .contains("[the sandbox denied the first run of this command:"),
        "{}",
        result.content
    );
    assert!(result
        .content
        .contains("The user allowed one run without the sandbox"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "escalated\n");
    let questions = approver.questions();
    assert_eq!(questions.len(), 2, "{questions:?}");
    assert_eq!(questions[1].tool, "bash");
    assert_eq!(
        questions[1].summary,
        format!("run once without the sandbox: {command}")
    );
    let details = questions[1].details.clone().unwrap();
    assert!(details.contains("Permission denied"), "{details}");
}

#[tokio::test]
async fn a_declined_escalation_reports_the_denial() {
    let approver = ScriptedApprover::new(vec![
        Approval::AllowOnce,
        Approval::Deny {
            feedback: Some("leave my home alone".into()),
        },
    ]);
    let fx = hostile_with(PermissionMode::AutoEdit, Some(approver.clone()), |s| s);
    let target = home(&fx).join("declined.txt");
    let result = run(&fx, &format!("echo no > {}", target.display())).await;
    assert_denied(&result, "declined escalation");
    assert!(
        result.content.contains("leave my home alone"),
        "{}",
        result.content
    );
    assert!(!target.exists());
    assert_eq!(approver.questions().len(), 2);
}

#[tokio::test]
async fn full_mode_and_headless_runs_never_leave_the_sandbox() {
    let approver = ScriptedApprover::new(vec![Approval::AllowOnce]);
    let fx = hostile_with(PermissionMode::Full, Some(approver.clone()), |s| s);
    let target = home(&fx).join("never.txt");
    assert_denied(
        &run(&fx, &format!("echo x > {}", target.display())).await,
        "full mode with an approver",
    );
    assert!(approver.questions().is_empty(), "full mode does not ask");
    assert!(!target.exists());
}

#[tokio::test]
async fn a_kernel_without_landlock_refuses_with_the_reason_and_the_way_out() {
    for abi in [0, 2] {
        let fx = hostile_with(PermissionMode::Full, None, |s| SandboxConfig {
            assume_landlock_abi: Some(abi),
            ..s
        });
        let result = run(&fx, "touch ran.txt").await;
        assert!(result.is_error, "{}", result.content);
        assert!(
            result
                .content
                .contains("bash runs in the `workspace-write` sandbox, but"),
            "{}",
            result.content
        );
        assert!(
            result.content.contains("--sandbox off"),
            "{}",
            result.content
        );
        assert!(!fx.root().join("ran.txt").exists(), "the command never ran");
    }
    let fx = hostile_with(PermissionMode::Full, None, |s| SandboxConfig {
        assume_landlock_abi: Some(0),
        ..s
    });
    let result = run(&fx, "true").await;
    assert!(
        result.content.contains("no Landlock support"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn sandbox_off_runs_commands_unconfined() {
    let fx = hostile_with(PermissionMode::Full, None, |s| {
        s.with_mode(Some(SandboxMode::Off))
    });
    let target = home(&fx).join("off.txt");
    let result = run(&fx, &format!("echo off > {}", target.display())).await;
    assert!(!result.is_error, "{}", result.content);
    assert!(target.exists());
}

/// A fixture with the real user directories (so the toolchains under the real home are
/// readable, as in a real session) and a long timeout for builds.
fn builder() -> Fixture {
    let limits = Limits {
        bash_timeout_default: Duration::from_secs(600),
        ..limits()
    };
    Fixture::build(PermissionMode::Full, None, limits)
}

fn write_files(root: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

#[tokio::test]
#[ignore = "needs pytest (.ci/run installs it and runs the ignored tests)"]
async fn pytest_runs_in_workspace_write() {
    let fx = builder();
    write_files(
        &fx.root(),
        &[(
            "test_sample.py",
            "def test_addition():\n    assert 1 + 1 == 2\n",
        )],
    );
    let result = run(&fx, "python3 -m pytest -q test_sample.py").await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("1 passed"), "{}", result.content);
    assert!(fx.root().join(".pytest_cache").is_dir());
}

#[tokio::test]
async fn cargo_test_of_a_tiny_crate_runs_in_workspace_write() {
    let fx = builder();
    write_files(
        &fx.root(),
        &[
            (
                "Cargo.toml",
                "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
            ),
            (
                "src/lib.rs",
                "pub fn double(x: u32) -> u32 { x * 2 }\n\n#[test]\nfn doubles() { assert_eq!(double(2), 4); }\n",
            ),
        ],
    );
    // The outer cargo's target directory would be outside the workspace: the inner one
    // builds into the workspace's own target/.
    let result = run(
        &fx,
        "env -u CARGO_TARGET_DIR -u CARGO_BUILD_TARGET_DIR cargo test --offline 2>&1",
    )
    .await;
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("1 passed"), "{}", result.content);
    assert!(fx.root().join("target").is_dir());
}
