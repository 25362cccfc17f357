//! The measurement behind `cargo xtask eval`: retention probes and savings per family.
//!
//! Pure (no file system): `xtask/src/eval.rs` reads the session files and prints, and
//! `crates/core/tests/corpus_retention.rs` includes this same file (`#[path]`) to assert
//! the targets on the vendored sample — one definition of every probe.
//!
//! Probes, counted kept when present verbatim in the squashed text:
//! - failing test identifiers: pytest `FAILED|ERROR a::b` and `a::b FAILED`, unittest /
//!   django `FAIL: test_x (mod.Class)` and `ERROR: …`, cargo `test x ... FAILED`, go
//!   `--- FAIL: X`;
//! - error lines: distinct trimmed lines matching
//!   `(?i)\b(error|exception|traceback|failed|failure|fatal|panic)\b`;
//! - paths (grep / find): distinct `dir/…/name.ext` file paths.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;
use std::time::Instant;

use pith_core::context::squash::{self, command_family, CommandFamily, SquashConfig};
use pith_core::TokenCounter;
use regex::Regex;
use serde::Serialize;

/// One tool result of a session, with the command that produced it.
#[derive(Debug, Clone)]
pub struct ToolSample {
    /// The bash command.
    pub command: String,
    /// Process exit code, when recorded.
    pub exit_code: Option<i32>,
    /// Raw output.
    pub content: String,
}

/// Extracts the tool results of one session in the neutral JSONL format. Malformed
/// lines are counted and skipped (the caller reports them).
pub fn samples_from_session(jsonl: &str) -> (Vec<ToolSample>, usize) {
    let mut commands: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    let mut malformed = 0;
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            malformed += 1;
            continue;
        };
        if let Some(calls) = value.get("tool_calls").and_then(|c| c.as_array()) {
            for call in calls {
                let id = call.get("id").and_then(|v| v.as_str()).unwrap_or_default();
                let cmd = call
                    .get("arguments")
                    .and_then(|a| a.get("command"))
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                commands.insert(id.to_owned(), cmd.to_owned());
            }
        }
        if value.get("role").and_then(|r| r.as_str()) == Some("tool") {
            let id = value
                .get("tool_call_id")
                .and_then(|v| v.as_str())
                .unwrap_or_default();
            out.push(ToolSample {
                command: commands.get(id).cloned().unwrap_or_default(),
                exit_code: value
                    .get("exit_code")
                    .and_then(|v| v.as_i64())
                    .and_then(|c| i32::try_from(c).ok()),
                content: value
                    .get("content")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default()
                    .to_owned(),
            });
        }
    }
    (out, malformed)
}

/// The eval's family of a command (the table's rows).
pub fn eval_family(command: &str) -> &'static str {
    match command_family(command) {
        CommandFamily::TestRunner => "test runners",
        CommandFamily::Grep | CommandFamily::Find => "grep/find",
        CommandFamily::Ls => "ls",
        CommandFamily::FileView => "file views",
        CommandFamily::Other => "other",
    }
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("constant pattern compiles")
}

static FAILING_ID_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    vec![
        re(r"(?m)^(?:FAILED|ERROR) (\S+::\S+)"),
        re(r"(?m)^(\S+::\S+) (?:FAILED|ERROR)\b"),
        re(r"(?m)^(?:FAIL|ERROR): (\S+ \([^)\s]+\))"),
        re(r"(?m)^test (\S+) \.\.\. FAILED"),
        re(r"(?m)^\s*--- FAIL: (\S+)"),
    ]
});
static ERROR_LINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?i)\b(error|exception|traceback|failed|failure|fatal|panic)\b"));
static PATH: LazyLock<Regex> = LazyLock::new(|| re(r"(?:[\w.-]+/)+[\w-][\w.-]*\.[A-Za-z0-9]+\b"));

/// Distinct failing test identifiers in `text`.
pub fn failing_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for pattern in FAILING_ID_PATTERNS.iter() {
        for caps in pattern.captures_iter(text) {
            if let Some(m) = caps.get(1) {
                ids.insert(m.as_str().to_owned());
            }
        }
    }
    ids
}

/// Distinct trimmed error lines in `text`.
pub fn error_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| ERROR_LINE.is_match(l))
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Distinct file paths in `text`.
pub fn paths(text: &str) -> BTreeSet<String> {
    PATH.find_iter(text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

/// Totals of one probe.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Probe {
    /// Items found in the raw outputs.
    pub total: u64,
    /// Items present verbatim in the squashed outputs.
    pub kept: u64,
}

impl Probe {
    fn add(&mut self, items: &BTreeSet<String>, squashed: &str) {
        self.total += items.len() as u64;
        self.kept += items
            .iter()
            .filter(|i| squashed.contains(i.as_str()))
            .count() as u64;
    }

    /// Percentage kept (100 when there was nothing to keep).
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            self.kept as f64 * 100.0 / self.total as f64
        }
    }
}

/// Figures of one family (or of all outputs).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FamilyReport {
    /// Outputs above the floor.
    pub outputs: u64,
    /// Outputs squash changed.
    pub squashed: u64,
    /// Raw bytes.
    pub bytes_before: u64,
    /// Squashed bytes (spill marker included).
    pub bytes_after: u64,
    /// o200k tokens of the raw outputs.
    pub tokens_before: u64,
    /// o200k tokens of what the model sees (spill marker included).
    pub tokens_after: u64,
    /// Failing test identifiers.
    pub failing_ids: Probe,
    /// Error lines.
    pub error_lines: Probe,
    /// File paths.
    pub paths: Probe,
    /// Seconds spent in squash.
    pub squash_seconds: f64,
}

impl FamilyReport {
    /// Percentage of tokens saved.
    pub fn saved_percent(&self) -> f64 {
        if self.tokens_before == 0 {
            0.0
        } else {
            100.0 - self.tokens_after as f64 * 100.0 / self.tokens_before as f64
        }
    }

    /// Squash throughput in MB/s.
    pub fn throughput_mb_s(&self) -> f64 {
        if self.squash_seconds <= 0.0 {
            0.0
        } else {
            self.bytes_before as f64 / 1e6 / self.squash_seconds
        }
    }

    fn merge(&mut self, other: &FamilyReport) {
        self.outputs += other.outputs;
        self.squashed += other.squashed;
        self.bytes_before += other.bytes_before;
        self.bytes_after += other.bytes_after;
        self.tokens_before += other.tokens_before;
        self.tokens_after += other.tokens_after;
        for (a, b) in [
            (&mut self.failing_ids, other.failing_ids),
            (&mut self.error_lines, other.error_lines),
            (&mut self.paths, other.paths),
        ] {
            a.total += b.total;
            a.kept += b.kept;
        }
        self.squash_seconds += other.squash_seconds;
    }
}

/// Figures of one output, for finding where a family's tokens go.
#[derive(Debug, Clone, Default, Serialize)]
pub struct OutputRow {
    /// [`eval_family`] name.
    pub family: String,
    /// The bash command.
    pub command: String,
    /// o200k tokens of the raw output.
    pub tokens_before: u64,
    /// o200k tokens of what the model sees.
    pub tokens_after: u64,
    /// Distinct paths in the raw output (grep/find only).
    pub paths_total: u64,
    /// Of those, present verbatim in what the model sees.
    pub paths_kept: u64,
}

/// The whole evaluation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Per family, keyed by [`eval_family`] name.
    pub families: BTreeMap<String, FamilyReport>,
    /// Every output above the floor, in corpus order.
    pub outputs: Vec<OutputRow>,
    /// All families together.
    pub overall: FamilyReport,
}

/// A spill reference as the tools write it (`$PITH_SPILL_DIR/<n>.txt`), so that the
/// marker's cost is counted as the model pays it.
pub const EXAMPLE_SPILL_PATH: &str = "$PITH_SPILL_DIR/17.txt";

/// Runs every squasher once so that one-time regex compilation is not timed.
fn warm_up(config: &SquashConfig) {
    let filler = "line of output\n".repeat(200);
    for (command, text) in [
        (
            "pytest",
            format!("{filler}FAILED a.py::t - boom\n= 1 failed in 1s =\n"),
        ),
        ("make", format!("{filler}error: a\nerror: b\nwarning: c\n")),
        ("grep -rn x .", "src/a.rs:1:x\n".repeat(200)),
        ("find .", "./src/a.rs\n".repeat(200)),
        ("ls -R", filler.clone()),
        ("python x.py", filler.clone()),
    ] {
        squash::apply("bash", Some(command), Some(1), &text, config);
    }
}

/// Squashes every sample above the floor and scores it.
pub fn evaluate(
    samples: &[ToolSample],
    config: &SquashConfig,
    counter: &dyn TokenCounter,
) -> Report {
    let mut report = Report::default();
    warm_up(config);
    for sample in samples {
        if sample.content.len() <= config.floor_bytes {
            continue;
        }
        let family = eval_family(&sample.command);
        let started = Instant::now();
        let squashed = squash::apply(
            "bash",
            Some(&sample.command),
            sample.exit_code,
            &sample.content,
            config,
        );
        let seconds = started.elapsed().as_secs_f64();
        let seen = if squashed.dropped_anything {
            squash::with_spill_marker(&squashed.text, EXAMPLE_SPILL_PATH)
        } else {
            squashed.text.clone()
        };
        let entry = report.families.entry(family.to_owned()).or_default();
        entry.outputs += 1;
        entry.squashed += u64::from(squashed.dropped_anything);
        entry.bytes_before += sample.content.len() as u64;
        entry.bytes_after += seen.len() as u64;
        let tokens_before = counter.count(&sample.content) as u64;
        let tokens_after = counter.count(&seen) as u64;
        entry.tokens_before += tokens_before;
        entry.tokens_after += tokens_after;
        entry.squash_seconds += seconds;
        let mut row = OutputRow {
            family: family.to_owned(),
            command: sample.command.clone(),
            tokens_before,
            tokens_after,
            ..OutputRow::default()
        };
        match family {
            "test runners" => {
                entry.failing_ids.add(&failing_ids(&sample.content), &seen);
                entry.error_lines.add(&error_lines(&sample.content), &seen);
            }
            "grep/find" => {
                let before = entry.paths;
                entry.paths.add(&paths(&sample.content), &seen);
                row.paths_total = entry.paths.total - before.total;
                row.paths_kept = entry.paths.kept - before.kept;
            }
            _ => {}
        }
        report.outputs.push(row);
    }
    let mut overall = FamilyReport::default();
    for family in report.families.values() {
        overall.merge(family);
    }
    report.overall = overall;
    report
}

/// The report as a markdown table.
pub fn markdown_table(report: &Report) -> String {
    let mut out = String::from(
        "| family | outputs | tokens before | tokens after | saved | failing ids kept | error lines kept | paths kept | MB/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let probe = |p: &Probe| {
        if p.total == 0 {
            "–".to_owned()
        } else {
            format!("{:.1}% ({}/{})", p.percent(), p.kept, p.total)
        }
    };
    let rows = report
        .families
        .iter()
        .map(|(k, v)| (k.as_str(), v))
        .chain(std::iter::once(("**all**", &report.overall)));
    for (name, f) in rows {
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {:.1}% | {} | {} | {} | {:.0} |\n",
            f.outputs,
            f.tokens_before,
            f.tokens_after,
            f.saved_percent(),
            probe(&f.failing_ids),
            probe(&f.error_lines),
            probe(&f.paths),
            f.throughput_mb_s(),
        ));
    }
    out
}
