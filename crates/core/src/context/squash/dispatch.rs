//! Which squasher runs for a family, and what it hands back: a plan over the original
//! lines, a rewritten whole text, or nothing to do.

use super::config::SquashConfig;
use super::detect::Family;
use super::{failures, generic, json, lines, log, search, steps, test_runner};

/// What a squasher produced: a plan over the original lines, or whole text (JSON, an
/// outline), or nothing to do.
pub(crate) enum Body {
    /// Kept lines of the original.
    Lines(lines::KeepPlan),
    /// A rewritten text (JSON stays JSON; an outline adds lines of its own).
    Whole(String),
    /// Leave the output as it is.
    Unchanged,
}

/// Runs the squasher of `family`; test-runner, log and generic outputs that hold several
/// steps (`+ cmd` traces, repeated test sessions, …) are planned step by step.
pub(crate) fn dispatch(
    family: Family,
    output: &str,
    lines: &[&str],
    errors: &[bool],
    config: &SquashConfig,
) -> (Family, Body) {
    if matches!(family, Family::TestRunner | Family::Log | Family::Generic) {
        if let Some(plan) = steps::plan(output, lines, errors, config) {
            return (Family::MultiStep, Body::Lines(plan));
        }
    }
    let body = match family {
        Family::Read | Family::Small | Family::FileView => Body::Unchanged,
        Family::Json => match json::squash(output, config) {
            Some(text) => Body::Whole(text),
            // Parses only shallowly (e.g. deeper than serde_json's recursion limit).
            None => {
                return (
                    Family::Generic,
                    Body::Lines(generic::plan(lines, errors, config.generic_budget_bytes)),
                )
            }
        },
        Family::TestRunner => Body::Lines(test_runner::plan(output, lines, errors, config)),
        Family::Log => {
            let mut plan = log::plan(output, lines, errors, config);
            failures::keep_blocks(output, lines, config, &mut plan);
            Body::Lines(plan)
        }
        Family::Grep => Body::Lines(search::grep_plan(lines, config)),
        Family::PathList => Body::Lines(search::paths_plan(output, lines, config)),
        Family::Ls => Body::Lines(search::ls_plan(lines, config)),
        Family::Generic | Family::MultiStep | Family::SourceOutline => {
            let mut plan = generic::plan(lines, errors, config.generic_budget_bytes);
            failures::keep_blocks(output, lines, config, &mut plan);
            Body::Lines(plan)
        }
    };
    (family, body)
}

/// A squasher's text and its line accounting.
pub(crate) struct Outcome {
    pub text: String,
    /// Original lines shown by kept lines (`None` for non-line squashers like JSON).
    pub represented: Option<usize>,
    pub lines_after: usize,
    pub omitted: usize,
}

impl Outcome {
    pub(super) fn whole(text: String) -> Self {
        let lines_after = lines::split_lines(&text).len();
        Self {
            text,
            represented: None,
            lines_after,
            omitted: 0,
        }
    }
}

impl From<lines::Rendered> for Outcome {
    fn from(r: lines::Rendered) -> Self {
        Self {
            text: r.text,
            represented: Some(r.represented),
            lines_after: r.lines_after,
            omitted: r.omitted,
        }
    }
}
