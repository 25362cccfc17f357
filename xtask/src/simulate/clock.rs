//! Simulated time: when each request is sent, so that prompt-cache entries expire as they
//! do for real users.
//!
//! - A request takes the model's time to the first token plus its output at the model's
//!   speed ([`super::prices::PriceModel::latency_s`]).
//! - A tool call takes [`TOOL_SECONDS`] plus one second per [`TOOL_CHARS_PER_SECOND`]
//!   characters of output.
//! - Before each task but the first the user pauses (a task is what a person typed:
//!   `CorpusSession::task_starts`; the harness's own user-role messages inside a task,
//!   such as mini-swe-agent's format errors, come at once). No published percentiles of
//!   coding-agent think time were found (docs/benchmarks.md), so the pause is drawn from
//!   a log-normal distribution with a median of [`PAUSE_MEDIAN_S`] (3 minutes) and
//!   σ = [`PAUSE_SIGMA`] (1.0 in natural log): 31% of pauses outlast a 5-minute cache,
//!   11% a 10-minute one, 0.1% an hour. The draws are seeded by the session's name, so every policy sees the
//!   same pauses and a run is reproducible.

/// Seconds a tool call takes before its output size is counted.
pub const TOOL_SECONDS: f64 = 2.0;
/// Characters of tool output per extra second.
pub const TOOL_CHARS_PER_SECOND: f64 = 20_000.0;
/// Median pause before a task, seconds.
pub const PAUSE_MEDIAN_S: f64 = 180.0;
/// Spread of the pause's natural log.
pub const PAUSE_SIGMA: f64 = 1.0;

/// The seconds a tool call with `output_chars` of output takes.
pub fn tool_seconds(output_chars: usize) -> f64 {
    TOOL_SECONDS + output_chars as f64 / TOOL_CHARS_PER_SECOND
}

/// The pauses of one session: a deterministic stream seeded by a name.
#[derive(Debug, Clone)]
pub struct Pauses {
    state: u64,
}

impl Pauses {
    /// The stream for the session called `name`.
    pub fn for_session(name: &str) -> Self {
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for b in name.bytes() {
            state = (state ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        Self { state }
    }

    /// splitmix64: a uniform draw in (0, 1).
    fn uniform(&mut self) -> f64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// The next pause before a user turn, seconds.
    pub fn next_pause_s(&mut self) -> f64 {
        // Box–Muller: one standard normal draw from two uniform ones.
        let (u1, u2) = (self.uniform(), self.uniform());
        let normal = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        PAUSE_MEDIAN_S * (PAUSE_SIGMA * normal).exp()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_are_reproducible_and_follow_the_documented_shares() {
        let mut a = Pauses::for_session("django__django-1");
        let mut b = Pauses::for_session("django__django-1");
        assert_eq!(a.next_pause_s(), b.next_pause_s());
        let mut p = Pauses::for_session("many");
        let draws: Vec<f64> = (0..20_000).map(|_| p.next_pause_s()).collect();
        let share = |limit: f64| draws.iter().filter(|&&d| d > limit).count() as f64 / 20_000.0;
        assert!((share(300.0) - 0.31).abs() < 0.02, "{}", share(300.0));
        assert!((share(600.0) - 0.114).abs() < 0.02, "{}", share(600.0));
        assert!(share(3600.0) < 0.01);
        let mut sorted = draws.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[10_000] / PAUSE_MEDIAN_S - 1.0).abs() < 0.05);
    }

    #[test]
    fn a_tool_call_takes_longer_with_more_output() {
        assert_eq!(tool_seconds(0), TOOL_SECONDS);
        assert_eq!(tool_seconds(40_000), TOOL_SECONDS + 2.0);
    }
}
