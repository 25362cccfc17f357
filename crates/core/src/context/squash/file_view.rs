//! File views (`cat`, `sed -n`, `head`, `tail`, `nl` of files): byte-exact up to the cap.
//!
//! The model edits code from what it sees, so a file view is never squashed inside; only
//! a view larger than `file_view_cap_bytes` is cut, at a line boundary, with one marker.

use super::lines::{render, KeepPlan};
use super::{Outcome, SquashConfig};

/// Keeps whole lines from the start while they fit in the cap.
pub(crate) fn squash(lines: &[&str], config: &SquashConfig) -> Outcome {
    let mut plan = KeepPlan::none(lines.len());
    let mut used = 0usize;
    for (i, line) in lines.iter().enumerate() {
        used += line.len() + 1;
        if used > config.file_view_cap_bytes {
            break;
        }
        plan.keep(i);
    }
    if plan.kept_count() == lines.len() {
        plan.keep = vec![true; lines.len()];
    }
    render(lines, &plan).into()
}
