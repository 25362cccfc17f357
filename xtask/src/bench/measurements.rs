//! Everything `cargo xtask bench` measured, handed to the report.

use super::{checkpoint_run, criterion, governor, squash, startup, stats, tokens};
use crate::simulate::PolicyRow;

/// Everything measured, for the report.
pub struct Measurements {
    /// Corpus used and its size.
    pub corpus: String,
    /// Token counting.
    pub tokens: tokens::TokenSection,
    /// Squash per family.
    pub squash: Vec<squash::SquashRow>,
    /// Criterion results by group.
    pub criterion: Vec<criterion::CriterionResult>,
    /// (tool turns per run, ms per tool turn) of the in-process loop, short and long
    /// sessions: a request carries the whole history, so the per-turn cost grows with it.
    pub loop_ms: Vec<(usize, stats::Spread)>,
    /// (ms per tool turn, peak RSS MiB) of the long `pith run`.
    pub long_run: (f64, f64),
    /// Tool turns of the long run.
    pub long_run_turns: usize,
    /// Start-up and memory of the binary (`--version`, `pith tokens`, the first request,
    /// a 40-turn session).
    pub startup: startup::StartupSection,
    /// The same with two stdio MCP servers (the tests' Python server twice), ms.
    pub first_request_mcp_ms: stats::Spread,
    /// A bash turn through `pith run` with checkpoints on and off, the first snapshot, the
    /// store after a 100-turn session (None when not measured).
    pub checkpoint_run: Option<checkpoint_run::CheckpointRunSection>,
    /// The compaction stress suite's rows.
    pub governor: Vec<governor::StressRow>,
    /// Simulator rows.
    pub simulation: Vec<PolicyRow>,
    /// Sessions simulated.
    pub simulated_sessions: usize,
}
