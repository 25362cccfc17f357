//! `cargo xtask` — developer automation for pith.
//!
//! `cargo xtask ci` runs `.ci/run` (fmt, clippy, the test suite, the tests that need real
//! programs and servers).
//! `bench` and `simulate` re-run themselves in a release build. Further tasks are added by the issues
//! that deliver them.
#![forbid(unsafe_code)]
// A developer tool: it reports on stdout and stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod arch;
mod bench;
mod cargo;
mod corpus;
mod crash;
mod demo;
mod eval;
mod eval_core;
mod fidelity;
mod local_llm;
mod simulate;
mod split;

use std::path::{Path, PathBuf};
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
    /// Check the workspace against docs/architecture.md: no crate depends on one above
    /// it, the dependency list matches Cargo.toml, no import circle inside a crate.
    Arch,
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
    /// A real headless session on the local model, compacted twice through it; then what
    /// the model received after each compaction, with the decisions of part 1 ticked.
    Demo {
        /// Use the `pith` already in the target directory instead of building it.
        #[arg(long)]
        no_build: bool,
    },
    /// Run the CI checks (.ci/run): fmt, clippy, the test suite, the real-server tests.
    Ci,
    /// Measure pith side by side with the alternatives and write docs/benchmarks.md.
    Bench(BenchArgs),
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
        /// Also list this family's outputs (e.g. `grep/find`), most tokens left first.
        #[arg(long)]
        list: Option<String>,
        /// With --list: show the probe items each output of the tuning half lost.
        #[arg(long, requires = "list")]
        missed: bool,
    },
    /// Probe what survives each compaction (user messages, files, reads, failing tests,
    /// errors) for pith's session ledger and the keen and codex replacements.
    Fidelity {
        /// Directory of sessions in the neutral JSONL format (default: the shared corpus).
        #[arg(long)]
        sessions: Option<PathBuf>,
        /// Context window in tokens (repeat for several).
        #[arg(long = "window", required = true)]
        windows: Vec<u64>,
        /// Write pith's view after each compaction here, one text file per compaction.
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Also write the rows as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Print what pith's views lost, for sessions of the tuning half only.
        #[arg(long)]
        missed: bool,
    },
    /// Replay real sessions through context policies at a window; compare cost and compactions.
    Simulate(SimulateArgs),
}

/// `cargo xtask bench`'s options.
#[derive(clap::Args)]
struct BenchArgs {
    /// Fewer runs and shorter criterion measurements (a couple of minutes).
    #[arg(long)]
    quick: bool,
    /// Directory of corpus sessions (default: the shared corpus, as for `eval`; the
    /// vendored sample when there is none).
    #[arg(long)]
    sessions: Option<PathBuf>,
    /// The report to write.
    #[arg(long, default_value = "docs/benchmarks.md")]
    output: PathBuf,
    /// Only measure the agent loop (per-turn overhead, the 500-turn `pith run`) and
    /// print it; the report is not written. For iterating on the loop's cost.
    #[arg(long)]
    loop_only: bool,
    /// Only measure `pith run` until its first request, without and with MCP servers,
    /// and print it; the report is not written.
    #[arg(long)]
    startup_only: bool,
    /// Only measure squash (the criterion squash bench and squash per family on the
    /// corpus) and print it; the report is not written.
    #[arg(long, conflicts_with_all = ["loop_only", "startup_only"])]
    squash_only: bool,
    /// Only run the compaction stress suite and print its table (LLM compactions and
    /// wasted ones per 100 tool turns, the largest request per scenario); the report is
    /// not written.
    #[arg(long, conflicts_with_all = ["loop_only", "startup_only", "squash_only"])]
    governor_only: bool,
    /// Only measure token counting against Python tiktoken on the corpus and print
    /// it; the report is not written.
    #[arg(long, conflicts_with_all = ["loop_only", "startup_only", "squash_only", "governor_only"])]
    tokens_only: bool,
    /// Only measure what checkpoints and the change tracker cost a bash turn through
    /// `pith run` (tiny, 60,000-file, 100,000-file and this repository; the first
    /// snapshot; 100,000 files outside git; the store after a 100-turn session) and print
    /// it; the report is not written.
    #[arg(long, conflicts_with_all = ["loop_only", "startup_only", "squash_only", "governor_only", "tokens_only"])]
    checkpoints_only: bool,
    /// Another build of `pith` (e.g. `main`'s release binary) to measure alternately
    /// with this one in the start-up and memory rows.
    #[arg(long)]
    baseline: Option<PathBuf>,
}

/// `cargo xtask simulate`'s options.
#[derive(clap::Args)]
struct SimulateArgs {
    /// Directory of sessions in the neutral JSONL format (default: the shared corpus,
    /// as for `eval`).
    #[arg(long)]
    sessions: Option<PathBuf>,
    /// Context window in tokens (repeat for several).
    #[arg(long = "window", required = true)]
    windows: Vec<u64>,
    /// Policy: keen, claude-code[:files=N,budget=T] (the files it re-attaches after a
    /// compaction: 5, within 50,000 tokens and a quarter of the window), codex, opencode,
    /// gemini-cli, masking[:keep=M], zesdex, pith or pith:ws=T,mprotect=P,mbatch=P,cold=0|1,micro=P,protect=T,minimum=T,turns=N,prepare=P,summary=R,tail=P
    /// (summary=R: summaries on another model at R times the prices, without the cache;
    /// tail=P, an experiment: compaction without an LLM call, keeping the newest P% verbatim)
    /// (repeat; default: every peer, then pith).
    #[arg(long = "policy")]
    policies: Vec<String>,
    /// Prices and prompt cache of a provider family: anthropic, anthropic-1h (its 1-hour
    /// cache), openai or gemini.
    #[arg(long, default_value = "anthropic")]
    prices: String,
    /// Join this many corpus sessions (one repository where possible) into one day
    /// of work with that many user turns.
    #[arg(long, default_value_t = 1)]
    day: usize,
    /// Skip the fidelity probes (faster).
    #[arg(long)]
    no_fidelity: bool,
    /// Tokens of the deterministic stand-in for an LLM summary.
    #[arg(long, default_value_t = 2000)]
    summary_tokens: usize,
    /// Tokens of the stand-in summary written next to a session ledger (its prompt
    /// asks for at most 750 words; default: 1000, or --summary-tokens if smaller).
    #[arg(long)]
    ledger_summary_tokens: Option<usize>,
    /// How to print the rows: markdown or json (one object per line).
    #[arg(long, value_enum, default_value = "markdown")]
    format: simulate::Format,
    /// Also write the rows as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn main() -> Result<()> {
    match Cli::parse().task {
        Task::Ci => ci(),
        Task::LocalLlm { port, ctx, stop } => local_llm::run(port, ctx, stop),
        Task::Demo { no_build } => demo::run(if no_build {
            demo::Build::No
        } else {
            demo::Build::Yes
        }),
        Task::Bench(args) => bench_task(args),
        Task::Arch => arch::run(&cargo::workspace_root()),
        Task::Crash { trials, seed } => crash::run(trials, seed),
        Task::Eval {
            sessions,
            json,
            list,
            missed,
        } => {
            let sessions = match sessions {
                Some(dir) => dir,
                None => eval::default_sessions_dir()?,
            };
            eval::run(&sessions, json.as_ref(), list.as_deref(), missed)
        }
        Task::Fidelity {
            sessions,
            windows,
            dump,
            json,
            missed,
        } => {
            if rerun_in_release()? {
                return Ok(());
            }
            let sessions = match sessions {
                Some(dir) => dir,
                None => eval::default_sessions_dir()?,
            };
            fidelity::run(&fidelity::FidelityOptions {
                sessions,
                windows,
                dump,
                json,
                missed,
            })
        }
        Task::Simulate(args) => simulate_task(args),
    }
}

/// `cargo xtask bench`: one part alone, or everything into the report.
fn bench_task(args: BenchArgs) -> Result<()> {
    let BenchArgs {
        quick,
        sessions,
        output,
        loop_only,
        startup_only,
        squash_only,
        governor_only,
        tokens_only,
        checkpoints_only,
        baseline,
    } = args;
    if governor_only {
        return bench::run_governor_only();
    }
    if rerun_in_release()? {
        return Ok(());
    }
    if loop_only {
        return bench::run_loop_only(quick);
    }
    if startup_only {
        return bench::run_startup_only(quick, sessions.as_deref(), baseline.as_deref());
    }
    if tokens_only {
        return bench::run_tokens_only(quick, sessions.as_deref());
    }
    if checkpoints_only {
        return bench::run_checkpoints_only(quick);
    }
    if squash_only {
        return bench::run_squash_only(quick, sessions.as_deref());
    }
    bench::run(&bench::BenchOptions {
        quick,
        sessions,
        output,
        baseline,
    })
}

/// `cargo xtask simulate`: the corpus through each policy at each window.
fn simulate_task(args: SimulateArgs) -> Result<()> {
    let SimulateArgs {
        sessions,
        windows,
        policies,
        prices,
        day,
        no_fidelity,
        summary_tokens,
        ledger_summary_tokens,
        format,
        json,
    } = args;
    if rerun_in_release()? {
        return Ok(());
    }
    let policies = if policies.is_empty() {
        simulate::policy::DEFAULT_POLICIES
            .iter()
            .map(|p| (*p).to_owned())
            .collect()
    } else {
        policies
    };
    let options = simulate::SimOptions {
        windows,
        policies,
        summary_tokens,
        ledger_summary_tokens,
        prices: simulate::prices::PriceModel::parse(&prices)?,
        day,
        fidelity: !no_fidelity,
    };
    let sessions = match sessions {
        Some(dir) => dir,
        None => eval::default_sessions_dir()?,
    };
    simulate::run(&sessions, &options, format, json.as_ref())
}

/// Heavy tasks (bench, simulate) run in a release build of xtask: the tokenizer and the
/// squashers are about ten times slower unoptimised. Returns true when the task was
/// re-run in release (set `PITH_XTASK_DEBUG=1` to stay in the debug build).
fn rerun_in_release() -> Result<bool> {
    if !cfg!(debug_assertions) || std::env::var_os("PITH_XTASK_DEBUG").is_some() {
        return Ok(false);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cargo_args = vec!["run", "--release", "--quiet", "--package", "xtask", "--"];
    cargo_args.extend(args.iter().map(String::as_str));
    cargo::cargo(&cargo_args)?;
    Ok(true)
}

/// Runs `.ci/run` itself, so the two can never drift apart.
fn ci() -> Result<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(".ci")
        .join("run");
    let status = Command::new("bash")
        .arg(&script)
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !status.success() {
        bail!("{} failed ({status})", script.display());
    }
    Ok(())
}
