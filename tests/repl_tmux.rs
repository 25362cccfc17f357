//! End-to-end tests of the interactive REPL: the real `pith` binary runs inside a tmux
//! pane against the scripted provider server (pith-testkit); keys go in with
//! `send-keys`, the screen comes back with `capture-pane`, and the transcript on disk is
//! checked afterwards. Ignored by default (they need tmux); `.ci/run` installs tmux and
//! runs them with `--ignored`.
//!
//! The scenarios are issue 8's: (a) Esc during a slow automatic compaction cancels only
//! the compactor, (b) without Esc the compaction is applied and persisted as a
//! checkpoint + compaction pair, (c) Ctrl+C stops the turn and the prompt returns,
//! (d) `/compact keep the API changes` streams a summary and the next request starts
//! from it. Two more cover `/compact`'s own contract: input typed meanwhile is queued and
//! runs afterwards, and Esc cancels it with the history unchanged. One covers the bash
//! sandbox: a command it denied runs once without it when the user allows (issue 19). One
//! covers the project's trust questions: each names what it would allow, and only a yes
//! is recorded.
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

/// How long any one screen condition may take to appear (generous: CI machines are slow).
const WAIT: Duration = Duration::from_secs(60);
/// Context window given to pith: small, so the scripted usage crosses the threshold.
const WINDOW: u64 = 20_000;

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success())
}

/// A tmux server of its own (socket per test) running `pith` in one pane.
struct Pane {
    socket: String,
    root: tempfile::TempDir,
}

impl Pane {
    fn start(name: &str, server: &TestServer, extra_args: &[&str]) -> Pane {
        Self::start_preparing(name, server, extra_args, 0)
    }

    /// [`Pane::start`] with summaries prepared in the background from `prepare` percent
    /// of the threshold (0: off).
    fn start_preparing(name: &str, server: &TestServer, extra_args: &[&str], prepare: u8) -> Pane {
        Self::start_in_project(name, server, extra_args, prepare, |_| {})
    }

    /// [`Pane::start_preparing`] with `setup` writing the project's own files first.
    fn start_in_project(
        name: &str,
        server: &TestServer,
        extra_args: &[&str],
        prepare: u8,
        setup: impl FnOnce(&Path),
    ) -> Pane {
        let root = tempfile::tempdir().unwrap();
        let project = root.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(project.join("notes.txt"), "api notes\n").unwrap();
        setup(&project);
        // These scenarios cross the threshold with scripted usage (16,000 input tokens for
        // a request of a few thousand): pith is told to believe every report. What the
        // governor does with reports it does not believe is tests/cli_compaction_stress.rs.
        let config = root.path().join("config").join("pith");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(
            config.join("config.toml"),
            // Most scenarios are about compactions in place: no summary prepared ahead
            // takes a scripted turn (docs/context-pipeline.md, "Summaries prepared ahead").
            format!(
                "[context]\nusage_ratio_min = 0.0\nusage_ratio_max = 1e12\nprepare_summary_percent = {prepare}\n"
            ),
        )
        .unwrap();
        let socket = format!("pith-e2e-{}-{name}", std::process::id());
        let mut command = format!(
            "cd {} && env PITH_HOME={} XDG_CONFIG_HOME={} HOME={} ANTHROPIC_BASE_URL={} \
             ANTHROPIC_API_KEY=dummy-key TERM=xterm-256color {} --model anthropic/claude-sonnet-4-5 \
             --context-window {WINDOW}",
            shell_quote(&project),
            shell_quote(&root.path().join("home")),
            shell_quote(&root.path().join("config")),
            shell_quote(root.path()),
            server.base_url(),
            shell_quote(Path::new(env!("CARGO_BIN_EXE_pith"))),
        );
        for arg in extra_args {
            command.push(' ');
            command.push_str(arg);
        }
        // Keep the pane after pith exits so a crash stays readable.
        command.push_str("; echo PITH-EXITED $?; sleep 600");
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-s",
                "e2e",
            ])
            .args(["-x", "150", "-y", "50", &command])
            .status()
            .unwrap();
        assert!(status.success(), "tmux could not start the pane");
        Pane { socket, root }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    /// Waits until the screen satisfies `ready`; panics with the screen when it does not.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            if start.elapsed() > WAIT {
                panic!("timed out waiting for {what}; the screen shows:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(&format!("`{text}` on screen"), |s| s.contains(text))
    }

    fn wait_for_prompt(&self) -> String {
        self.wait_for("an empty prompt", at_empty_prompt)
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "e2e"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    fn type_line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "e2e", "-l", text]);
        self.keys(&["Enter"]);
    }

    /// The one session's transcript, as (kind, record) pairs.
    fn transcript(&self) -> Vec<(String, Value)> {
        let sessions = self.root.path().join("home").join("sessions");
        let mut found = Vec::new();
        for project in std::fs::read_dir(&sessions).unwrap() {
            for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
                found.push(session.unwrap().path().join("transcript.jsonl"));
            }
        }
        assert_eq!(found.len(), 1, "expected one session, found {found:?}");
        std::fs::read_to_string(&found[0])
            .unwrap()
            .lines()
            .map(|line| {
                let record: Value = serde_json::from_str(line).unwrap();
                (record["kind"].as_str().unwrap().to_owned(), record)
            })
            .collect()
    }

    fn exit(&self) {
        self.wait_for_prompt();
        self.type_line("/exit");
        self.wait_for_text("PITH-EXITED 0");
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// The last non-blank line of the screen is an empty prompt.
fn at_empty_prompt(screen: &str) -> bool {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .is_some_and(|line| line.trim_end() == "›")
}

/// The last non-blank line of the screen, without trailing blanks.
fn last_line(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .map_or("", str::trim_end)
}

fn shell_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', "'\\''"))
}

fn kinds(transcript: &[(String, Value)]) -> Vec<&str> {
    transcript.iter().map(|(kind, _)| kind.as_str()).collect()
}

/// A first answer that calls a tool and reports usage above the automatic threshold, so
/// the loop compacts before its next request.
fn turn_over_threshold() -> Turn {
    Turn::text("Let me look at the notes.")
        .with_tool_call("read", json!({"path": "notes.txt"}))
        .with_usage(16_000, 20)
}

fn long_summary() -> String {
    let mut summary = String::from("## Goal\nPRIVATE-SUMMARY ");
    for i in 0..60 {
        summary.push_str(&format!("detail {i} "));
    }
    summary
}

/// Fails (never passes silently) when tmux is missing: these tests are ignored by
/// default and `.ci/run` installs tmux before running them.
macro_rules! require_tmux {
    () => {
        assert!(
            tmux_available(),
            "tmux is not installed: apt-get install tmux (.ci/run does)"
        );
    };
}

#[test]
#[ignore = "needs tmux"]
fn esc_during_a_slow_automatic_compaction_cancels_only_the_compactor() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        turn_over_threshold(),
        Turn::text(long_summary()).with_chunk_delay_ms(400),
        Turn::text("PARENT-ANSWER-COMPLETE after reading the notes."),
    ]))
    .unwrap();
    let pane = Pane::start("esc", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("summarise the notes");
    pane.wait_for_text("Compacting...");
    pane.keys(&["Escape"]);
    let screen = pane.wait_for_text("PARENT-ANSWER-COMPLETE");
    pane.wait_for("the loader to go away", |s| !s.contains("Compacting..."));
    assert!(
        screen.contains("Compaction cancelled"),
        "the cancellation must be announced:\n{screen}"
    );
    assert!(
        !screen.contains("PRIVATE-SUMMARY"),
        "the private summary must never be rendered:\n{screen}"
    );
    pane.wait_for_prompt();
    pane.exit();

    let transcript = pane.transcript();
    assert!(
        !kinds(&transcript).contains(&"compaction_applied"),
        "a cancelled compaction must not be persisted: {:?}",
        kinds(&transcript)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "turn, compaction, continued turn");
    let last = requests[2].body["messages"].as_array().unwrap();
    assert!(
        last.len() >= 3,
        "the parent request must continue with the full history: {last:?}"
    );
}

#[test]
#[ignore = "needs tmux"]
fn esc_while_a_summary_is_prepared_in_the_background_cancels_only_it() {
    require_tmux!();
    // The first answer leaves the context between the mark (75% of the threshold) and the
    // threshold: a summary is prepared (slowly) while the next answer streams (slowly).
    let answer = format!(
        "{}PARENT-ANSWER-COMPLETE",
        "The notes say the API is stable. ".repeat(12)
    );
    let server = TestServer::start(
        Script::anthropic([
            Turn::text("Let me look at the notes.")
                .with_tool_call("read", json!({"path": "notes.txt"}))
                .with_usage(12_000, 20),
            Turn::text(answer).with_chunk_delay_ms(150),
        ])
        .responding(
            "This is a context compaction request",
            Turn::text(long_summary()).with_chunk_delay_ms(400),
        ),
    )
    .unwrap();
    let pane = Pane::start_preparing("prepare", &server, &[], 75);
    pane.wait_for_prompt();
    pane.type_line("summarise the notes");
    pane.wait_for_text("preparing a summary");
    pane.keys(&["Escape"]);
    let screen = pane.wait_for("the loader to go back to Working", |s| {
        !s.contains("preparing a summary")
    });
    assert!(
        !screen.contains("Interrupted"),
        "Esc must leave the turn running:\n{screen}"
    );
    let screen = pane.wait_for_text("PARENT-ANSWER-COMPLETE");
    assert!(
        !screen.contains("PRIVATE-SUMMARY"),
        "the private summary must never be rendered:\n{screen}"
    );
    pane.wait_for_prompt();
    pane.exit();
    let transcript = pane.transcript();
    assert!(
        !kinds(&transcript).contains(&"compaction_applied"),
        "a cancelled summary must not be persisted: {:?}",
        kinds(&transcript)
    );
    let requests = server.requests();
    assert!(
        requests.iter().any(|r| r
            .body
            .to_string()
            .contains("This is a context compaction request")),
        "a summary was being prepared"
    );
}

#[test]
#[ignore = "needs tmux"]
fn an_automatic_compaction_is_announced_and_persisted_with_its_checkpoint() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        turn_over_threshold(),
        Turn::text(long_summary()).with_chunk_delay_ms(20),
        Turn::text("PARENT-ANSWER-COMPLETE after compaction."),
    ]))
    .unwrap();
    let pane = Pane::start("auto", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("summarise the notes");
    let screen = pane.wait_for_text("PARENT-ANSWER-COMPLETE");
    assert!(
        screen.contains("Context compacted automatically"),
        "the applied compaction must be announced:\n{screen}"
    );
    assert!(
        screen.contains("Let me look at the notes."),
        "pre-compaction output stays visible:\n{screen}"
    );
    assert!(
        !screen.contains("PRIVATE-SUMMARY"),
        "the private summary must never be rendered:\n{screen}"
    );
    pane.wait_for_prompt();
    pane.exit();

    let transcript = pane.transcript();
    let kinds = kinds(&transcript);
    let at = kinds
        .iter()
        .position(|k| *k == "compaction_applied")
        .unwrap_or_else(|| panic!("no compaction_applied in {kinds:?}"));
    assert_eq!(
        kinds[at - 1],
        "assistant_turn",
        "the checkpoint must come right before the compaction: {kinds:?}"
    );
    assert_eq!(transcript[at].1["trigger"], "auto");
    assert_eq!(
        transcript[at].1["seq"].as_u64().unwrap(),
        transcript[at - 1].1["seq"].as_u64().unwrap() + 1
    );
    assert_eq!(kinds.last(), Some(&"assistant_turn"));
}

#[test]
#[ignore = "needs tmux"]
fn ctrl_c_stops_the_turn_and_the_prompt_returns() {
    require_tmux!();
    let slow: String = (0..200).map(|i| format!("word{i} ")).collect();
    let server = TestServer::start(Script::anthropic([
        Turn::text(format!("STREAM-START {slow}")).with_chunk_delay_ms(300),
        Turn::text("SECOND-ANSWER"),
    ]))
    .unwrap();
    let pane = Pane::start("ctrlc", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("write a long story");
    pane.wait_for_text("STREAM-START");
    pane.keys(&["C-c"]);
    let screen = pane.wait_for_text("Turn stopped");
    assert!(
        !screen.contains("PITH-EXITED"),
        "Ctrl+C must not end pith:\n{screen}"
    );
    pane.wait_for_prompt();
    pane.type_line("and now?");
    pane.wait_for_text("SECOND-ANSWER");
    pane.exit();

    let transcript = pane.transcript();
    let interrupted = transcript
        .iter()
        .find(|(kind, _)| kind == "assistant_turn")
        .map(|(_, record)| record["interrupted"].clone());
    assert_eq!(
        interrupted,
        Some(Value::Bool(true)),
        "the stopped turn is recorded as interrupted"
    );
}

#[test]
#[ignore = "needs tmux"]
fn manual_compact_streams_the_summary_and_the_next_request_starts_from_it() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        Turn::text("I changed the API of the parser."),
        Turn::text("## Goal\nMANUAL-SUMMARY: the parser API changed.").with_chunk_delay_ms(30),
        Turn::text("NEXT-ANSWER"),
    ]))
    .unwrap();
    let pane = Pane::start("manual", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("change the parser API");
    pane.wait_for_text("I changed the API");
    pane.wait_for_prompt();
    pane.type_line("/compact keep the API changes");
    let screen = pane.wait_for_text("Context compacted (");
    assert!(
        screen.contains("MANUAL-SUMMARY"),
        "the manual summary streams visibly:\n{screen}"
    );
    pane.wait_for_prompt();
    pane.type_line("what next?");
    pane.wait_for_text("NEXT-ANSWER");
    pane.exit();

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let compaction_request = requests[1].body["messages"].to_string();
    assert!(
        compaction_request.contains("keep the API changes"),
        "the focus text must be in the compaction request"
    );
    // Anthropic merges consecutive user messages: the summary and the new question
    // arrive as one user message, and nothing of the compacted history remains.
    let next = requests[2].body["messages"].to_string();
    let summary_at = next
        .find("MANUAL-SUMMARY")
        .expect("the next request starts from the summary");
    let question_at = next.find("what next?").expect("the new question is sent");
    assert!(
        summary_at < question_at,
        "summary first, then the question: {next}"
    );
    assert!(
        !next.contains("I changed the API of the parser."),
        "the compacted history must not be sent again: {next}"
    );

    let transcript = pane.transcript();
    let compactions: Vec<&Value> = transcript
        .iter()
        .filter(|(kind, _)| kind == "compaction_applied")
        .map(|(_, record)| record)
        .collect();
    assert_eq!(compactions.len(), 1, "exactly one compaction_applied");
    assert_eq!(compactions[0]["trigger"], "manual");
}

#[test]
#[ignore = "needs tmux"]
fn input_typed_during_compact_is_queued_and_runs_afterwards() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        Turn::text("FIRST-ANSWER about the lexer."),
        Turn::text(format!("## Goal\nQUEUE-SUMMARY {}", "more ".repeat(100)))
            .with_chunk_delay_ms(200),
        Turn::text("QUEUED-ANSWER"),
    ]))
    .unwrap();
    let pane = Pane::start("queue", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("look at the lexer");
    pane.wait_for_text("FIRST-ANSWER");
    pane.wait_for_prompt();
    pane.type_line("/compact");
    pane.wait_for_text("Compacting...");
    pane.type_line("QUEUED-QUESTION");
    pane.wait_for_text("1 queued");
    pane.wait_for_text("Context compacted (");
    pane.wait_for_text("QUEUED-ANSWER");
    pane.exit();

    let requests = server.requests();
    assert_eq!(requests.len(), 3, "turn, /compact, the queued question");
    let queued = requests[2].body["messages"].to_string();
    assert!(
        queued.contains("QUEUE-SUMMARY") && queued.contains("QUEUED-QUESTION"),
        "the queued question runs after the compaction, from the summary: {queued}"
    );
}

#[test]
#[ignore = "needs tmux"]
fn esc_cancels_a_running_compact_and_leaves_the_history_unchanged() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        Turn::text("FIRST-ANSWER about the lexer."),
        Turn::text(format!("## Goal\nCANCELLED-SUMMARY {}", "more ".repeat(80)))
            .with_chunk_delay_ms(300),
        Turn::text("AFTER-CANCEL"),
    ]))
    .unwrap();
    let pane = Pane::start("compactesc", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("look at the lexer");
    pane.wait_for_text("FIRST-ANSWER");
    pane.wait_for_prompt();
    pane.type_line("/compact");
    pane.wait_for_text("CANCELLED-SUMMARY");
    pane.keys(&["Escape"]);
    pane.wait_for_text("Compaction cancelled; the history is unchanged");
    pane.wait_for_prompt();
    pane.type_line("again");
    pane.wait_for_text("AFTER-CANCEL");
    pane.exit();

    let next = server.requests()[2].body["messages"].to_string();
    assert!(
        next.contains("FIRST-ANSWER") && !next.contains("CANCELLED-SUMMARY"),
        "a cancelled /compact must leave the history as it was: {next}"
    );
    let transcript = pane.transcript();
    assert!(!kinds(&transcript).contains(&"compaction_applied"));
}

#[test]
#[ignore = "needs tmux"]
fn a_command_the_sandbox_denied_runs_once_without_it_when_the_user_allows() {
    require_tmux!();
    // `/tmp` itself is not writable in the sandbox (docs/sandbox.md).
    let marker = format!("/tmp/pith-escalation-{}", std::process::id());
    let _ = std::fs::remove_file(&marker);
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("bash", json!({ "command": format!("touch {marker}") })),
        Turn::text("ESCALATION-DONE"),
    ]))
    .unwrap();
    let pane = Pane::start("escalate", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("create the marker");
    // The ask mode asks before the command runs at all.
    pane.wait_for_text("[y] yes");
    pane.keys(&["y"]);
    // The sandbox denied it; the REPL offers to run it once without the sandbox.
    let screen = pane.wait_for_text("run once without the sandbox");
    assert!(
        !Path::new(&marker).exists(),
        "the sandboxed run could not create it:\n{screen}"
    );
    pane.keys(&["y"]);
    pane.wait_for_text("ESCALATION-DONE");
    pane.exit();
    assert!(
        Path::new(&marker).exists(),
        "the allowed run without the sandbox created it"
    );
    let _ = std::fs::remove_file(&marker);
    // The model was told what happened: the denial, then the unsandboxed run.
    let requests = server.requests();
    let result = requests[1].body["messages"].to_string();
    assert!(result.contains("sandbox"), "{result}");
}

#[test]
#[ignore = "needs tmux"]
fn a_running_subagent_is_one_live_card_and_ctrl_c_stops_it_with_the_turn() {
    require_tmux!();
    let slow: String = (0..200).map(|i| format!("word{i} ")).collect();
    let server = TestServer::start(Script::anthropic([
        Turn::default().with_tool_call(
            "task",
            json!({"description": "find the notes", "prompt": "What do the notes say?"}),
        ),
        Turn::default()
            .with_tool_call("grep", json!({"pattern": "api"}))
            .with_usage(5_000, 100),
        Turn::text(format!("CHILD-STREAM {slow}")).with_chunk_delay_ms(300),
        Turn::text("SECOND-ANSWER"),
    ]))
    .unwrap();
    let pane = Pane::start("subagent", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("what do the notes say?");
    pane.wait_for_text("[explore] subagent explore started: find the notes");
    let screen = pane.wait_for_text("◆ explore · thinking · 5,100 tokens");
    assert_eq!(
        screen.matches("◆ explore").count(),
        1,
        "one card per running child:\n{screen}"
    );
    assert!(
        !screen.contains("CHILD-STREAM"),
        "the child's text is not the parent's answer:\n{screen}"
    );
    pane.keys(&["C-c"]);
    let screen = pane.wait_for_text("Turn stopped");
    assert!(!screen.contains("◆ explore"), "the card is gone:\n{screen}");
    pane.wait_for_prompt();
    pane.type_line("and now?");
    pane.wait_for_text("SECOND-ANSWER");
    pane.exit();

    let sessions = pane.root.path().join("home").join("sessions");
    let mut interrupted = 0;
    for project in std::fs::read_dir(&sessions).unwrap() {
        for session in std::fs::read_dir(project.unwrap().path()).unwrap() {
            let text =
                std::fs::read_to_string(session.unwrap().path().join("transcript.jsonl")).unwrap();
            interrupted += text
                .lines()
                .filter(|line| line.contains("\"interrupted\":true"))
                .count();
        }
    }
    assert_eq!(
        interrupted, 2,
        "the parent's turn and the child's are interrupted"
    );
}

#[test]
#[ignore = "needs tmux"]
fn the_doom_loop_guard_asks_at_the_sixth_same_call_and_yes_lets_the_model_go_on() {
    require_tmux!();
    let same = || Turn::text("").with_tool_call("read", json!({"path": "notes.txt"}));
    let server = TestServer::start(Script::anthropic(
        (0..8).map(|_| same()).chain([Turn::text("LOOP-DONE")]),
    ))
    .unwrap();
    let pane = Pane::start("doom", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("read the notes again and again");
    let screen = pane.wait_for_text("the model wants to go on");
    assert!(
        screen.contains("called read 6 times in a row") && screen.contains("repeated calls"),
        "{screen}"
    );
    pane.keys(&["y"]);
    pane.wait_for_text("LOOP-DONE");
    pane.exit();
    let requests = server.requests();
    assert_eq!(requests.len(), 9, "all eight calls ran, then the answer");
    // The model read the note from the third identical result on.
    let third = requests[3].body["messages"].to_string();
    assert!(
        third.contains("these same arguments 3 times in a row"),
        "{third}"
    );
    assert!(!requests[2].body["messages"]
        .to_string()
        .contains("times in a row"));
}

#[test]
#[ignore = "needs tmux"]
fn the_status_line_says_automatic_compaction_is_paused_and_why() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        turn_over_threshold(),
        Turn::default(), // an empty summary: the compaction fails
        Turn::text("PAUSED-DONE"),
    ]))
    .unwrap();
    let pane = Pane::start("paused", &server, &[]);
    pane.wait_for_prompt();
    pane.type_line("look at the notes");
    pane.wait_for_text("PAUSED-DONE");
    let screen = pane.wait_for_text("auto-compact paused (failed) until");
    assert!(
        screen.contains("automatic compaction paused: the last compaction failed"),
        "the notice came first:\n{screen}"
    );
    pane.exit();
}

#[test]
#[ignore = "needs tmux"]
fn the_status_line_shows_the_spend_against_the_cost_ceiling_and_a_request_past_it_is_refused() {
    require_tmux!();
    // $3/M input: the first answer's 12,000 tokens (under the 20k window's thresholds)
    // cost $0.04 of the $0.06 ceiling; the next request carries them again, which with
    // the smallest useful answer (1,024 tokens) would cross it.
    let server = TestServer::start(Script::anthropic([
        Turn::text("FIRST-ANSWER").with_usage(12_000, 40),
        Turn::text("NEVER-SENT"),
    ]))
    .unwrap();
    let pane = Pane::start("cost", &server, &["--max-cost", "0.06"]);
    let screen = pane.wait_for_prompt();
    assert!(screen.contains("$0.00 / $0.06"), "{screen}");
    pane.type_line("first");
    pane.wait_for_text("FIRST-ANSWER");
    let screen = pane.wait_for_text("$0.04 / $0.06");
    assert!(!screen.contains("NEVER-SENT"), "{screen}");
    pane.wait_for_prompt();
    pane.type_line("second");
    let screen = pane.wait_for_text("cost ceiling");
    assert!(!screen.contains("NEVER-SENT"), "{screen}");
    pane.wait_for_prompt();
    pane.exit();
    assert_eq!(
        server.request_count(),
        1,
        "the request past the ceiling was not sent"
    );
}

/// Issue 32: Esc Esc lists the turns, `/rewind 1 both` names the file edited by hand
/// since pith last saw it and asks, yes puts the files back byte for byte, and the next
/// request holds nothing of turn 2.
#[test]
#[ignore = "needs tmux"]
fn esc_esc_opens_rewind_which_warns_about_a_hand_edit_and_puts_files_and_conversation_back() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Editing.")
            .with_tool_call(
                "edit",
                json!({"path": "notes.txt", "old_string": "api notes", "new_string": "API NOTES v1"}),
            )
            .with_tool_call("write", json!({"path": "new/fresh.txt", "content": "fresh\n"})),
        Turn::text("FIRST-DONE"),
        Turn::text("Again.").with_tool_call(
            "edit",
            json!({"path": "notes.txt", "old_string": "API NOTES v1", "new_string": "API NOTES v2"}),
        ),
        Turn::text("SECOND-DONE"),
        Turn::text("AFTER-REWIND-DONE"),
    ]))
    .unwrap();
    let pane = Pane::start("rewind", &server, &["--approval", "full"]);
    let project = pane.root.path().join("project");
    let original = std::fs::read(project.join("notes.txt")).unwrap();
    pane.wait_for_prompt();
    // Esc Esc on a line with text clears it (and opens nothing).
    pane.tmux(&["send-keys", "-t", "e2e", "-l", "a draft"]);
    pane.wait_for("the draft", |s| last_line(s) == "› a draft");
    pane.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(150));
    pane.keys(&["Escape"]);
    pane.wait_for_prompt();
    pane.type_line("first change");
    pane.wait_for_text("FIRST-DONE");
    pane.wait_for_prompt();
    pane.type_line("second change SECOND-PROMPT");
    pane.wait_for_text("SECOND-DONE");
    pane.wait_for_prompt();
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "API NOTES v2\n"
    );
    // The user edits the file by hand, outside pith.
    std::fs::write(project.join("notes.txt"), "edited by hand\n").unwrap();

    // Esc Esc at the empty prompt lists the turns, with the files each changed, and
    // leaves `/rewind ` in the input line.
    pane.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(150));
    pane.keys(&["Escape"]);
    let screen = pane.wait_for_text("Turns of this session:");
    assert!(
        screen.contains("first change  [new/, new/fresh.txt, notes.txt]"),
        "{screen}"
    );
    assert!(
        screen.contains("second change SECOND-PROMPT  [notes.txt]"),
        "{screen}"
    );
    assert_eq!(screen.matches("Turns of this session:").count(), 1);
    assert!(
        screen.contains("› /rewind\n"),
        "Esc Esc shows as /rewind: {screen}"
    );
    pane.wait_for("`/rewind ` in the input line", |s| {
        last_line(s) == "› /rewind"
    });
    pane.type_line("1 both");

    // The plan, then the warning naming the hand-edited file, and a question.
    let screen = pane.wait_for_text("Overwrite them and rewind? [y/N]");
    assert!(screen.contains("restore notes.txt"), "{screen}");
    assert!(screen.contains("restore new/fresh.txt"), "{screen}");
    assert!(
        screen.contains("changed outside pith since: notes.txt"),
        "the plan names the hand-edited file: {screen}"
    );
    assert!(
        screen.contains("1 file(s) above changed outside pith"),
        "the warning counts it: {screen}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "edited by hand\n",
        "nothing is written before the answer"
    );
    // No keeps everything as it is.
    pane.type_line("n");
    pane.wait_for_text("Rewind cancelled: nothing was written.");
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "edited by hand\n"
    );
    assert!(project.join("new/fresh.txt").exists());
    // Asked again, yes rewinds.
    pane.type_line("/rewind 1 both");
    pane.wait_for("the question again", |s| {
        let mut lines = s.lines().rev().filter(|line| !line.trim().is_empty());
        lines.next().map(str::trim_end) == Some("›")
            && lines.next().map(str::trim_end) == Some("Overwrite them and rewind? [y/N]")
    });
    pane.type_line("y");
    pane.wait_for_text("Rewound to before turn 1");

    // The files are back to their bytes before turn 1.
    assert_eq!(std::fs::read(project.join("notes.txt")).unwrap(), original);
    assert!(!project.join("new/fresh.txt").exists());
    // Turn 1's message is back in the input line: Enter sends it again.
    pane.wait_for("turn 1's text in the input line", |s| {
        last_line(s) == "› first change"
    });
    pane.keys(&["Enter"]);
    pane.wait_for_text("AFTER-REWIND-DONE");
    pane.exit();

    let requests = server.requests();
    let last = requests.last().unwrap().body["messages"].to_string();
    assert!(last.contains("first change"), "{last}");
    for gone in ["SECOND-PROMPT", "FIRST-DONE", "API NOTES v1"] {
        assert!(!last.contains(gone), "`{gone}` is rewound away: {last}");
    }
    let transcript = pane.transcript();
    assert!(kinds(&transcript).contains(&"rewind"));
}

#[test]
#[ignore = "needs tmux"]
fn the_project_s_hooks_and_mcp_servers_are_asked_about_and_only_a_yes_is_recorded() {
    require_tmux!();
    let server = TestServer::start(Script::anthropic([Turn::text("unused")])).unwrap();
    let pane = Pane::start_in_project("trust", &server, &[], 0, |project| {
        std::fs::create_dir_all(project.join(".pith")).unwrap();
        std::fs::write(
            project.join(".pith").join("config.toml"),
            "[[hooks.PreToolUse]]\nmatcher = \"bash\"\ncommand = \"echo GUARD-HOOK\"\n",
        )
        .unwrap();
        std::fs::write(
            project.join(".mcp.json"),
            r#"{"mcpServers": {"docs": {"command": "docs-server-binary", "args": ["--stdio"]}}}"#,
        )
        .unwrap();
    });
    let screen = pane.wait_for_text("Trust these hooks and let them run? [y/N]");
    assert!(
        screen.contains("This project's .pith/config.toml in")
            && screen.contains("would run these hooks:")
            && screen.contains("PreToolUse [bash]: echo GUARD-HOOK"),
        "the question names the file and each hook:\n{screen}"
    );
    pane.type_line("y");
    let screen = pane.wait_for_text("Trust this .mcp.json and start them? [y/N]");
    assert!(
        screen.contains("would start these MCP servers:")
            && screen.contains("docs: docs-server-binary --stdio"),
        "the question names each server:\n{screen}"
    );
    pane.type_line("n");
    pane.exit();
    let trust: Value = serde_json::from_str(
        &std::fs::read_to_string(pane.root.path().join("home").join("trust.json")).unwrap(),
    )
    .unwrap();
    let kinds: Vec<&str> = trust["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["hooks"], "only the answer yes is recorded: {trust}");
}
