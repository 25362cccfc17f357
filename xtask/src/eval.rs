//! `cargo xtask eval --sessions DIR [--json FILE]`: runs squash over every tool result of
//! real sessions (neutral JSONL format) and prints savings and retention per family, for
//! the tuning half, the held-out half ([`crate::split`]) and the whole corpus.
//!
//! The scoring lives in `eval_core.rs` (shared with the pith-core corpus test); this
//! file only reads the sessions and writes the report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use pith_core::context::squash::SquashConfig;
use pith_core::{BpeCounter, Encoding};

use crate::corpus::session_files;
use crate::eval_core::{evaluate, markdown_table, samples_from_session, Report, ToolSample};
use crate::split::{half_of, Half};

/// The shared corpus: `../shared/corpus/sessions` relative to the workspace root, or
/// one level further up (for worktrees under `wt/`).
pub fn default_sessions_dir() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    first_dir(&[
        root.join("../shared/corpus/sessions"),
        root.join("../../shared/corpus/sessions"),
    ])
}

/// The first of `candidates` that is a directory; else an error naming them all, and
/// what to pass instead (a fresh clone has no shared corpus next to it).
fn first_dir(candidates: &[PathBuf]) -> Result<PathBuf> {
    candidates
        .iter()
        .find(|p| p.is_dir())
        .cloned()
        .with_context(|| {
            format!(
                "no shared corpus found (looked at {}); pass --sessions DIR (a small sample \
                 ships in crates/core/tests/data/corpus-sample)",
                candidates
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Runs the evaluation on each half of the corpus ([`crate::split`]) and on all of it,
/// prints the tables (and writes JSON when asked).
///
/// `list` lists one family's outputs per half; with `missed`, the tuning half's list also
/// shows the probe items each output lost (never the held-out half's: it is not looked
/// at while tuning).
pub fn run(
    sessions: &Path,
    json: Option<&PathBuf>,
    list: Option<&str>,
    missed: bool,
) -> Result<()> {
    let files = session_files(sessions)?;
    let mut by_half: BTreeMap<Half, (usize, Vec<ToolSample>)> = BTreeMap::new();
    let mut malformed = 0;
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let (mut s, bad) = samples_from_session(&text);
        malformed += bad;
        let entry = by_half.entry(half_of(file)).or_default();
        entry.0 += 1;
        entry.1.append(&mut s);
    }
    if malformed > 0 {
        eprintln!("eval: skipped {malformed} malformed lines");
    }
    let counter = BpeCounter::new(Encoding::O200kBase);
    let config = SquashConfig::default();
    let mut reports: BTreeMap<&str, Report> = BTreeMap::new();
    for half in Half::ALL {
        let Some((count, samples)) = by_half.get(&half) else {
            continue;
        };
        let report = evaluate(samples, &config, &counter);
        println!(
            "## {} half: {count} sessions, {} tool results, {} above the {}-byte floor\n",
            half.as_str(),
            samples.len(),
            report.overall.outputs,
            config.floor_bytes
        );
        print!("{}", markdown_table(&report));
        println!();
        if let Some(family) = list {
            print_list(&report, family, missed && half == Half::Tuning);
        }
        reports.insert(half.as_str(), report);
    }
    let all: Vec<ToolSample> = by_half.values().flat_map(|(_, s)| s.clone()).collect();
    let report = evaluate(&all, &config, &counter);
    println!(
        "## all: {} sessions, {} tool results, {} above the {}-byte floor\n",
        files.len(),
        all.len(),
        report.overall.outputs,
        config.floor_bytes
    );
    print!("{}", markdown_table(&report));
    reports.insert("all", report);
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&reports).context("serialising the report")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Lists one family's outputs, most tokens left first.
fn print_list(report: &Report, family: &str, missed: bool) {
    let mut rows: Vec<_> = report
        .outputs
        .iter()
        .filter(|r| r.family == family)
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.tokens_after));
    println!(
        "| tokens before | tokens after | paths kept | details kept | command |\n|---:|---:|---:|---:|---|"
    );
    for r in rows {
        println!(
            "| {} | {} | {}/{} | {}/{} | `{}` |",
            r.tokens_before,
            r.tokens_after,
            r.paths_kept,
            r.paths_total,
            r.details_kept,
            r.details_total,
            r.command
                .replace('\n', " ")
                .chars()
                .take(110)
                .collect::<String>()
        );
        if missed {
            for item in &r.missed {
                println!("|   | missed | | | `{item}` |");
            }
        }
    }
    println!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_is_the_first_directory_found_else_an_error_saying_what_to_pass() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("missing");
        let present = root.path().join("present");
        std::fs::create_dir(&present).unwrap();
        assert_eq!(
            first_dir(&[missing.clone(), present.clone()]).unwrap(),
            present
        );
        let error = first_dir(&[missing]).unwrap_err().to_string();
        assert!(error.contains("pass --sessions DIR"), "{error}");
        assert!(error.contains("corpus-sample"), "{error}");
    }
}
