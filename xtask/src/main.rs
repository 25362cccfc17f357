//! `cargo xtask` — developer automation for pith.
//!
//! `cargo xtask ci` runs exactly what `.ci/run` runs (fmt, clippy, the test suite).
//! Further tasks (eval, bench, crash, local-llm, demo, simulate) are added by the issues
//! that deliver them.

mod crash;
mod demo;
mod eval;
mod eval_core;
mod local_llm;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "pith developer automation")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Set up and start the local model (llama.cpp server with SmolLM2-135M) on 127.0.0.1.
    LocalLlm {
        /// Port to listen on.
        #[arg(long, default_value_t = local_llm::DEFAULT_PORT)]
        port: u16,
        /// Context size of the server (tokens).
        #[arg(long, default_value_t = local_llm::DEFAULT_CTX)]
        ctx: u32,
        /// Stop the server started earlier on that port.
        #[arg(long)]
        stop: bool,
    },
    /// A real headless job on the local model whose context fills up, so that an automatic
    /// compaction really happens; then the session's replay.
    Demo,
    /// Run the CI checks: cargo fmt --check, clippy -D warnings, the whole test suite.
    Ci,
    /// SIGKILL a session writer at random instants and check every transcript.
    Crash {
        /// Number of kill trials.
        #[arg(long, default_value_t = 1000)]
        trials: usize,
        /// Seed of the kill timings (printed by every run), to reproduce a failure.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Squash every tool result of real sessions and report savings and retention.
    Eval {
        /// Directory of sessions in the neutral JSONL format (default: the shared corpus,
        /// `../shared/corpus/sessions` next to the repository or to its worktree parent).
        #[arg(long)]
        sessions: Option<PathBuf>,
        /// Also write the report as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Ci => ci(),
        Task::LocalLlm { port, ctx, stop } => local_llm::run(port, ctx, stop),
        Task::Demo => demo::run(),
        Task::Crash { trials, seed } => crash::run(trials, seed),
        Task::Eval { sessions, json } => {
            let sessions = match sessions {
                Some(dir) => dir,
                None => eval::default_sessions_dir()?,
            };
            eval::run(&sessions, json.as_ref())
        }
    }
}

fn ci() -> Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "--workspace"])?;
    Ok(())
}

fn cargo(args: &[&str]) -> Result<()> {
    cargo_with_env(args, &[])
}

fn cargo_with_env(args: &[&str], envs: &[(&str, String)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(&cargo)
        .args(args)
        .envs(envs.iter().map(|(k, v)| (k, v)))
        .status()
        .with_context(|| format!("running {cargo} {}", args.join(" ")))?;
    if !status.success() {
        bail!("`cargo {}` failed ({status})", args.join(" "));
    }
    Ok(())
}
