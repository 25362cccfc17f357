//! `cargo xtask fidelity --sessions DIR --window N… [--dump DIR]`: what survives a
//! compaction. Replays corpus sessions through the simulator's `tiered` policy (the real
//! engine functions, the deterministic stand-in summary), once per replacement design,
//! and after every LLM compaction probes the model's view for:
//!
//! - a. each user message so far, verbatim (or head and tail around `tokens omitted]`);
//! - b. each file written or edited so far;
//! - c. the files read in the last 5 tool turns;
//! - d. the failing test ids of the latest test run;
//! - e. the last error line of the latest failing command;
//! - f. the plan: on a scripted session ([`plan`]), each step of the latest
//!   `update_plan`, verbatim.
//!
//! Designs: `keen` (summary + last user message), `codex` (user messages within 20k
//! tokens + summary), `pith` (summary + session ledger + last user message, and the
//! re-attached files when `restore_files` is set). The stand-in summary carries none of
//! the facts, so the table shows what each design guarantees whatever the model writes.
//! The reference answers come from [`facts`], written independently of the ledger's
//! parser. Both halves of the corpus ([`crate::split`]) are reported.

pub mod facts;
pub mod plan;
mod view;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use pith_core::{BpeCounter, Encoding};
use serde::Serialize;

use crate::corpus::{session_files, CorpusSession};
use crate::simulate::policy::{Carry, Policy};
use crate::simulate::replay::{replay_with, CompactionView, ViewKind};
use crate::split::{half_of, Half};
use facts::{facts_at, Facts};
use view::probe_params;
pub use view::{view_text, Tally};

/// Characters of a long user message's head and tail probe a looks for.
const HEAD_TAIL_CHARS: usize = 100;

/// Options of one run.
#[derive(Debug, Clone)]
pub struct FidelityOptions {
    /// Directory of sessions in the neutral JSONL format.
    pub sessions: PathBuf,
    /// Context windows.
    pub windows: Vec<u64>,
    /// Where to write pith's views, one file per compaction.
    pub dump: Option<PathBuf>,
    /// Also write the rows as JSON here.
    pub json: Option<PathBuf>,
    /// Print what pith's views lost, for sessions of the tuning half only.
    pub missed: bool,
}

/// One design's retention over a set of sessions at one window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Row {
    /// Window simulated.
    pub window: u64,
    /// `tuning`, `held-out` or `all`.
    pub half: String,
    /// `keen`, `codex` or `pith`.
    pub design: String,
    /// Sessions replayed.
    pub sessions: u64,
    /// LLM compactions probed.
    pub compactions: u64,
    /// Probes a–e.
    pub probes: [Tally; 5],
    /// Largest ledger, tokens.
    pub ledger_tokens_max: u64,
    /// Mean ledger over compactions, tokens.
    pub ledger_tokens_mean: f64,
    /// Largest ledger as a percentage of the input budget.
    pub ledger_percent_max: f64,
    /// Mean tokens of the view right after a compaction.
    pub view_tokens_mean: f64,
}

impl Row {
    fn merge(&mut self, other: &Row) {
        let compactions = self.compactions + other.compactions;
        if compactions > 0 {
            self.ledger_tokens_mean = (self.ledger_tokens_mean * self.compactions as f64
                + other.ledger_tokens_mean * other.compactions as f64)
                / compactions as f64;
            self.view_tokens_mean = (self.view_tokens_mean * self.compactions as f64
                + other.view_tokens_mean * other.compactions as f64)
                / compactions as f64;
        }
        self.sessions += other.sessions;
        self.compactions = compactions;
        for (mine, theirs) in self.probes.iter_mut().zip(other.probes) {
            mine.merge(theirs);
        }
        self.ledger_tokens_max = self.ledger_tokens_max.max(other.ledger_tokens_max);
        self.ledger_percent_max = self.ledger_percent_max.max(other.ledger_percent_max);
    }
}

/// Probes one view against the facts at its point; returns the five tallies.
#[cfg(test)]
pub fn probe(view: &str, facts: &Facts) -> [Tally; 5] {
    probe_noting(view, facts, &mut |_, _| {})
}

/// [`probe`], telling `missed` the probe letter and the answer of every miss.
pub fn probe_noting(view: &str, facts: &Facts, missed: &mut dyn FnMut(char, &str)) -> [Tally; 5] {
    let mut tallies = [Tally::default(); 5];
    for message in &facts.user_messages {
        let message = message.trim();
        if message.is_empty() {
            continue;
        }
        let whole = view.contains(message);
        let head_tail = || {
            let chars: Vec<char> = message.chars().collect();
            let head: String = chars.iter().take(HEAD_TAIL_CHARS).collect();
            let tail: String = chars[chars.len().saturating_sub(HEAD_TAIL_CHARS)..]
                .iter()
                .collect();
            view.contains(&head) && view.contains(&tail) && view.contains("tokens omitted]")
        };
        let kept = whole || head_tail();
        if !kept {
            missed('a', message);
        }
        tallies[0].add(kept);
    }
    for file in &facts.written_files {
        let kept = view.contains(file.as_str());
        if !kept {
            missed('b', file);
        }
        tallies[1].add(kept);
    }
    for file in &facts.recent_reads {
        let kept = view.contains(file.as_str());
        if !kept {
            missed('c', file);
        }
        tallies[2].add(kept);
    }
    for id in &facts.failing_tests {
        let kept = id.iter().all(|part| view.contains(part.as_str()));
        if !kept {
            missed('d', &id.join(" "));
        }
        tallies[3].add(kept);
    }
    if let Some(line) = &facts.last_error {
        let kept = view.contains(line.as_str());
        if !kept {
            missed('e', line);
        }
        tallies[4].add(kept);
    }
    tallies
}

/// Runs the probes and prints the tables.
pub fn run(options: &FidelityOptions) -> Result<()> {
    let rows = measure(options)?;
    print!("{}", table(&rows));
    print!(
        "{}",
        plan::plan_table(&plan::measure_plan(&options.windows))
    );
    if let Some(path) = &options.json {
        std::fs::write(path, serde_json::to_string_pretty(&rows)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The rows of every design, half and window (and the `--dump` files).
pub fn measure(options: &FidelityOptions) -> Result<Vec<Row>> {
    let files = session_files(&options.sessions)?;
    let counter = Arc::new(BpeCounter::new(Encoding::O200kBase));
    let mut rows: Vec<Row> = Vec::new();
    for &window in &options.windows {
        let params = probe_params(window, &counter);
        for carry in Carry::ALL {
            let policy = Policy::pith_with_carry(carry);
            let mut halves: BTreeMap<Half, Row> = BTreeMap::new();
            for file in &files {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading {}", file.display()))?;
                let mut session = crate::corpus::parse_session(&text);
                session.name = stem(file);
                let mut outcome = replay_with(&session, &policy, &params, true);
                // The probes here are of what an LLM compaction keeps; masking is simulate's.
                outcome.views.retain(|v| v.kind == ViewKind::Llm);
                let row = halves.entry(half_of(file)).or_insert_with(|| Row {
                    window,
                    half: half_of(file).as_str().to_owned(),
                    design: carry.as_str().to_owned(),
                    ..Row::default()
                });
                let show_misses =
                    options.missed && carry == Carry::Pith && half_of(file) == Half::Tuning;
                row.merge(&session_row(
                    &session,
                    &outcome.views,
                    counter.as_ref(),
                    show_misses,
                ));
                if carry == Carry::Pith {
                    if let Some(dir) = &options.dump {
                        let dir = if options.windows.len() > 1 {
                            dir.join(format!("w{window}"))
                        } else {
                            dir.clone()
                        };
                        dump(&dir, &session, &outcome.views)?;
                    }
                }
            }
            let mut all = Row {
                window,
                half: "all".to_owned(),
                design: carry.as_str().to_owned(),
                ..Row::default()
            };
            for half in Half::ALL {
                if let Some(row) = halves.remove(&half) {
                    all.merge(&row);
                    rows.push(row);
                }
            }
            rows.push(all);
        }
    }
    Ok(rows)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The tallies of one session's views.
fn session_row(
    session: &CorpusSession,
    views: &[CompactionView],
    counter: &dyn pith_core::TokenCounter,
    show_misses: bool,
) -> Row {
    let mut row = Row {
        sessions: 1,
        ..Row::default()
    };
    let mut ledger_total = 0u64;
    let mut view_total = 0u64;
    for (n, view) in views.iter().enumerate() {
        let text = view_text(&view.messages);
        let facts = facts_at(session, view.after_message);
        let mut note = |letter: char, answer: &str| {
            if show_misses {
                let answer: String = answer.chars().take(160).collect();
                println!(
                    "missed {letter} in {} compaction {}: {answer:?}",
                    session.name,
                    n + 1
                );
            }
        };
        for (tally, add) in row
            .probes
            .iter_mut()
            .zip(probe_noting(&text, &facts, &mut note))
        {
            tally.merge(add);
        }
        row.compactions += 1;
        ledger_total += view.ledger_tokens;
        view_total += counter.count(&text) as u64;
        row.ledger_tokens_max = row.ledger_tokens_max.max(view.ledger_tokens);
        if view.input_budget > 0 {
            row.ledger_percent_max = row
                .ledger_percent_max
                .max(view.ledger_tokens as f64 * 100.0 / view.input_budget as f64);
        }
    }
    if row.compactions > 0 {
        row.ledger_tokens_mean = ledger_total as f64 / row.compactions as f64;
        row.view_tokens_mean = view_total as f64 / row.compactions as f64;
    }
    row
}

/// Writes one file per compaction: `<stem>.<n>.txt`.
fn dump(dir: &Path, session: &CorpusSession, views: &[CompactionView]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (n, view) in views.iter().enumerate() {
        let path = dir.join(format!("{}.{}.txt", session.name, n + 1));
        // The header names the session file's line, not the message's index.
        let line = session
            .file_lines
            .get(view.after_message)
            .copied()
            .unwrap_or(view.after_message);
        let text = format!(
            "# session {} compaction {} after message {}\n{}",
            session.name,
            n + 1,
            line,
            view_text(&view.messages)
        );
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// The report as Markdown tables, one per window.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::new();
    let mut windows: Vec<u64> = rows.iter().map(|r| r.window).collect();
    windows.dedup();
    for window in windows {
        let _ = writeln!(out, "\n### Window {window}\n");
        let _ = writeln!(
            out,
            "| half | design | sessions | compactions | a. user msgs | b. files changed | c. recent reads | d. failing tests | e. last error | ledger mean / max tokens (max % of input budget) | view tokens (mean) |"
        );
        let _ = writeln!(
            out,
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for row in rows.iter().filter(|r| r.window == window) {
            let cells: Vec<String> = row
                .probes
                .iter()
                .map(|t| format!("{:.1}% ({}/{})", t.percent(), t.kept, t.asked))
                .collect();
            let ledger = if row.design == "pith" {
                format!(
                    "{:.0} / {} ({:.1}%)",
                    row.ledger_tokens_mean, row.ledger_tokens_max, row.ledger_percent_max
                )
            } else {
                "—".to_owned()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {ledger} | {:.0} |",
                row.half,
                row.design,
                row.sessions,
                row.compactions,
                cells.join(" | "),
                row.view_tokens_mean
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The corpus sample vendored with pith-core (a fresh clone has no shared corpus).
    fn sample() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../crates/core/tests/data/corpus-sample")
    }

    #[test]
    fn on_the_vendored_sample_pith_keeps_what_keen_loses_and_dumps_its_views() {
        let dump = tempfile::tempdir().unwrap();
        let rows = measure(&FidelityOptions {
            sessions: sample(),
            windows: vec![16_384],
            dump: Some(dump.path().to_path_buf()),
            json: None,
            missed: false,
        })
        .unwrap();
        let all = |design: &str| {
            rows.iter()
                .find(|r| r.half == "all" && r.design == design)
                .unwrap()
                .clone()
        };
        let (keen, pith) = (all("keen"), all("pith"));
        assert!(pith.compactions > 0, "the sample compacts at 16k: {pith:?}");
        let [a, b, _, d, _] = pith.probes;
        assert!(a.asked > 0 && b.asked > 0, "{pith:?}");
        assert_eq!(
            (a.kept, b.kept, d.kept),
            (a.asked, b.asked, d.asked),
            "{pith:?}"
        );
        assert!(keen.probes[1].percent() < b.percent(), "{keen:?}");
        let budget = pith_core::ContextBudget::for_window(16_384).input_budget;
        let percent = u64::from(pith_core::context::ContextConfig::default().ledger_percent);
        assert!(pith.ledger_tokens_max <= budget * percent / 100, "{pith:?}");
        let dumped: Vec<_> = std::fs::read_dir(dump.path()).unwrap().collect();
        assert_eq!(dumped.len() as u64, pith.compactions);
        let first = std::fs::read_dir(dump.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let text = std::fs::read_to_string(&first).unwrap();
        let name = first.file_name().unwrap().to_string_lossy().into_owned();
        let (stem, n) = name.trim_end_matches(".txt").rsplit_once('.').unwrap();
        assert!(
            text.starts_with(&format!("# session {stem} compaction {n} after message ")),
            "{text}"
        );
        assert!(text.contains("<session_ledger>"));
        // The header names the session file's last line before the compaction: a tool
        // result (or the user's message), and the line after it is the assistant answer
        // the compaction was made for.
        let header = text.lines().next().unwrap();
        let k: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
        let file = std::fs::read_to_string(sample().join(format!("{stem}.jsonl"))).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let role = |line: &str| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["role"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_ne!(role(lines[k]), "assistant", "{header}: {}", lines[k]);
        assert_eq!(role(lines[k + 1]), "assistant", "{header}");
    }

    #[test]
    fn a_message_knows_its_line_in_the_session_file() {
        let session = crate::corpus::parse_session(
            "{\"role\":\"system\",\"content\":\"s\"}\n\n{\"role\":\"user\",\"content\":\"u\"}\nnot json\n{\"role\":\"assistant\",\"content\":\"a\"}\n",
        );
        assert_eq!(session.messages.len(), 2);
        assert_eq!(session.file_lines, vec![2, 4]);
    }

    #[test]
    fn probes_count_what_the_view_shows() {
        let facts = Facts {
            user_messages: vec!["fix the parser".into(), "x".repeat(500)],
            written_files: ["src/a.py".to_owned()].into_iter().collect(),
            recent_reads: ["src/b.py".to_owned(), "src/c.py".to_owned()]
                .into_iter()
                .collect(),
            failing_tests: vec![vec!["test_x".into(), "app.T".into()]],
            last_error: Some("ValueError: bad".into()),
        };
        let view = format!(
            "fix the parser\n{} [400 tokens omitted] {}\n- /repo/src/a.py: edited\nsrc/b.py\ntest_x (app.T)\n",
            "x".repeat(100),
            "x".repeat(100)
        );
        let tallies = probe(&view, &facts);
        assert_eq!(tallies[0], Tally { asked: 2, kept: 2 });
        assert_eq!(tallies[1], Tally { asked: 1, kept: 1 });
        assert_eq!(tallies[2], Tally { asked: 2, kept: 1 });
        assert_eq!(tallies[3], Tally { asked: 1, kept: 1 });
        assert_eq!(tallies[4], Tally { asked: 1, kept: 0 });
        assert_eq!(Tally::default().percent(), 100.0);
    }
}
