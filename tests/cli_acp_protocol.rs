//! End-to-end: the 2026 stable session protocol of `pith acp` through the real binary —
//! `session/resume`, `session/close`, `session/delete`, `configOptions` with
//! `session/set_config_option`, `$/cancel_request`, `nextCursor` paging,
//! `session_info_update` — and the spec's error codes with messages that name the field.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::time::Duration;

use common::acp::{assert_json_rpc, updates, Agent};
use common::Sandbox;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn start(sandbox: &Sandbox, server: &TestServer) -> Agent {
    let mut command = sandbox.pith(Some(server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.until_response(json!(0));
    agent
}

/// Sends request `id` and returns the messages up to its answer (the answer last).
fn call(agent: &mut Agent, id: u64, method: &str, params: Value) -> Vec<Value> {
    agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    agent.until_response(json!(id))
}

fn result(messages: &[Value]) -> &Value {
    let last = messages.last().unwrap();
    assert!(last.get("error").is_none(), "{messages:#?}");
    &last["result"]
}

fn error(messages: &[Value]) -> &Value {
    &messages.last().unwrap()["error"]
}

fn new_session(agent: &mut Agent, id: u64, cwd: &std::path::Path) -> Value {
    let opened = call(
        agent,
        id,
        "session/new",
        json!({"cwd": cwd, "mcpServers": []}),
    );
    result(&opened)["sessionId"].clone()
}

fn option<'a>(options: &'a Value, id: &str) -> &'a Value {
    options
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["id"] == json!(id))
        .unwrap_or_else(|| panic!("no option {id}: {options:#}"))
}

#[test]
fn capabilities_errors_and_a_session_kept_from_its_creation() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([])).unwrap();
    let mut agent = start(&sandbox, &server);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    let initialized = agent.until_response(json!(1));
    let sessions = &result(&initialized)["agentCapabilities"]["sessionCapabilities"];
    for capability in ["list", "resume", "close", "delete", "fork"] {
        assert!(sessions[capability].is_object(), "{capability}: {sessions}");
    }

    // A cwd that does not exist, that is a file, that is relative: invalid params naming
    // the field, nothing about pith's internals.
    let file = sandbox.workspace().join("notes.txt");
    std::fs::write(&file, "n").unwrap();
    let missing = sandbox.root.path().join("missing");
    for (id, cwd, says) in [
        (2, missing.to_str().unwrap(), "does not exist"),
        (3, file.to_str().unwrap(), "is not a directory"),
        (4, "relative/dir", "is not an absolute path"),
    ] {
        let answer = call(
            &mut agent,
            id,
            "session/new",
            json!({"cwd": cwd, "mcpServers": []}),
        );
        let error = error(&answer);
        assert_eq!(error["code"], json!(-32602), "{cwd}: {error}");
        let data = error["data"].as_str().unwrap();
        assert!(data.starts_with("cwd: ") && data.contains(says), "{data}");
        assert!(!data.contains(".pith"), "{data}");
    }
    let bad_cursor = call(&mut agent, 5, "session/list", json!({"cursor": "nonsense"}));
    assert_eq!(error(&bad_cursor)["code"], json!(-32602));
    assert!(error(&bad_cursor)["data"]
        .as_str()
        .unwrap()
        .starts_with("cursor: "));

    // A session created and never prompted is kept: listed and loadable after a restart.
    let session = new_session(&mut agent, 6, &sandbox.workspace());
    let (code, lines, _) = agent.finish();
    assert_eq!(code, Some(0));
    assert_json_rpc(&lines);
    let mut agent = start(&sandbox, &server);
    let listed = call(&mut agent, 1, "session/list", json!({}));
    assert!(
        result(&listed)["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == session),
        "{listed:#?}"
    );
    let loaded = call(
        &mut agent,
        2,
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.workspace(), "mcpServers": []}),
    );
    assert!(result(&loaded)["configOptions"].is_array(), "{loaded:#?}");
    // An unknown session: -32002 for load, resume and close; delete succeeds silently.
    let unknown = "01a00000-0000-7000-8000-000000000000";
    for (id, method) in [
        (3, "session/load"),
        (4, "session/resume"),
        (5, "session/close"),
    ] {
        let answer = call(
            &mut agent,
            id,
            method,
            json!({"sessionId": unknown, "cwd": sandbox.workspace(), "mcpServers": []}),
        );
        assert_eq!(
            error(&answer)["code"],
            json!(-32002),
            "{method}: {answer:#?}"
        );
    }
    let deleted = call(
        &mut agent,
        6,
        "session/delete",
        json!({"sessionId": unknown}),
    );
    assert_eq!(result(&deleted), &json!({}));
    agent.finish();
}

#[test]
fn config_options_switch_the_model_mode_and_reasoning_and_the_title_follows_the_first_turn() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::text("First."),
        Turn::text("Second."),
    ]))
    .unwrap();
    let mut agent = start(&sandbox, &server);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let opened = agent.until_response(json!(1));
    let session = result(&opened)["sessionId"].clone();
    let options = &result(&opened)["configOptions"];
    assert_eq!(option(options, "model")["currentValue"], json!(MODEL));
    assert_eq!(option(options, "model")["category"], json!("model"));
    assert_eq!(option(options, "mode")["currentValue"], json!("full"));
    assert_eq!(
        option(options, "reasoning")["category"],
        json!("thought_level")
    );
    // The sandbox has an Anthropic key: its catalog models are offered.
    let haiku = "anthropic/claude-haiku-4-5";
    assert!(option(options, "model")["options"]
        .to_string()
        .contains(haiku));

    let set = |agent: &mut Agent, id: u64, config: &str, value: &str| {
        call(
            agent,
            id,
            "session/set_config_option",
            json!({"sessionId": session, "configId": config, "value": value}),
        )
    };
    let moded = set(&mut agent, 2, "mode", "ask");
    assert_eq!(
        option(&result(&moded)["configOptions"], "mode")["currentValue"],
        json!("ask")
    );
    let reasoned = set(&mut agent, 3, "reasoning", "high");
    assert_eq!(
        option(&result(&reasoned)["configOptions"], "reasoning")["currentValue"],
        json!("high")
    );
    let switched = set(&mut agent, 4, "model", haiku);
    assert_eq!(
        option(&result(&switched)["configOptions"], "model")["currentValue"],
        json!(haiku)
    );
    for (id, config, value) in [
        (5, "model", "openai/nope"),
        (6, "theme", "dark"),
        (7, "mode", "yolo"),
    ] {
        let refused = set(&mut agent, id, config, value);
        assert_eq!(error(&refused)["code"], json!(-32602), "{refused:#?}");
    }

    let first = call(
        &mut agent,
        8,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "Plan the release\nin detail"}]}),
    );
    assert_eq!(result(&first)["stopReason"], json!("end_turn"));
    let info: Vec<&Value> = updates(&first)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == json!("session_info_update"))
        .collect();
    assert_eq!(info.len(), 1, "{first:#?}");
    assert_eq!(info[0]["title"], json!("Plan the release"));
    assert!(info[0]["updatedAt"].is_string());
    // The request went to the model chosen, with thinking asked for.
    let body = &server.requests()[0].body;
    assert_eq!(body["model"], json!("claude-haiku-4-5"), "{body}");
    assert!(body["thinking"].is_object(), "{body}");
    // The second turn does not retitle.
    let second = call(
        &mut agent,
        9,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}),
    );
    let titles = updates(&second)
        .into_iter()
        .filter(|u| u["sessionUpdate"] == json!("session_info_update") && u.get("title").is_some())
        .count();
    assert_eq!(titles, 0, "{second:#?}");
    agent.finish();
}

#[test]
fn cancel_request_and_close_stop_a_running_prompt_and_delete_removes_the_session() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        // Each cancelled while its command runs: no request follows it.
        Turn::tool_call("bash", json!({"command": "echo $$ > one.pid; sleep 30"})),
        Turn::tool_call("bash", json!({"command": "echo $$ > two.pid; sleep 30"})),
        Turn::text("Resumed."),
    ]))
    .unwrap();
    let mut agent = start(&sandbox, &server);
    let session = new_session(&mut agent, 1, &sandbox.workspace());

    // $/cancel_request for the running prompt: it answers `cancelled`, the command ends.
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}}),
    );
    wait_for_file(&sandbox.workspace().join("one.pid"));
    agent
        .send(&json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}));
    let cancelled = agent.until_response(json!(2));
    assert_eq!(result(&cancelled)["stopReason"], json!("cancelled"));
    assert_gone(&sandbox.workspace().join("one.pid"));

    // session/close while a prompt runs: the prompt answers `cancelled`, close `{}`.
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "sleep more"}]}}),
    );
    wait_for_file(&sandbox.workspace().join("two.pid"));
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "session/close",
        "params": {"sessionId": session}}),
    );
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 2 {
        let message = agent.until_next();
        if message.get("method").is_none() {
            answers.insert(message["id"].to_string(), message);
        }
    }
    assert_eq!(answers["3"]["result"]["stopReason"], json!("cancelled"));
    assert_eq!(answers["4"]["result"], json!({}));
    assert_gone(&sandbox.workspace().join("two.pid"));
    let after = call(
        &mut agent,
        5,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hello?"}]}),
    );
    assert_eq!(error(&after)["code"], json!(-32002));

    // Closed is not deleted: resume it (no replay before the answer), and go on.
    let resumed = call(
        &mut agent,
        6,
        "session/resume",
        json!({"sessionId": session, "cwd": sandbox.workspace(), "mcpServers": []}),
    );
    assert_eq!(resumed.len(), 1, "resume replays nothing: {resumed:#?}");
    let went_on = call(
        &mut agent,
        7,
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "continue"}]}),
    );
    assert_eq!(result(&went_on)["stopReason"], json!("end_turn"));
    let last = server.requests().last().unwrap().body.to_string();
    assert!(
        last.contains("sleep more"),
        "the history was resumed: {last}"
    );

    // Delete: gone from the list and from disk; loading it is -32002.
    let deleted = call(
        &mut agent,
        8,
        "session/delete",
        json!({"sessionId": session}),
    );
    assert_eq!(result(&deleted), &json!({}));
    let listed = call(&mut agent, 9, "session/list", json!({}));
    assert!(!result(&listed)
        .to_string()
        .contains(session.as_str().unwrap()));
    let transcripts = common::transcripts(&sandbox.pith_home());
    assert!(transcripts.is_empty(), "{transcripts:?}");
    let loaded = call(
        &mut agent,
        10,
        "session/load",
        json!({"sessionId": session, "cwd": sandbox.workspace(), "mcpServers": []}),
    );
    assert_eq!(error(&loaded)["code"], json!(-32002));
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_json_rpc(&lines);
}

#[test]
fn session_list_pages_with_next_cursor() {
    let sandbox = Sandbox::new();
    let store = pith_session::SessionStore::at(sandbox.pith_home().join("sessions"));
    for n in 0..57 {
        let mut session = store
            .create(pith_session::NewSession {
                cwd: sandbox.workspace(),
                provider: "anthropic".into(),
                model: "claude-sonnet-4-5".into(),
            })
            .unwrap();
        session
            .append(pith_session::Event::user_text(format!("task {n}")))
            .unwrap();
    }
    let server = TestServer::start(Script::anthropic([])).unwrap();
    let mut agent = start(&sandbox, &server);
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = if cursor.is_null() {
            json!({"cwd": sandbox.workspace()})
        } else {
            json!({"cwd": sandbox.workspace(), "cursor": cursor})
        };
        let page = call(&mut agent, 10 + pages, "session/list", params);
        pages += 1;
        let page = result(&page);
        for session in page["sessions"].as_array().unwrap() {
            assert!(session["title"].as_str().unwrap().starts_with("task "));
            assert!(
                seen.insert(session["sessionId"].to_string()),
                "listed twice"
            );
        }
        match page.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = next.clone(),
            _ => break,
        }
        assert!(pages < 10, "paging does not end");
    }
    assert_eq!(pages, 2);
    assert_eq!(seen.len(), 57);
    agent.finish();
}

fn wait_for_file(path: &std::path::Path) {
    for _ in 0..300 {
        if std::fs::read_to_string(path).is_ok_and(|s| s.ends_with('\n')) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never appeared", path.display());
}

/// The shell whose pid `pid_file` holds has exited.
fn assert_gone(pid_file: &std::path::Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    for _ in 0..250 {
        let alive = std::process::Command::new("kill")
            .args(["-0", pid.trim()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success();
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the command {pid} still runs");
}
