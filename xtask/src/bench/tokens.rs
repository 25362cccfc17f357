//! Token counting side by side: pith's counter and Python `tiktoken` on the same
//! documents (every message of the corpus sessions), same counts asserted.
//!
//! pith's side is [`BpeCounter`] (tables compiled into pith-core). Python runs in a venv
//! under `.cache/py` (created with pip on first use); tiktoken's BPE files are the ones
//! tiktoken-rs ships (`assets/*.tiktoken` in the cargo registry, byte-identical to
//! OpenAI's: tiktoken checks their hash), copied into its cache directory, so nothing is
//! downloaded at run time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use pith_core::{BpeCounter, Encoding, TokenCounter};

use super::stats::Spread;
use crate::corpus::CorpusSession;

/// The label of pith's single-thread figure, the one the 1.7× target is read from.
pub const PITH_ONE_THREAD: &str = "pith BpeCounter, 1 thread";

/// One counting mode: tokens counted and throughput over runs.
#[derive(Debug, Clone)]
pub struct CountFigure {
    /// What was measured.
    pub label: String,
    /// Tokens counted (identical for every mode, or the bench fails).
    pub tokens: u64,
    /// MB/s over runs.
    pub mb_per_s: Spread,
}

/// The token-counting section.
#[derive(Debug, Clone)]
pub struct TokenSection {
    /// Documents and bytes counted.
    pub documents: usize,
    /// Total bytes.
    pub bytes: u64,
    /// pith's modes, then Python's (when Python could run).
    pub figures: Vec<CountFigure>,
    /// Why Python did not run, when it did not.
    pub python_missing: Option<String>,
    /// Python tiktoken's version.
    pub python_version: Option<String>,
}

/// Every text of every session, one document per message part.
pub fn documents(sessions: &[CorpusSession]) -> Vec<String> {
    let mut docs = Vec::new();
    for s in sessions {
        docs.push(s.system.clone());
        for m in &s.messages {
            docs.push(m.text_content());
            docs.extend(m.tool_results().map(|r| r.content.clone()));
        }
    }
    docs.retain(|d| !d.is_empty());
    docs
}

fn count_all(counter: &BpeCounter, docs: &[String]) -> u64 {
    docs.iter().map(|d| counter.count(d) as u64).sum()
}

/// Measures pith (1 thread, and the documents split over 2 threads) and Python.
pub fn measure(docs: &[String], runs: usize, cache: &Path) -> Result<TokenSection> {
    let bytes: u64 = docs.iter().map(|d| d.len() as u64).sum();
    let counter = BpeCounter::new(Encoding::O200kBase);
    let mb = bytes as f64 / 1e6;
    let mut figures = Vec::new();

    let mut seconds = Vec::new();
    let mut tokens = 0;
    for _ in 0..runs {
        let start = Instant::now();
        tokens = count_all(&counter, docs);
        seconds.push(start.elapsed().as_secs_f64());
    }
    figures.push(figure(PITH_ONE_THREAD, tokens, mb, &seconds)?);

    let (first, second) = split_by_bytes(docs);
    let mut seconds = Vec::new();
    let mut tokens2 = 0;
    for _ in 0..runs {
        let start = Instant::now();
        tokens2 = std::thread::scope(|scope| {
            let other = scope.spawn(|| count_all(&counter, second));
            count_all(&counter, first) + other.join().unwrap_or(u64::MAX)
        });
        seconds.push(start.elapsed().as_secs_f64());
    }
    figures.push(figure(
        "pith BpeCounter, documents split over 2 threads",
        tokens2,
        mb,
        &seconds,
    )?);

    let (python, python_missing, python_version) = match python(docs, runs, cache) {
        Ok((figs, version)) => (figs, None, Some(version)),
        Err(e) => (Vec::new(), Some(format!("{e:#}")), None),
    };
    for (label, count, secs) in python {
        figures.push(figure(&label, count, mb, &secs)?);
    }
    if let Some(bad) = figures.iter().find(|f| f.tokens != tokens) {
        bail!(
            "token counts differ: pith counted {tokens}, `{}` counted {}",
            bad.label,
            bad.tokens
        );
    }
    Ok(TokenSection {
        documents: docs.len(),
        bytes,
        figures,
        python_missing,
        python_version,
    })
}

fn figure(label: &str, tokens: u64, mb: f64, seconds: &[f64]) -> Result<CountFigure> {
    let s = Spread::of(seconds).context("no timing runs")?;
    Ok(CountFigure {
        label: label.to_owned(),
        tokens,
        mb_per_s: s.map(|t| mb / t),
    })
}

fn split_by_bytes(docs: &[String]) -> (&[String], &[String]) {
    let total: usize = docs.iter().map(String::len).sum();
    let mut acc = 0;
    let mut cut = docs.len();
    for (i, d) in docs.iter().enumerate() {
        if acc >= total / 2 {
            cut = i;
            break;
        }
        acc += d.len();
    }
    docs.split_at(cut)
}

type PythonFigures = (Vec<(String, u64, Vec<f64>)>, String);

/// Runs the Python side in its venv (created on first use).
fn python(docs: &[String], runs: usize, cache: &Path) -> Result<PythonFigures> {
    let venv = cache.join("py");
    let py = venv.join("bin/python");
    if !py.is_file() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv")?;
        if !status.success() {
            bail!("python3 -m venv {} failed", venv.display());
        }
    }
    let has_tiktoken = Command::new(&py)
        .args(["-c", "import tiktoken"])
        .status()
        .is_ok_and(|s| s.success());
    if !has_tiktoken {
        let status = Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "tiktoken"])
            .status()
            .context("running pip install tiktoken")?;
        if !status.success() {
            bail!("pip install tiktoken failed (offline?)");
        }
    }
    let docs_path = cache.join("bench/token_docs.json");
    if let Some(dir) = docs_path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&docs_path, serde_json::to_vec(docs)?)
        .with_context(|| format!("writing {}", docs_path.display()))?;
    let script = cache.join("bench/tiktoken_bench.py");
    std::fs::write(&script, include_str!("tiktoken_bench.py"))
        .with_context(|| format!("writing {}", script.display()))?;
    let assets = tiktoken_rs_assets()?;
    let output = Command::new(&py)
        .arg(&script)
        .arg(&docs_path)
        .arg(runs.to_string())
        .arg(&assets)
        .arg(cache.join("tiktoken"))
        .output()
        .context("running the Python tiktoken bench")?;
    if !output.status.success() {
        bail!(
            "python tiktoken bench failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let value: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parsing the Python bench's output")?;
    let version = value["version"].as_str().unwrap_or("?").to_owned();
    let mut figures = Vec::new();
    if let Some(map) = value.as_object() {
        for (label, v) in map {
            let (Some(count), Some(secs)) = (v["count"].as_u64(), v["seconds"].as_array()) else {
                continue;
            };
            let secs = secs.iter().filter_map(serde_json::Value::as_f64).collect();
            figures.push((label.clone(), count, secs));
        }
    }
    Ok((figures, version))
}

/// tiktoken-rs's `assets/` (the `.tiktoken` vocabularies) in the cargo registry.
fn tiktoken_rs_assets() -> Result<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("neither CARGO_HOME nor HOME is set")?;
    let src = cargo_home.join("registry/src");
    for index in std::fs::read_dir(&src).with_context(|| format!("listing {}", src.display()))? {
        let index = index?.path();
        let Ok(entries) = std::fs::read_dir(&index) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_tiktoken_rs = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tiktoken-rs-"));
            if is_tiktoken_rs && path.join("assets/o200k_base.tiktoken").is_file() {
                return Ok(path.join("assets"));
            }
        }
    }
    bail!("tiktoken-rs's assets/ not found under {}", src.display())
}
