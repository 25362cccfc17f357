//! What the bash sandbox costs per command, from `crates/tools/benches/sandbox.rs`
//! (criterion): `true` through the bash tool without the sandbox, in `workspace-write`
//! with the network allowed (Landlock only) and in `workspace-write` without network (the
//! default: Landlock and the session's network namespace). The target: < 5 ms more per
//! command than without the sandbox.

use super::criterion::{median_ms, section_of, CriterionResult};

/// The criterion group of the bench.
pub const GROUP: &str = "bash_sandbox";
/// `true` without the sandbox.
pub const UNSANDBOXED: &str = "bash_sandbox/true_unsandboxed";
/// `true` in `workspace-write` with the network allowed.
pub const LANDLOCK_ONLY: &str = "bash_sandbox/true_workspace_write_with_network";
/// `true` in `workspace-write`, no network (the default).
pub const SANDBOXED: &str = "bash_sandbox/true_workspace_write";
/// The target, ms per command.
pub const TARGET_MS: f64 = 5.0;

/// The sandbox's cost per command in ms (difference of the medians), with the two
/// medians it comes from.
pub fn cost_ms(results: &[CriterionResult]) -> Option<(f64, f64, f64)> {
    let with = median_ms(results, SANDBOXED)?;
    let without = median_ms(results, UNSANDBOXED)?;
    Some((with - without, with, without))
}

/// The row of the targets table, when both figures were measured.
pub fn target_row(results: &[CriterionResult]) -> Option<String> {
    let (cost, with, without) = cost_ms(results)?;
    Some(format!(
        "| bash sandbox < {TARGET_MS:.0} ms per command | {cost:.2} ms (`true`: {with:.2} ms sandboxed, {without:.2} ms without) | {} |",
        if cost < TARGET_MS { "met" } else { "**not met**" }
    ))
}

/// The report's section (empty when the bench was not run).
pub fn section(results: &[CriterionResult]) -> String {
    section_of(
        results,
        &[UNSANDBOXED, LANDLOCK_ONLY, SANDBOXED],
        "Bash sandbox",
        "`crates/tools/benches/sandbox.rs` (criterion): `true` through the bash tool (registry, permission check, spawn, capture), `full` approval. The sandbox's work per command: the policy's Landlock rules rebuilt, the fork and `pre_exec` (joining the session's network namespace, `landlock_restrict_self`). See `docs/sandbox.md`.",
        "| run | ms per command |\n|---|---:|",
        |r| {
            let label = match r.id.as_str() {
                UNSANDBOXED => "no sandbox (`--sandbox off`)",
                LANDLOCK_ONLY => "`workspace-write`, network allowed (Landlock only)",
                _ => "`workspace-write`, no network (the default)",
            };
            format!("| {label} | {} |", r.seconds.map(|s| s * 1e3).show(2))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::Spread;

    fn result(id: &str, ms: f64) -> CriterionResult {
        CriterionResult {
            id: id.into(),
            seconds: Spread::of(&[ms / 1e3]).unwrap(),
            bytes: None,
        }
    }

    #[test]
    fn the_cost_is_the_difference_of_the_medians() {
        let results = [
            result(UNSANDBOXED, 2.0),
            result(LANDLOCK_ONLY, 2.5),
            result(SANDBOXED, 3.25),
        ];
        let row = target_row(&results).unwrap();
        assert!(
            row.contains("| 1.25 ms (`true`: 3.25 ms sandboxed, 2.00 ms without) | met |"),
            "{row}"
        );
        let text = section(&results);
        assert!(
            text.contains("| no sandbox (`--sandbox off`) | 2.00 (2.00 – 2.00) |"),
            "{text}"
        );
        assert!(text.contains("Landlock only"));
        assert!(target_row(&results[..1]).is_none());
        assert!(section(&[]).is_empty());
    }
}
