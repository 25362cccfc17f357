//! Hostile servers: a 1 MiB result, a hang, a crash mid-call, an invalid schema, 200
//! tools, garbage on stdout, servers that cannot start. Each must end as a clear tool
//! error for the model or a warning for the user, never a broken loop.
#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::{hub, Garbage, InProcess, BIG_BYTES};
use pith_core::{BpeCounter, Encoding, ToolCall, ToolRegistry, ToolResult};
use pith_mcp::{McpHub, ServerConfig, Status, LOAD_TOOL};
use pith_tools::{PermissionMode, ToolEnv, ToolsConfig};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

struct Fixture {
    _dir: tempfile::TempDir,
    spill: std::path::PathBuf,
    env: Arc<ToolEnv>,
    registry: ToolRegistry,
}

fn fixture(mode: PermissionMode) -> Fixture {
    let dir = tempfile::tempdir().expect("temp dir");
    let spill = dir.path().join("spill");
    let env = Arc::new(
        ToolEnv::new(ToolsConfig::new(dir.path(), &spill).with_mode(mode)).expect("tool env"),
    );
    Fixture {
        _dir: dir,
        spill,
        env,
        registry: ToolRegistry::default(),
    }
}

fn counter() -> BpeCounter {
    BpeCounter::new(Encoding::O200kBase)
}

async fn install(hub: &McpHub, fixture: &Fixture, budget: u64) -> pith_mcp::Installed {
    hub.install(&fixture.registry, &fixture.env, budget, &counter())
        .await
}

async fn call(registry: &ToolRegistry, name: &str, arguments: Value) -> ToolResult {
    let call = ToolCall {
        id: "call_1".into(),
        name: name.into(),
        arguments,
    };
    tokio::time::timeout(
        Duration::from_secs(30),
        registry.execute(&call, &CancellationToken::new()),
    )
    .await
    .expect("every call ends within its timeout")
}

fn names(registry: &ToolRegistry) -> Vec<String> {
    registry.definitions().into_iter().map(|d| d.name).collect()
}

#[tokio::test]
async fn a_one_mebibyte_result_reaches_the_context_as_at_most_3_kb_with_the_spill_path() {
    let hub = hub("hostile", InProcess::new(0), |_| {}).await;
    let fixture = fixture(PermissionMode::Full);
    install(&hub, &fixture, u64::MAX).await;
    let result = call(&fixture.registry, "mcp__hostile__big", json!({})).await;
    assert!(!result.is_error, "{}", result.content);
    eprintln!(
        "1 MiB MCP result: {} bytes reach the context; last line: {}",
        result.content.len(),
        result.content.lines().last().unwrap_or("")
    );
    assert!(
        result.content.len() <= 3 * 1024,
        "{} bytes reached the context",
        result.content.len()
    );
    let marker = result.content.lines().last().unwrap_or("");
    let file = marker
        .strip_prefix("[full output: $PITH_SPILL_DIR/")
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or_else(|| panic!("the spill marker ends the result: {marker}"));
    let spilled = std::fs::read_to_string(fixture.spill.join(file)).expect("spill file");
    assert!(spilled.len() >= BIG_BYTES, "the raw result is kept whole");
}

#[tokio::test]
async fn a_hanging_tool_times_out_and_the_server_stays_usable() {
    let hub = hub("hostile", InProcess::new(0), |c| {
        c.tool_timeout = Duration::from_millis(300)
    })
    .await;
    let fixture = fixture(PermissionMode::Full);
    install(&hub, &fixture, u64::MAX).await;
    let hung = call(&fixture.registry, "mcp__hostile__hang", json!({})).await;
    assert!(hung.is_error);
    assert!(
        hung.content
            .contains("did not answer within 0.3 s (tool_timeout_s)"),
        "{}",
        hung.content
    );
    let echo = call(
        &fixture.registry,
        "mcp__hostile__echo",
        json!({"text": "still here"}),
    )
    .await;
    assert_eq!(echo.content, "still here");
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_and_the_server_is_restarted_once() {
    let connector = InProcess::new(0);
    let connects = connector.connects.clone();
    let hub = hub("hostile", connector, |_| {}).await;
    let fixture = fixture(PermissionMode::Full);
    install(&hub, &fixture, u64::MAX).await;
    let crashed = call(&fixture.registry, "mcp__hostile__crash", json!({})).await;
    assert!(crashed.is_error);
    assert!(
        crashed.content.contains("crashed during the call"),
        "{}",
        crashed.content
    );
    assert!(matches!(
        hub.servers()[0].status().await,
        Status::Crashed(_)
    ));
    let echo = call(
        &fixture.registry,
        "mcp__hostile__echo",
        json!({"text": "back"}),
    )
    .await;
    assert_eq!(echo.content, "back", "restarted on the next call");
    let warnings = hub.take_notices().await.join("\n");
    assert!(
        warnings.contains("crashed during the call")
            && warnings.contains("was restarted after a crash"),
        "the user is told too: {warnings}"
    );
    assert_eq!(connects.load(Ordering::SeqCst), 2);
    assert_eq!(hub.servers()[0].status().await, Status::Ready);
    let again = call(&fixture.registry, "mcp__hostile__crash", json!({})).await;
    assert!(again.is_error);
    let gone = call(
        &fixture.registry,
        "mcp__hostile__echo",
        json!({"text": "x"}),
    )
    .await;
    assert!(gone.is_error);
    assert!(gone.content.contains("crashed again"), "{}", gone.content);
    assert_eq!(connects.load(Ordering::SeqCst), 2, "restarted only once");
}

#[tokio::test]
async fn an_invalid_schema_leaves_out_only_that_tool_with_a_warning() {
    let hub = hub("hostile", InProcess::new(0), |_| {}).await;
    let notices = hub.take_notices().await;
    assert!(
        notices
            .iter()
            .any(|n| n.contains("`bad_schema` left out") && n.contains("type")),
        "{notices:?}"
    );
    assert!(
        hub.take_notices().await.is_empty(),
        "each notice is given once"
    );
    let fixture = fixture(PermissionMode::Full);
    let installed = install(&hub, &fixture, u64::MAX).await;
    assert_eq!(installed.tools, 6);
    assert!(!installed.deferred);
    let names = names(&fixture.registry);
    assert!(names.contains(&"mcp__hostile__echo".to_owned()));
    assert!(!names.iter().any(|n| n.contains("bad_schema")), "{names:?}");
}

#[tokio::test]
async fn two_hundred_tools_are_deferred_behind_a_one_line_catalog_and_loaded_on_demand() {
    let hub = hub("many", InProcess::new(200), |_| {}).await;
    let fixture = fixture(PermissionMode::Full);
    // 5 % of a 128k window's input budget.
    let budget = pith_core::ContextBudget::for_window(128_000).input_budget * 5 / 100;
    let installed = install(&hub, &fixture, budget).await;
    assert!(installed.deferred, "{installed:?}");
    assert_eq!(installed.tools, 206);
    let definitions = fixture.registry.definitions();
    assert_eq!(names(&fixture.registry), [LOAD_TOOL]);
    let catalog = &definitions[0].description;
    assert_eq!(
        catalog.lines().filter(|l| l.starts_with("- mcp__")).count(),
        206
    );
    assert!(catalog.contains("- mcp__many__echo: Echoes the text back."));
    let catalog_tokens = pith_core::tokens::count_tools(&counter(), &definitions);
    eprintln!(
        "200 tools: {} definition tokens in full, {catalog_tokens} deferred (catalog)",
        installed.definition_tokens
    );
    assert!(catalog_tokens * 2 < installed.definition_tokens);

    let before = fixture.registry.definitions();
    let loaded = call(
        &fixture.registry,
        LOAD_TOOL,
        json!({"names": ["mcp__many__tool_007", "mcp__many__nope"]}),
    )
    .await;
    assert!(!loaded.is_error, "{}", loaded.content);
    assert!(loaded.content.contains("Loaded mcp__many__tool_007"));
    assert!(loaded.content.contains("Unknown: mcp__many__nope"));
    let after = fixture.registry.definitions();
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the cached prefix survives"
    );
    assert_eq!(after.len(), 2);
    assert_eq!(after[1].name, "mcp__many__tool_007");
    // A deferred tool called directly runs, and is loaded for the next request.
    let direct = call(&fixture.registry, "mcp__many__tool_123", json!({})).await;
    assert_eq!(direct.content, "tool_123 ran");
    assert_eq!(names(&fixture.registry).len(), 3);
}

#[tokio::test]
async fn an_error_result_and_an_image_reach_the_model_as_text() {
    let hub = hub("hostile", InProcess::new(0), |_| {}).await;
    let fixture = fixture(PermissionMode::Full);
    install(&hub, &fixture, u64::MAX).await;
    let failed = call(&fixture.registry, "mcp__hostile__fail", json!({})).await;
    assert!(failed.is_error);
    assert_eq!(failed.content, "the city is unknown");
    let image = call(&fixture.registry, "mcp__hostile__image", json!({})).await;
    assert!(!image.is_error);
    assert!(
        image
            .content
            .starts_with("[image image/png, 70 B: not shown"),
        "{}",
        image.content
    );
}

#[tokio::test]
async fn read_only_mode_runs_only_tools_the_server_marks_read_only() {
    let connector = InProcess::new(0);
    let calls = connector.calls.clone();
    let hub = hub("hostile", connector, |_| {}).await;
    let fixture = fixture(PermissionMode::ReadOnly);
    install(&hub, &fixture, u64::MAX).await;
    let echo = call(
        &fixture.registry,
        "mcp__hostile__echo",
        json!({"text": "ok"}),
    )
    .await;
    assert_eq!(echo.content, "ok");
    let refused = call(&fixture.registry, "mcp__hostile__fail", json!({})).await;
    assert!(refused.is_error);
    assert!(
        refused.content.contains("not marked read-only"),
        "{}",
        refused.content
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the refused call never reached the server"
    );
    let headless_ask = self::fixture(PermissionMode::Ask);
    install(&hub, &headless_ask, u64::MAX).await;
    let asked = call(
        &headless_ask.registry,
        "mcp__hostile__echo",
        json!({"text": "x"}),
    )
    .await;
    assert!(
        asked.content.contains("needs the user's approval"),
        "{}",
        asked.content
    );
}

#[tokio::test]
async fn garbage_instead_of_a_result_is_named_in_the_error() {
    let hub = hub("garbage", Garbage { bad_list: false }, |c| {
        c.tool_timeout = Duration::from_millis(400)
    })
    .await;
    let fixture = fixture(PermissionMode::Full);
    install(&hub, &fixture, u64::MAX).await;
    let result = call(&fixture.registry, "mcp__garbage__ask", json!({})).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("1 line(s) that are not JSON-RPC")
            && result.content.contains("this is not JSON-RPC {"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn a_tool_list_that_is_not_valid_mcp_fails_the_start_up_and_says_why() {
    let hub = hub("badlist", Garbage { bad_list: true }, |c| {
        c.startup_timeout = Duration::from_millis(600)
    })
    .await;
    let notices = hub.take_notices().await.join("\n");
    assert!(
        notices.contains(
            "`badlist` failed to start: its answer to tools/list is not a valid MCP tool list."
        ),
        "{notices}"
    );
}

fn process_hub(configs: Vec<ServerConfig>) -> McpHub {
    McpHub::start(
        configs,
        Arc::new(|_: &str| None),
        &std::env::temp_dir(),
        vec!["KEY".into()],
    )
}

#[tokio::test]
async fn servers_that_cannot_start_are_reported_and_offer_nothing() {
    let mut hanging = ServerConfig::stdio("sleepy", "sleep", &["30"]);
    hanging.startup_timeout = Duration::from_millis(500);
    let mut off = ServerConfig::stdio("off", "true", &[]);
    off.enabled = false;
    let hub = process_hub(vec![
        ServerConfig::stdio("missing", "/nonexistent/pith-no-such-server", &[]),
        ServerConfig::stdio("dies", "sh", &["-c", "echo 'boom: bad config' >&2; exit 3"]),
        hanging,
        off,
    ]);
    tokio::time::timeout(Duration::from_secs(20), hub.wait_started())
        .await
        .expect("start-up is bounded");
    let notices = hub.take_notices().await.join("\n");
    assert!(notices.contains("`missing` failed to start: cannot start `/nonexistent/pith-no-such-server`: no such program"), "{notices}");
    assert!(
        notices.contains("`dies` failed to start") && notices.contains("boom: bad config"),
        "{notices}"
    );
    assert!(
        notices.contains("`sleepy` failed to start: it did not start within 0.5 s"),
        "{notices}"
    );
    let reports = hub.report(&counter()).await;
    assert_eq!(reports[3].status, Status::Disabled);
    assert!(reports.iter().all(|r| r.tools == 0));
    let fixture = fixture(PermissionMode::Full);
    assert_eq!(install(&hub, &fixture, u64::MAX).await.tools, 0);
    assert!(fixture.registry.definitions().is_empty());
}
