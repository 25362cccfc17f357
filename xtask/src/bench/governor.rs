//! The compaction governor under servers that misbehave: runs the stress suite
//! (`tests/cli_compaction_stress.rs`, the real `pith` binary against pith-testkit on a
//! 32,000-token window) and reads the figures it writes with `PITH_STRESS_REPORT`.
//!
//! For each scenario: LLM compactions and wasted compaction requests (summary requests of
//! attempts that did not apply, or that the next report showed did not help) per 100 tool
//! turns, and the largest request as a share of the window, as the server counts it.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// One scenario's figures.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct StressRow {
    /// The scenario.
    pub scenario: String,
    /// Tool turns the model ran.
    pub tool_turns: u64,
    /// LLM compaction attempts (summary requests that started one).
    pub compaction_attempts: u64,
    /// Of them, wasted.
    pub wasted_attempts: u64,
    /// Attempts per 100 tool turns.
    pub attempts_per_100_tool_turns: f64,
    /// Wasted attempts per 100 tool turns.
    pub wasted_per_100_tool_turns: f64,
    /// The largest request as a share of the window.
    pub largest_request_share_of_window: f64,
}

/// Runs the stress suite and returns its rows, in a stable order.
pub fn measure(root: &Path) -> Result<Vec<StressRow>> {
    let report = tempfile::NamedTempFile::new().context("creating the stress report file")?;
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .current_dir(root)
        .args(["test", "--quiet", "--test", "cli_compaction_stress"])
        .env("PITH_STRESS_REPORT", report.path())
        .status()
        .context("running the compaction stress suite")?;
    if !status.success() {
        bail!("the compaction stress suite failed ({status}); its figures would not mean anything");
    }
    let text = std::fs::read_to_string(report.path()).context("reading the stress report")?;
    parse(&text)
}

/// The rows of a report file, sorted by scenario.
pub fn parse(text: &str) -> Result<Vec<StressRow>> {
    let mut rows = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<StressRow>(l).with_context(|| format!("bad row: {l}")))
        .collect::<Result<Vec<_>>>()?;
    rows.sort_by(|a, b| a.scenario.cmp(&b.scenario));
    Ok(rows)
}

/// The rows as a Markdown table.
pub fn table(rows: &[StressRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario | tool turns | LLM compactions | per 100 tool turns | wasted per 100 tool turns | largest request / window |\n|---|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.1} | {:.2} |",
            row.scenario,
            row.tool_turns,
            row.compaction_attempts,
            row.attempts_per_100_tool_turns,
            row.wasted_per_100_tool_turns,
            row.largest_request_share_of_window
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_is_parsed_sorted_and_tabled() {
        let text = r#"{"scenario":"b","tool_turns":30,"compaction_attempts":2,"wasted_attempts":1,"attempts_per_100_tool_turns":6.67,"wasted_per_100_tool_turns":3.33,"largest_request_share_of_window":0.85}
{"scenario":"a","tool_turns":60,"compaction_attempts":3,"wasted_attempts":0,"attempts_per_100_tool_turns":5.0,"wasted_per_100_tool_turns":0.0,"largest_request_share_of_window":0.83}
"#;
        let rows = parse(text).unwrap();
        assert_eq!(rows[0].scenario, "a");
        let table = table(&rows);
        assert!(
            table.contains("| b | 30 | 2 | 6.7 | 3.3 | 0.85 |"),
            "{table}"
        );
        assert!(parse("not json").is_err());
    }
}
