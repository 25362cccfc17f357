//! The generic fallback: head + tail + lines that look important, within a byte budget.
//!
//! Used for output no specialised squasher recognises. Head and tail carry the command's
//! start and its final state; error-looking lines are added, earliest first, while the
//! budget lasts. Very long lines (minified files, one-line dumps) are shortened in the
//! middle so that a single line cannot defeat the budget.

use super::lines::{mark_runs, shorten, KeepPlan};

const HEAD_LINES: usize = 10;
const TAIL_LINES: usize = 10;

/// Plans `lines` to about `budget` bytes (`generic_budget_bytes`, or the view budget).
pub(crate) fn plan(lines: &[&str], errors: &[bool], budget: usize) -> KeepPlan {
    let budget = budget.max(200);
    let n = lines.len();
    let mut plan = KeepPlan::none(n);
    let run_start = mark_runs(lines, &mut plan, |a, b| lines[a] == lines[b]);
    let line_cap = budget / 4;
    let mut used = 0usize;
    let take = |i: usize, plan: &mut KeepPlan, used: &mut usize| {
        if plan.keep[i] || run_start[i] != i {
            return;
        }
        let cost = lines[i].len().min(line_cap + 40) + 1;
        if *used + cost > budget && *used > 0 {
            return;
        }
        plan.keep(i);
        *used += cost;
        if let Some(short) = shorten(lines[i], line_cap) {
            plan.shortened.push((i, short));
        }
    };
    for i in 0..n.min(HEAD_LINES) {
        take(i, &mut plan, &mut used);
    }
    for i in n.saturating_sub(TAIL_LINES)..n {
        take(i, &mut plan, &mut used);
    }
    for i in 0..n {
        if errors[i] {
            take(i, &mut plan, &mut used);
        }
    }
    plan.shortened.sort_by_key(|(i, _)| *i);
    plan
}
