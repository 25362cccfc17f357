//! `cargo xtask simulate --sessions DIR --window N [--policy NAME]…`: replays real agent
//! sessions through context policies as if the agent had run with window N, and reports
//! per policy the peak context, compactions, input tokens and cost under a prompt-cache
//! model.
//!
//! - [`policy`] — the policies and their names;
//! - [`replay`] — one session under one policy (the `tiered` step calls core's real
//!   pipeline, mirroring the agent loop);
//! - [`ledger`] — the prompt-cache cost model.

pub mod disk;
pub mod ledger;
pub mod policy;
pub mod replay;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use pith_core::{BpeCounter, Encoding};
use serde::Serialize;

use crate::corpus::{read_sessions, CorpusSession};
use ledger::Prices;
use policy::Policy;
use replay::{replay, SessionOutcome, SimParams};

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
    /// [`replay::default_ledger_summary_tokens`], or `summary_tokens` if smaller).
    pub ledger_summary_tokens: Option<usize>,
    /// Cost model.
    pub prices: Prices,
}

/// The totals of one policy over every session, at one window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PolicyRow {
    /// The policy's name as given.
    pub policy: String,
    /// Window simulated.
    pub window: u64,
    /// Sessions replayed.
    pub sessions: u64,
    /// Requests sent (agent + summary requests).
    pub requests: u64,
    /// Largest agent request of any session.
    pub peak_context_max: u64,
    /// Mean over sessions of each session's largest agent request.
    pub peak_context_mean: f64,
    /// Micro-compactions.
    pub micro_compactions: u64,
    /// LLM compactions.
    pub llm_compactions: u64,
    /// Sessions with at least one LLM compaction.
    pub sessions_compacted: u64,
    /// Agent requests over the input budget after the policy acted.
    pub overflowing_requests: u64,
    /// Input tokens sent.
    pub input_tokens: u64,
    /// Of which read from the prompt cache.
    pub cached_tokens: u64,
    /// Summary output tokens.
    pub summary_output_tokens: u64,
    /// Cost in dollars.
    pub cost_dollars: f64,
}

impl PolicyRow {
    fn add(&mut self, outcome: &SessionOutcome, prices: &Prices) {
        self.sessions += 1;
        self.requests += outcome.ledger.requests;
        self.peak_context_max = self.peak_context_max.max(outcome.peak_context);
        self.peak_context_mean += outcome.peak_context as f64;
        self.micro_compactions += outcome.micro_compactions;
        self.llm_compactions += outcome.llm_compactions;
        self.sessions_compacted += u64::from(outcome.llm_compactions > 0);
        self.overflowing_requests += outcome.overflowing_requests;
        self.input_tokens += outcome.ledger.input_tokens;
        self.cached_tokens += outcome.ledger.cached_tokens;
        self.summary_output_tokens += outcome.ledger.summary_output_tokens;
        self.cost_dollars += prices.dollars(outcome.ledger.cost_units);
    }
}

/// Simulates every policy on `sessions` at every window.
pub fn simulate(sessions: &[CorpusSession], options: &SimOptions) -> Result<Vec<PolicyRow>> {
    let policies: Vec<(String, Policy)> = options
        .policies
        .iter()
        .map(|name| Policy::parse(name).map(|p| (name.clone(), p)))
        .collect::<Result<_>>()?;
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
        for (name, policy) in &policies {
            let mut row = PolicyRow {
                policy: name.clone(),
                window,
                ..PolicyRow::default()
            };
            for session in sessions {
                row.add(&replay(session, policy, &params), &options.prices);
            }
            if row.sessions > 0 {
                row.peak_context_mean /= row.sessions as f64;
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// The rows as a markdown table; cost relative to the first policy of each window.
pub fn markdown_table(rows: &[PolicyRow]) -> String {
    let mut out = String::from(
        "| window | policy | peak context (max / mean) | micro | LLM | sessions compacted | over budget | input tokens | cached | cost | vs first |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut base: Option<(u64, f64)> = None;
    for row in rows {
        if base.is_none_or(|(w, _)| w != row.window) {
            base = Some((row.window, row.cost_dollars));
        }
        let relative = base.map_or(
            1.0,
            |(_, b)| if b > 0.0 { row.cost_dollars / b } else { 1.0 },
        );
        out.push_str(&format!(
            "| {} | {} | {} / {:.0} | {} | {} | {} | {} | {} | {:.1}% | ${:.2} | {:.3} |\n",
            row.window,
            row.policy,
            row.peak_context_max,
            row.peak_context_mean,
            row.micro_compactions,
            row.llm_compactions,
            row.sessions_compacted,
            row.overflowing_requests,
            row.input_tokens,
            if row.input_tokens > 0 {
                row.cached_tokens as f64 * 100.0 / row.input_tokens as f64
            } else {
                0.0
            },
            row.cost_dollars,
            relative,
        ));
    }
    out
}

/// `cargo xtask simulate`: reads the sessions, simulates, prints (and writes JSON).
pub fn run(sessions_dir: &Path, options: &SimOptions, json: Option<&PathBuf>) -> Result<()> {
    let sessions = read_sessions(sessions_dir)?;
    let malformed: usize = sessions.iter().map(|s| s.malformed_lines).sum();
    if malformed > 0 {
        eprintln!("simulate: skipped {malformed} malformed lines");
    }
    let rows = simulate(&sessions, options)?;
    println!(
        "{} sessions from {}; stand-in summary {} tokens ({} next to a session ledger); cache read {}×, cache write {}×, output {}× of ${}/M input\n",
        sessions.len(),
        sessions_dir.display(),
        options.summary_tokens,
        options
            .ledger_summary_tokens
            .unwrap_or_else(|| options.summary_tokens.min(replay::default_ledger_summary_tokens())),
        options.prices.cache_read,
        options.prices.cache_write,
        options.prices.output,
        options.prices.input_per_million,
    );
    print!("{}", markdown_table(&rows));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&rows).context("serialising the report")?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
