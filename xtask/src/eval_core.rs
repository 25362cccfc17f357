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
//! - failure details (what a developer reads to fix a failure): every pytest `E` line,
//!   every pytest location line `path:line: ErrorType`, the exception line that ends each
//!   Python traceback (`KeyError: 'user_id'`), every Rust `panicked at` line with the
//!   message line after it and its `left:` / `right:` lines, and every indented message
//!   line under a go `--- FAIL:` line;
//! - summaries (one or two per test session): pytest `= 3 failed, 10 passed in 1.2s =`,
//!   unittest `Ran 42 tests in 0.4s` and its `OK` / `FAILED (errors=1)` verdict, cargo
//!   `test result: …`, go `ok  pkg 0.1s` / `FAIL pkg 0.1s`, jest `Tests: …`, sympy
//!   `tests finished: …`;
//! - error lines: distinct trimmed lines matching
//!   `(?i)\b(error|exception|traceback|failed|failure|fatal|panic)\b`;
//! - paths (grep / find): distinct `dir/…/name.ext` file paths.
//!
//! Failing ids, failure details and summaries are scored on test runners, on `other`
//! outputs and on multi-step logs that [`multi_step_logs`] builds from corpus pieces
//! (several test runs and other steps behind `+ command` traces, as a CI script prints
//! them), since a real multi-step log is rare in the corpus.

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

impl ToolSample {
    /// Squashes the output as the bash tool does; returns the result and the seconds
    /// squash took.
    pub fn squash_timed(&self, config: &SquashConfig) -> (squash::Squashed, f64) {
        let started = Instant::now();
        let squashed = squash::apply(
            "bash",
            Some(&self.command),
            self.exit_code,
            &self.content,
            config,
        );
        (squashed, started.elapsed().as_secs_f64())
    }
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

/// pytest's location line after an `E` block: `tests/test_x.py:17: AssertionError`.
static LOCATION_LINE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[^\s:]+:\d+: (?:[A-Za-z_]\w*\.)*[A-Z]\w*$"));
/// Summary lines of the common test runners (see the module docs).
static SUMMARY_LINE: LazyLock<Regex> = LazyLock::new(|| {
    re(concat!(
        r"^(?:=+ )?(?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)",
        r"|no tests ran)\b.* in [\d.]+s\b.*$",
        r"|^Ran \d+ tests? in [\d.]+s$",
        r"|^(?:OK|FAILED)(?: \(.*\))?$",
        r"|^test result: .*$",
        r"|^(?:ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\)).*$",
        r"|^Tests:\s+.*\d.*$",
        r"|^.*\btests finished: .*$",
    ))
});

/// Distinct failure details in `text` (see the module docs for what counts).
pub fn failure_details(text: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = BTreeSet::new();
    let mut add = |line: &str| {
        let t = line.trim();
        if !t.is_empty() {
            found.insert(t.to_owned());
        }
    };
    for (i, line) in lines.iter().enumerate() {
        if *line == "E" || line.starts_with("E ") {
            if line.len() > 1 {
                add(line);
            }
        } else if LOCATION_LINE.is_match(line) {
            add(line);
        } else if line.starts_with("Traceback (most recent call last)") {
            if let Some(tail) = lines[i + 1..]
                .iter()
                .find(|l| !l.trim().is_empty() && !l.starts_with(char::is_whitespace))
            {
                add(tail);
            }
        } else if line.contains("panicked at") {
            add(line);
            for next in lines[i + 1..].iter().take(4) {
                let t = next.trim_start();
                if t.is_empty() || t.starts_with("note:") || t.starts_with("stack backtrace") {
                    break;
                }
                add(next);
            }
        } else if line.trim_start().starts_with("--- FAIL:") {
            for next in &lines[i + 1..] {
                if !next.starts_with(char::is_whitespace) || next.trim_start().starts_with("--- ") {
                    break;
                }
                add(next);
            }
        }
    }
    found
}

/// Distinct test-session summary lines in `text` (see the module docs).
pub fn summary_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| SUMMARY_LINE.is_match(l))
        .map(str::to_owned)
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
    /// Counts `items` and those present in `squashed`; returns the missing ones.
    fn add(&mut self, items: &BTreeSet<String>, squashed: &str) -> Vec<String> {
        self.total += items.len() as u64;
        let missed: Vec<String> = items
            .iter()
            .filter(|i| !squashed.contains(i.as_str()))
            .cloned()
            .collect();
        self.kept += (items.len() - missed.len()) as u64;
        missed
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
    /// What the probes found and what of it was kept.
    #[serde(flatten)]
    pub probes: Probes,
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
        self.probes.merge(&other.probes);
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
    /// Failure details in the raw output (test runners, other, multi-step).
    pub details_total: u64,
    /// Of those, present verbatim in what the model sees.
    pub details_kept: u64,
    /// Probe items (failing ids, failure details, summaries, paths) not kept.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
}

/// The whole evaluation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Per family, keyed by [`eval_family`] name.
    pub families: BTreeMap<String, FamilyReport>,
    /// Every output above the floor, in corpus order (multi-step logs last).
    pub outputs: Vec<OutputRow>,
    /// All corpus outputs together (the built multi-step logs are not in it).
    pub overall: FamilyReport,
    /// The multi-step logs built from the corpus pieces ([`multi_step_logs`]).
    pub multi_step: FamilyReport,
}

/// A spill reference as the tools write it (`$PITH_SPILL_DIR/<n>.txt`), so that the
/// marker's cost is counted as the model pays it.
pub const EXAMPLE_SPILL_PATH: &str = "$PITH_SPILL_DIR/17.txt";

/// The command line a built multi-step log is attributed to: a script whose name says
/// nothing, so that its steps are found from the content alone.
pub const MULTI_STEP_COMMAND: &str = "bash ci.sh";

/// Test-runner outputs per built multi-step log.
const TESTS_PER_MULTI_STEP_LOG: usize = 3;

/// Multi-step logs built from corpus pieces, as a CI script run with `set -x` prints
/// them: for every run of [`TESTS_PER_MULTI_STEP_LOG`] consecutive test-runner outputs
/// above `floor`, one log of an `other` output (a set-up step) followed by the test
/// outputs, each step behind a `+ command` trace of its command's first line. The log's
/// exit code is that of the last failing step (0 when none failed).
pub fn multi_step_logs(samples: &[ToolSample], floor: usize) -> Vec<ToolSample> {
    let tests: Vec<&ToolSample> = samples
        .iter()
        .filter(|s| s.content.len() > floor && eval_family(&s.command) == "test runners")
        .collect();
    let others: Vec<&ToolSample> = samples
        .iter()
        .filter(|s| !s.content.trim().is_empty() && eval_family(&s.command) == "other")
        .collect();
    let mut logs = Vec::new();
    for (k, group) in tests.chunks_exact(TESTS_PER_MULTI_STEP_LOG).enumerate() {
        let mut steps: Vec<&ToolSample> = Vec::new();
        if !others.is_empty() {
            steps.push(others[k % others.len()]);
        }
        steps.extend(group.iter().copied());
        let mut content = String::new();
        let mut exit_code = Some(0);
        for step in steps {
            let first = step.command.lines().next().unwrap_or_default().trim();
            content.push_str("+ ");
            content.push_str(first);
            content.push('\n');
            content.push_str(&step.content);
            if !content.ends_with('\n') {
                content.push('\n');
            }
            if step.exit_code.is_some_and(|c| c != 0) {
                exit_code = step.exit_code;
            }
        }
        logs.push(ToolSample {
            command: MULTI_STEP_COMMAND.to_owned(),
            exit_code,
            content,
        });
    }
    logs
}

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

/// The five probes' totals over some outputs, in the tables' column order.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Probes {
    /// Failing test identifiers.
    pub failing_ids: Probe,
    /// Failure details (assertion lines, exception lines, panics, go failure messages).
    pub failure_details: Probe,
    /// Test-session summary lines.
    pub summaries: Probe,
    /// Error lines.
    pub error_lines: Probe,
    /// File paths.
    pub paths: Probe,
}

impl Probes {
    /// Probes one output of `family`: the items of its raw `content` and those `seen` (what
    /// the model sees of it) holds verbatim, on the probes that family is scored on (failing
    /// ids, failure details and summaries on test runners, `other` and the built multi-step
    /// logs, error lines on the first and last of those, paths on grep/find). Returns the
    /// output's totals and the items it lost (error lines aside), in probe order.
    pub fn of_output(family: &str, content: &str, seen: &str) -> (Probes, Vec<String>) {
        let mut probes = Probes::default();
        let mut missed = Vec::new();
        match family {
            "test runners" | "other" | MULTI_STEP_FAMILY => {
                missed.extend(probes.failing_ids.add(&failing_ids(content), seen));
                missed.extend(probes.failure_details.add(&failure_details(content), seen));
                missed.extend(probes.summaries.add(&summary_lines(content), seen));
                if family != "other" {
                    probes.error_lines.add(&error_lines(content), seen);
                }
            }
            "grep/find" => missed.extend(probes.paths.add(&paths(content), seen)),
            _ => {}
        }
        (probes, missed)
    }

    /// The five, in the tables' column order.
    pub fn each(&self) -> [&Probe; 5] {
        [
            &self.failing_ids,
            &self.failure_details,
            &self.summaries,
            &self.error_lines,
            &self.paths,
        ]
    }

    /// Adds `other`'s totals to these.
    pub fn merge(&mut self, other: &Probes) {
        for (a, b) in [
            (&mut self.failing_ids, other.failing_ids),
            (&mut self.failure_details, other.failure_details),
            (&mut self.summaries, other.summaries),
            (&mut self.error_lines, other.error_lines),
            (&mut self.paths, other.paths),
        ] {
            a.total += b.total;
            a.kept += b.kept;
        }
    }
}

/// Squashes one sample as the bash tool does, scores it into `entry` and returns its row.
fn score(
    sample: &ToolSample,
    family: &str,
    config: &SquashConfig,
    counter: &dyn TokenCounter,
    entry: &mut FamilyReport,
) -> OutputRow {
    let (squashed, seconds) = sample.squash_timed(config);
    let seen = if squashed.dropped_anything {
        squash::with_spill_marker(&squashed.text, EXAMPLE_SPILL_PATH)
    } else {
        squashed.text.clone()
    };
    entry.outputs += 1;
    entry.squashed += u64::from(squashed.dropped_anything);
    entry.bytes_before += sample.content.len() as u64;
    entry.bytes_after += seen.len() as u64;
    let tokens_before = counter.count(&sample.content) as u64;
    let tokens_after = counter.count(&seen) as u64;
    entry.tokens_before += tokens_before;
    entry.tokens_after += tokens_after;
    entry.squash_seconds += seconds;
    let (probes, missed) = Probes::of_output(family, &sample.content, &seen);
    entry.probes.merge(&probes);
    OutputRow {
        family: family.to_owned(),
        command: sample.command.clone(),
        tokens_before,
        tokens_after,
        paths_total: probes.paths.total,
        paths_kept: probes.paths.kept,
        details_total: probes.failure_details.total,
        details_kept: probes.failure_details.kept,
        missed,
    }
}

/// The row name of the built multi-step logs.
pub const MULTI_STEP_FAMILY: &str = "multi-step (built)";

/// Squashes every sample above the floor and scores it, then the multi-step logs built
/// from the samples.
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
        let entry = report.families.entry(family.to_owned()).or_default();
        let row = score(sample, family, config, counter, entry);
        report.outputs.push(row);
    }
    let mut overall = FamilyReport::default();
    for family in report.families.values() {
        overall.merge(family);
    }
    report.overall = overall;
    let mut multi = FamilyReport::default();
    for log in multi_step_logs(samples, config.floor_bytes) {
        let row = score(&log, MULTI_STEP_FAMILY, config, counter, &mut multi);
        report.outputs.push(row);
    }
    report.multi_step = multi;
    report
}

/// The report as a markdown table.
pub fn markdown_table(report: &Report) -> String {
    let mut out = String::from(
        "| family | outputs | tokens before | tokens after | saved | failing ids kept | failure details kept | summaries kept | error lines kept | paths kept | MB/s |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
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
        .chain(std::iter::once(("**all**", &report.overall)))
        .chain((report.multi_step.outputs > 0).then_some((MULTI_STEP_FAMILY, &report.multi_step)));
    for (name, f) in rows {
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {:.1}% | {} | {:.0} |\n",
            f.outputs,
            f.tokens_before,
            f.tokens_after,
            f.saved_percent(),
            f.probes.each().map(probe).join(" | "),
            f.throughput_mb_s(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYTEST: &str = "\
============================= test session starts ==============================
collected 3 items

tests/test_x.py F..                                                      [100%]

=================================== FAILURES ===================================
____________________________________ test_a ____________________________________

    def test_a():
>       assert f() == 42
E       assert 41 == 42
E        +  where 41 = f()

tests/test_x.py:17: AssertionError
=========================== short test summary info ============================
FAILED tests/test_x.py::test_a - assert 41 == 42
========================= 1 failed, 2 passed in 0.12s ==========================
";

    #[test]
    fn failure_details_find_assertions_locations_exceptions_panics_and_go_messages() {
        let details = failure_details(PYTEST);
        assert!(details.contains("E       assert 41 == 42"), "{details:?}");
        assert!(details.contains("E        +  where 41 = f()"));
        assert!(details.contains("tests/test_x.py:17: AssertionError"));
        assert_eq!(details.len(), 3, "{details:?}");

        let traceback = "Traceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    d['user_id']\nKeyError: 'user_id'\n";
        assert!(failure_details(traceback).contains("KeyError: 'user_id'"));

        let panic = "thread 'tests::parse' panicked at src/lib.rs:10:5:\nassertion `left == right` failed\n  left: 1\n right: 2\nnote: run with `RUST_BACKTRACE=1`\n";
        let details = failure_details(panic);
        assert!(details.contains("thread 'tests::parse' panicked at src/lib.rs:10:5:"));
        assert!(details.contains("assertion `left == right` failed"));
        assert!(details.contains("right: 2"));
        assert!(!details.iter().any(|d| d.starts_with("note:")));

        let go = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\nFAIL\n";
        assert!(failure_details(go).contains("parse_test.go:12: got 1, want 2"));
    }

    #[test]
    fn summaries_cover_the_common_runners() {
        let text = format!(
            "{PYTEST}Ran 42 tests in 0.423s\n\nFAILED (errors=1, skipped=1)\ntest result: FAILED. 3 passed; 1 failed\nok  \tgithub.com/x/y\t0.012s\nTests:       1 failed, 4 passed, 5 total\n"
        );
        let found = summary_lines(&text);
        for want in [
            "========================= 1 failed, 2 passed in 0.12s ==========================",
            "Ran 42 tests in 0.423s",
            "FAILED (errors=1, skipped=1)",
            "test result: FAILED. 3 passed; 1 failed",
            "ok  \tgithub.com/x/y\t0.012s",
            "Tests:       1 failed, 4 passed, 5 total",
        ] {
            assert!(found.contains(want), "{want:?} not in {found:?}");
        }
        assert!(!found.iter().any(|l| l.starts_with("FAILED tests/")));
    }

    #[test]
    fn multi_step_logs_chain_test_outputs_behind_command_traces() {
        let sample = |command: &str, exit: i32, content: &str| ToolSample {
            command: command.to_owned(),
            exit_code: Some(exit),
            content: content.to_owned(),
        };
        let big = PYTEST.repeat(20);
        let samples = vec![
            sample("pip install -e .", 0, "Successfully installed x\n"),
            sample("python -m pytest tests", 1, &big),
            sample("python -m pytest tests -k a", 0, &big),
            sample("./tests/runtests.py x\necho done", 0, &big),
            sample("pytest", 1, &big),
        ];
        let logs = multi_step_logs(&samples, 1_500);
        assert_eq!(logs.len(), 1, "one full group of three test outputs");
        let log = &logs[0];
        assert_eq!(log.command, MULTI_STEP_COMMAND);
        assert_eq!(log.exit_code, Some(1));
        assert!(log.content.starts_with(
            "+ pip install -e .\nSuccessfully installed x\n+ python -m pytest tests\n"
        ));
        assert!(log.content.contains("\n+ ./tests/runtests.py x\n"));
        assert!(!log.content.contains("echo done"));
    }
}
