//! End-to-end: the real `pith acp` binary against the testkit provider server, driven
//! over JSON-RPC on its stdin/stdout — by hand (always run), and by the official
//! TypeScript ACP SDK (`@agentclientprotocol/sdk`, installed by `.ci/run`).
#![allow(clippy::too_many_lines)] // scenario tests read top to bottom, as the user's session runs
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::acp::{assert_json_rpc, updates, Agent, EditorTerminal};
use common::Sandbox;
use pith_testkit::{Fault, Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5"; // 200k window: auto threshold 171,000
const SUMMARY: &str = "## Goal\nWrite the file.\n## Key Instructions\nNone.";

#[test]
fn acp_stdout_carries_only_json_rpc_even_with_debug_logs_printing_hooks_and_a_printing_command() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Running it.").with_tool_call(
            "bash",
            json!({"command": "echo stray-stdout; echo stray-stderr >&2; cat; echo done"}),
        ),
        Turn::text("Done."),
    ]))
    .unwrap();
    // Hooks that print on both streams.
    let config = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        "[[hooks.SessionStart]]\ncommand = \"echo stray-session-hook; echo stray-hook-stderr >&2\"\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"echo stray-prompt-hook\"\n",
    )
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.env("PITH_LOG", "debug").args([
        "acp",
        "--model",
        MODEL,
        "--approval",
        "full",
        "--sandbox",
        "off",
    ]);
    let mut agent = Agent::start(command);

    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    let initialized = agent.until_response(json!(1));
    let capabilities = &initialized.last().unwrap()["result"]["agentCapabilities"];
    assert_eq!(capabilities["loadSession"], json!(true));
    assert_eq!(
        capabilities["promptCapabilities"]["embeddedContext"],
        json!(true)
    );
    assert_eq!(capabilities["promptCapabilities"]["audio"], json!(false));
    assert!(capabilities["sessionCapabilities"]["list"].is_object());

    // A line that is not JSON gets a parse error; the connection goes on.
    agent.send_raw("{this is not json");
    let error = agent.until_response(Value::Null);
    assert_eq!(error.last().unwrap()["error"]["code"], json!(-32700));

    let cwd = sandbox.workspace();
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    assert!(session.is_string(), "{created:?}");
    assert_eq!(
        created.last().unwrap()["result"]["modes"]["currentModeId"],
        json!("full")
    );

    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run it"}]}}),
    );
    let turn = agent.until_response(json!(3));
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{turn:#?}"
    );
    let updates = updates(&turn);
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == json!("tool_call"))
        .expect("a tool_call");
    assert_eq!(call["kind"], json!("execute"));
    let result = updates
        .iter()
        .find(|u| u["sessionUpdate"] == json!("tool_call_update"))
        .expect("a tool_call_update");
    assert_eq!(result["status"], json!("completed"));
    let shown = result["content"].to_string();
    assert!(
        shown.contains("stray-stdout"),
        "the output is the tool's: {shown}"
    );

    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
    let hook_runs = server
        .requests()
        .iter()
        .filter(|r| r.body.to_string().contains("stray-prompt-hook"))
        .count();
    assert!(
        hook_runs > 0,
        "the prompt hook ran and its output went to the model"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("stray") || l == "done"),
        "a command's output reached the protocol stream: {lines:#?}"
    );
    let log = std::fs::read_to_string(sandbox.pith_home().join("logs").join("pith.log"))
        .expect("PITH_LOG=debug writes the log file");
    assert!(!log.is_empty());
}

#[test]
fn acp_by_hand_asks_permission_loads_the_session_and_records_a_turn_the_editor_left() {
    let sandbox = Sandbox::new();
    let story = "A long answer that streams slowly. ".repeat(60);
    let server = TestServer::start(Script::anthropic([
        Turn::text("Writing.")
            .with_tool_call("write", json!({"path": "b.txt", "content": "bee\n"})),
        Turn::text("Written."),
        Turn::text(story).with_chunk_delay_ms(100),
    ]))
    .unwrap();
    let start = || {
        let mut command = sandbox.pith(Some(&server));
        command.args(["acp", "--model", MODEL]);
        let mut agent = Agent::start(command);
        agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
        agent.until_response(json!(1));
        agent
    };
    let mut agent = start();
    let cwd = sandbox.workspace();

    // Bad requests are errors, and the connection goes on.
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "work", "mcpServers": []}}));
    let relative = agent.until_response(json!(2));
    assert_eq!(relative.last().unwrap()["error"]["code"], json!(-32602));
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "no-such-session", "prompt": []}}),
    );
    let unknown = agent.until_response(json!(3));
    assert_eq!(unknown.last().unwrap()["error"]["code"], json!(-32002));

    agent.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}));
    let created = agent.until_response(json!(4));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    assert_eq!(
        created.last().unwrap()["result"]["modes"]["currentModeId"],
        json!("ask")
    );

    // The write asks; the answer "allow for the session" lets it run.
    let mut asked = Vec::new();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "write b"}]}}),
    );
    let turn = agent.until_response_answering(json!(5), |request| {
        asked.push(request.clone());
        json!({"outcome": {"outcome": "selected", "optionId": "allow-always"}})
    });
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(asked.len(), 1, "{turn:#?}");
    assert_eq!(asked[0]["method"], json!("session/request_permission"));
    assert_eq!(asked[0]["params"]["sessionId"], session);
    assert!(asked[0]["params"]["toolCall"]["content"]
        .to_string()
        .contains("+bee"));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("b.txt")).unwrap(),
        "bee\n"
    );

    // The editor leaves while an answer streams: pith stops the turn, records it and
    // exits.
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "go on"}]}}),
    );
    loop {
        let message = agent.until_next();
        if message["params"]["update"]["sessionUpdate"] == json!("agent_message_chunk") {
            break;
        }
    }
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
    let records = common::records(&sandbox.only_transcript());
    let last = records.last().unwrap();
    assert_eq!(last["kind"], json!("assistant_turn"), "{records:#?}");
    assert_eq!(last["interrupted"], json!(true), "{last:#}");

    // A second process loads the session: the transcript as updates, then the answer.
    let mut agent = start();
    agent.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "session/load",
        "params": {"sessionId": session, "cwd": cwd, "mcpServers": []}}));
    let loaded = agent.until_response(json!(7));
    assert!(
        loaded.last().unwrap().get("result").is_some(),
        "{loaded:#?}"
    );
    let replayed = updates(&loaded);
    let kinds: Vec<&str> = replayed
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds[..5],
        [
            "user_message_chunk",
            "agent_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{replayed:#?}"
    );
    assert_eq!(replayed[0]["content"]["text"], json!("write b"));

    // session/list names it, with its project.
    agent.send(&json!({"jsonrpc": "2.0", "id": 8, "method": "session/list",
        "params": {"cwd": cwd}}));
    let listed = agent.until_response(json!(8));
    // After the load's response: where the loaded context stands, and the commands.
    let after = updates(&listed);
    let usage = after
        .iter()
        .find(|u| u["sessionUpdate"] == json!("usage_update"))
        .expect("a usage_update after the load");
    assert_eq!(usage["size"], json!(200_000));
    assert!(usage["used"].as_u64().unwrap() > 0, "{usage}");
    assert!(after
        .iter()
        .any(|u| u["sessionUpdate"] == json!("available_commands_update")));
    let sessions = listed.last().unwrap()["result"]["sessions"].clone();
    let ours: Vec<&Value> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["sessionId"] == session)
        .collect();
    assert_eq!(ours.len(), 1, "{sessions:#}");
    assert_eq!(ours[0]["cwd"], json!(std::fs::canonicalize(&cwd).unwrap()));
    // The title is the first message's first line.
    assert_eq!(ours[0]["title"], json!("write b"), "{ours:?}");
    let (code, _, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
}

#[test]
fn acp_by_hand_modes_gate_tools_and_slash_commands_run() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        // In read-only mode the write is refused without a question.
        Turn::text("Trying.").with_tool_call("write", json!({"path": "c.txt", "content": "c\n"})),
        Turn::text("Refused, as the mode says."),
        // In full mode it runs without one.
        Turn::text("Again.").with_tool_call("write", json!({"path": "c.txt", "content": "c\n"})),
        Turn::text("Written."),
        // `/compact keep the file name`: the visible summary request.
        Turn::text(SUMMARY),
        // A second `/compact`, streaming slowly, cancelled alone.
        Turn::text(format!("{SUMMARY}\n{}", "More summary. ".repeat(200))).with_chunk_delay_ms(100),
        // After `/model`, the mode is still full: the write runs without a question.
        Turn::text("Once more.")
            .with_tool_call("write", json!({"path": "d.txt", "content": "d\n"})),
        Turn::text("Done on the new model."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1,
            "clientCapabilities": {"session": {"compaction": {}, "notices": {}}}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    let mut id = 10;
    let mut request = |agent: &mut Agent, method: &str, params: Value| {
        id += 1;
        agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        agent.until_response_answering(json!(id), |question| {
            panic!("no question expected in these modes: {question}")
        })
    };
    let prompt =
        |text: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});

    let set = request(
        &mut agent,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "read-only"}),
    );
    assert!(set.last().unwrap().get("result").is_some(), "{set:#?}");
    let refused = request(&mut agent, "session/prompt", prompt("write c"));
    let ends: Vec<&Value> = updates(&refused)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == json!("tool_call_update"))
        .collect();
    assert_eq!(ends[0]["status"], json!("failed"), "{refused:#?}");
    assert!(!sandbox.workspace().join("c.txt").exists());

    request(
        &mut agent,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "full"}),
    );
    let written = request(&mut agent, "session/prompt", prompt("write c again"));
    assert_eq!(
        written.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("c.txt")).unwrap(),
        "c\n"
    );

    // `/compact` streams its summary and shows the figures; `/model` and `/context`
    // answer as the agent, with no model request.
    let compacted = request(
        &mut agent,
        "session/prompt",
        prompt("/compact keep the file name"),
    );
    let shown = updates(&compacted);
    let compaction: Vec<&&Value> = shown
        .iter()
        .filter(|u| u["sessionUpdate"] == json!("compaction_update"))
        .collect();
    assert_eq!(compaction.len(), 2, "{shown:#?}");
    assert_eq!(compaction[0]["status"], json!("in_progress"));
    assert_eq!(compaction[0]["_meta"]["pith"]["trigger"], json!("manual"));
    assert_eq!(compaction[1]["status"], json!("completed"));
    let summary: String = shown
        .iter()
        .filter(|u| u["sessionUpdate"] == json!("compaction_summary_chunk"))
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(summary, SUMMARY);
    let requests = server.request_count();
    let model = request(&mut agent, "session/prompt", prompt("/model"));
    assert!(updates(&model)[0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains(MODEL));
    let context = request(&mut agent, "session/prompt", prompt("/context"));
    assert!(updates(&context)[0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("of 200000 tokens"));
    // `/pin` and `/unpin` through the editor's prompt: the session's pins.
    let pinned = request(&mut agent, "session/prompt", prompt("/pin c.txt"));
    assert!(
        updates(&pinned)[0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Pinned c.txt ("),
        "{pinned:#?}"
    );
    let noted = request(&mut agent, "session/prompt", prompt("/pin \"ACP-NOTE\""));
    assert!(updates(&noted)[0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("Pinned note \"ACP-NOTE\""));
    let listed = request(&mut agent, "session/prompt", prompt("/unpin 2"));
    assert!(updates(&listed)[0]["content"]["text"]
        .as_str()
        .unwrap()
        .starts_with("Unpinned note"));
    let context = request(&mut agent, "session/prompt", prompt("/context"));
    let context = updates(&context)[0]["content"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(context.contains("\n1. c.txt — "), "{context}");
    assert!(!context.contains("ACP-NOTE"), "{context}");
    assert_eq!(
        server.request_count(),
        requests,
        "commands send nothing to the model"
    );
    // `_pith/cancel_compaction` stops a running /compact alone: it ends cancelled and
    // the prompt ends normally.
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 90, "method": "session/prompt",
        "params": prompt("/compact")}),
    );
    loop {
        let message = agent.until_next();
        if message["params"]["update"]["sessionUpdate"] == json!("compaction_summary_chunk") {
            break;
        }
    }
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 91, "method": "_pith/cancel_compaction",
        "params": {"sessionId": session}}),
    );
    let mut seen = Vec::new();
    let (mut cancelled, mut ended) = (None, None);
    while cancelled.is_none() || ended.is_none() {
        let message = agent.until_next();
        if message["id"] == json!(91) {
            cancelled = Some(message["result"]["cancelled"].clone());
        } else if message["id"] == json!(90) {
            ended = Some(message["result"]["stopReason"].clone());
        } else {
            seen.push(message["params"]["update"].clone());
        }
    }
    assert_eq!(cancelled, Some(json!(true)));
    assert_eq!(ended, Some(json!("end_turn")));
    let status: Vec<&Value> = seen
        .iter()
        .filter(|u| u["sessionUpdate"] == json!("compaction_update"))
        .map(|u| &u["status"])
        .collect();
    assert_eq!(status, [&json!("cancelled")], "{seen:#?}");

    let switched = request(
        &mut agent,
        "session/prompt",
        prompt("/model anthropic/claude-haiku-4-5"),
    );
    let answer = updates(&switched)
        .into_iter()
        .find(|u| u["sessionUpdate"] == json!("agent_message_chunk"))
        .unwrap_or_else(|| panic!("{switched:#?}"));
    assert!(
        answer["content"]["text"]
            .as_str()
            .unwrap()
            .contains("anthropic/claude-haiku-4-5"),
        "{switched:#?}"
    );
    // The model picker follows.
    let options = updates(&switched)
        .into_iter()
        .find(|u| u["sessionUpdate"] == json!("config_option_update"))
        .unwrap_or_else(|| panic!("{switched:#?}"));
    assert_eq!(
        options["configOptions"][0]["currentValue"],
        json!("anthropic/claude-haiku-4-5")
    );
    let after = request(&mut agent, "session/prompt", prompt("write d"));
    assert_eq!(
        after.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("d.txt")).unwrap(),
        "d\n",
        "the mode chosen in the editor outlives /model"
    );
    let last = server.requests().last().unwrap().body["model"].clone();
    assert_eq!(last, json!("claude-haiku-4-5"));
    // Loading the session this connection already has open is refused in words.
    let again = request(
        &mut agent,
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.workspace(), "mcpServers": []}),
    );
    let error = &again.last().unwrap()["error"];
    assert_eq!(error["code"], json!(-32600), "{again:#?}");
    assert!(error["data"].to_string().contains("already open"));
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
}

#[test]
fn acp_by_hand_a_provider_refusal_is_a_json_rpc_error_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::fault(Fault::ContextLength),
        Turn::fault(Fault::ContextLength),
        Turn::text("Fine now."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    let prompt = |id: u64, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    };
    agent.send(&prompt(3, "hello"));
    let failed = agent.until_response(json!(3));
    let error = &failed.last().unwrap()["error"];
    assert_eq!(error["code"], json!(-32603), "{failed:#?}");
    assert!(
        error["data"]
            .as_str()
            .unwrap_or_default()
            .contains("context"),
        "the reason is in the error: {error}"
    );
    // The refusal, and the one more try after recalibrating.
    assert_eq!(server.request_count(), 2);
    agent.send(&prompt(4, "again"));
    let answer = agent.until_response(json!(4));
    assert_eq!(
        answer.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{answer:#?}"
    );
    assert_eq!(server.request_count(), 3);
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
}

#[test]
fn acp_by_hand_a_subagent_is_a_child_session_or_nested_calls() {
    for subagents in [true, false] {
        let sandbox = Sandbox::new();
        std::fs::write(sandbox.workspace().join("notes.txt"), "n\n").unwrap();
        let server = TestServer::start(Script::anthropic([
            Turn::text("Delegating.").with_tool_call(
                "task",
                json!({"description": "read the notes", "prompt": "Read notes.txt."}),
            ),
            // The child (the built-in `explore` agent): one read, then its report.
            Turn::text("").with_tool_call("read", json!({"path": "notes.txt"})),
            Turn::text("The notes say n."),
            Turn::text("Done."),
        ]))
        .unwrap();
        let mut command = sandbox.pith(Some(&server));
        command.args(["acp", "--model", MODEL, "--approval", "full"]);
        let mut agent = Agent::start(command);
        let capabilities = if subagents {
            json!({"subagents": {}})
        } else {
            json!({})
        };
        agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": 1, "clientCapabilities": capabilities}}));
        agent.until_response(json!(1));
        agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
            "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
        let created = agent.until_response(json!(2));
        let session = created.last().unwrap()["result"]["sessionId"].clone();
        agent.send(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": "delegate"}]}}),
        );
        let turn = agent.until_response(json!(3));
        assert_eq!(
            turn.last().unwrap()["result"]["stopReason"],
            json!("end_turn"),
            "{turn:#?}"
        );
        let notifications: Vec<&Value> = turn
            .iter()
            .filter(|m| m["method"] == json!("session/update"))
            .collect();
        let reads: Vec<&&Value> = notifications
            .iter()
            .filter(|n| {
                n["params"]["update"]["sessionUpdate"] == json!("tool_call")
                    && n["params"]["update"]["kind"] == json!("read")
            })
            .collect();
        assert_eq!(reads.len(), 1, "{notifications:#?}");
        let announced = notifications
            .iter()
            .filter(|n| n["params"]["update"]["sessionUpdate"] == json!("subagent_update"))
            .count();
        if subagents {
            // A child session: announced, its read in its own session, then idle.
            assert_eq!(announced, 2, "{notifications:#?}");
            assert_ne!(reads[0]["params"]["sessionId"], session);
        } else {
            // Nested in the parent's session, titled with the agent.
            assert_eq!(announced, 0);
            assert_eq!(reads[0]["params"]["sessionId"], session);
            assert_eq!(
                reads[0]["params"]["update"]["title"],
                json!("[explore] Read notes.txt")
            );
        }
        let (code, lines, stderr) = agent.finish();
        assert_eq!(code, Some(0), "stderr: {stderr}");
        assert_json_rpc(&lines);
    }
}

/// The last line of every summary request pith sends (pith-core's prompts).
const SUMMARY_REQUEST_MARKER: &str = "Write the summary now.";

/// The script of the SDK-driven session (tests/acp/client.mjs): the conversation's
/// requests in order, and the summary requests answered by marker — the first at once,
/// the second slowly (it is cancelled; whether its request reached the server before the
/// cancel does not shift the turns after it).
fn whole_session_script() -> Script {
    let story = "Once upon a time there was a context window. ".repeat(40);
    Script::anthropic([
        // "tools": a write (allowed once), a command (rejected), an automatic compaction.
        Turn::text("Writing the file.")
            .with_tool_call("write", json!({"path": "a.txt", "content": "hello\n"})),
        Turn::text("Now a command.")
            .with_tool_call("bash", json!({"command": "echo hi"}))
            .with_usage(180_000, 40),
        Turn::text("Done."),
        // "cancel-compaction": the summary streams slowly and is cancelled alone.
        Turn::text("Reading.")
            .with_tool_call("read", json!({"path": "a.txt"}))
            .with_usage(180_000, 40),
        Turn::text("After the cancelled compaction."),
        // "cancel-turn": the answer streams slowly and the turn is cancelled.
        Turn::text(story.clone()).with_chunk_delay_ms(100),
        // "stable": the same, cancelled by `$/cancel_request`.
        Turn::text(story.clone()).with_chunk_delay_ms(100),
    ])
    .responding_times(SUMMARY_REQUEST_MARKER, Turn::text(SUMMARY), 1)
    .responding(
        SUMMARY_REQUEST_MARKER,
        Turn::text(format!("{SUMMARY}\n{story}")).with_chunk_delay_ms(100),
    )
}

#[test]
#[ignore = "needs node and @agentclientprotocol/sdk (installed by .ci/run)"]
fn a_real_acp_client_drives_a_whole_session() {
    let sdk = std::env::var("PITH_TEST_ACP_SDK")
        .expect("PITH_TEST_ACP_SDK names the @agentclientprotocol/sdk package directory");
    let sandbox = Sandbox::new();
    sandbox.believe_scripted_usage();
    let server = TestServer::start(whole_session_script()).unwrap();
    let pith = sandbox.pith(Some(&server));
    let mut node = Command::new("node");
    node.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/acp/client.mjs"))
        .env_clear()
        .current_dir(sandbox.workspace());
    for (key, value) in pith.get_envs() {
        if let Some(value) = value {
            node.env(key, value);
        }
    }
    node.env("PITH_LOG", "debug")
        .env("PITH_TEST_ACP_SDK", sdk)
        .env("PITH_BIN", env!("CARGO_BIN_EXE_pith"))
        .env("PITH_ACP_CWD", sandbox.workspace())
        .env("PITH_ACP_MODEL", MODEL);
    let output = node.output().expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("no report ({e}); stderr: {stderr}"));
    let kept = std::env::temp_dir().join("pith-acp-session-report.json");
    std::fs::write(&kept, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    eprintln!("the client's report: {}", kept.display());
    let phase = |name: &str| -> Vec<Value> {
        report["phases"][name]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let updates_of = |entries: &[Value]| -> Vec<Value> {
        entries
            .iter()
            .filter(|e| e["kind"] == json!("update"))
            .map(|e| e["update"].clone())
            .collect()
    };
    let of_kind = |updates: &[Value], kind: &str| -> Vec<Value> {
        updates
            .iter()
            .filter(|u| u["sessionUpdate"] == json!(kind))
            .cloned()
            .collect()
    };
    let result_of = |entries: &[Value], what: &str| -> Value {
        entries
            .iter()
            .find(|e| e["what"] == json!(what))
            .cloned()
            .unwrap_or_else(|| panic!("no `{what}` in {entries:#?}"))
    };

    // Every byte pith wrote to stdout, in both connections, is JSON-RPC.
    let lines: Vec<String> = report["stdout"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_json_rpc(&lines);
    assert_eq!(report["exits"], json!([0, 0, 0]), "stderr: {stderr}");
    // The protocol's own schema (the SDK's) accepts every message pith sent.
    assert_eq!(
        report["schema"]["errors"],
        json!([]),
        "{:#}",
        report["schema"]
    );
    let checked = report["schema"]["checked"].as_u64().unwrap();
    assert!(
        checked as usize + 2 >= lines.len(),
        "{checked} of {} messages checked",
        lines.len()
    );

    let initialize = result_of(&phase("initialize"), "initialize");
    assert_eq!(initialize["kind"], json!("ok"));
    assert_eq!(
        initialize["value"]["agentCapabilities"]["loadSession"],
        json!(true)
    );
    let new = phase("new");
    assert_eq!(result_of(&new, "session/new")["kind"], json!("ok"));
    // Sent right after the response, so it may arrive as the first prompt starts.
    let early = [new.clone(), phase("tools")].concat();
    let commands = of_kind(&updates_of(&early), "available_commands_update");
    assert!(
        commands[0]["availableCommands"]
            .to_string()
            .contains("\"compact\""),
        "{commands:?}"
    );

    // A prompt with tool calls: a write allowed once, a command rejected, then an
    // automatic compaction shown as started then applied, with its token counts.
    let tools = phase("tools");
    assert_eq!(
        result_of(&tools, "prompt")["value"]["stopReason"],
        json!("end_turn")
    );
    let questions: Vec<&Value> = tools
        .iter()
        .filter(|e| e["kind"] == json!("permission"))
        .collect();
    assert_eq!(questions.len(), 2, "{tools:#?}");
    assert_eq!(questions[0]["answer"], json!("allow-once"));
    assert_eq!(questions[1]["answer"], json!("reject"));
    let kinds: Vec<String> = questions[0]["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["allow_once", "allow_always", "reject_once"]);
    let updates = updates_of(&tools);
    let calls = of_kind(&updates, "tool_call");
    assert_eq!(calls.len(), 2, "{calls:#?}");
    assert_eq!(calls[0]["kind"], json!("edit"));
    assert_eq!(calls[0]["content"][0]["type"], json!("diff"));
    assert_eq!(calls[0]["content"][0]["newText"], json!("hello\n"));
    assert!(calls[0]["locations"][0]["path"]
        .as_str()
        .unwrap()
        .ends_with("/a.txt"));
    assert_eq!(calls[1]["kind"], json!("execute"));
    assert_eq!(
        questions[0]["request"]["toolCall"]["toolCallId"], calls[0]["toolCallId"],
        "the question points at the call"
    );
    let ends = of_kind(&updates, "tool_call_update");
    assert_eq!(ends[0]["status"], json!("completed"));
    assert_eq!(ends[1]["status"], json!("failed"));
    assert_eq!(
        std::fs::read_to_string(sandbox.workspace().join("a.txt")).unwrap(),
        "hello\n"
    );
    let compaction = of_kind(&updates, "compaction_update");
    assert_eq!(compaction.len(), 2, "{compaction:#?}");
    assert_eq!(compaction[0]["status"], json!("in_progress"));
    assert_eq!(compaction[1]["status"], json!("completed"));
    let before = compaction[1]["_meta"]["pith"]["tokensBefore"]
        .as_u64()
        .unwrap();
    let after = compaction[1]["_meta"]["pith"]["tokensAfter"]
        .as_u64()
        .unwrap();
    assert!(before >= 171_000 && after < before, "{compaction:#?}");
    assert!(!of_kind(&updates, "usage_update").is_empty());
    let text: String = of_kind(&updates, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(text.contains("Done."), "{text}");
    assert!(
        !text.contains("## Goal"),
        "the private summary is not the answer"
    );

    // Cancelling only the compaction: cancelled, and the turn goes on to its answer.
    let alone = phase("cancel-compaction");
    assert_eq!(
        result_of(&alone, "_pith/cancel_compaction")["value"]["cancelled"],
        json!(true)
    );
    let updates = updates_of(&alone);
    let statuses: Vec<Value> = of_kind(&updates, "compaction_update")
        .iter()
        .map(|u| u["status"].clone())
        .collect();
    assert_eq!(statuses, [json!("in_progress"), json!("cancelled")]);
    assert_eq!(
        result_of(&alone, "prompt")["value"]["stopReason"],
        json!("end_turn")
    );
    let text: String = of_kind(&updates, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap().to_owned())
        .collect();
    assert!(text.contains("After the cancelled compaction."), "{text}");

    // Cancelling the turn.
    let cancelled = phase("cancel-turn");
    assert_eq!(
        result_of(&cancelled, "prompt")["value"]["stopReason"],
        json!("cancelled")
    );

    // Malformed messages get JSON-RPC errors and the connection survives.
    assert_eq!(report["uncorrelated"][0]["error"]["code"], json!(-32700));
    let malformed = phase("malformed");
    assert_eq!(
        result_of(&malformed, "prompt without params")["code"],
        json!(-32602)
    );
    assert_eq!(result_of(&malformed, "unknown mode")["code"], json!(-32602));
    assert_eq!(
        result_of(&malformed, "unknown session")["code"],
        json!(-32002)
    );
    assert_eq!(result_of(&malformed, "set_mode full")["kind"], json!("ok"));

    // The second connection loads the session: the transcript as updates.
    let load = phase("load");
    assert_eq!(result_of(&load, "session/load")["kind"], json!("ok"));
    let replayed = updates_of(&load);
    let users: String = of_kind(&replayed, "user_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        users.contains("write the file, then run a command"),
        "{users}"
    );
    assert!(of_kind(&replayed, "tool_call").len() >= 3);
    let listed = result_of(&load, "session/list");
    assert!(
        listed["value"]["sessions"].to_string().contains(
            report["phases"]["new"][0]["value"]["sessionId"]
                .as_str()
                .unwrap()
        ),
        "{listed:#}"
    );
    let replayed_compaction = of_kind(&replayed, "compaction_update");
    assert_eq!(replayed_compaction[0]["status"], json!("completed"));
    assert_eq!(
        replayed_compaction[0]["_meta"]["pith"]["tokensBefore"],
        json!(before)
    );

    // The 2026 stable methods, by the SDK: resume (nothing replayed), an option, the
    // list, a prompt cancelled by `$/cancel_request`, close, delete.
    let stable = phase("stable");
    let session_id = report["phases"]["new"][0]["value"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(result_of(&stable, "session/resume")["kind"], json!("ok"));
    let options = &result_of(&stable, "session/set_config_option")["value"]["configOptions"];
    let reasoning = options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == json!("reasoning"))
        .unwrap();
    assert_eq!(reasoning["currentValue"], json!("low"));
    assert!(result_of(&stable, "session/list")["value"]["sessions"]
        .to_string()
        .contains(&session_id));
    assert_eq!(
        result_of(&stable, "prompt")["value"]["stopReason"],
        json!("cancelled")
    );
    assert_eq!(result_of(&stable, "session/close")["kind"], json!("ok"));
    assert_eq!(result_of(&stable, "session/delete")["kind"], json!("ok"));
    assert!(
        !result_of(&stable, "session/list after delete")["value"]["sessions"]
            .to_string()
            .contains(&session_id)
    );
    let replayed_on_resume = stable
        .iter()
        .take_while(|e| e["what"] != json!("session/resume"))
        .filter(|e| e["kind"] == json!("update"))
        .filter(|e| e["update"]["sessionUpdate"] == json!("user_message_chunk"))
        .count();
    assert_eq!(replayed_on_resume, 0, "resume replays nothing");
}

#[test]
fn acp_by_hand_an_mcp_server_the_editor_passes_is_started_and_its_tool_runs() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Asking the editor's server.").with_tool_call(
            "mcp__editor__echo",
            json!({"text": "from the editor's server"}),
        ),
        Turn::text("Echoed."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    let initialized = agent.until_response(json!(1));
    let mcp = &initialized.last().unwrap()["result"]["agentCapabilities"]["mcpCapabilities"];
    assert_eq!(mcp["http"], json!(true), "{mcp}");
    assert_eq!(mcp["sse"], json!(false), "{mcp}");

    let fake =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_fake_server.py");
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": [
            {"name": "editor", "command": "python3", "args": [fake], "env": [{"name": "FAKE_MODE", "value": "1"}]},
            {"type": "sse", "name": "legacy", "url": "http://127.0.0.1:9/sse", "headers": []}
        ]}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    assert!(session.is_string(), "{created:#?}");

    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "echo it"}]}}),
    );
    let turn = agent.until_response(json!(3));
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{turn:#?}"
    );
    // The SSE server is refused in words, among the notices after the session opened.
    assert!(
        turn.iter()
            .any(|m| m.to_string().contains("`legacy`") && m.to_string().contains("SSE")),
        "no notice about the SSE server: {turn:#?}"
    );
    let (_, seen, stderr) = agent.finish();
    let all: Vec<Value> = seen
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let updates = updates(&all);
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == json!("tool_call"))
        .unwrap_or_else(|| panic!("no tool_call: {all:#?}\n{stderr}"));
    assert!(
        call["title"].to_string().contains("echo"),
        "the call names the MCP tool: {call}"
    );
    let result = updates
        .iter()
        .find(|u| u["sessionUpdate"] == json!("tool_call_update") && u["status"].is_string())
        .unwrap_or_else(|| panic!("no tool_call_update: {all:#?}"));
    assert_eq!(result["status"], json!("completed"), "{result}");
    assert!(
        result["content"]
            .to_string()
            .contains("from the editor's server"),
        "the echo reaches the editor: {result}"
    );
    // And the model got the server's answer.
    let requests = server.requests();
    let tools: Vec<String> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(tools.contains(&"mcp__editor__echo".to_owned()), "{tools:?}");
    assert!(
        requests[1]
            .body
            .to_string()
            .contains("from the editor's server"),
        "the tool result reaches the model"
    );
}

#[test]
fn acp_by_hand_a_forked_session_starts_with_the_history_and_goes_its_own_way() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("The first answer."),
        Turn::text("An answer in the fork."),
        Turn::text("An answer in the original."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    let initialized = agent.until_response(json!(1));
    let capabilities = &initialized.last().unwrap()["result"]["agentCapabilities"];
    assert!(
        capabilities["sessionCapabilities"]["fork"].is_object(),
        "{capabilities}"
    );
    let cwd = sandbox.workspace();
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}));
    let original = agent.until_response(json!(2)).last().unwrap()["result"]["sessionId"].clone();
    let prompt = |id: u64, session: &Value, text: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": session, "prompt": [{"type": "text", "text": text}]}})
    };
    agent.send(&prompt(3, &original, "the first question"));
    let first = agent.until_response(json!(3));
    assert_eq!(
        first.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );

    // An unknown session cannot be forked, and the connection goes on.
    agent.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "session/fork",
        "params": {"sessionId": "no-such-session", "cwd": cwd}}));
    let unknown = agent.until_response(json!(4));
    assert_eq!(
        unknown.last().unwrap()["error"]["code"],
        json!(-32002),
        "{unknown:#?}"
    );

    agent.send(&json!({"jsonrpc": "2.0", "id": 5, "method": "session/fork",
        "params": {"sessionId": original, "cwd": cwd, "mcpServers": []}}));
    let forked = agent.until_response(json!(5));
    let fork = forked.last().unwrap()["result"]["sessionId"].clone();
    assert!(fork.is_string(), "{forked:#?}");
    assert_ne!(fork, original);
    assert_eq!(
        forked.last().unwrap()["result"]["modes"]["currentModeId"],
        json!("ask")
    );

    // The fork's history is the original's: its first request carries the first turn;
    // the client already shows that history, so nothing of it is replayed.
    agent.send(&prompt(6, &fork, "a question in the fork"));
    let in_fork = agent.until_response(json!(6));
    assert_eq!(
        in_fork.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );
    assert!(
        !updates(&in_fork)
            .iter()
            .any(|u| u["sessionUpdate"] == json!("user_message_chunk")),
        "a fork is not replayed: {in_fork:#?}"
    );
    // The original goes on without the fork's turn.
    agent.send(&prompt(7, &original, "a question in the original"));
    let in_original = agent.until_response(json!(7));
    assert_eq!(
        in_original.last().unwrap()["result"]["stopReason"],
        json!("end_turn")
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let fork_request = requests[1].body.to_string();
    assert!(
        fork_request.contains("the first question"),
        "{fork_request}"
    );
    assert!(fork_request.contains("The first answer."), "{fork_request}");
    assert!(fork_request.contains("a question in the fork"));
    let original_request = requests[2].body.to_string();
    assert!(original_request.contains("The first answer."));
    assert!(
        !original_request.contains("a question in the fork"),
        "the fork's turn stays in the fork"
    );
    let (code, _, stderr) = agent.finish();
    assert_eq!(code, Some(0), "{stderr}");

    // Two transcripts: the fork's names its source.
    let transcripts = common::transcripts(&sandbox.pith_home());
    assert_eq!(transcripts.len(), 2, "{transcripts:?}");
    let fork_id = fork.as_str().unwrap();
    let fork_records = transcripts
        .iter()
        .map(|path| common::records(path))
        .find(|records| records[0]["session_id"] == json!(fork_id))
        .expect("the fork's transcript");
    assert_eq!(fork_records[0]["forked_from"], original);
    assert!(fork_records
        .iter()
        .any(|r| r.to_string().contains("a question in the fork")));
}

#[test]
fn acp_by_hand_an_editor_with_fs_serves_its_buffers_to_read_and_edit() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    let file = cwd.join("notes.txt");
    std::fs::write(&file, "saved on disk\n").unwrap();
    let server = TestServer::start(Script::anthropic([
        Turn::text("Reading.").with_tool_call("read", json!({"path": "notes.txt"})),
        Turn::text("Editing.").with_tool_call(
            "edit",
            json!({"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}),
        ),
        Turn::text("Creating.")
            .with_tool_call("write", json!({"path": "new.txt", "content": "fresh\n"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities":
            {"fs": {"readTextFile": true, "writeTextFile": true}}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": cwd, "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();

    // The editor's buffer differs from the disk: it holds unsaved text.
    let mut buffer = String::from("unsaved in the editor\n");
    let mut asked = Vec::new();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "fix notes"}]}}),
    );
    let turn = agent.until_response_answering(json!(3), |request| {
        asked.push(request.clone());
        let new_file = request["params"]["path"]
            .as_str()
            .unwrap()
            .ends_with("new.txt");
        match request["method"].as_str().unwrap() {
            // The editor has no such file: "resource not found".
            "fs/read_text_file" if new_file => {
                json!({"error": {"code": -32002, "message": "Resource not found"}})
            }
            "fs/write_text_file" if new_file => json!({}),
            "fs/read_text_file" => json!({"content": buffer}),
            "fs/write_text_file" => {
                buffer = request["params"]["content"].as_str().unwrap().to_owned();
                json!({})
            }
            other => panic!("unexpected request {other}: {request:#}"),
        }
    });
    assert_eq!(
        turn.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{turn:#?}"
    );
    let methods: Vec<&str> = asked
        .iter()
        .map(|r| r["method"].as_str().unwrap())
        .collect();
    assert!(methods.contains(&"fs/read_text_file"), "{methods:?}");
    assert!(methods.contains(&"fs/write_text_file"), "{methods:?}");
    let notes = json!(std::fs::canonicalize(&file).unwrap());
    for request in &asked {
        assert_eq!(request["params"]["sessionId"], session);
    }
    let writes: Vec<&Value> = asked
        .iter()
        .filter(|r| r["method"] == json!("fs/write_text_file"))
        .collect();
    assert_eq!(writes.len(), 2, "{asked:#?}");
    let write = writes[0];
    assert_eq!(write["params"]["path"], notes);
    assert_eq!(write["params"]["content"], json!("edited in the editor\n"));
    assert_eq!(buffer, "edited in the editor\n");
    // A file the editor says is not found is created through it, not on disk.
    assert_eq!(writes[1]["params"]["content"], json!("fresh\n"));
    assert!(!cwd.join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "saved on disk\n",
        "the disk is the editor's to save"
    );
    // What the model read was the buffer.
    let requests = server.requests();
    let after_read = requests[1].body.to_string();
    assert!(after_read.contains("unsaved in the editor"), "{after_read}");
    assert!(!after_read.contains("saved on disk"), "{after_read}");
    let after_write = requests[3].body.to_string();
    assert!(after_write.contains("Created new.txt"), "{after_write}");
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
}

#[test]
fn acp_by_hand_bash_runs_in_the_editor_s_terminal_squashed_and_sandboxed() {
    let sandbox = Sandbox::new();
    let cwd = sandbox.workspace();
    let outside = sandbox.root.path().join("escaped.txt");
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call(
            "bash",
            json!({"command": "echo from-the-terminal; echo \"secret=${PITH_TEST_EDITOR_API_TOKEN:-removed}\"; seq 1 4000; exit 3"}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": format!("echo leak > {}; echo inside > in.txt", outside.display())}),
        ),
        Turn::tool_call(
            "bash",
            json!({"command": "echo $$ > shell.pid; sleep 30 & sleep 30", "timeout_ms": 500}),
        ),
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
        "params": {"cwd": cwd, "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "run things"}]}}),
    );

    // Play the editor: terminals are processes; wait_for_exit is answered when the
    // process exits (so a kill can come in between).
    let mut terminals: std::collections::HashMap<String, EditorTerminal> = Default::default();
    let mut waiting: Vec<(Value, String)> = Vec::new();
    let mut methods = Vec::new();
    let mut messages = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        assert!(std::time::Instant::now() < deadline, "{:#?}", agent.seen);
        waiting.retain(
            |(id, terminal)| match terminals.get_mut(terminal).unwrap().exit_status() {
                Some(status) => {
                    agent.send(&json!({"jsonrpc": "2.0", "id": id, "result": status}));
                    false
                }
                None => true,
            },
        );
        let Some(message) = agent.next_within(Duration::from_millis(20)) else {
            continue;
        };
        messages.push(message.clone());
        if message.get("method").is_none() && message["id"] == json!(3) {
            break;
        }
        let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
            continue;
        };
        methods.push(method.to_owned());
        let params = &message["params"];
        assert_eq!(params["sessionId"], session, "{message:#}");
        let terminal = params["terminalId"].as_str().unwrap_or("").to_owned();
        let result = match method {
            "terminal/create" => {
                let name = format!("t{}", terminals.len() + 1);
                terminals.insert(name.clone(), EditorTerminal::create(params));
                json!({"terminalId": name})
            }
            "terminal/wait_for_exit" => {
                waiting.push((id.clone(), terminal));
                continue;
            }
            "terminal/kill" => {
                let _ = terminals.get_mut(&terminal).unwrap().child.kill();
                json!({})
            }
            "terminal/output" => {
                let term = terminals.get_mut(&terminal).unwrap();
                let status = term.exit_status();
                let output = String::from_utf8_lossy(&term.output.lock().unwrap()).into_owned();
                json!({"output": output, "truncated": false, "exitStatus": status})
            }
            "terminal/release" => json!({}),
            other => panic!("unexpected request {other}: {message:#}"),
        };
        agent.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
    assert_eq!(
        messages.last().unwrap()["result"]["stopReason"],
        json!("end_turn"),
        "{messages:#?}"
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "terminal/create").count(),
        3,
        "{methods:?}"
    );
    assert_eq!(
        methods.iter().filter(|m| *m == "terminal/release").count(),
        3,
        "{methods:?}"
    );

    // What the model saw of each run: the terminal's output, squashed, with the exit code.
    let requests = server.requests();
    let first = requests[1].body.to_string();
    assert!(first.contains("from-the-terminal"), "{first}");
    assert!(
        first.contains("secret=removed"),
        "the wrapper drops secrets: {first}"
    );
    assert!(!first.contains("hunter2"), "{first}");
    assert!(first.contains("[exit code: 3]"), "{first}");
    assert!(first.contains("4000"), "{first}");
    assert!(
        !first.contains("\\n2000\\n"),
        "4,000 lines are squashed, not sent whole: {}",
        first.len()
    );
    // The sandbox applied in the editor's terminal: nothing escaped the workspace.
    let second = requests[2].body.to_string();
    assert!(
        !outside.exists(),
        "the sandbox let a write escape: {second}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("in.txt")).unwrap(),
        "inside\n"
    );
    assert!(second.contains("sandbox"), "{second}");
    // The timeout ended the command's whole process group (pith does it: an editor's
    // terminal/kill may end only the wrapper), background job included.
    let third = requests[3].body.to_string();
    assert!(third.contains("timed out after 500 ms"), "{third}");
    let shell = std::fs::read_to_string(cwd.join("shell.pid")).unwrap();
    let alive = Command::new("kill")
        .args(["-0", shell.trim()])
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!alive.success(), "the timed-out shell {shell} still runs");

    // Each bash call showed its terminal: live, and still in its last update.
    let terminal_contents: Vec<&Value> = updates(&messages)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == json!("tool_call_update"))
        .filter(|u| {
            u["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == json!("terminal")))
        })
        .collect();
    assert!(terminal_contents.len() >= 6, "{terminal_contents:#?}");
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
}
