//! Running criterion benches and reading their per-sample results back.
//!
//! criterion writes `target/criterion/<group>/<bench…>/new/sample.json` (iteration
//! counts and total times of every sample, in ns) and `benchmark.json` (with the
//! declared throughput). Each sample's time per iteration is one "run" of the figure.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Deserialize;

use super::stats::Spread;

/// A report section of the results of `ids` that `results` holds, in the order of `ids`
/// (empty when it holds none): the `## heading`, the `intro` paragraph, then a table,
/// `table_head` (its header and separator lines) and one line per result written by `row`.
pub fn section_of(
    results: &[CriterionResult],
    ids: &[&str],
    heading: &str,
    intro: &str,
    table_head: &str,
    row: impl Fn(&CriterionResult) -> String,
) -> String {
    let rows: Vec<&CriterionResult> = ids
        .iter()
        .filter_map(|id| results.iter().find(|r| r.id == *id))
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!("\n## {heading}\n\n{intro}\n\n{table_head}\n");
    for r in rows {
        out.push_str(&row(r));
        out.push('\n');
    }
    out
}

/// The median of the result `id` in milliseconds, if `results` holds it.
pub fn median_ms(results: &[CriterionResult], id: &str) -> Option<f64> {
    results
        .iter()
        .find(|r| r.id == id)
        .map(|r| r.seconds.median * 1e3)
}

/// One criterion benchmark's results.
#[derive(Debug, Clone)]
pub struct CriterionResult {
    /// `group/function[/parameter]`.
    pub id: String,
    /// Seconds per iteration over the samples.
    pub seconds: Spread,
    /// Bytes per iteration, when the bench declared a byte throughput.
    pub bytes: Option<u64>,
}

#[derive(Deserialize)]
struct Sample {
    iters: Vec<f64>,
    times: Vec<f64>,
}

#[derive(Deserialize)]
struct Benchmark {
    #[serde(default)]
    throughput: Option<serde_json::Value>,
}

/// Runs `cargo bench -p <package> --bench <bench>` (criterion, no plots).
pub fn run_bench(package: &str, bench: &str, quick: bool) -> Result<()> {
    let mut args = vec![
        "bench", "--quiet", "-p", package, "--bench", bench, "--", "--noplot",
    ];
    if quick {
        args.extend(["--warm-up-time", "1", "--measurement-time", "2"]);
    }
    crate::cargo::cargo(&args)
}

/// Reads every result under `target/criterion/<group>`.
pub fn read_group(target: &Path, group: &str) -> Result<Vec<CriterionResult>> {
    let root = target.join("criterion").join(group);
    let mut found = Vec::new();
    collect(&root, &mut found)?;
    found.sort();
    let mut results = Vec::new();
    for dir in found {
        let sample: Sample = read_json(&dir.join("sample.json"))?;
        let per_iter: Vec<f64> = sample
            .iters
            .iter()
            .zip(&sample.times)
            .filter(|(i, _)| **i > 0.0)
            .map(|(i, t)| t / i / 1e9)
            .collect();
        let Some(seconds) = Spread::of(&per_iter) else {
            continue;
        };
        let bench: Benchmark = read_json(&dir.join("benchmark.json"))?;
        let bytes = bench
            .throughput
            .as_ref()
            .and_then(|t| t.get("Bytes"))
            .and_then(serde_json::Value::as_u64);
        let id = dir
            .parent()
            .and_then(|p| p.strip_prefix(target.join("criterion")).ok())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        results.push(CriterionResult { id, seconds, bytes });
    }
    Ok(results)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Every `…/new` directory holding a `sample.json` below `dir`.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if !path.is_dir() {
            continue;
        }
        if path.file_name().is_some_and(|n| n == "new") && path.join("sample.json").is_file() {
            out.push(path);
        } else if path
            .file_name()
            .is_some_and(|n| n != "base" && n != "report")
        {
            collect(&path, out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn criterion_samples_become_seconds_per_iteration_with_their_throughput() {
        let target = tempfile::tempdir().unwrap();
        let new = target.path().join("criterion/replay/decode_10mb/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(
            new.join("sample.json"),
            r#"{"sampling_mode":"Flat","iters":[1.0,2.0,4.0],"times":[3e7,4e7,1.2e8]}"#,
        )
        .unwrap();
        std::fs::write(
            new.join("benchmark.json"),
            r#"{"throughput":{"Bytes":10000000}}"#,
        )
        .unwrap();
        // criterion's previous run lives in `base`: it must not be read as a result.
        let base = target.path().join("criterion/replay/decode_10mb/base");
        std::fs::create_dir_all(&base).unwrap();
        std::fs::write(base.join("sample.json"), r#"{"iters":[1.0],"times":[1.0]}"#).unwrap();

        let results = read_group(target.path(), "replay").unwrap();
        assert_eq!(results.len(), 1, "{results:?}");
        let r = &results[0];
        assert_eq!(r.id, "replay/decode_10mb");
        assert_eq!(r.bytes, Some(10_000_000));
        // 30 ms, 20 ms and 30 ms per iteration.
        assert!((r.seconds.min - 0.02).abs() < 1e-12);
        assert!((r.seconds.median - 0.03).abs() < 1e-12);
        assert!(read_group(target.path(), "missing_group")
            .unwrap()
            .is_empty());
    }
}
