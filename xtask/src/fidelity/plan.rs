//! Probe f: the plan. A scripted session (there is no `update_plan` call in the corpus)
//! sets a plan, works through long tool outputs that force compactions, and replaces
//! the plan twice on the way. After every compaction that follows the first plan, the
//! view is probed for each step of the latest plan at that point, as the checklist line
//! docs/tools.md documents (`[x] step — note`): kept when the line is there, verbatim.
//!
//! The reference answer is read from the session's raw `update_plan` arguments here,
//! not through pith-core's parser, so the probe does not simply agree with the ledger.

use std::collections::HashMap;
use std::sync::Arc;

use pith_core::message::{Message, ToolCall};
use pith_core::{BpeCounter, Encoding};
use serde::Serialize;
use serde_json::{json, Value};

use super::view::{probe_params, view_text, Tally};
use crate::corpus::CorpusSession;
use crate::simulate::policy::{Carry, Policy};
use crate::simulate::replay::{replay_with, ViewKind};

/// Tool rounds of the scripted session.
const ROUNDS: usize = 60;
/// Lines of each round's output (about 2,500 tokens).
const OUTPUT_LINES: usize = 120;

/// One design's plan retention at one window.
#[derive(Debug, Clone, Serialize)]
pub struct PlanRow {
    /// Window simulated.
    pub window: u64,
    /// `keen`, `codex` or `pith`.
    pub design: String,
    /// LLM compactions after the first plan.
    pub compactions: u64,
    /// Steps of the latest plan asked, over those compactions.
    pub steps: Tally,
    /// Compactions whose view holds the whole latest plan.
    pub whole_plans: Tally,
}

/// The steps of the session's plan, in order (the third plan adds the last).
const STEPS: [&str; 5] = [
    "map every reader of config.toml",
    "move parsing into config/loader.py",
    "keep the old keys readable for one release",
    "run the full test suite",
    "update docs/configuration.md",
];

/// A plan step's status and note, the step being the one of [`STEPS`] at its place.
type Progress = (&'static str, Option<&'static str>);

/// The plans the scripted session sets, in order, with the round each is set before: the
/// one plan of [`STEPS`] as it evolves, each step's status and note (the first steps of
/// [`STEPS`] that the plan holds).
fn plans() -> Vec<(usize, Value)> {
    const ASKED: Option<&str> = Some("the user asked for this explicitly");
    const MAPPED: Option<&str> = Some("11 readers, 3 write it back");
    let evolution: [(usize, &[Progress]); 3] = [
        (
            0,
            &[
                ("in_progress", None),
                ("pending", None),
                ("pending", ASKED),
                ("pending", None),
            ],
        ),
        (
            20,
            &[
                ("done", MAPPED),
                ("in_progress", None),
                ("pending", ASKED),
                ("pending", None),
            ],
        ),
        (
            45,
            &[
                ("done", MAPPED),
                ("done", None),
                ("in_progress", Some("aliases in LEGACY_KEYS")),
                ("pending", None),
                ("pending", None),
            ],
        ),
    ];
    evolution
        .into_iter()
        .map(|(round, statuses)| {
            let steps = STEPS.iter().zip(statuses).map(|(step, (status, note))| {
                let mut entry = json!({"step": step, "status": status});
                if let Some(note) = note {
                    entry["note"] = json!(note);
                }
                entry
            });
            (round, Value::Array(steps.collect()))
        })
        .collect()
}

/// The scripted session: a task, plans, and [`ROUNDS`] reads of distinct long files.
pub fn scripted_session() -> CorpusSession {
    let mut messages = vec![Message::user(
        "Move the config parsing into config/loader.py; old keys must keep working for one release.",
    )];
    let mut commands = HashMap::new();
    let mut exit_codes = HashMap::new();
    let plans = plans();
    for round in 0..ROUNDS {
        if let Some((_, steps)) = plans.iter().find(|(at, _)| *at == round) {
            let id = format!("plan{round}");
            messages.push(Message::assistant_with_calls(
                "Updating the plan.",
                vec![ToolCall {
                    id: id.clone(),
                    name: pith_core::PLAN_TOOL.into(),
                    arguments: json!({ "steps": steps }),
                }],
            ));
            messages.push(Message::tool_result(&id, "Plan updated.", false));
        }
        let id = format!("c{round}");
        let command = format!("cat src/app/module_{round}.py");
        messages.push(Message::assistant_with_calls(
            "Reading on.",
            vec![ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: json!({ "command": command }),
            }],
        ));
        let output: String = (0..OUTPUT_LINES)
            .map(|line| {
                format!(
                    "def handler_{round}_{line}(config): return config.get('key_{round}_{line}')\n"
                )
            })
            .collect();
        messages.push(Message::tool_result(&id, output, false));
        commands.insert(id.clone(), command);
        exit_codes.insert(id, 0);
    }
    messages.push(Message::assistant("Done."));
    CorpusSession {
        name: "scripted-plan".to_owned(),
        system: "You are a coding agent.".to_owned(),
        file_lines: (0..messages.len()).collect(),
        messages,
        commands,
        exit_codes,
        malformed_lines: 0,
        task_starts: vec![0],
    }
}

/// The checklist lines of the latest plan set at or before message `upto`, read from the
/// raw arguments (`None` before the first plan).
fn expected_lines(session: &CorpusSession, upto: usize) -> Option<Vec<String>> {
    let mut latest = None;
    for message in session.messages.iter().take(upto + 1) {
        for call in message.tool_calls() {
            if call.name == pith_core::PLAN_TOOL {
                latest = call
                    .arguments
                    .get("steps")
                    .and_then(Value::as_array)
                    .cloned();
            }
        }
    }
    let lines = latest?
        .iter()
        .map(|step| {
            let text = step["step"].as_str().unwrap_or_default();
            let checkbox = match step["status"].as_str() {
                Some("done") => "[x]",
                Some("in_progress") => "[~]",
                _ => "[ ]",
            };
            match step.get("note").and_then(Value::as_str) {
                Some(note) => format!("{checkbox} {text} — {note}"),
                None => format!("{checkbox} {text}"),
            }
        })
        .collect();
    Some(lines)
}

/// Probe f at each window, for every design.
pub fn measure_plan(windows: &[u64]) -> Vec<PlanRow> {
    let session = scripted_session();
    let counter = Arc::new(BpeCounter::new(Encoding::O200kBase));
    let mut rows = Vec::new();
    for &window in windows {
        let params = probe_params(window, &counter);
        for carry in Carry::ALL {
            let policy = Policy::pith_with_carry(carry);
            let mut outcome = replay_with(&session, &policy, &params, true);
            // The probes here are of what an LLM compaction keeps; masking is simulate's.
            outcome.views.retain(|v| v.kind == ViewKind::Llm);
            let mut row = PlanRow {
                window,
                design: carry.as_str().to_owned(),
                compactions: 0,
                steps: Tally::default(),
                whole_plans: Tally::default(),
            };
            for view in &outcome.views {
                let Some(lines) = expected_lines(&session, view.after_message) else {
                    continue;
                };
                let text = view_text(&view.messages);
                row.compactions += 1;
                let mut whole = true;
                for line in &lines {
                    let kept = text.lines().any(|l| l == line);
                    whole &= kept;
                    row.steps.add(kept);
                }
                row.whole_plans.add(whole);
            }
            rows.push(row);
        }
    }
    rows
}

/// The plan rows as a Markdown table.
pub fn plan_table(rows: &[PlanRow]) -> String {
    let mut out = String::from(
        "\n### f. The plan (scripted session: 3 plans, long outputs)\n\n\
         | window | design | compactions after the first plan | steps of the latest plan, verbatim | whole plans |\n\
         |---:|---|---:|---:|---:|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {:.1}% ({}/{}) | {:.1}% ({}/{}) |\n",
            row.window,
            row.design,
            row.compactions,
            row.steps.percent(),
            row.steps.kept,
            row.steps.asked,
            row.whole_plans.percent(),
            row.whole_plans.kept,
            row.whole_plans.asked
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pith_keeps_the_latest_plan_verbatim_after_every_compaction_and_the_others_lose_it() {
        let rows = measure_plan(&[32_768, 65_536]);
        for window in [32_768, 65_536] {
            let row = |design: &str| {
                rows.iter()
                    .find(|r| r.design == design && r.window == window)
                    .unwrap()
            };
            let pith = row("pith");
            assert!(pith.compactions >= 2, "{pith:?}");
            assert_eq!(pith.steps.kept, pith.steps.asked, "{pith:?}");
            assert_eq!(pith.whole_plans.kept, pith.compactions, "{pith:?}");
            assert!(row("keen").steps.percent() < 50.0, "{:?}", row("keen"));
        }
        let table = plan_table(&rows);
        assert!(table.contains("| 32768 | pith |"), "{table}");
        println!("{table}");
    }

    #[test]
    fn the_reference_is_the_latest_plan_at_each_point() {
        let session = scripted_session();
        assert_eq!(expected_lines(&session, 0), None);
        let last = expected_lines(&session, session.messages.len() - 1).unwrap();
        assert_eq!(last.len(), 5);
        assert_eq!(
            last[2],
            "[~] keep the old keys readable for one release — aliases in LEGACY_KEYS"
        );
    }
}
