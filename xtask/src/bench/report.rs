//! The markdown of `docs/benchmarks.md`: a generated part (header, targets, every
//! figure) and a hand-written part after [`HAND_WRITTEN_MARKER`], which is kept from the
//! previous file so the analysis survives re-runs.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::criterion::CriterionResult;
use super::measurements::Measurements;
use super::stats::Spread;
use super::tokens::TokenSection;
use crate::simulate::markdown_table;

/// Everything after this line of `docs/benchmarks.md` is written by hand and kept.
pub const HAND_WRITTEN_MARKER: &str =
    "<!-- hand-written below: cargo xtask bench keeps everything after this line -->";

/// Where and when the figures were measured.
pub struct Header {
    /// UTC date and time.
    pub date: String,
    /// `git describe`-like commit (with `-dirty`).
    pub commit: String,
    /// CPU model, cores, memory, kernel.
    pub machine: String,
    /// `rustc --version`.
    pub rustc: String,
    /// Quick mode.
    pub quick: bool,
}

fn command_line(program: &str, args: &[&str], dir: &Path) -> String {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned())
}

fn proc_field(path: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

impl Header {
    /// Reads the machine, the commit and the time.
    pub fn collect(root: &Path, quick: bool) -> Self {
        let cpu = proc_field("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown CPU".into());
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        let memory = proc_field("/proc/meminfo", "MemTotal")
            .and_then(|m| {
                m.split_whitespace()
                    .next()
                    .and_then(|k| k.parse::<u64>().ok())
            })
            .map_or("? GiB".to_owned(), |kib| {
                format!("{:.1} GiB", kib as f64 / 1048576.0)
            });
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".into(), |k| k.trim().to_owned());
        let mut commit = command_line("git", &["rev-parse", "--short=12", "HEAD"], root);
        let dirty = command_line(
            "git",
            &["status", "--porcelain", "--untracked-files=no"],
            root,
        );
        if dirty != "unknown" && !dirty.is_empty() {
            commit.push_str(" (with uncommitted changes)");
        }
        Self {
            date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"], root),
            commit,
            machine: format!("{cpu}, {cores} cores available, {memory}, Linux {kernel}"),
            rustc: command_line("rustc", &["--version"], root),
            quick,
        }
    }
}

fn find<'a>(results: &'a [CriterionResult], id: &str) -> Option<&'a CriterionResult> {
    results.iter().find(|r| r.id == id)
}

fn mb_per_s(r: &CriterionResult) -> Option<Spread> {
    r.bytes.map(|b| r.seconds.map(|s| b as f64 / 1e6 / s))
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "**not met**"
    }
}

/// Best median throughput among figures whose label contains `needle`.
fn best_median(tokens: &TokenSection, needle: &str) -> Option<(String, f64)> {
    tokens
        .figures
        .iter()
        .filter(|f| f.label.contains(needle))
        .map(|f| (f.label.clone(), f.mb_per_s.median))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The target row of token counting: pith's one thread against Python's best.
pub fn token_target_row(tokens: &TokenSection) -> String {
    let mut out = String::new();
    let w = &mut out;
    let pith1 = best_median(tokens, super::tokens::PITH_ONE_THREAD);
    let python = best_median(tokens, "python");
    match (&pith1, &python) {
        (Some((_, p)), Some((label, py))) => {
            let ratio = p / py;
            let _ = writeln!(
                w,
                "| token count ≥ 1.7× Python tiktoken's best, same counts | {ratio:.2}× ({p:.1} MB/s vs {py:.1} MB/s, {label}); counts identical | {} |",
                verdict(ratio >= 1.7)
            );
        }
        _ => {
            let _ = writeln!(
                w,
                "| token count ≥ 1.7× Python tiktoken's best | Python not measured: {} | **not measured** |",
                tokens.python_missing.as_deref().unwrap_or("unknown reason")
            );
        }
    }
    out.trim_end().to_owned()
}

/// The token-counting section (also printed alone by `cargo xtask bench --tokens-only`).
pub fn write_tokens(w: &mut String, tokens: &TokenSection) {
    let _ = writeln!(w, "\n## Token counting (o200k_base)\n");
    let _ = writeln!(
        w,
        "Input: every message and tool output of the corpus as separate documents ({} documents, {:.1} MB). pith: `BpeCounter` (tables compiled into pith-core). Python: tiktoken {} in a venv under `.cache/py`, BPE files from tiktoken-rs's assets (byte-identical to OpenAI's). The bench fails if any count differs.\n",
        tokens.documents,
        tokens.bytes as f64 / 1e6,
        tokens.python_version.as_deref().unwrap_or("(not run)")
    );
    let _ = writeln!(w, "| counter | tokens | MB/s |\n|---|---:|---:|");
    for f in &tokens.figures {
        let _ = writeln!(w, "| {} | {} | {} |", f.label, f.tokens, f.mb_per_s.show(1));
    }
    if let Some(reason) = &tokens.python_missing {
        let _ = writeln!(w, "\nPython tiktoken was not measured: {reason}");
    }
}

/// Renders the whole file; `previous` is the old file (its hand-written part is kept).
/// The squash section: per family against the truncation baseline, then the synthetic
/// criterion inputs (also printed alone by `cargo xtask bench --squash-only`).
pub fn write_squash(
    w: &mut String,
    rows: &[super::squash::SquashRow],
    criterion: &[CriterionResult],
) {
    let _ = writeln!(w, "\n## Squash per family vs head+tail truncation\n");
    let _ = writeln!(
        w,
        "Corpus tool outputs above the 1,500-byte floor, squashed as pith's bash tool does at capture (spill marker included). Baseline: keep the first and last 1,500 bytes (squash's 3,000-byte generic budget) with one `[N bytes omitted]` line. Retention probes are the eval's (`cargo xtask eval`).\n"
    );
    let _ = writeln!(
        w,
        "| family | outputs | squash MB/s | tokens before | saved: squash | saved: truncation | failing ids kept: squash / trunc. | failure details kept: squash / trunc. | summaries kept: squash / trunc. | error lines kept: squash / trunc. | paths kept: squash / trunc. |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let before = row.squash.tokens_before;
        let saved = |after: u64| {
            if before == 0 {
                "–".to_owned()
            } else {
                format!("{:.1}%", 100.0 - after as f64 * 100.0 / before as f64)
            }
        };
        let probe = |a: &crate::eval_core::Probe, b: &crate::eval_core::Probe| {
            if a.total == 0 {
                "–".to_owned()
            } else {
                format!("{:.1}% / {:.1}%", a.percent(), b.percent())
            }
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} |",
            row.family,
            row.squash.outputs,
            row.mb_per_s.map_or("–".to_owned(), |s| s.show(0)),
            before,
            saved(row.squash.tokens_after),
            saved(row.baseline.tokens_after),
            row.squash
                .probes
                .each()
                .into_iter()
                .zip(row.baseline.probes.each())
                .map(|(squash, baseline)| probe(squash, baseline))
                .collect::<Vec<_>>()
                .join(" | "),
        );
    }
    let _ = writeln!(w, "\nSynthetic inputs (`crates/core/benches/squash.rs`):\n");
    let _ = writeln!(w, "| input | MB/s |\n|---|---:|");
    for r in criterion.iter().filter(|r| r.id.starts_with("squash/")) {
        if let Some(s) = mb_per_s(r) {
            let _ = writeln!(
                w,
                "| {} | {} |",
                r.id.trim_start_matches("squash/"),
                s.show(0)
            );
        }
    }
}

/// The report's title and the table of what was measured where.
fn write_header(w: &mut String, h: &Header, m: &Measurements) {
    let _ = writeln!(w, "# Benchmarks\n");
    let _ = writeln!(
        w,
        "Generated by `cargo xtask bench{}` — re-run it to refresh everything above the \
         hand-written part. Figures are **median (min – max)** over runs of one build in one \
         invocation; ratios compare medians measured in that same invocation.\n",
        if h.quick { " --quick" } else { "" }
    );
    let _ = writeln!(w, "| | |\n|---|---|");
    let _ = writeln!(w, "| date | {} |", h.date);
    let _ = writeln!(w, "| commit | `{}` |", h.commit);
    let _ = writeln!(w, "| machine | {} |", h.machine);
    let _ = writeln!(w, "| toolchain | {} (release profile) |", h.rustc);
    let _ = writeln!(w, "| corpus | {} |", m.corpus);
    let _ = writeln!(
        w,
        "| mode | {} |\n",
        if h.quick {
            "quick (3 runs, short criterion measurements)"
        } else {
            "full (7 runs)"
        }
    );
}

/// The targets table: each target, its measured figure and whether it is met.
fn write_targets(w: &mut String, m: &Measurements) {
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(w, "| target | measured (median) | |\n|---|---|---|");
    let _ = writeln!(w, "{}", token_target_row(&m.tokens));
    if let Some(r) = find(&m.criterion, "estimate_200k_tokens/cached_one_new_message") {
        let ms = r.seconds.median * 1e3;
        let _ = writeln!(
            w,
            "| per-request estimate on 200k tokens < 1 ms | {ms:.3} ms | {} |",
            verdict(ms < 1.0)
        );
    }
    if let Some(s) = find(&m.criterion, "squash/log_4mb").and_then(mb_per_s) {
        let _ = writeln!(
            w,
            "| squash ≥ 100 MB/s on logs | {:.0} MB/s (4 MB build log) | {} |",
            s.median,
            verdict(s.median >= 100.0)
        );
    }
    if let Some(s) = find(&m.criterion, "replay/model_view_10mb").and_then(mb_per_s) {
        let _ = writeln!(
            w,
            "| replay ≥ 100 MB/s | {:.0} MB/s (10 MB transcript, parse + model view) | {} |",
            s.median,
            verdict(s.median >= 100.0)
        );
    }
    let shown: Vec<String> = m
        .loop_ms
        .iter()
        .map(|(turns, s)| format!("{:.3} ms over {turns} turns", s.median))
        .collect();
    let failing: Vec<usize> = m
        .loop_ms
        .iter()
        .filter(|(_, s)| s.median >= 2.0)
        .map(|(turns, _)| *turns)
        .collect();
    let loop_verdict = match failing.first() {
        None => verdict(true).to_owned(),
        Some(turns) if failing.len() < m.loop_ms.len() => {
            format!("**not met from {turns} turns on**")
        }
        Some(_) => verdict(false).to_owned(),
    };
    let _ = writeln!(
        w,
        "| loop overhead < 2 ms per tool turn | {} | {loop_verdict} |",
        shown.join("; ")
    );
    if let Some(row) = super::sandbox::target_row(&m.criterion) {
        let _ = writeln!(w, "{row}");
    }
    for row in super::checkpoint::target_rows(&m.criterion) {
        let _ = writeln!(w, "{row}");
    }
    for row in m
        .checkpoint_run
        .iter()
        .flat_map(super::checkpoint_run::target_rows)
    {
        let _ = writeln!(w, "{row}");
    }
    if let Some(version) = m.startup.row(super::startup::VERSION) {
        let _ = writeln!(
            w,
            "| `pith --version` < 10 ms | {:.2} ms | {} |",
            version.wall_ms.median,
            verdict(version.wall_ms.median < 10.0)
        );
    }
    for row in super::startup::target_rows(&m.startup) {
        let _ = writeln!(w, "{row}");
    }
    for window in [32_768, 128_000] {
        let Some(pith) = m
            .simulation
            .iter()
            .find(|r| r.window == window && r.half == "held-out" && r.policy == "pith")
        else {
            continue;
        };
        let Some(ratio) = crate::simulate::vs_cheapest_peer(&m.simulation, pith) else {
            continue;
        };
        let _ = writeln!(
            w,
            "| `pith` cheaper than the cheapest peer policy at {window} (held-out half) | {ratio:.3}× (${:.2}) | {} |",
            pith.cost_dollars,
            verdict(ratio < 1.0)
        );
    }
}

/// The per-request estimate on a 200k-token history: cached against a full recount.
fn write_estimate(w: &mut String, m: &Measurements) {
    let _ = writeln!(w, "\n## Per-request estimate on a 200k-token history\n");
    let _ = writeln!(
        w,
        "`crates/core/benches/estimate.rs`: the loop's cached `RequestEstimator` after one new message (each iteration also rewinds the cache by one message, so this is an upper bound) vs a full recount with `estimate_request`.\n"
    );
    let _ = writeln!(w, "| estimate | ms |\n|---|---:|");
    for (id, label) in [
        (
            "estimate_200k_tokens/cached_one_new_message",
            "cached, one new message",
        ),
        ("estimate_200k_tokens/full_recount", "full recount"),
    ] {
        if let Some(r) = find(&m.criterion, id) {
            let _ = writeln!(w, "| {label} | {} |", r.seconds.map(|s| s * 1e3).show(3));
        }
    }
    if let (Some(c), Some(f)) = (
        find(&m.criterion, "estimate_200k_tokens/cached_one_new_message"),
        find(&m.criterion, "estimate_200k_tokens/full_recount"),
    ) {
        let _ = writeln!(
            w,
            "\nThe cached estimate is {:.0}× faster than a recount.",
            f.seconds.median / c.seconds.median
        );
    }
}

pub fn render(h: &Header, m: &Measurements, previous: &str) -> String {
    let mut out = String::new();
    let w = &mut out;
    write_header(w, h, m);
    write_targets(w, m);

    write_tokens(w, &m.tokens);

    write_estimate(w, m);

    write_squash(w, &m.squash, &m.criterion);

    // Session store.
    let _ = writeln!(w, "\n## Session store\n");
    let _ = writeln!(
        w,
        "`crates/session/benches/store.rs` (criterion; transcript on the machine's temp file system).\n"
    );
    let _ = writeln!(w, "| operation | time | throughput |\n|---|---:|---:|");
    for r in m
        .criterion
        .iter()
        .filter(|r| r.id.starts_with("append") || r.id.starts_with("replay"))
    {
        let time = if r.seconds.median < 1e-3 {
            format!("{} µs", r.seconds.map(|s| s * 1e6).show(1))
        } else {
            format!("{} ms", r.seconds.map(|s| s * 1e3).show(2))
        };
        let throughput =
            mb_per_s(r).map_or_else(|| "–".to_owned(), |s| format!("{} MB/s", s.show(0)));
        let _ = writeln!(w, "| {} | {time} | {throughput} |", r.id);
    }

    w.push_str(&super::sandbox::section(&m.criterion));
    let crate_part = super::checkpoint::section(&m.criterion);
    w.push_str(&crate_part);
    if let Some(run) = &m.checkpoint_run {
        w.push_str(&super::checkpoint_run::section(run, crate_part.is_empty()));
    }

    // Agent.
    let _ = writeln!(w, "\n## Agent loop and start-up\n");
    let _ = writeln!(w, "| figure | value |\n|---|---:|");
    for (turns, spread) in &m.loop_ms {
        let _ = writeln!(
            w,
            "| loop overhead per tool turn (`AgentLoop`, Anthropic adapter, testkit at zero latency reporting no usage, trivial tool), {turns}-turn session | {} ms ({:.0} turns/s) |",
            spread.show(3),
            1e3 / spread.median
        );
    }
    let _ = writeln!(
        w,
        "| `pith run`, {}-turn session (`ls` tool, transcript persisted): time per tool turn | {:.2} ms |",
        m.long_run_turns, m.long_run.0
    );
    let _ = writeln!(
        w,
        "| `pith run`, {}-turn session: peak RSS | {:.1} MiB |",
        m.long_run_turns, m.long_run.1
    );
    let _ = writeln!(
        w,
        "| `pith run` until its first request, with two stdio MCP servers (the tests' Python server twice) | {} ms |",
        m.first_request_mcp_ms.show(1)
    );
    w.push_str(&super::startup::section(&m.startup));

    // The governor.
    let _ = writeln!(
        w,
        "\n## The compaction governor under misbehaving servers\n\nThe stress suite (`tests/cli_compaction_stress.rs`): the real `pith` binary against pith-testkit, a 32,000-token window, a model that always calls a tool. Wasted: summary requests of attempts that did not apply, or that the next report showed did not help. The largest request is counted on the wire with pith's tokenizer, times the server's bias where it has one (input budget: 0.87 of the window).\n"
    );
    let _ = writeln!(w, "{}", super::governor::table(&m.governor));

    // Simulator.
    let _ = writeln!(
        w,
        "\n## Context policies on real sessions (`cargo xtask simulate`)\n"
    );
    let _ = writeln!(
        w,
        "{} sessions, stand-in summary of 2,000 tokens, Anthropic prices and prompt cache (Claude Sonnet 4.5); `vs first` is the cost relative to `keen`. See the hand-written part for the model and the defaults chosen from it.\n",
        m.simulated_sessions
    );
    out.push_str(&markdown_table(&m.simulation));

    out.push('\n');
    out.push_str(HAND_WRITTEN_MARKER);
    out.push('\n');
    match previous.split_once(HAND_WRITTEN_MARKER) {
        Some((_, kept)) => out.push_str(kept.trim_start_matches('\n')),
        None => out.push_str("\n(No hand-written analysis yet.)\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tokens::{CountFigure, TokenSection};

    fn spread(v: f64) -> Spread {
        Spread::of(&[v]).unwrap()
    }

    fn measurements(loop_ms: f64) -> Measurements {
        let counted = |label: &str, mb: f64| CountFigure {
            label: label.to_owned(),
            tokens: 10,
            mb_per_s: spread(mb),
        };
        Measurements {
            corpus: "2 sessions".into(),
            tokens: TokenSection {
                documents: 2,
                bytes: 100,
                figures: vec![
                    counted(crate::bench::tokens::PITH_ONE_THREAD, 40.0),
                    counted("python tiktoken encode_ordinary_batch, 2 threads", 20.0),
                ],
                python_missing: None,
                python_version: Some("0.14.0".into()),
            },
            squash: Vec::new(),
            criterion: vec![
                CriterionResult {
                    id: "estimate_200k_tokens/cached_one_new_message".into(),
                    seconds: spread(0.0002),
                    bytes: None,
                },
                CriterionResult {
                    id: crate::bench::sandbox::UNSANDBOXED.into(),
                    seconds: spread(0.002),
                    bytes: None,
                },
                CriterionResult {
                    id: crate::bench::sandbox::SANDBOXED.into(),
                    seconds: spread(0.0031),
                    bytes: None,
                },
            ],
            loop_ms: vec![(100, spread(loop_ms))],
            long_run: (4.0, 100.0),
            long_run_turns: 500,
            startup: crate::bench::startup::StartupSection {
                rows: vec![crate::bench::startup::StartupRow {
                    label: crate::bench::startup::VERSION.to_owned(),
                    wall_ms: spread(2.0),
                    rss_mib: Some(spread(6.0)),
                    baseline: None,
                }],
                baseline: None,
            },
            first_request_mcp_ms: spread(250.0),
            checkpoint_run: None,
            simulation: Vec::new(),
            simulated_sessions: 2,
            governor: vec![crate::bench::governor::StressRow {
                scenario: "over-reporting".into(),
                tool_turns: 30,
                compaction_attempts: 2,
                wasted_attempts: 0,
                attempts_per_100_tool_turns: 6.7,
                wasted_per_100_tool_turns: 0.0,
                largest_request_share_of_window: 0.85,
            }],
        }
    }

    fn header() -> Header {
        Header {
            date: "2026-11-29 12:00 UTC".into(),
            commit: "abc".into(),
            machine: "test".into(),
            rustc: "rustc".into(),
            quick: true,
        }
    }

    #[test]
    fn targets_are_judged_from_the_medians() {
        let text = render(&header(), &measurements(3.0), "");
        assert!(
            text.contains("| token count ≥ 1.7× Python tiktoken's best, same counts | 2.00×"),
            "{text}"
        );
        assert!(text.contains("| per-request estimate on 200k tokens < 1 ms | 0.200 ms | met |"));
        assert!(
            text.contains("| bash sandbox < 5 ms per command | 1.10 ms"),
            "{text}"
        );
        assert!(text.contains("\n## Bash sandbox\n"), "{text}");
        assert!(
            text.contains("| over-reporting | 30 | 2 | 6.7 | 0.0 | 0.85 |"),
            "{text}"
        );
        assert!(
            text.contains(
                "| loop overhead < 2 ms per tool turn | 3.000 ms over 100 turns | **not met** |"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_hand_written_part_survives_a_regeneration() {
        let first = render(&header(), &measurements(1.0), "");
        assert!(first.contains("(No hand-written analysis yet.)"));
        let edited = first.replace(
            "(No hand-written analysis yet.)",
            "## Why\nThe defaults come from the simulator.",
        );
        let second = render(&header(), &measurements(1.5), &edited);
        assert!(second.contains("## Why\nThe defaults come from the simulator."));
        assert!(
            second.contains("1.500 ms over 100 turns"),
            "figures are refreshed"
        );
        assert_eq!(second.matches(HAND_WRITTEN_MARKER).count(), 1);
    }
}
