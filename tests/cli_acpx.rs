//! End-to-end with a client people use: acpx (npm `acpx`, a headless ACP client; `.ci/run`
//! installs it into `.cache/acpx`) drives the real `pith acp` against pith-testkit — a
//! one-shot prompt, a persistent session reopened by a new pith process (through
//! `session/resume`, which acpx prefers, and through `session/load` when resume is not
//! offered), and a cancel.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::Sandbox;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::json;

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// acpx with the sandbox's environment (its records under the sandbox's home).
struct Acpx {
    program: PathBuf,
    sandbox: Sandbox,
}

impl Acpx {
    fn command(&self, server: &TestServer, agent: &str, args: &[&str]) -> Command {
        let pith = self.sandbox.pith(Some(server));
        let mut command = Command::new(&self.program);
        command
            .env_clear()
            .envs(pith.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .env("PITH_LOG", "debug")
            .current_dir(self.sandbox.workspace())
            .args(["--agent", agent, "--approve-all"])
            .args(args);
        command
    }

    fn run(&self, server: &TestServer, agent: &str, args: &[&str]) -> Output {
        let output = self.command(server, agent, args).output().unwrap();
        assert!(
            output.status.success(),
            "acpx {args:?}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn pith_acp() -> String {
    format!(
        "{} acp --model {MODEL} --approval full",
        env!("CARGO_BIN_EXE_pith")
    )
}

/// `pith acp` behind a proxy that hides `session/resume` (tests/acp/no_resume.py).
fn pith_acp_without_resume() -> String {
    let proxy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp/no_resume.py");
    format!("python3 {} {}", proxy.display(), pith_acp())
}

#[test]
#[ignore = "needs acpx (npm; installed by .ci/run into .cache/acpx, named by PITH_TEST_ACPX)"]
fn acpx_runs_a_prompt_reopens_a_persistent_session_and_cancels() {
    let program = std::env::var("PITH_TEST_ACPX")
        .expect("PITH_TEST_ACPX names the acpx executable")
        .into();
    let acpx = Acpx {
        program,
        sandbox: Sandbox::new(),
    };
    let server = TestServer::start(Script::anthropic([
        Turn::text("One-shot answer."),
        Turn::text("First answer."),
        Turn::text("Second answer."),
        Turn::text("Third answer."),
        Turn::text("Fourth answer."),
        Turn::tool_call("bash", json!({"command": "echo $$ > slow.pid; sleep 30"})),
    ]))
    .unwrap();
    let workspace = acpx.sandbox.workspace();

    // A one-shot prompt.
    let once = acpx.run(&server, &pith_acp(), &["exec", "say hi"]);
    assert!(
        stdout(&once).contains("One-shot answer."),
        "{}",
        stdout(&once)
    );
    assert!(stdout(&once).contains("[done] end_turn"));

    // A persistent session; the owner process lives 1 s, so the second prompt starts a
    // new `pith acp` that must reopen it (acpx: session/resume when offered).
    for (name, agent, turns) in [
        ("resumed", pith_acp(), ["First answer.", "Second answer."]),
        (
            "loaded",
            pith_acp_without_resume(),
            ["Third answer.", "Fourth answer."],
        ),
    ] {
        acpx.run(&server, &agent, &["sessions", "new", "--name", name]);
        let first = acpx.run(
            &server,
            &agent,
            &[
                "--ttl",
                "1",
                "prompt",
                "-s",
                name,
                &format!("{name}: first turn"),
            ],
        );
        assert!(stdout(&first).contains(turns[0]), "{}", stdout(&first));
        std::thread::sleep(Duration::from_secs(3));
        let second = acpx.run(
            &server,
            &agent,
            &[
                "--ttl",
                "1",
                "prompt",
                "-s",
                name,
                &format!("{name}: second turn"),
            ],
        );
        assert!(stdout(&second).contains(turns[1]), "{}", stdout(&second));
        // The reopened session carried the first turn to the model.
        let last = server.requests().last().unwrap().body.to_string();
        assert!(last.contains(&format!("{name}: first turn")), "{last}");
        std::thread::sleep(Duration::from_secs(2));
    }
    let log = std::fs::read_to_string(acpx.sandbox.pith_home().join("logs").join("pith.log"))
        .unwrap_or_default();
    assert!(log.contains("Resume("), "no session/resume in the log");
    assert!(log.contains("Load("), "no session/load in the log");

    // A cancel: `acpx cancel` while the prompt's command runs.
    let slow = acpx
        .command(&server, &pith_acp(), &["prompt", "-s", "resumed", "slow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid_file = workspace.join("slow.pid");
    for _ in 0..300 {
        if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = std::fs::read_to_string(&pid_file).expect("the command started");
    acpx.run(&server, &pith_acp(), &["cancel", "-s", "resumed"]);
    let ended = slow.wait_with_output().unwrap();
    assert!(
        stdout(&ended).contains("[done] cancelled"),
        "{}\n{}",
        stdout(&ended),
        String::from_utf8_lossy(&ended.stderr)
    );
    let alive = Command::new("kill")
        .args(["-0", pid.trim()])
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(!alive, "the cancelled command {pid} still runs");
    let sessions = common::transcripts(&acpx.sandbox.pith_home());
    assert_eq!(
        sessions.len(),
        3,
        "one per acpx session, the one-shot's too: {sessions:?}"
    );
}
