//! One headless job: the real `pith run --format stream-json` against a scripted testkit
//! server, in a given workspace, each stream-json line timed as it arrives.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use pith_testkit::{Script, TestServer, Turn};
use serde_json::Value;

use super::super::agent::{pith, MODEL};
use super::super::stats::Spread;

/// A home for `pith` (config and `$PITH_HOME`), with checkpoints on or off. Kept across
/// jobs, it keeps the checkpoint store (and its stat index) as a user's would.
pub struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    /// A fresh home; `checkpoints: false` writes `[checkpoints] enabled = false`.
    pub fn new(checkpoints: bool) -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("pith-bench-home-")
            .tempdir()
            .context("creating a temp dir")?;
        let config = dir.path().join("config/pith");
        std::fs::create_dir_all(&config)?;
        std::fs::create_dir_all(dir.path().join("pith-home"))?;
        if !checkpoints {
            std::fs::write(
                config.join("config.toml"),
                "[checkpoints]\nenabled = false\n",
            )?;
        }
        Ok(Self { dir })
    }

    /// `$PITH_HOME/checkpoints`: every project's store.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.dir.path().join("pith-home/checkpoints")
    }

    fn command(&self, binary: &Path, workspace: &Path, server: &TestServer) -> Command {
        let mut command = pith(binary, self.dir.path(), Some(server));
        command.current_dir(workspace);
        command
    }
}

/// When the job's lines arrived, in ms since `pith` was spawned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobTimes {
    /// Each `tool_started` of the job's own calls (not a subagent's).
    pub started_ms: Vec<f64>,
    /// Each `tool_result` of the job's own calls.
    pub result_ms: Vec<f64>,
    /// `checkpoint` events.
    pub checkpoints: usize,
    /// The last `checkpoint` event's `store_bytes` (the project's store after it).
    pub store_bytes: Option<u64>,
    /// Tool results that were errors.
    pub errors: usize,
    /// The job's peak resident memory, KiB (its `VmHWM`).
    pub peak_rss_kib: u64,
}

impl JobTimes {
    /// Takes one stream-json line that arrived at `at_ms`; other lines are ignored.
    pub fn record(&mut self, line: &str, at_ms: f64) {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            return;
        };
        if event.get("parent").is_some() {
            return;
        }
        match event.get("type").and_then(Value::as_str) {
            Some("tool_started") => self.started_ms.push(at_ms),
            Some("tool_result") => {
                self.result_ms.push(at_ms);
                if event.get("is_error").and_then(Value::as_bool) == Some(true) {
                    self.errors += 1;
                }
            }
            Some("checkpoint") => {
                self.checkpoints += 1;
                if let Some(bytes) = event.get("store_bytes").and_then(Value::as_u64) {
                    self.store_bytes = Some(bytes);
                }
            }
            _ => {}
        }
    }

    /// One bash turn, ms: the gaps between consecutive `tool_started` lines from the
    /// second call on (a gap is the call, its checkpoint, its result going back and the
    /// next answer coming in). The first gap holds the wait for the first snapshot and is
    /// left out. `None` with fewer than three calls.
    pub fn turn_gaps_ms(&self) -> Option<Spread> {
        let gaps: Vec<f64> = self
            .started_ms
            .windows(2)
            .skip(1)
            .map(|pair| pair[1] - pair[0])
            .collect();
        Spread::of(&gaps)
    }

    /// The mean of [`JobTimes::turn_gaps_ms`]: (last call − second call) / gaps.
    pub fn mean_turn_ms(&self) -> Option<f64> {
        let n = self.started_ms.len();
        (n >= 3).then(|| (self.started_ms[n - 1] - self.started_ms[1]) / (n - 2) as f64)
    }
}

/// Runs `pith run` in `workspace` with `home`, against a server playing `turns` and then
/// a final answer; fails unless it exits 0 having run every call without an error.
pub fn run(binary: &Path, home: &Home, workspace: &Path, turns: Vec<Turn>) -> Result<JobTimes> {
    let calls = turns.len();
    let server = TestServer::start(Script::anthropic(
        turns.into_iter().chain([Turn::text("done")]),
    ))
    .map_err(|e| anyhow!("testkit: {e}"))?;
    let stderr = tempfile::NamedTempFile::new().context("a file for pith's stderr")?;
    let start = Instant::now();
    let mut child = home
        .command(binary, workspace, &server)
        .args([
            "run",
            "--model",
            MODEL,
            "--approval",
            "full",
            "--format",
            "stream-json",
            "run the commands",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr.reopen().context("reopening the stderr file")?)
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    let stdout = child.stdout.take().context("pith's stdout")?;
    // The lines are timed on a thread of their own while this one polls the peak memory.
    let reader = std::thread::spawn(move || -> Result<JobTimes> {
        let mut times = JobTimes::default();
        for line in BufReader::new(stdout).lines() {
            let line = line.context("reading pith's stdout")?;
            times.record(&line, start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(times)
    });
    let (code, peak_rss_kib) = super::super::agent::wait_with_peak_rss(child)?;
    let mut times = reader
        .join()
        .map_err(|_| anyhow!("the thread reading pith's stdout panicked"))??;
    times.peak_rss_kib = peak_rss_kib;
    if code != 0 {
        bail!(
            "pith run in {} failed (exit {code}): {}",
            workspace.display(),
            std::fs::read_to_string(stderr.path()).unwrap_or_default()
        );
    }
    if times.started_ms.len() != calls || times.result_ms.len() != calls || times.errors > 0 {
        bail!(
            "pith run in {} ran {} of {calls} calls ({} results, {} errors)",
            workspace.display(),
            times.started_ms.len(),
            times.result_ms.len(),
            times.errors
        );
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started(times: &[f64]) -> JobTimes {
        let mut job = JobTimes::default();
        for t in times {
            job.record(
                r#"{"type":"tool_started","call_id":"c","name":"bash","arguments":{}}"#,
                *t,
            );
        }
        job
    }

    #[test]
    fn lines_are_sorted_by_kind_and_a_subagent_s_are_skipped() {
        let mut job = JobTimes::default();
        job.record(r#"{"type":"session_started","session_id":"s"}"#, 1.0);
        job.record(r#"{"type":"tool_started","call_id":"a"}"#, 2.0);
        job.record(
            r#"{"type":"tool_started","call_id":"b","parent":{"call_id":"a"}}"#,
            3.0,
        );
        job.record(
            r#"{"type":"tool_result","call_id":"a","is_error":true}"#,
            4.0,
        );
        job.record(r#"{"type":"checkpoint","id":"7","store_bytes":120}"#, 5.0);
        job.record(r#"{"type":"checkpoint","id":"9","store_bytes":150}"#, 6.0);
        job.record("not json", 7.0);
        assert_eq!(job.started_ms, [2.0]);
        assert_eq!(job.result_ms, [4.0]);
        assert_eq!((job.errors, job.checkpoints), (1, 2));
        assert_eq!(job.store_bytes, Some(150));
    }

    #[test]
    fn a_turn_is_a_gap_between_calls_leaving_out_the_first() {
        // The first gap (100 ms) is the wait for the first snapshot.
        let job = started(&[50.0, 150.0, 160.0, 172.0, 181.0]);
        let gaps = job.turn_gaps_ms().unwrap();
        assert_eq!(
            (gaps.min, gaps.median, gaps.max, gaps.runs),
            (9.0, 10.0, 12.0, 3)
        );
        assert!((job.mean_turn_ms().unwrap() - 31.0 / 3.0).abs() < 1e-9);
        assert!(started(&[1.0, 2.0]).turn_gaps_ms().is_none());
        assert!(started(&[1.0, 2.0]).mean_turn_ms().is_none());
    }
}
