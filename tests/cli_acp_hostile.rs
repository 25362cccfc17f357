//! End-to-end: bytes an editor (or a broken pipe in between) should never send reach
//! `pith acp` while a prompt runs — invalid UTF-8 in a method name and inside a string,
//! a line that is not JSON, a 20 MB line, random bytes. Each is answered with `-32700`
//! (under its own id when one can be read), the prompt keeps running and ends normally,
//! and the next request is served.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use common::acp::{assert_json_rpc, Agent};
use common::Sandbox;
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

#[test]
fn bad_bytes_are_answered_with_errors_and_the_running_prompt_goes_on() {
    let sandbox = Sandbox::new();
    let server = TestServer::start(Script::anthropic([
        Turn::tool_call("bash", json!({"command": "sleep 2; echo slept"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let mut command = sandbox.pith(Some(&server));
    command.args(["acp", "--model", MODEL, "--approval", "full"]);
    let mut agent = Agent::start(command);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": 1, "clientCapabilities": {}}}));
    agent.until_response(json!(1));
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": sandbox.workspace(), "mcpServers": []}}));
    let created = agent.until_response(json!(2));
    let session = created.last().unwrap()["result"]["sessionId"].clone();
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}}),
    );
    // Wait until the command runs.
    let mut messages = Vec::new();
    loop {
        let message = agent.until_next();
        let started = message["params"]["update"]["sessionUpdate"] == json!("tool_call");
        messages.push(message);
        if started {
            break;
        }
    }

    agent.send_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"session/\xffnew\",\"params\":{}}\n",
    );
    agent.send_bytes(
        b"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp/\xc3\x28\",\"mcpServers\":[]}}\n",
    );
    agent.send_raw("{this is not json");
    let mut huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"session/prompt\",\"params\":{{\"sessionId\":{session},\"prompt\":[{{\"type\":\"text\",\"text\":\""
    )
    .into_bytes();
    huge.extend(std::iter::repeat_n(b'x', 20 * 1024 * 1024));
    huge.extend_from_slice(b"\"}]}}\n");
    agent.send_bytes(&huge);
    agent.send_bytes(b"\x00\x9f\x92\x96 \xf0\x28\x8c\xbc random\r\n\n");
    agent.send(&json!({"jsonrpc": "2.0", "id": 13, "method": "session/list", "params": {}}));

    let mut answered = std::collections::HashMap::new();
    while !(answered.contains_key(&json!(3).to_string())
        && answered.contains_key(&json!(13).to_string()))
    {
        let message = agent.until_next();
        if message.get("method").is_none() {
            answered.insert(message["id"].to_string(), message.clone());
        }
        messages.push(message);
    }
    assert_eq!(
        answered["3"]["result"]["stopReason"],
        json!("end_turn"),
        "{messages:#?}"
    );
    let tool_output = messages
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == json!("tool_call_update"))
        .map(Value::to_string)
        .collect::<String>();
    assert!(tool_output.contains("slept"), "{tool_output}");
    assert!(
        answered["13"]["result"]["sessions"].is_array(),
        "{messages:#?}"
    );
    for (id, reason) in [
        ("10", "not valid UTF-8"),
        ("11", "not valid UTF-8"),
        ("12", "over pith's limit"),
    ] {
        let error = &answered[id]["error"];
        assert_eq!(error["code"], json!(-32700), "{id}: {error}");
        assert!(error["data"].to_string().contains(reason), "{id}: {error}");
    }
    // The line that is not JSON, and the random bytes (two lines, the blank one skipped):
    // parse errors with a null id.
    let anonymous: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("method").is_none() && m["id"].is_null())
        .collect();
    assert_eq!(anonymous.len(), 2, "{anonymous:#?}");
    assert!(anonymous
        .iter()
        .all(|m| m["error"]["code"] == json!(-32700)));
    let (code, lines, stderr) = agent.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert_json_rpc(&lines);
    let longest = lines.iter().map(String::len).max().unwrap();
    assert!(
        longest < 1024 * 1024,
        "an error echoed a huge line back: {longest} bytes"
    );
}
