//! `cargo xtask demo`: pith's main job, end to end, on a real model, offline.
//!
//! Starts a private llama.cpp server with SmolLM2-135M (installing it first if needed),
//! then runs two real headless jobs in a scratch workspace with a small context window:
//! the first reads a long design document into the conversation, the second asks about
//! it — by then the history crosses the automatic threshold, so pith compacts it through
//! the real model before answering. Finally it prints `pith replay` of the session.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::local_llm::{self, Cache, MODEL_ALIAS};

/// Port of the demo's own server (the default local port stays free for the user's).
const DEMO_PORT: u16 = 8078;
/// Context size of the demo server.
const DEMO_SERVER_CTX: u32 = 8192;
/// The window pith is told to work with: small, so a few thousand tokens fill it.
const DEMO_WINDOW: u64 = 8192;

/// Runs the demo.
pub fn run() -> Result<()> {
    let root = local_llm::repo_root()?;
    let cache = Cache::new()?;
    let already_running = local_llm::models_answer(DEMO_PORT);
    let server = local_llm::ensure_running(&cache, DEMO_PORT, DEMO_SERVER_CTX)?;
    let outcome = demo(&root, &server.base_url);
    if !already_running {
        local_llm::run(DEMO_PORT, DEMO_SERVER_CTX, true)?;
    }
    outcome
}

fn demo(root: &Path, base_url: &str) -> Result<()> {
    eprintln!("demo: building pith");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "--bin", "pith"])
        .current_dir(root)
        .status()
        .context("cargo build")?;
    if !status.success() {
        bail!("building pith failed");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let pith = target.join("debug").join("pith");
    let scratch = root.join(".cache").join("demo");
    let _ = std::fs::remove_dir_all(&scratch);
    let work = scratch.join("work");
    std::fs::create_dir_all(&work)?;
    std::fs::write(work.join("DESIGN.md"), design_document())?;

    let job = |args: &[&str]| -> Result<Value> {
        let output = pith_command(&pith, &scratch, &work, base_url)
            .args(args)
            .output()
            .context("running pith")?;
        report(&output)
    };
    let window = DEMO_WINDOW.to_string();
    let model = format!("local/{MODEL_ALIAS}");

    // 1. Part one of the document: the history grows to most of the input budget.
    let first_prompt = format!(
        "Here is part 1 of our design document. Read it; more follows.\n\n{}",
        design_document()
    );
    println!("$ pith run --model {model} --context-window {window} \"Here is part 1 of our design document…\"");
    let first = job(&[
        "run",
        "--model",
        &model,
        "--context-window",
        &window,
        "--format",
        "json",
        &first_prompt,
    ])?;
    let session = first["session_id"]
        .as_str()
        .context("no session id in pith's result")?
        .to_owned();
    println!("{}\n", first["text"].as_str().unwrap_or_default().trim());

    // 2. Part two: before answering, the history crosses the automatic threshold, so pith
    //    compacts it through the model and keeps this message verbatim.
    let second_prompt = format!(
        "Here is part 2, the review meeting notes.\n\n{}",
        meeting_notes()
    );
    println!("$ pith run --session {session} --context-window {window} \"Here is part 2, the review meeting notes…\"");
    let second = job(&[
        "run",
        "--session",
        &session,
        "--context-window",
        &window,
        "--format",
        "json",
        &second_prompt,
    ])?;
    println!("{}\n", second["text"].as_str().unwrap_or_default().trim());

    // 3. A question about part 1, answered from the compacted history.
    let question = "Which storage engine did we choose, and why?";
    println!("$ pith run --session {session} --context-window {window} \"{question}\"");
    let third = job(&[
        "run",
        "--session",
        &session,
        "--context-window",
        &window,
        "--format",
        "json",
        question,
    ])?;
    println!("{}\n", third["text"].as_str().unwrap_or_default().trim());

    let compactions: Vec<Value> = [&first, &second, &third]
        .iter()
        .flat_map(|result| {
            result["compactions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    if compactions.is_empty() {
        bail!("no automatic compaction happened; the demo's window ({window}) is too large for its documents");
    }
    for compaction in &compactions {
        println!(
            "automatic compaction ({}): {} → {} tokens (estimated)",
            compaction["trigger"].as_str().unwrap_or("?"),
            compaction["tokens_before"],
            compaction["tokens_after"]
        );
    }

    println!("\n$ pith replay {session}");
    let replay = pith_command(&pith, &scratch, &work, base_url)
        .args(["replay", &session])
        .output()?;
    print!("{}", String::from_utf8_lossy(&replay.stdout));
    if !replay.status.success() {
        bail!(
            "pith replay failed: {}",
            String::from_utf8_lossy(&replay.stderr)
        );
    }
    println!(
        "\ndemo: the session is in {}",
        scratch.join("home").display()
    );
    Ok(())
}

fn pith_command(pith: &Path, scratch: &Path, work: &Path, base_url: &str) -> Command {
    let mut command = Command::new(pith);
    command
        .current_dir(work)
        .env("PITH_HOME", scratch.join("home"))
        .env("XDG_CONFIG_HOME", scratch.join("config"))
        .env("PITH_LOCAL_BASE_URL", base_url)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY");
    command
}

fn report(output: &Output) -> Result<Value> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.trim().is_empty() {
        eprint!("{stderr}");
    }
    let value: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "pith printed no JSON result (exit {:?})",
            output.status.code()
        )
    })?;
    if !output.status.success() {
        bail!("pith failed: {}", value["error"]);
    }
    Ok(value)
}

/// Meeting notes of about a thousand tokens.
fn meeting_notes() -> String {
    let mut notes = String::from("# Review meeting notes\n\n");
    let items = [
        (
            "Alice",
            "will benchmark the WAL checkpoint interval under the nightly import load",
        ),
        (
            "Bob",
            "will write the runbook for restoring a snapshot onto a fresh host",
        ),
        (
            "Chen",
            "will add the kind-string registry to the schema repository",
        ),
        (
            "Dana",
            "will review the gateway's token lifetime with the security team",
        ),
    ];
    for round in 1..=3 {
        notes.push_str(&format!("## Action items, pass {round}\n\n"));
        for (who, what) in items {
            notes.push_str(&format!(
                "- {who} {what}, and report back at the next review with measurements, risks and a recommendation.\n"
            ));
        }
        notes.push_str("\nEveryone agreed that decisions recorded in the design document stand unless new measurements contradict them.\n\n");
    }
    notes
}

/// A deterministic design document of about two thousand tokens.
fn design_document() -> String {
    let mut doc = String::from("# Design: the event store\n\n");
    let decisions = [
        ("Storage engine", "We chose SQLite in WAL mode over RocksDB because the team already operates it, backups are a single file, and our write rate (about 200 events per second) is far below its limits."),
        ("Event schema", "Every event carries a version number, a timestamp in UTC and a stable kind string; consumers must ignore kinds they do not know."),
        ("Retention", "Raw events are kept for 90 days; daily aggregates are kept forever."),
        ("Compaction", "Snapshots are taken every 10,000 events so that replay never reads more than that."),
        ("Access control", "Writers authenticate with mutual TLS; readers use short-lived tokens issued by the gateway."),
        ("Observability", "Every write path exports latency histograms and error counters; alerts fire on p99 above 50 ms."),
    ];
    for (round, _) in (0..4).enumerate() {
        for (i, (title, body)) in decisions.iter().enumerate() {
            doc.push_str(&format!("## {}.{} {title}\n\n{body} ", round + 1, i + 1));
            doc.push_str("The alternatives were discussed at length in the review meeting, including their operational cost, the migration path from the current system, and the failure modes we observed in the previous quarter. ");
            doc.push_str(
                "Open questions are tracked in the project board and revisited every sprint.\n\n",
            );
        }
    }
    doc
}
