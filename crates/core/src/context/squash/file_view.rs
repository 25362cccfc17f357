//! File views (`cat`, `sed -n`, `head`, `tail`, `nl` of files) above the cap: judged by
//! their content, squashed to at most `view_budget_bytes`.
//!
//! A view at or under `file_view_cap_bytes` never gets here: it stays byte-exact (the
//! model edits code from it). Above the cap, a view of source code becomes its head,
//! tail and an outline of its definitions ([`super::outline`]); a view of anything else
//! gets the squasher its content calls for (JSON, test report — or any text with failure
//! blocks such as tracebacks —, multi-step or plain log, grep output, path list,
//! generic), then is cut to the budget by priority
//! ([`super::lines::fit`]). Nothing above the budget reaches the model from a view above
//! the cap.

use super::config::SquashConfig;
use super::detect::detect_from_content;
use super::detect::Family;
use super::dispatch::{dispatch, Body};
use super::failures;
use super::lines::{fit, shorten, KeepPlan};
use super::{json, outline};
use crate::context::shell::family::view_origin;

/// Longest line kept in a budgeted view (a single line cannot defeat the budget).
fn line_cap(budget: usize) -> usize {
    (budget / 8).max(80)
}

/// Squashes a view above the cap.
pub(crate) fn squash(
    command: &str,
    output: &str,
    lines: &[&str],
    errors: &[bool],
    config: &SquashConfig,
) -> (Family, Body) {
    let budget = config.view_budget_bytes.max(200);
    let error_count = errors.iter().filter(|e| **e).count();
    let family = detect_from_content("bash", None, output, error_count);
    if matches!(family, Family::Log | Family::Generic) && outline::looks_like_source(output, lines)
    {
        let origin = view_origin(command);
        if let Some(text) = outline::render(output, lines, origin.as_ref(), budget) {
            return (Family::SourceOutline, Body::Whole(text));
        }
    }
    // A log or text with failure blocks (tracebacks, panics) is planned like a test run.
    let family = if matches!(family, Family::Log | Family::Generic)
        && !failures::find_blocks(output, lines).is_empty()
    {
        Family::TestRunner
    } else {
        family
    };
    let (family, body) = match family {
        Family::Json => match json_within(output, budget, config) {
            Some(text) => return (Family::Json, Body::Whole(text)),
            None => (Family::Generic, Body::Lines(KeepPlan::none(0))),
        },
        other => dispatch(other, output, lines, errors, config),
    };
    let mut plan = match body {
        Body::Lines(plan) if plan.keep.len() == lines.len() => plan,
        // JSON too big for the budget, or a squasher that gave whole text: plain lines.
        _ => super::generic::plan(lines, errors, budget),
    };
    cap_line_lengths(lines, &mut plan, line_cap(budget));
    fit(lines, &mut plan, budget);
    (family, Body::Lines(plan))
}

/// Shortens every kept line (or its already shortened text) longer than `cap` chars.
fn cap_line_lengths(lines: &[&str], plan: &mut KeepPlan, cap: usize) {
    let mut texts: Vec<Option<String>> = vec![None; lines.len()];
    for (i, s) in std::mem::take(&mut plan.shortened) {
        if let Some(slot) = texts.get_mut(i) {
            *slot = Some(s);
        }
    }
    for (i, slot) in texts.iter_mut().enumerate() {
        if !plan.keep[i] {
            continue;
        }
        let current = slot.as_deref().unwrap_or(lines[i]);
        if current.chars().count() > cap {
            // A joined run's text stands for several lines: shorten it, not the line.
            let source = if plan.joined[i] { current } else { lines[i] };
            *slot = shorten(source, cap);
        }
    }
    plan.shortened = texts
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|s| (i, s)))
        .collect();
}

/// The JSON squash of `output` within `budget`, tightening the array and string limits
/// once before giving up.
fn json_within(output: &str, budget: usize, config: &SquashConfig) -> Option<String> {
    let text = json::squash(output, config)?;
    if text.len() <= budget {
        return Some(text);
    }
    let tight = SquashConfig {
        json_array_keep: 1,
        json_string_keep_chars: 40,
        ..config.clone()
    };
    json::squash(output, &tight).filter(|t| t.len() <= budget)
}
