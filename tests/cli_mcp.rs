//! End-to-end: MCP servers through the real `pith run` and `pith mcp list`, the model's
//! tool calls scripted by the testkit.
//!
//! The first tests use a small stdio server written with Python's standard library
//! (tests/fixtures/mcp_fake_server.py; python3 is on every machine this project builds
//! on). The last two drive real third-party servers, `mcp-server-time` (PyPI) and
//! `@modelcontextprotocol/server-everything` (npm): they are ignored by default, `.ci/run`
//! installs both into `.cache/` and runs them with `--ignored`, passing their paths in
//! `PITH_TEST_MCP_TIME` and `PITH_TEST_MCP_EVERYTHING`; missing programs fail them.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::path::{Path, PathBuf};

use common::{records, stderr, stdout, Sandbox};
use pith_core::tokens::count_tools;
use pith_core::{BpeCounter, Encoding, ToolDefinition};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::{json, Value};

const MODEL: &str = "anthropic/claude-sonnet-4-5";

fn fake_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_fake_server.py")
}

fn write_config(sandbox: &Sandbox, text: &str) {
    let dir = sandbox.root.path().join("config").join("pith");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.toml"), text).unwrap();
}

fn fake_config(name: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}]\n",
        fake_server().display().to_string()
    )
}

/// The tool results of the last recorded turn, in order.
fn tool_results(sandbox: &Sandbox) -> Vec<Value> {
    let records = records(&sandbox.only_transcript());
    let turn = records
        .iter()
        .rev()
        .find(|r| r["kind"] == "assistant_turn")
        .expect("the transcript has an assistant turn");
    turn["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["parts"][0].clone())
        .collect()
}

/// The tool definitions of the `index`th request the provider received (Anthropic shape).
fn advertised(server: &TestServer, index: usize) -> Vec<ToolDefinition> {
    let requests = server.requests();
    requests[index].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| ToolDefinition {
                    name: t["name"].as_str().unwrap_or("").to_owned(),
                    description: t["description"].as_str().unwrap_or("").to_owned(),
                    parameters: t["input_schema"].clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn names(tools: &[ToolDefinition]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

fn mcp_tokens(tools: &[ToolDefinition]) -> usize {
    let mcp: Vec<ToolDefinition> = tools
        .iter()
        .filter(|t| pith_mcp::is_mcp_definition(&t.name))
        .cloned()
        .collect();
    count_tools(&BpeCounter::new(Encoding::O200kBase), &mcp)
}

#[test]
fn an_mcp_result_of_one_mebibyte_reaches_the_model_squashed_with_its_spill_path() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, &fake_config("fake"));
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("mcp__fake__big", json!({})),
        Turn::text("").with_tool_call("mcp__fake__echo", json!({"text": "hello"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--approval", "full", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(stdout(&output), "Done.\n");
    let tools = names(&advertised(&server, 0));
    assert_eq!(
        &tools[tools.len() - 3..],
        ["mcp__fake__big", "mcp__fake__crash", "mcp__fake__echo"],
        "MCP tools follow the built-ins, sorted"
    );
    let results = tool_results(&sandbox);
    let big = results[0]["content"].as_str().unwrap_or_default();
    eprintln!(
        "pith run: a 1 MiB MCP result reached the model as {} bytes, ending {:?}",
        big.len(),
        big.lines().last()
    );
    assert!(
        big.len() <= 3 * 1024,
        "{} bytes reached the model",
        big.len()
    );
    assert!(
        big.ends_with("[full output: $PITH_SPILL_DIR/1.txt]"),
        "{big}"
    );
    let spill = sandbox
        .only_transcript()
        .parent()
        .unwrap()
        .join("spill/1.txt");
    assert!(std::fs::metadata(spill).unwrap().len() >= 1024 * 1024);
    assert_eq!(results[1]["content"], json!("hello"));
    assert_eq!(
        advertised(&server, 2),
        advertised(&server, 0),
        "stable tool list"
    );
}

#[test]
fn a_server_crashing_mid_call_is_a_tool_error_and_is_restarted_on_the_next_call() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, &fake_config("fake"));
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("mcp__fake__crash", json!({})),
        Turn::text("").with_tool_call("mcp__fake__echo", json!({"text": "back"})),
        Turn::text("Recovered."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--approval", "full", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&sandbox);
    assert_eq!(results[0]["is_error"], json!(true));
    let crash = results[0]["content"].as_str().unwrap_or_default();
    assert!(crash.contains("crashed during the call"), "{crash}");
    assert!(
        crash.contains("crashing on purpose"),
        "its stderr is quoted: {crash}"
    );
    assert_eq!(results[1]["content"], json!("back"));
    let warnings = stderr(&output);
    assert!(
        warnings.contains("pith: MCP server `fake` crashed during the call")
            && warnings.contains("pith: MCP server `fake` was restarted after a crash"),
        "the user is warned too: {warnings}"
    );
}

#[test]
fn a_server_that_fails_to_start_is_a_warning_and_the_job_still_runs() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        "[mcp_servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n",
    );
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("mcp__broken__anything", json!({})),
        Turn::text("Fine."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains("MCP server `broken` failed to start"),
        "{}",
        stderr(&output)
    );
    let results = tool_results(&sandbox);
    assert!(results[0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("unknown tool `mcp__broken__anything`"));
}

#[test]
fn a_project_mcp_json_needs_trust_and_pith_run_takes_it_with_trust_project() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.workspace().join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": "python3", "args": [fake_server()]}}})
            .to_string(),
    )
    .unwrap();
    let script = || {
        Script::anthropic([
            Turn::text("").with_tool_call("mcp__proj__echo", json!({"text": "hi"})),
            Turn::text("Ok."),
        ])
    };
    let untrusted = TestServer::start(script()).unwrap();
    let output = sandbox.run(&untrusted, &["--model", MODEL, "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(
        stderr(&output).contains(".mcp.json is not trusted yet"),
        "{}",
        stderr(&output)
    );
    assert!(!names(&advertised(&untrusted, 0)).contains(&"mcp__proj__echo".to_owned()));

    let trusted = TestServer::start(script()).unwrap();
    let output = sandbox.run(&trusted, &["--model", MODEL, "--trust-project", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert!(names(&advertised(&trusted, 0)).contains(&"mcp__proj__echo".to_owned()));
    assert!(
        !sandbox.pith_home().join("trust.json").exists(),
        "--trust-project records nothing"
    );
}

#[test]
fn read_only_runs_a_tool_marked_read_only_and_refuses_the_others() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, &fake_config("fake"));
    let server = TestServer::start(Script::anthropic([
        Turn::text("")
            .with_tool_call("mcp__fake__echo", json!({"text": "seen"}))
            .with_tool_call("mcp__fake__big", json!({})),
        Turn::text("Ok."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&sandbox);
    assert_eq!(results[0]["content"], json!("seen"));
    assert_eq!(results[1]["is_error"], json!(true));
    assert!(results[1]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("not marked read-only"));
}

#[test]
fn deferred_definitions_give_a_catalog_and_loaded_tools_join_the_end_of_the_list() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[context]\nmcp_defer_percent = 0\n\n{}",
            fake_config("fake")
        ),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("load_mcp_tools", json!({"names": ["mcp__fake__echo"]})),
        Turn::text("").with_tool_call("mcp__fake__echo", json!({"text": "loaded"})),
        Turn::text("Ok."),
    ]))
    .unwrap();
    let output = sandbox.run(&server, &["--model", MODEL, "--approval", "full", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let first = advertised(&server, 0);
    let second = advertised(&server, 1);
    assert_eq!(
        first.last().map(|t| t.name.as_str()),
        Some("load_mcp_tools")
    );
    assert!(!names(&first).iter().any(|n| n.starts_with("mcp__")));
    assert_eq!(
        &second[..first.len()],
        &first[..],
        "the cached prefix survives"
    );
    assert_eq!(names(&second[first.len()..]), ["mcp__fake__echo"]);
    assert_eq!(tool_results(&sandbox)[1]["content"], json!("loaded"));

    // Loaded tools stay loaded for the session: a continued session advertises them
    // from its first request, in the same place.
    let session = sandbox
        .only_transcript()
        .parent()
        .and_then(|dir| dir.file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .expect("a session directory");
    let continued = TestServer::start(Script::anthropic([Turn::text("Still here.")])).unwrap();
    let output = sandbox.run(
        &continued,
        &["--model", MODEL, "--session", &session, "again"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(advertised(&continued, 0), second);
}

#[test]
fn pith_mcp_list_shows_each_servers_status_tools_and_tokens() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "{}\n[mcp_servers.gone]\ncommand = \"/nonexistent/mcp\"\n\n[mcp_servers.off]\ncommand = \"x\"\nenabled = false\n",
            fake_config("fake")
        ),
    );
    let output = sandbox
        .pith(None)
        .args(["mcp", "list", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "a failed server fails the listing"
    );
    let rows: Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["name"], "fake");
    assert_eq!(rows[0]["status"], "ready");
    assert_eq!(rows[0]["tools"], 3);
    assert!(rows[0]["definition_tokens"].as_u64().unwrap_or(0) > 50);
    assert_eq!(rows[1]["status"], "failed");
    assert!(rows[1]["error"]
        .as_str()
        .unwrap_or("")
        .contains("no such program"));
    assert_eq!(rows[2]["status"], "disabled");
}

/// The program an ignored test needs, from `var`; panics (fails the test) when missing.
fn required_program(var: &str, what: &str) -> PathBuf {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("{var} is not set: it must name {what} (.ci/run installs it)"));
    assert!(
        path.is_file(),
        "{var}={} does not exist: install {what}",
        path.display()
    );
    path
}

#[test]
#[ignore = "needs mcp-server-time (PyPI): .ci/run installs it and sets PITH_TEST_MCP_TIME"]
fn mcp_server_time_answers_through_pith_run() {
    let program = required_program("PITH_TEST_MCP_TIME", "the mcp-server-time program");
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\nstartup_timeout_s = 60\n",
            program.display().to_string()
        ),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("mcp__time__get_current_time", json!({"timezone": "UTC"})),
        Turn::text("").with_tool_call(
            "mcp__time__convert_time",
            json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ),
        Turn::text("").with_tool_call(
            "mcp__time__get_current_time",
            json!({"timezone": "Not/AZone"}),
        ),
        Turn::text("It is time."),
    ]))
    .unwrap();
    let output = sandbox.run(
        &server,
        &["--model", MODEL, "--approval", "full", "what time is it"],
    );
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&sandbox);
    let now = results[0]["content"].as_str().unwrap_or_default();
    assert!(now.contains("\"timezone\":\"UTC\""), "{now}");
    let converted = results[1]["content"].as_str().unwrap_or_default();
    assert!(converted.contains("21:00"), "{converted}");
    assert_eq!(results[2]["is_error"], json!(true), "{}", results[2]);
}

#[test]
#[ignore = "needs @modelcontextprotocol/server-everything (npm): .ci/run installs it and sets PITH_TEST_MCP_EVERYTHING"]
fn server_everything_through_pith_run_with_and_without_deferral() {
    let program = required_program(
        "PITH_TEST_MCP_EVERYTHING",
        "the mcp-server-everything program",
    );
    let server_config = format!(
        "[mcp_servers.everything]\ncommand = {:?}\nstartup_timeout_s = 60\n",
        program.display().to_string()
    );
    let script = || {
        Script::anthropic([
            Turn::text("").with_tool_call("mcp__everything__echo", json!({"message": "ping"})),
            Turn::text("").with_tool_call("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
            Turn::text("").with_tool_call("mcp__everything__get-tiny-image", json!({})),
            Turn::text("Done."),
        ])
    };

    let advertised_all = Sandbox::new();
    write_config(&advertised_all, &server_config);
    let full = TestServer::start(script()).unwrap();
    let output = advertised_all.run(&full, &["--model", MODEL, "--approval", "full", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&advertised_all);
    let text = |i: usize| {
        results[i]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert!(text(0).contains("ping"), "{}", text(0));
    assert!(text(1).contains('5'), "{}", text(1));
    assert!(text(2).contains("[image image/png"), "{}", text(2));
    assert!(text(2).len() < 1_000, "{}", text(2));

    let deferring = Sandbox::new();
    write_config(
        &deferring,
        &format!("[context]\nmcp_defer_percent = 0\n\n{server_config}"),
    );
    let deferred = TestServer::start(script()).unwrap();
    let output = deferring.run(&deferred, &["--model", MODEL, "--approval", "full", "go"]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));

    let with = mcp_tokens(&advertised(&full, 0));
    let without = mcp_tokens(&advertised(&deferred, 0));
    eprintln!("server-everything: {with} MCP definition tokens advertised, {without} deferred (catalog + loader)");
    assert!(without < with, "deferral saves tokens: {without} vs {with}");
    let results = tool_results(&deferring);
    assert!(results[0]["content"]
        .as_str()
        .unwrap_or_default()
        .contains("ping"));
}

/// A child process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
#[ignore = "needs @modelcontextprotocol/server-everything (npm): .ci/run installs it and sets PITH_TEST_MCP_EVERYTHING"]
fn server_everything_over_streamable_http_with_a_header_from_the_environment() {
    let program = required_program(
        "PITH_TEST_MCP_EVERYTHING",
        "the mcp-server-everything program",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let _http_server = Killed(
        std::process::Command::new(&program)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("server-everything starts"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP server never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nenv_http_headers = {{ \"X-Pith-Test\" = \"PITH_TEST_HEADER\" }}\n"
        ),
    );
    let server = TestServer::start(Script::anthropic([
        Turn::text("").with_tool_call("mcp__web__echo", json!({"message": "over http"})),
        Turn::text("Done."),
    ]))
    .unwrap();
    let output = sandbox
        .pith(Some(&server))
        .env("PITH_TEST_HEADER", "from-the-environment")
        .args(["run", "--model", MODEL, "--approval", "full", "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let results = tool_results(&sandbox);
    let echo = results[0]["content"].as_str().unwrap_or_default();
    assert!(echo.contains("over http"), "{echo}");

    // Without the variable the server cannot start, and says which variable is missing.
    let missing = Sandbox::new();
    write_config(
        &missing,
        &format!(
            "[mcp_servers.web]\nurl = \"http://127.0.0.1:{port}/mcp\"\nbearer_token_env_var = \"PITH_TEST_UNSET_TOKEN\"\n"
        ),
    );
    let output = missing.pith(None).args(["mcp", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stdout(&output).contains("PITH_TEST_UNSET_TOKEN is not set"),
        "{}",
        stdout(&output)
    );
}
