//! Start-up and memory of the `pith` binary: `pith --version`, `pith tokens` on 3 bytes
//! and on 1 MiB, `pith run` until its first request reaches the testkit, and the peak RSS
//! of a 40-turn `pith run` whose context stays far below half the window.
//!
//! With `--baseline BINARY` (another build of pith, e.g. `main`'s), every figure is also
//! measured for that binary, alternating between the two in the same invocation, so the
//! two columns compare like with like on a shared, noisy machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::agent::{ls_session, pith, run_startup, sandbox};
use super::stats::Spread;

/// Tool turns of the session whose peak RSS is measured.
pub const SESSION_TURNS: usize = 40;
/// Start-up target: `pith run` until its first request, median, in ms.
pub const FIRST_REQUEST_TARGET_MS: f64 = 30.0;
/// Memory target: peak RSS of the [`SESSION_TURNS`]-turn session, median, in MiB.
pub const SESSION_RSS_TARGET_MIB: f64 = 40.0;

/// One figure, for pith and (when given) the baseline binary.
#[derive(Debug, Clone)]
pub struct StartupRow {
    /// What was run.
    pub label: String,
    /// Wall time, ms.
    pub wall_ms: Spread,
    /// Peak RSS, MiB (`None` where it is not measured).
    pub rss_mib: Option<Spread>,
    /// The same for the baseline binary.
    pub baseline: Option<(Spread, Option<Spread>)>,
}

/// The section.
#[derive(Debug, Clone)]
pub struct StartupSection {
    /// The rows, in the report's order.
    pub rows: Vec<StartupRow>,
    /// The baseline binary, as given.
    pub baseline: Option<PathBuf>,
}

impl StartupSection {
    /// The row whose label starts with `prefix`.
    pub fn row(&self, prefix: &str) -> Option<&StartupRow> {
        self.rows.iter().find(|r| r.label.starts_with(prefix))
    }
}

/// Row labels (the report and the targets find rows by them).
pub const VERSION: &str = "`pith --version`";
/// See [`VERSION`].
pub const TOKENS_SMALL: &str = "`pith tokens`, 3 bytes (o200k)";
/// See [`VERSION`].
pub const TOKENS_SMALL_CL100K: &str = "`pith tokens --encoding cl100k`, 3 bytes";
/// See [`VERSION`].
pub const TOKENS_LARGE: &str = "`pith tokens`, 1 MiB of corpus text (o200k)";
/// See [`VERSION`].
pub const FIRST_REQUEST: &str = "`pith run` until its first request reaches the testkit";
/// See [`VERSION`].
pub const SESSION: &str = "`pith run`, 40-turn session below half the window";

/// GNU time: the intermediary that reports a child's own peak RSS.
const GNU_TIME: &str = "/usr/bin/time";

/// A command measured twice: its wall time, and its own peak RSS.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// From spawn to exit, ms (the run without GNU time).
    pub wall_ms: f64,
    /// The process's peak resident set, MiB (the run under GNU time).
    pub peak_mib: f64,
}

/// Runs the command `make` builds twice: as it is, timing it from spawn to exit, and
/// under GNU time (`/usr/bin/time -f %M`) for its peak RSS. Fails unless both exit 0.
///
/// Why an intermediary: a process xtask spawns (vfork or fork alike) starts with a copy
/// of xtask's memory map, and Linux folds that map's high-water mark into the child's
/// `ru_maxrss` at exec, so the child's own `wait4` figure is xtask's memory. GNU time's
/// child inherits only GNU time's small map. Without GNU time (Debian package `time`),
/// the peak is polled from `/proc` every 5 ms, which can miss a short process's peak.
pub fn run_measured(make: &dyn Fn() -> Result<Command>) -> Result<Finished> {
    let mut plain = make()?;
    let start = Instant::now();
    let status = plain.status().context("running the command")?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    if !status.success() {
        bail!("{:?} failed: {status}", plain.get_program());
    }
    let peak_mib = peak_mib(make()?)?;
    Ok(Finished { wall_ms, peak_mib })
}

/// The peak RSS of `command`, MiB (see [`run_measured`]).
fn peak_mib(command: Command) -> Result<f64> {
    if !Path::new(GNU_TIME).is_file() {
        let mut command = command;
        let (code, kib) = super::agent::wait_with_peak_rss(command.spawn()?)?;
        if code != 0 {
            bail!("{:?} exited with {code}", command.get_program());
        }
        return Ok(kib as f64 / 1024.0);
    }
    let report = tempfile::NamedTempFile::new().context("a file for GNU time's report")?;
    let mut timed = Command::new(GNU_TIME);
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(report.path())
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear()
        .envs(
            command
                .get_envs()
                .filter_map(|(key, value)| value.map(|value| (key, value))),
        );
    if let Some(dir) = command.get_current_dir() {
        timed.current_dir(dir);
    }
    timed.stdout(Stdio::null()).stderr(Stdio::null());
    let status = timed.status().context("running GNU time")?;
    if !status.success() {
        bail!(
            "{:?} under GNU time failed: {status}",
            command.get_program()
        );
    }
    let text = std::fs::read_to_string(report.path()).context("reading GNU time's report")?;
    let kib: f64 = text
        .lines()
        .last()
        .and_then(|line| line.trim().parse().ok())
        .with_context(|| format!("GNU time's report is not a size: {text:?}"))?;
    Ok(kib / 1024.0)
}

/// `pith ARGS` in the hermetic home `home`, measured.
fn run_pith(binary: &Path, home: &Path, args: &[&str]) -> Result<Finished> {
    run_measured(&|| {
        let mut command = pith(binary, home, None);
        command
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        Ok(command)
    })
}

/// A 40-turn `pith run` (the `ls` tool on a small directory, far below half of the
/// model's 200k window), measured; each of the two runs gets its own server and home.
fn session(binary: &Path) -> Result<Finished> {
    let mut kept = Vec::new();
    let servers = std::cell::RefCell::new(Vec::new());
    let finished = run_measured(&|| {
        let home = sandbox()?;
        let (server, mut command) = ls_session(binary, home.path(), SESSION_TURNS)?;
        command.stderr(Stdio::null());
        servers.borrow_mut().push((server, home));
        Ok(command)
    })?;
    kept.extend(servers.into_inner());
    for (server, _) in &kept {
        if server.request_count() != SESSION_TURNS + 1 {
            bail!(
                "the {SESSION_TURNS}-turn pith run sent {} requests",
                server.request_count()
            );
        }
    }
    Ok(finished)
}

/// 1 MiB of corpus text (documents joined by newlines, cut at a character boundary).
pub fn one_mebibyte(documents: &[String]) -> String {
    const SIZE: usize = 1 << 20;
    let mut text = String::with_capacity(SIZE + 4);
    if documents.iter().all(String::is_empty) {
        return "x".repeat(SIZE);
    }
    for document in documents.iter().cycle() {
        if text.len() >= SIZE {
            break;
        }
        text.push_str(document);
        text.push('\n');
    }
    let mut end = SIZE.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// Measures every row for `binary` and, alternately, for `baseline`.
pub fn measure(
    binary: &Path,
    baseline: Option<&Path>,
    documents: &[String],
    runs: usize,
) -> Result<StartupSection> {
    let home = sandbox()?;
    let small = home.path().join("three-bytes.txt");
    std::fs::write(&small, "abc")?;
    let large = home.path().join("one-mebibyte.txt");
    std::fs::write(&large, one_mebibyte(documents))?;
    let (small, large) = (path_str(&small)?, path_str(&large)?);

    let commands: [(&str, Vec<&str>, usize); 4] = [
        (VERSION, vec!["--version"], runs * 3),
        (TOKENS_SMALL, vec!["tokens", small], runs * 2),
        (
            TOKENS_SMALL_CL100K,
            vec!["tokens", "--encoding", "cl100k", small],
            runs * 2,
        ),
        (TOKENS_LARGE, vec!["tokens", large], runs),
    ];
    let mut rows = Vec::new();
    for (label, args, count) in commands {
        let mut ours = Vec::new();
        let mut theirs = Vec::new();
        for _ in 0..count {
            ours.push(run_pith(binary, home.path(), &args)?);
            if let Some(baseline) = baseline {
                theirs.push(run_pith(baseline, home.path(), &args)?);
            }
        }
        rows.push(row(label, &ours, &theirs)?);
    }

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..runs * 2 {
        ours.push(run_startup(binary, 1)?.median);
        if let Some(baseline) = baseline {
            theirs.push(run_startup(baseline, 1)?.median);
        }
    }
    rows.push(StartupRow {
        label: FIRST_REQUEST.to_owned(),
        wall_ms: Spread::of(&ours).context("no runs")?,
        rss_mib: None,
        baseline: Spread::of(&theirs).map(|s| (s, None)),
    });

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for _ in 0..runs {
        ours.push(session(binary)?);
        if let Some(baseline) = baseline {
            theirs.push(session(baseline)?);
        }
    }
    rows.push(row(SESSION, &ours, &theirs)?);

    Ok(StartupSection {
        rows,
        baseline: baseline.map(Path::to_path_buf),
    })
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str()
        .with_context(|| format!("{} is not UTF-8", path.display()))
}

fn row(label: &str, ours: &[Finished], theirs: &[Finished]) -> Result<StartupRow> {
    let spreads = |runs: &[Finished]| {
        let wall: Vec<f64> = runs.iter().map(|f| f.wall_ms).collect();
        let peak: Vec<f64> = runs.iter().map(|f| f.peak_mib).collect();
        (Spread::of(&wall), Spread::of(&peak))
    };
    let (wall, peak) = spreads(ours);
    let (baseline_wall, baseline_peak) = spreads(theirs);
    Ok(StartupRow {
        label: label.to_owned(),
        wall_ms: wall.context("no runs")?,
        rss_mib: peak,
        baseline: baseline_wall.map(|w| (w, baseline_peak)),
    })
}

/// The section's markdown.
pub fn section(startup: &StartupSection) -> String {
    let mut out = String::from("\n## Start-up and memory\n\n");
    out.push_str(
        "The release `pith` binary, each command in a fresh process with its own home. Peak \
         RSS is the process's own high-water mark (measured under GNU time; wall time in \
         separate runs without it). The 40-turn \
         session is the `ls` tool against the testkit (Anthropic protocol, 200k window).",
    );
    match &startup.baseline {
        Some(path) => out.push_str(&format!(
            " Baseline: `{}`, run alternately with this build.\n\n\
             | command | wall ms | peak RSS MiB | baseline wall ms | baseline peak RSS MiB |\n\
             |---|---:|---:|---:|---:|\n",
            path.display()
        )),
        None => out.push_str("\n\n| command | wall ms | peak RSS MiB |\n|---|---:|---:|\n"),
    }
    let rss = |s: &Option<Spread>| s.map_or_else(|| "–".to_owned(), |s| s.show(1));
    for row in &startup.rows {
        out.push_str(&format!(
            "| {} | {} | {}",
            row.label,
            row.wall_ms.show(1),
            rss(&row.rss_mib)
        ));
        if startup.baseline.is_some() {
            match &row.baseline {
                Some((wall, peak)) => out.push_str(&format!(" | {} | {}", wall.show(1), rss(peak))),
                None => out.push_str(" | – | –"),
            }
        }
        out.push_str(" |\n");
    }
    out
}

/// The two target rows: (first request, session peak RSS).
pub fn target_rows(startup: &StartupSection) -> Vec<String> {
    let verdict = |ok: bool| if ok { "met" } else { "**not met**" };
    let mut rows = Vec::new();
    if let Some(first) = startup.row(FIRST_REQUEST) {
        rows.push(format!(
            "| `pith run` to its first request ≤ {FIRST_REQUEST_TARGET_MS:.0} ms (default model's tokenizer, no MCP) | {:.1} ms | {} |",
            first.wall_ms.median,
            verdict(first.wall_ms.median <= FIRST_REQUEST_TARGET_MS)
        ));
    }
    if let Some(peak) = startup.row(SESSION).and_then(|r| r.rss_mib) {
        rows.push(format!(
            "| peak RSS ≤ {SESSION_RSS_TARGET_MIB:.0} MiB, {SESSION_TURNS}-turn `pith run` below half the window | {:.1} MiB | {} |",
            peak.median,
            verdict(peak.median <= SESSION_RSS_TARGET_MIB)
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_measured_by_its_own_peak_not_the_parents() {
        // This process holds 300 MiB; a short child must not report it.
        let ballast = vec![1u8; 300 << 20];
        let small = run_measured(&|| Ok(Command::new("true"))).unwrap();
        assert!(small.peak_mib > 0.0);
        assert!(small.peak_mib < 50.0, "{} MiB", small.peak_mib);
        // And a child that does grow is measured as grown.
        let grown = run_measured(&|| {
            let mut grow = Command::new("sh");
            grow.args([
                "-c",
                "x=$(head -c 30000000 /dev/zero | tr '\\0' a); echo ${#x}",
            ]);
            grow.stdout(Stdio::null());
            Ok(grow)
        })
        .unwrap();
        assert!(grown.peak_mib > 25.0, "{} MiB", grown.peak_mib);
        assert!(grown.wall_ms > 0.0);
        drop(ballast);
    }

    #[test]
    fn a_failing_command_is_an_error() {
        assert!(run_measured(&|| {
            let mut fail = Command::new("sh");
            fail.args(["-c", "exit 3"]);
            Ok(fail)
        })
        .is_err());
    }

    #[test]
    fn one_mebibyte_is_exactly_that_and_valid_text() {
        let docs = vec!["日本語のテキスト".to_owned(), "fn main() {}".repeat(10)];
        let text = one_mebibyte(&docs);
        assert!(text.len() <= 1 << 20 && text.len() > (1 << 20) - 4);
        assert!(text.contains("fn main()"));
    }

    #[test]
    fn targets_are_judged_on_the_medians() {
        let spread = |v: f64| Spread::of(&[v]).unwrap();
        let startup = StartupSection {
            rows: vec![
                StartupRow {
                    label: FIRST_REQUEST.to_owned(),
                    wall_ms: spread(21.0),
                    rss_mib: None,
                    baseline: Some((spread(99.0), None)),
                },
                StartupRow {
                    label: SESSION.to_owned(),
                    wall_ms: spread(300.0),
                    rss_mib: Some(spread(41.0)),
                    baseline: None,
                },
            ],
            baseline: Some(PathBuf::from("/tmp/pith-main")),
        };
        let rows = target_rows(&startup);
        assert!(rows[0].contains("| 21.0 ms | met |"), "{}", rows[0]);
        assert!(
            rows[1].contains("| 41.0 MiB | **not met** |"),
            "{}",
            rows[1]
        );
        let text = section(&startup);
        assert!(
            text.contains("| 21.0 (21.0 – 21.0) | – | 99.0 (99.0 – 99.0) | – |"),
            "{text}"
        );
        assert!(
            text.contains("| 300.0 (300.0 – 300.0) | 41.0 (41.0 – 41.0) | – | – |"),
            "{text}"
        );
    }
}
