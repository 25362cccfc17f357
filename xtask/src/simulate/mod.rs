//! `cargo xtask simulate --sessions DIR --window N [--policy NAME]… [--prices FAMILY]
//! [--day N] [--format json]`: replays real agent sessions through context policies as if
//! the agent had run with window N, bills every request with a provider family's prices
//! and prompt cache on a simulated clock, charges the re-reads a policy causes, and probes
//! every view a policy makes for what it kept (fidelity a–e), one row per window, policy
//! and half of the corpus.
//!
//! - [`policy`] — the policies and their names, with each peer's sources;
//! - [`replay`] — one session under one policy (the `pith` step calls core's real
//!   pipeline, mirroring the agent loop); [`steps`] — the peers' steps;
//! - [`ledger`] — the bill, on [`prices`]' models and the testkit's prompt cache;
//! - [`clock`] — latency, tool time and the user's pauses; [`day`] — `--day N`;
//! - [`rereads`] — what forgetting costs.

mod claude_code;
pub mod clock;
mod codex;
pub mod day;
pub mod disk;
mod engine;
pub mod ledger;
mod ledger_only;
mod pith_step;
pub mod policy;
mod prepared;
pub mod prices;
pub mod replay;
mod rereads;
mod steps;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use pith_core::{BpeCounter, Encoding};
use serde::Serialize;

use crate::corpus::{read_sessions, CorpusSession};
use crate::fidelity::facts::facts_at;
use crate::fidelity::{probe_noting, view_text, Tally};
use crate::split::{half_of, Half};
use policy::Policy;
use prices::{CostParts, PriceModel};
use replay::{replay_with, SessionOutcome, SimParams};

/// Options of one simulation run.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Context windows to simulate.
    pub windows: Vec<u64>,
    /// Policies to compare.
    pub policies: Vec<String>,
    /// Tokens of the stand-in LLM summary.
    pub summary_tokens: usize,
    /// Tokens of the stand-in summary next to a session ledger (`None`: the default of
    /// `engine::default_ledger_summary_tokens`, or `summary_tokens` if smaller).
    pub ledger_summary_tokens: Option<usize>,
    /// Prices, cache and speed.
    pub prices: PriceModel,
    /// Tasks joined into one session (`--day N`; 1: each corpus session alone).
    pub day: usize,
    /// Probe every view for fidelity a–e (slower).
    pub fidelity: bool,
}

/// Probes a–e kept, as fractions (1 when nothing was asked).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Fidelity {
    /// a. user messages.
    pub a: f64,
    /// b. files changed.
    pub b: f64,
    /// c. recent reads.
    pub c: f64,
    /// d. failing tests of the latest run.
    pub d: f64,
    /// e. the last error line.
    pub e: f64,
}

impl Fidelity {
    fn of(tallies: &[Tally; 5]) -> Self {
        let f = |t: &Tally| t.percent() / 100.0;
        Self {
            a: f(&tallies[0]),
            b: f(&tallies[1]),
            c: f(&tallies[2]),
            d: f(&tallies[3]),
            e: f(&tallies[4]),
        }
    }
}

/// The totals of one policy over the sessions of one half, at one window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PolicyRow {
    /// Window simulated.
    pub window: u64,
    /// The policy's name as given.
    pub policy: String,
    /// The price model (`anthropic`, `openai`, `gemini`).
    pub prices: String,
    /// `tuning` or `held-out`.
    pub half: String,
    /// Sessions replayed (days, with `--day`).
    pub sessions: u64,
    /// Requests sent (agent, summary and re-read requests).
    pub requests: u64,
    /// Dollars of input, summaries and re-reads: what the policy decides.
    pub cost_dollars: f64,
    /// `cost_dollars` by what it paid for: plain input, cache reads, cache writes and the
    /// output the policy caused.
    pub cost_parts: CostParts,
    /// Dollars of the agent's own answers (apart: the same text under every policy).
    pub answer_dollars: f64,
    /// Input tokens read from the cache, as a fraction of all input tokens.
    pub cache_hit_rate: f64,
    /// Input tokens sent.
    pub input_tokens: u64,
    /// Input tokens written to the cache.
    pub cache_write_tokens: u64,
    /// Largest agent request of any session.
    pub peak_context: u64,
    /// Mean agent request.
    pub mean_context: f64,
    /// LLM compactions (summaries, shapings, compressions).
    pub llm_compactions: u64,
    /// Rewrites without an LLM call (masking, clearing, prune).
    pub masking_events: u64,
    /// Tokens read again because the policy had hidden them.
    pub reread_tokens: u64,
    /// Files LLM compactions re-attached (`claude-code`; pith with `restore` > 0).
    pub restored_files: u64,
    /// Their tokens.
    pub restored_tokens: u64,
    /// Of them, files a later command relied on before the next compaction.
    pub restored_used: u64,
    /// Agent requests over the input budget after the policy acted.
    pub over_budget_requests: u64,
    /// Fidelity a–e over every view the policy made.
    pub fidelity: Fidelity,
    /// Views probed.
    pub views: u64,
    /// Summaries prepared in the background (pith with `prepare` > 0).
    pub prepared: u64,
    /// Of them, never applied.
    pub unused: u64,
    /// What the unused ones cost (part of `cost_dollars`).
    pub unused_dollars: f64,
    /// What the summary requests cost, input and summaries (part of `cost_dollars`).
    pub summary_dollars: f64,
    /// Seconds the agent waited for its LLM compactions.
    pub compaction_wait_s: f64,
    #[serde(skip)]
    tallies: [Tally; 5],
    #[serde(skip)]
    agent_requests: u64,
    #[serde(skip)]
    context_sum: u64,
    #[serde(skip)]
    cached_tokens: u64,
}

impl PolicyRow {
    fn add(&mut self, session: &CorpusSession, outcome: &SessionOutcome) {
        self.sessions += 1;
        self.requests += outcome.ledger.requests;
        self.cost_dollars += outcome.ledger.cost_dollars;
        self.cost_parts.add(outcome.ledger.parts);
        self.answer_dollars += outcome.ledger.answer_dollars;
        self.input_tokens += outcome.ledger.input_tokens;
        self.cached_tokens += outcome.ledger.cached_tokens;
        self.cache_write_tokens += outcome.ledger.written_tokens;
        self.peak_context = self.peak_context.max(outcome.peak_context);
        self.agent_requests += outcome.agent_requests;
        self.context_sum += outcome.context_sum;
        self.llm_compactions += outcome.llm_compactions;
        self.masking_events += outcome.micro_compactions;
        self.reread_tokens += outcome.reread_tokens;
        self.restored_files += outcome.restored_files;
        self.restored_tokens += outcome.restored_tokens;
        self.restored_used += outcome.restored_used;
        self.over_budget_requests += outcome.overflowing_requests;
        self.prepared += outcome.prepared;
        self.unused += outcome.unused;
        self.unused_dollars += outcome.unused_dollars;
        self.summary_dollars += outcome.summary_dollars;
        self.compaction_wait_s += outcome.compaction_wait_s;
        for view in &outcome.views {
            let facts = facts_at(session, view.after_message);
            let text = view_text(&view.messages);
            for (tally, add) in
                self.tallies
                    .iter_mut()
                    .zip(probe_noting(&text, &facts, &mut |_, _| {}))
            {
                tally.merge(add);
            }
            self.views += 1;
        }
    }

    fn finish(&mut self) {
        if self.input_tokens > 0 {
            self.cache_hit_rate = self.cached_tokens as f64 / self.input_tokens as f64;
        }
        if self.agent_requests > 0 {
            self.mean_context = self.context_sum as f64 / self.agent_requests as f64;
        }
        self.fidelity = Fidelity::of(&self.tallies);
    }
}

/// The half a (possibly joined) session belongs to: its first task's.
fn half_of_session(session: &CorpusSession) -> Half {
    let first = session.name.split('+').next().unwrap_or_default();
    half_of(Path::new(&format!("{first}.jsonl")))
}

/// Simulates every policy on `sessions` at every window, one row per half.
pub fn simulate(sessions: &[CorpusSession], options: &SimOptions) -> Result<Vec<PolicyRow>> {
    let policies: Vec<(String, Policy)> = options
        .policies
        .iter()
        .map(|name| Policy::parse(name).map(|p| (name.clone(), p)))
        .collect::<Result<_>>()?;
    let mut halves: Vec<(Half, Vec<CorpusSession>)> = Vec::new();
    for half in Half::ALL {
        let of_half: Vec<CorpusSession> = sessions
            .iter()
            .filter(|s| half_of_session(s) == half)
            .cloned()
            .collect();
        if !of_half.is_empty() {
            halves.push((half, day::days(&of_half, options.day)));
        }
    }
    let counter = Arc::new(BpeCounter::new(Encoding::O200kBase));
    let mut rows = Vec::new();
    for &window in &options.windows {
        let mut params = SimParams::new(
            window,
            options.summary_tokens,
            options.prices,
            counter.clone(),
        );
        if let Some(tokens) = options.ledger_summary_tokens {
            params = params.with_ledger_summary_tokens(tokens);
        }
        for (half, sessions) in &halves {
            for (name, policy) in &policies {
                let mut row = PolicyRow {
                    policy: name.clone(),
                    window,
                    prices: options.prices.name.to_owned(),
                    half: half.as_str().to_owned(),
                    ..PolicyRow::default()
                };
                for session in sessions {
                    let outcome = replay_with(session, policy, &params, options.fidelity);
                    row.add(session, &outcome);
                }
                row.finish();
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// The cost of `row` relative to the cheapest other policy of its window and half that is
/// not pith's (`None` for a peer, or with no peer to compare).
pub fn vs_cheapest_peer(rows: &[PolicyRow], row: &PolicyRow) -> Option<f64> {
    if !row.policy.starts_with("pith") {
        return None;
    }
    rows.iter()
        .filter(|r| r.window == row.window && r.half == row.half && !r.policy.starts_with("pith"))
        .filter(|r| r.policy != "zesdex")
        .map(|r| r.cost_dollars)
        .min_by(f64::total_cmp)
        .filter(|c| *c > 0.0)
        .map(|c| row.cost_dollars / c)
}

/// The rows as a markdown table; cost also relative to the first policy of each window
/// and half, and pith's to the cheapest peer.
pub fn markdown_table(rows: &[PolicyRow]) -> String {
    let mut out = String::from(
        "| window | half | policy | cost | vs first | vs cheapest peer | cache hits | peak / mean context | LLM | masking | re-read tokens | over budget | fidelity a/b/c/d/e (%) | compaction wait | prepared / unused ($) |\n\
         |---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
    );
    let mut base: Option<(u64, &str, f64)> = None;
    for row in rows {
        if base.is_none_or(|(w, h, _)| w != row.window || h != row.half) {
            base = Some((row.window, row.half.as_str(), row.cost_dollars));
        }
        let relative = base.map_or(
            1.0,
            |(_, _, b)| {
                if b > 0.0 {
                    row.cost_dollars / b
                } else {
                    1.0
                }
            },
        );
        let peer = vs_cheapest_peer(rows, row).map_or("".to_owned(), |r| format!("{r:.3}"));
        let f = row.fidelity;
        out.push_str(&format!(
            "| {} | {} | {} | ${:.2} | {:.3} | {} | {:.1}% | {} / {:.0} | {} | {} | {} | {} | {:.1}/{:.1}/{:.1}/{:.1}/{:.1} | {:.0} s | {} / {} (${:.2}) |\n",
            row.window,
            row.half,
            row.policy,
            row.cost_dollars,
            relative,
            peer,
            row.cache_hit_rate * 100.0,
            row.peak_context,
            row.mean_context,
            row.llm_compactions,
            row.masking_events,
            row.reread_tokens,
            row.over_budget_requests,
            f.a * 100.0,
            f.b * 100.0,
            f.c * 100.0,
            f.d * 100.0,
            f.e * 100.0,
            row.compaction_wait_s,
            row.prepared,
            row.unused,
            row.unused_dollars,
        ));
    }
    out
}

/// How the rows are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A markdown table (and a header line).
    Markdown,
    /// One JSON object per row, one per line.
    Json,
}

/// `cargo xtask simulate`: reads the sessions, simulates, prints (and writes JSON).
pub fn run(
    sessions_dir: &Path,
    options: &SimOptions,
    format: Format,
    json: Option<&PathBuf>,
) -> Result<()> {
    let sessions = read_sessions(sessions_dir)?;
    let malformed: usize = sessions.iter().map(|s| s.malformed_lines).sum();
    if malformed > 0 {
        eprintln!("simulate: skipped {malformed} malformed lines");
    }
    let rows = simulate(&sessions, options)?;
    match format {
        Format::Json => {
            for row in &rows {
                println!(
                    "{}",
                    serde_json::to_string(row).context("serialising a row")?
                );
            }
        }
        Format::Markdown => {
            let p = &options.prices;
            println!(
                "{} sessions from {} (days of {}); {} prices ({}: ${}/M input, ${}/M cache read, ${}/M cache write, ${}/M output); stand-in summary {} tokens\n",
                sessions.len(),
                sessions_dir.display(),
                options.day,
                p.name,
                p.model,
                p.input,
                p.cache_read,
                p.cache_write,
                p.output,
                options.summary_tokens,
            );
            print!("{}", markdown_table(&rows));
        }
    }
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&rows).context("serialising the report")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod real_binary;
#[cfg(test)]
mod tests;
