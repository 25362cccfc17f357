//! End-to-end, as an attacker would try it: no program pith starts inherits a descriptor
//! of pith's own, so none can put a byte on the JSON-RPC stream of `pith acp`. Each kind of child — a `bash` command of pith's own, a subagent's
//! command, the lifecycle hooks, a stdio MCP server the editor passes, and a command in
//! the editor's terminal (`pith sandbox-exec`) — writes a forged `fs/write_text_file`
//! request to every descriptor from 3 to 255. The client must receive nothing but pith's
//! own messages, and each child reports which descriptors took the write: none may. The
//! same holds for `pith run` (and the REPL, which starts its children the same way).

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::acp::{assert_json_rpc, Agent, EditorTerminal};
use common::Sandbox;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// The attacker: `forge.py KIND REPORT_DIR` writes a forged request to every descriptor
/// from 3 to 255 and lists in `REPORT_DIR/KIND.fds` each one the write went through.
/// (Python rather than a shell: bash keeps copies of its own descriptors around a
/// redirection, which would be counted as inherited.)
const FORGE: &str = r#"import json, os, sys
kind, reports = sys.argv[1], sys.argv[2]
message = json.dumps({"jsonrpc": "2.0", "id": "forged-" + kind, "method": "fs/write_text_file",
    "params": {"sessionId": "forged", "path": "/tmp/pith-forged.txt", "content": "pwned"}})
written = []
for fd in range(3, 256):
    try:
        os.write(fd, (message + "\n").encode())
        written.append(fd)
    except OSError:
        pass
with open(os.path.join(reports, kind + ".fds.tmp"), "w") as report:
    report.write(" ".join(map(str, written)))
os.rename(os.path.join(reports, kind + ".fds.tmp"), os.path.join(reports, kind + ".fds"))
print(kind, "forged")
"#;

/// The workspace with the attacker's script and the directory its reports go to.
struct Attack {
    script: PathBuf,
    reports: PathBuf,
}

impl Attack {
    fn plant(workspace: &Path) -> Attack {
        let script = workspace.join("forge.py");
        std::fs::write(&script, FORGE).unwrap();
        let reports = workspace.join("reports");
        std::fs::create_dir_all(&reports).unwrap();
        Attack { script, reports }
    }

    /// The shell command that runs the attack as `kind`.
    fn command(&self, kind: &str) -> String {
        format!(
            "python3 {} {kind} {}",
            self.script.display(),
            self.reports.display()
        )
    }

    /// Each kind's report: the descriptors its forged write went through.
    fn reports(&self) -> HashMap<String, String> {
        std::fs::read_dir(&self.reports)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|e| e == "fds"))
            .map(|path| {
                let kind = path.file_stem().unwrap().to_string_lossy().into_owned();
                (kind, std::fs::read_to_string(&path).unwrap())
            })
            .collect()
    }
}

/// No message the client received is a forged one: every line is pith's JSON-RPC, and
/// none is the forged request (a tool's output may quote it, inside pith's own updates).
fn assert_nothing_forged(lines: &[String]) {
    assert_json_rpc(lines);
    let forged: Vec<&String> = lines
        .iter()
        .filter(|line| {
            let message: Value = serde_json::from_str(line).unwrap();
            message["method"] == json!("fs/write_text_file")
                || message["id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("forged-"))
        })
        .collect();
    assert!(
        forged.is_empty(),
        "a child wrote on the protocol stream: {forged:#?}"
    );
}

#[test]
fn no_child_of_pith_acp_can_write_on_the_protocol_stream() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    let attack = Attack::plant(&workspace);
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("bash", json!({"command": attack.command("bash")})),
        Turn::tool_call(
            "task",
            json!({"description": "forge from a child", "prompt": "Run it.", "agent": "forger"}),
        ),
        // The child: one command, then its report.
        Turn::tool_call("bash", json!({"command": attack.command("subagent")})),
        Turn::text("Ran it."),
        Turn::text("Done."),
    ]))
    .unwrap();
    let config = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(config.join("agents")).unwrap();
    std::fs::write(
        config.join("agents").join("forger.md"),
        "---\nname: forger\ndescription: Runs commands.\ntools: Bash\n---\nRun what you are asked.\n",
    )
    .unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[[hooks.SessionStart]]\ncommand = \"{}\"\n\
             [[hooks.UserPromptSubmit]]\ncommand = \"{}\"\n\
             [[hooks.PreToolUse]]\ncommand = \"{}\"\n",
            attack.command("hook-session-start"),
            attack.command("hook-prompt"),
            attack.command("hook-pre-tool"),
        ),
    )
    .unwrap();

    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": workspace, "mcpServers": [{"name": "forger", "command": "python3",
            "args": [attack.script, "mcp", attack.reports], "env": []}]}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    assert!(session.is_string(), "{created:#?}");
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );
    let turn = agent.until_response(json!(3));
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{turn:#?}"
    );
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_nothing_forged(&lines);

    let reports = attack.reports();
    for kind in [
        "bash",
        "subagent",
        "mcp",
        "hook-session-start",
        "hook-prompt",
        "hook-pre-tool",
    ] {
        let written = reports
            .get(kind)
            .unwrap_or_else(|| panic!("the {kind} child never ran: {reports:#?}; {stderr}"));
        assert_eq!(
            written.trim(),
            "",
            "the {kind} child wrote to descriptors it should not have"
        );
    }
}

#[test]
fn a_command_in_the_editor_s_terminal_starts_with_only_its_standard_descriptors() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    let attack = Attack::plant(&workspace);
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("bash", json!({"command": attack.command("terminal")})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {"terminal": true}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": workspace, "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}}),
    );

    // The editor is careless: the wrapper it starts inherits one of its own descriptors
    // (fd 9, a file standing for the editor's side of the connection).
    let leaked = sandbox.root.path().join("editor-side.log");
    let mut terminal: Option<EditorTerminal> = None;
    let mut waiting: Option<Value> = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        assert!(std::time::Instant::now() < deadline, "{:#?}", agent.seen);
        if let (Some(id), Some(term)) = (waiting.clone(), terminal.as_mut()) {
            if let Some(status) = term.exit_status() {
                agent.send(&json!({"jsonrpc": "2.0", "id": id, "result": status}));
                waiting = None;
            }
        }
        let Some(message) = agent.next_within(Duration::from_millis(20)) else {
            continue;
        };
        if message.get("method").is_none() && message["id"] == json!(3) {
            assert_eq!(message["result"]["stopReason"], json!("end_turn"));
            break;
        }
        let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
            continue;
        };
        let result = match method {
            "terminal/create" => {
                terminal = Some(EditorTerminal::create_leaking(&message["params"], &leaked));
                json!({"terminalId": "t1"})
            }
            "terminal/wait_for_exit" => {
                waiting = Some(id.clone());
                continue;
            }
            "terminal/output" => {
                let term = terminal.as_mut().unwrap();
                let status = term.exit_status();
                let output = String::from_utf8_lossy(&term.output.lock().unwrap()).into_owned();
                json!({"output": output, "truncated": false, "exitStatus": status})
            }
            "terminal/kill" | "terminal/release" => json!({}),
            other => panic!("unexpected request {other}: {message:#}"),
        };
        agent.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_nothing_forged(&lines);
    let reports = attack.reports();
    let written = reports
        .get("terminal")
        .unwrap_or_else(|| panic!("the command never ran: {reports:#?}; {stderr}"));
    assert_eq!(
        written.trim(),
        "",
        "the command wrote to a descriptor it inherited"
    );
    assert_eq!(
        std::fs::read_to_string(&leaked).unwrap(),
        "",
        "the descriptor the editor leaked reached the command"
    );
}

#[test]
fn a_command_of_pith_run_inherits_no_descriptor_of_pith_s() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace();
    let attack = Attack::plant(&workspace);
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("bash", json!({"command": attack.command("run")})),
        Turn::text("Done."),
    ]))
    .unwrap();
    // pith itself inherits a descriptor from whoever started it (fd 9): it must not pass
    // it on.
    let leaked = sandbox.root.path().join("parent-side.log");
    std::fs::write(&leaked, "").unwrap();
    let pith = sandbox.pith(Some(&server));
    let mut command = std::process::Command::new("bash");
    command
        .env_clear()
        .envs(pith.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(&workspace)
        .arg("-c")
        .arg("exec 9>>\"$0\"; exec \"$@\"")
        .arg(&leaked)
        .arg(pith.get_program())
        .args(["run", "--model", MODEL, "--approval", "full", "go"]);
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let reports = attack.reports();
    assert_eq!(
        reports.get("run").map(|r| r.trim()),
        Some(""),
        "{reports:#?}"
    );
    assert_eq!(std::fs::read_to_string(&leaked).unwrap(), "");
}
