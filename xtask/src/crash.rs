//! `cargo xtask crash --trials N [--seed S]`: the session store's kill trials at scale.
//!
//! The harness itself (child writer, random SIGKILLs, invariant checks) lives in one
//! place, `crates/session/tests/crash_recovery.rs`, which `cargo test` runs with 200
//! trials; this task runs the same test with more trials so there is never a second copy
//! of the invariants.

use anyhow::Result;

/// Runs `trials` kill trials, optionally with a fixed seed to reproduce a failure.
pub fn run(trials: usize, seed: Option<u64>) -> Result<()> {
    let mut envs = vec![("PITH_CRASH_TRIALS", trials.to_string())];
    if let Some(seed) = seed {
        envs.push(("PITH_CRASH_SEED", seed.to_string()));
    }
    crate::cargo::cargo_with_env(
        &[
            "test",
            "-p",
            "pith-session",
            "--test",
            "crash_recovery",
            "--",
            "--nocapture",
        ],
        &envs,
    )
}
