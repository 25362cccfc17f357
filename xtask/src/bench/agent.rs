//! The agent end to end: loop overhead per tool turn (the real `AgentLoop` with the Anthropic adapter
//! against the testkit server at zero latency), peak RSS of a 500-turn `pith run`, and `pith run`
//! until its first request reaches the server (with and without MCP servers; the start-up
//! and memory section itself is [`super::startup`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use async_trait::async_trait;
use pith_core::{
    BpeCounter, ContextBudget, Encoding, InMemory, Message, RequestEstimator, Tool, ToolContext,
    ToolError, ToolOutput, ToolRegistry,
};
use pith_providers::wire::anthropic::Anthropic;
use pith_providers::{AgentLoop, LoopOptions};
use pith_testkit::{Script, TestServer, Turn, UsageMode};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::stats::Spread;

/// The model `pith run` is pointed at (the testkit answers whatever the model).
/// Anthropic rather than OpenAI: the OpenAI adapters of this build panic when they are the
/// first HTTP client of the process (reqwest is built before the rustls provider is
/// installed), which the integrator was told about.
pub const MODEL: &str = "anthropic/claude-sonnet-4-5";

/// How the bench's testkit servers report usage: not at all. An honest server counts every
/// request's tokens with pith's tokenizer, which grows with the history and runs on this
/// machine: the 500-turn figures timed mostly the server's counting, not pith.
const UNTIMED_SERVER: UsageMode = UsageMode::None;

/// A trivial read-only tool: returns its `text` argument.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> &str {
        "Echo the text argument"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn run(&self, arguments: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::ok(
            arguments
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ))
    }
}

/// Seconds for one user turn of `tool_turns` tool turns (plus the final answer) through
/// the real loop, Anthropic adapter, against a fresh testkit server that reports no usage
/// ([`UNTIMED_SERVER`]).
async fn one_loop_run(tool_turns: usize) -> Result<f64> {
    let script = Script::anthropic(
        (0..tool_turns)
            .map(|i| Turn::tool_call("echo", json!({"text": format!("result {i}")})))
            .chain([Turn::text("done")]),
    )
    .with_usage_mode(UNTIMED_SERVER);
    let server = TestServer::start(script).map_err(|e| anyhow!("testkit: {e}"))?;
    let adapter = Arc::new(
        Anthropic::new(&server.base_url(), Some("sk-ant-bench"))
            .map_err(|e| anyhow!("adapter: {e}"))?,
    );
    let mut agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter,
        model: "bench-model".into(),
        budget: ContextBudget::for_window(200_000),
        system_prompt: "You are a benchmark.".into(),
        tools: ToolRegistry::new(vec![Arc::new(Echo)]),
        estimator: RequestEstimator::new(Arc::new(BpeCounter::new(Encoding::O200kBase))),
        options: LoopOptions::default(),
    });
    let (events, mut drain) = tokio::sync::mpsc::unbounded_channel();
    let drainer = tokio::spawn(async move { while drain.recv().await.is_some() {} });
    let start = Instant::now();
    let summary = agent
        .run_turn(
            Message::user("go"),
            &mut InMemory::new(events.clone()),
            &CancellationToken::new(),
        )
        .await
        .map_err(|f| anyhow!("loop failed: {}", f.error))?;
    let seconds = start.elapsed().as_secs_f64();
    drop(events);
    let _ = drainer.await;
    if summary.tool_calls as usize != tool_turns {
        bail!(
            "ran {} tool calls, expected {tool_turns}",
            summary.tool_calls
        );
    }
    Ok(seconds)
}

/// Milliseconds per tool turn over `runs` runs of `tool_turns` turns.
pub fn loop_overhead(tool_turns: usize, runs: usize) -> Result<Spread> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building a tokio runtime")?;
    let mut per_turn_ms = Vec::new();
    // One warm-up run (tokenizer load, connection pool).
    runtime.block_on(one_loop_run(5))?;
    for _ in 0..runs {
        let seconds = runtime.block_on(one_loop_run(tool_turns))?;
        per_turn_ms.push(seconds * 1e3 / (tool_turns as f64 + 1.0));
    }
    Spread::of(&per_turn_ms).context("no loop runs")
}

/// A hermetic `pith` command: its own home, config and sessions, keys for `server`.
pub fn pith(binary: &Path, home: &Path, server: Option<&TestServer>) -> Command {
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("PITH_HOME", home.join("pith-home"))
        .current_dir(home.join("work"));
    if let Some(server) = server {
        command
            .env("ANTHROPIC_API_KEY", "sk-ant-bench-key")
            .env("ANTHROPIC_BASE_URL", server.base_url());
    }
    command
}

/// A temporary home for one `pith` command: `work/` (one file, and `src/` with one file),
/// `config/`, `pith-home/`.
pub fn sandbox() -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir().context("creating a temp dir")?;
    for sub in ["work/src", "config", "pith-home"] {
        std::fs::create_dir_all(dir.path().join(sub))?;
    }
    std::fs::write(dir.path().join("work/notes.txt"), "remember the milk\n")?;
    std::fs::write(
        dir.path().join("work/src/lib.rs"),
        "pub fn answer() -> u32 { 42 }\n",
    )?;
    Ok(dir)
}

/// Waits for `child` and returns (exit status, peak RSS in KiB).
///
/// The peak is the child's own `VmHWM` from `/proc/<pid>/status`, polled every 5 ms until
/// it exits (the high-water mark only grows, so the last reading is the peak, short of
/// growth in its last few milliseconds). Not `wait4`'s `ru_maxrss`: the child is spawned
/// with `vfork` semantics, and Linux carries the parent's high-water mark into the child's
/// `maxrss` at `exec`, so that figure was xtask's own memory (corpus, criterion results)
/// whenever xtask was the larger process.
pub fn wait_with_peak_rss(mut child: std::process::Child) -> Result<(i32, u64)> {
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(peak) = std::fs::read_to_string(&status_path)
            .ok()
            .as_deref()
            .and_then(vm_hwm_kib)
        {
            peak_kib = peak_kib.max(peak);
        }
        if let Some(status) = child.try_wait().context("waiting for the child")? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ok((status.code().unwrap_or(-1), peak_kib))
}

/// The `VmHWM:` value (KiB) of a `/proc/<pid>/status` text.
fn vm_hwm_kib(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().strip_suffix("kB"))
        .and_then(|kib| kib.trim().parse().ok())
}

/// A `pith run` of `tool_turns` `ls` tool turns and a final answer ("list the files", JSON
/// output, stdout discarded) against a fresh testkit server: the server and the command.
/// The calls alternate between `work/` and `work/src/`: the same call twice in a row
/// would be a doom loop, which `pith run` stops at the sixth (`[doom_loop] stop_after`).
pub fn ls_session(binary: &Path, home: &Path, tool_turns: usize) -> Result<(TestServer, Command)> {
    let script = Script::anthropic(
        (0..tool_turns)
            .map(|turn| {
                let path = if turn % 2 == 0 { "." } else { "src" };
                Turn::tool_call("ls", json!({ "path": path }))
            })
            .chain([Turn::text("done")]),
    )
    .with_usage_mode(UNTIMED_SERVER);
    let server = TestServer::start(script).map_err(|e| anyhow!("testkit: {e}"))?;
    let mut command = pith(binary, home, Some(&server));
    command
        .args([
            "run",
            "--model",
            MODEL,
            "--format",
            "json",
            "list the files",
        ])
        .stdout(Stdio::null());
    Ok((server, command))
}

/// A 500-turn `pith run` (the `ls` tool, read-only approval): (milliseconds per tool
/// turn, peak RSS in MiB).
pub fn long_run(binary: &Path, tool_turns: usize) -> Result<(f64, f64)> {
    let home = sandbox()?;
    let (server, mut command) = ls_session(binary, home.path(), tool_turns)?;
    let stderr_path = home.path().join("stderr.txt");
    let start = Instant::now();
    let child = command
        .stderr(std::fs::File::create(&stderr_path)?)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let (code, rss_kib) = wait_with_peak_rss(child)?;
    let seconds = start.elapsed().as_secs_f64();
    if code != 0 {
        bail!(
            "pith run exited with {code}: {}",
            std::fs::read_to_string(&stderr_path).unwrap_or_default()
        );
    }
    if server.request_count() < tool_turns + 1 {
        bail!(
            "pith run sent {} requests, expected {}",
            server.request_count(),
            tool_turns + 1
        );
    }
    Ok((
        seconds * 1e3 / (tool_turns as f64 + 1.0),
        rss_kib as f64 / 1024.0,
    ))
}

/// `pith run` from spawn until its first request reaches the testkit server, ms.
pub fn run_startup(binary: &Path, runs: usize) -> Result<Spread> {
    run_startup_with(binary, runs, None)
}

/// [`run_startup`] with `config` as the user's config.toml (e.g. MCP servers, which the
/// first request waits for).
pub fn run_startup_with(binary: &Path, runs: usize, config: Option<&str>) -> Result<Spread> {
    let mut ms = Vec::new();
    for _ in 0..runs {
        let home = sandbox()?;
        if let Some(config) = config {
            std::fs::create_dir_all(home.path().join("config/pith"))?;
            std::fs::write(home.path().join("config/pith/config.toml"), config)?;
        }
        let server = TestServer::start(Script::anthropic([Turn::text("ok")]))
            .map_err(|e| anyhow!("testkit: {e}"))?;
        let start = Instant::now();
        let mut child = pith(binary, home.path(), Some(&server))
            .args(["run", "--model", MODEL, "hello"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting pith run")?;
        let arrived = server.wait_for_requests_blocking(1, Duration::from_secs(60));
        let elapsed = start.elapsed().as_secs_f64() * 1e3;
        let status = child.wait().context("waiting for pith run")?;
        arrived.map_err(|e| anyhow!("pith run sent no request: {e}"))?;
        if !status.success() {
            bail!("pith run failed ({status})");
        }
        ms.push(elapsed);
    }
    Spread::of(&ms).context("no runs")
}

/// A config.toml with two stdio MCP servers: the end-to-end tests' Python server
/// (standard library only), twice.
pub fn two_fixture_mcp_servers(root: &Path) -> String {
    let script = root.join("tests/fixtures/mcp_fake_server.py");
    let mut config = String::new();
    for name in ["first", "second"] {
        config.push_str(&format!(
            "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}]\n\n",
            script.display().to_string()
        ));
    }
    config
}

/// A config.toml with the two real servers `.ci/run` installs into `.cache/`
/// (`mcp-server-time`, `server-everything`), when both are there.
pub fn two_real_mcp_servers(root: &Path) -> Option<String> {
    let time = root.join(".cache/mcp/bin/mcp-server-time");
    let everything = root.join(".cache/mcp-npm/node_modules/.bin/mcp-server-everything");
    (time.is_file() && everything.is_file()).then(|| {
        format!(
            "[mcp_servers.time]\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\n\n\
             [mcp_servers.everything]\ncommand = {:?}\n",
            time.display().to_string(),
            everything.display().to_string()
        )
    })
}

/// The release `pith` binary under `target`.
pub fn pith_binary(target: &Path) -> PathBuf {
    target.join("release/pith")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bench_s_ls_session_runs_to_its_end_through_pith_run() {
        // More calls than `[doom_loop] stop_after` (6): the guard must not stop the bench.
        let home = sandbox().unwrap();
        let turns = 10;
        let (server, mut command) =
            ls_session(&crate::cargo::built_pith(), home.path(), turns).unwrap();
        let output = command.stderr(Stdio::piped()).output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(server.request_count(), turns + 1);
    }

    #[test]
    fn the_high_water_mark_is_read_from_proc_status() {
        let status = "Name:\tpith\nVmPeak:\t  200000 kB\nVmHWM:\t   81234 kB\nVmRSS:\t 80000 kB\n";
        assert_eq!(vm_hwm_kib(status), Some(81_234));
        assert_eq!(vm_hwm_kib("Name:\tzombie\nState:\tZ (zombie)\n"), None);
    }

    #[test]
    fn a_polled_child_is_measured_by_its_own_memory_not_the_parents() {
        // This test process holds 300 MiB; a child spawned from it reports its own peak.
        let ballast = vec![1u8; 300 << 20];
        let child = Command::new("sleep").arg("0.2").spawn().unwrap();
        let (code, peak_kib) = wait_with_peak_rss(child).unwrap();
        assert_eq!(code, 0);
        assert!(peak_kib > 0, "no reading");
        assert!(
            peak_kib < 100 << 10,
            "{peak_kib} KiB is the parent's memory"
        );
        drop(ballast);
    }
}
