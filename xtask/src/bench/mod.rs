//! `cargo xtask bench [--quick]`: measures pith side by side with the alternatives and
//! writes `docs/benchmarks.md`.
//!
//! - [`tokens`] — pith's counter vs Python tiktoken on the corpus text;
//! - [`squash`] — squash per family vs a head+tail truncation baseline;
//! - [`agent`] — loop overhead per tool turn, peak RSS of a 500-turn run, start-up with
//!   MCP servers;
//! - [`startup`] — start-up and memory of the binary: `--version`, `pith tokens`, the
//!   first request, a 40-turn session (optionally against a baseline build);
//! - [`criterion`] — runs and reads the crates' criterion benches (estimate, squash,
//!   session store, bash sandbox);
//! - [`sandbox`] — the bash sandbox's cost per command;
//! - [`checkpoint`] — the change tracker's and the checkpointer's cost per tool call;
//! - [`checkpoint_run`] — the same through `pith run`: a bash turn in a tiny, a
//!   60,000-file and this repository, checkpoints on and off; the first snapshot; the
//!   store after a 100-turn session;
//! - [`governor`] — the compaction stress suite's figures (compactions per 100 tool
//!   turns, wasted ones, the largest request) for servers that misbehave;
//! - [`report`] — the markdown.
//!
//! Every figure is min / median / max over runs of the same build in the same
//! invocation; ratios compare medians measured in that invocation.

pub mod agent;
pub mod checkpoint;
pub mod checkpoint_run;
pub mod criterion;
pub mod governor;
pub mod measurements;
pub mod report;
pub mod sandbox;
pub mod squash;
pub mod startup;
pub mod stats;
pub mod tokens;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use pith_core::{BpeCounter, Encoding};

use crate::corpus::{read_sessions, CorpusSession};
use crate::eval_core::samples_from_session;
use crate::simulate::{self, prices::PriceModel, SimOptions};
pub use measurements::Measurements;

/// Options of `cargo xtask bench`.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Fewer runs and shorter criterion measurements.
    pub quick: bool,
    /// Corpus sessions (default: the shared corpus; the vendored sample when missing).
    pub sessions: Option<PathBuf>,
    /// Where the report goes.
    pub output: PathBuf,
    /// Another `pith` binary measured alternately with this build in the start-up rows.
    pub baseline: Option<PathBuf>,
}

/// Policies the report compares: every peer's and pith's (`cargo xtask simulate`'s
/// default list).
pub const SIMULATED_POLICIES: &[&str] = &simulate::policy::DEFAULT_POLICIES;

/// The workspace root and the cargo target directory (`CARGO_TARGET_DIR` when set).
fn workspace_dirs() -> Result<(PathBuf, PathBuf)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has a parent directory")?
        .to_path_buf();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Ok((root, target))
}

/// Builds the release `pith` binary the start-up and long-run figures run.
fn build_release_pith() -> Result<()> {
    crate::cargo::cargo(&[
        "build",
        "--release",
        "--quiet",
        "-p",
        "pith",
        "--bin",
        "pith",
    ])
}

/// `--loop-only`: the agent-loop figures alone, printed.
pub fn run_loop_only(quick: bool) -> Result<()> {
    let (_, target) = workspace_dirs()?;
    let runs = if quick { 3 } else { 7 };
    build_release_pith()?;
    for turns in [100, 300, 500] {
        let spread = agent::loop_overhead(turns, runs)?;
        println!(
            "loop overhead, {turns}-turn session: median {:.3} ms per tool turn (min {:.3}, max {:.3})",
            spread.median, spread.min, spread.max
        );
    }
    let (per_turn_ms, rss_mib) = agent::long_run(&agent::pith_binary(&target), 500)?;
    println!("pith run, 500 turns: {per_turn_ms:.3} ms per tool turn, peak RSS {rss_mib:.1} MiB");
    Ok(())
}

/// `cargo xtask bench --startup-only`: the start-up and memory section (against
/// `baseline` too when given), then `pith run` until its first request with two stdio MCP
/// servers (the tests' Python server twice) and, when `.ci/run` has installed them, with
/// `mcp-server-time` and `server-everything`. Printed only.
pub fn run_startup_only(
    quick: bool,
    sessions: Option<&Path>,
    baseline: Option<&Path>,
) -> Result<()> {
    let (root, target) = workspace_dirs()?;
    let runs = if quick { 5 } else { 15 };
    build_release_pith()?;
    let binary = agent::pith_binary(&target);
    let (corpus, _) = load_corpus(sessions, &root)?;
    let section = startup::measure(&binary, baseline, &tokens::documents(&corpus), runs)?;
    print!("{}", startup::section(&section));
    for row in startup::target_rows(&section) {
        println!("{row}");
    }
    let show = |label: &str, spread: stats::Spread| {
        println!(
            "{label}: median {:.1} ms (min {:.1}, max {:.1}, {runs} runs)",
            spread.median, spread.min, spread.max
        );
    };
    show(
        "pith run to first request, two stdio MCP servers (Python fixture)",
        agent::run_startup_with(&binary, runs, Some(&agent::two_fixture_mcp_servers(&root)))?,
    );
    match agent::two_real_mcp_servers(&root) {
        Some(config) => show(
            "pith run to first request, mcp-server-time + server-everything",
            agent::run_startup_with(&binary, runs, Some(&config))?,
        ),
        None => println!("(mcp-server-time / server-everything not installed in .cache/: skipped)"),
    }
    Ok(())
}

/// `cargo xtask bench --checkpoints-only`: the bash-turn figures through `pith run`
/// ([`checkpoint_run`]), printed as the report's target rows and part; the report is not
/// written.
pub fn run_checkpoints_only(quick: bool) -> Result<()> {
    let (root, target) = workspace_dirs()?;
    let (runs, cold_runs) = checkpoint_runs(quick);
    build_release_pith()?;
    let section = checkpoint_run::measure(&agent::pith_binary(&target), &root, runs, cold_runs)?;
    for row in checkpoint_run::target_rows(&section) {
        println!("{row}");
    }
    print!("{}", checkpoint_run::section(&section, true));
    Ok(())
}

/// (per-turn jobs, first-snapshot jobs) per workspace and mode of [`checkpoint_run`].
fn checkpoint_runs(quick: bool) -> (usize, usize) {
    if quick {
        (3, 2)
    } else {
        (7, 3)
    }
}

/// `--squash-only`: the squash figures alone — the criterion squash bench and squash per
/// family against the truncation baseline on the corpus — printed as the report's
/// section; the report is not written.
pub fn run_squash_only(quick: bool, sessions: Option<&Path>) -> Result<()> {
    let (root, target) = workspace_dirs()?;
    let runs = if quick { 3 } else { 7 };
    criterion::run_bench("pith-core", "squash", quick)?;
    let criterion_results = criterion::read_group(&target, "squash")?;
    let (_, corpus_dir) = load_corpus(sessions, &root)?;
    let mut samples = Vec::new();
    for file in crate::corpus::session_files(&corpus_dir)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        samples.extend(samples_from_session(&text).0);
    }
    let counter = BpeCounter::new(Encoding::O200kBase);
    let rows = squash::measure(&samples, runs, &counter);
    let mut out = String::new();
    report::write_squash(&mut out, &rows, &criterion_results);
    print!("{out}");
    Ok(())
}

/// `--tokens-only`: token counting on the corpus against Python tiktoken, printed as the
/// report's target row and section; the report is not written.
pub fn run_tokens_only(quick: bool, sessions: Option<&Path>) -> Result<()> {
    let (root, _) = workspace_dirs()?;
    let runs = if quick { 3 } else { 7 };
    let (sessions, _) = load_corpus(sessions, &root)?;
    let section = tokens::measure(&tokens::documents(&sessions), runs, &root.join(".cache"))?;
    let mut out = String::new();
    report::write_tokens(&mut out, &section);
    println!("{}", report::token_target_row(&section));
    print!("{out}");
    Ok(())
}

/// Runs everything and writes the report.
pub fn run(options: &BenchOptions) -> Result<()> {
    let (root, target) = workspace_dirs()?;
    let cache = root.join(".cache");
    let runs = if options.quick { 3 } else { 7 };

    eprintln!("bench: building the release pith binary");
    build_release_pith()?;
    for (package, bench) in [
        ("pith-core", "estimate"),
        ("pith-core", "squash"),
        ("pith-session", "store"),
        ("pith-tools", "sandbox"),
        ("pith-checkpoint", "checkpoint"),
    ] {
        eprintln!("bench: cargo bench -p {package} --bench {bench}");
        criterion::run_bench(package, bench, options.quick)?;
    }
    let mut criterion_results = Vec::new();
    for group in [
        "estimate_200k_tokens",
        "squash",
        "append",
        "append_batch",
        "replay",
        sandbox::GROUP,
        checkpoint::GROUP,
    ] {
        criterion_results.extend(criterion::read_group(&target, group)?);
    }

    let (sessions, corpus_dir) = load_corpus(options.sessions.as_deref(), &root)?;
    let corpus = format!(
        "{} sessions from `{}`",
        sessions.len(),
        display_relative(&corpus_dir, &root)
    );
    eprintln!("bench: token counting on {corpus}");
    let docs = tokens::documents(&sessions);
    let tokens = tokens::measure(&docs, runs, &cache)?;

    eprintln!("bench: squash per family");
    let counter = BpeCounter::new(Encoding::O200kBase);
    let mut samples = Vec::new();
    for file in crate::corpus::session_files(&corpus_dir)? {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("reading {}", file.display()))?;
        samples.extend(samples_from_session(&text).0);
    }
    let squash = squash::measure(&samples, runs, &counter);

    eprintln!("bench: agent loop, long run, start-up");
    let mut loop_ms = Vec::new();
    for turns in [100, 300] {
        loop_ms.push((turns, agent::loop_overhead(turns, runs)?));
    }
    let binary = agent::pith_binary(&target);
    let long_run_turns = 500;
    let long_run = agent::long_run(&binary, long_run_turns)?;
    let startup = startup::measure(&binary, options.baseline.as_deref(), &docs, runs)?;
    let first_request_mcp_ms =
        agent::run_startup_with(&binary, runs, Some(&agent::two_fixture_mcp_servers(&root)))?;

    eprintln!("bench: checkpoints through pith run");
    let (checkpoint_jobs, cold_jobs) = checkpoint_runs(options.quick);
    let checkpoint_run = checkpoint_run::measure(&binary, &root, checkpoint_jobs, cold_jobs)?;

    eprintln!("bench: the compaction stress suite");
    let governor = governor::measure(&root)?;

    eprintln!("bench: simulator");
    let simulation = simulate::simulate(
        &sessions,
        &SimOptions {
            windows: vec![32_768, 128_000],
            policies: SIMULATED_POLICIES.iter().map(|p| (*p).to_owned()).collect(),
            summary_tokens: 2_000,
            ledger_summary_tokens: None,
            prices: PriceModel::anthropic(),
            day: 1,
            fidelity: false,
        },
    )?;

    let measurements = Measurements {
        corpus,
        tokens,
        squash,
        criterion: criterion_results,
        loop_ms,
        long_run,
        long_run_turns,
        startup,
        first_request_mcp_ms,
        checkpoint_run: Some(checkpoint_run),
        simulated_sessions: sessions.len(),
        simulation,
        governor,
    };
    let header = report::Header::collect(&root, options.quick);
    let previous = std::fs::read_to_string(&options.output).unwrap_or_default();
    let text = report::render(&header, &measurements, &previous);
    std::fs::write(&options.output, text)
        .with_context(|| format!("writing {}", options.output.display()))?;
    eprintln!("bench: wrote {}", options.output.display());
    Ok(())
}

/// `cargo xtask bench --governor-only`: the stress suite's table, printed.
pub fn run_governor_only() -> Result<()> {
    let (root, _) = workspace_dirs()?;
    let rows = governor::measure(&root)?;
    println!("{}", governor::table(&rows));
    Ok(())
}

fn load_corpus(dir: Option<&Path>, root: &Path) -> Result<(Vec<CorpusSession>, PathBuf)> {
    let shared = match dir {
        Some(dir) => Some(dir.to_path_buf()),
        None => crate::eval::default_sessions_dir().ok(),
    };
    let dir = match shared {
        Some(dir) if dir.is_dir() => dir,
        other => {
            let sample = root.join("crates/core/tests/data/corpus-sample");
            eprintln!(
                "bench: no corpus at {}; using the vendored sample {}",
                other.map_or("the default places".to_owned(), |d| d.display().to_string()),
                sample.display()
            );
            sample
        }
    };
    Ok((read_sessions(&dir)?, dir))
}

fn display_relative(path: &Path, root: &Path) -> String {
    let absolute = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match absolute.strip_prefix(&root) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => absolute.display().to_string(),
    }
}
