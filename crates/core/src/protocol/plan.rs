//! The agent's plan: the checklist the model keeps with the `update_plan` tool.
//!
//! Every call replaces the whole list (as Codex's `update_plan` and Gemini CLI's
//! `write_todos` do), so the latest successful call *is* the plan. The arguments are
//! checked here, once, for the tool and for the session ledger that carries the plan
//! across compactions ([`Plan::from_arguments`]); the limits keep a hostile or confused
//! call from growing what every later request carries.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The name the model calls the plan tool by.
pub const PLAN_TOOL: &str = "update_plan";
/// Most steps in a plan.
pub const MAX_STEPS: usize = 50;
/// Most characters of a step's text.
pub const MAX_STEP_CHARS: usize = 300;
/// Most characters of a step's note.
pub const MAX_NOTE_CHARS: usize = 500;
/// Most characters of all steps and notes together (about 2,000 tokens).
pub const MAX_PLAN_CHARS: usize = 8_000;

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlanStatus {
    /// Not started.
    #[serde(rename = "pending")]
    Pending,
    /// Being worked on (at most one step at a time).
    #[serde(rename = "in_progress")]
    InProgress,
    /// Finished.
    #[serde(rename = "done")]
    Done,
}

impl PlanStatus {
    /// The checkbox a checklist shows for it.
    pub fn checkbox(self) -> &'static str {
        match self {
            PlanStatus::Pending => "[ ]",
            PlanStatus::InProgress => "[~]",
            PlanStatus::Done => "[x]",
        }
    }

    /// The status as the tool's arguments spell it.
    pub fn word(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Done => "done",
        }
    }

    fn parse(word: &str) -> Option<Self> {
        match word {
            "pending" => Some(PlanStatus::Pending),
            "in_progress" => Some(PlanStatus::InProgress),
            // Codex's and Gemini's word for it, which models trained on them send.
            "done" | "completed" => Some(PlanStatus::Done),
            _ => None,
        }
    }
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// What the step is, in a line.
    #[serde(rename = "step")]
    pub step: String,
    /// Where it stands.
    #[serde(rename = "status")]
    pub status: PlanStatus,
    /// A short note (what was found, why it is blocked), when the model gave one.
    #[serde(rename = "note", default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The current plan: the steps of the latest successful `update_plan` call, in order.
/// An empty list means the plan was cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The steps, in the model's order.
    #[serde(rename = "steps")]
    pub steps: Vec<PlanStep>,
}

impl Plan {
    /// The plan an `update_plan` call's arguments describe, or why they are refused (in
    /// words for the model). Rules: `steps` is a list of at most [`MAX_STEPS`]; each
    /// step has a non-empty one-line `step` of at most [`MAX_STEP_CHARS`] characters, a
    /// `status` (`pending`, `in_progress`, `done`; `completed` is read as `done`) and an
    /// optional one-line `note` of at most [`MAX_NOTE_CHARS`]; at most one step is
    /// `in_progress`; all text together is at most [`MAX_PLAN_CHARS`].
    pub fn from_arguments(arguments: &Value) -> Result<Plan, String> {
        let Some(list) = arguments.get("steps") else {
            return Err("`steps` is required: the whole plan as a list of steps".to_owned());
        };
        let Some(list) = list.as_array() else {
            return Err("`steps` must be a list of {step, status, note?} objects".to_owned());
        };
        if list.len() > MAX_STEPS {
            return Err(format!(
                "a plan has at most {MAX_STEPS} steps ({} given): merge small steps",
                list.len()
            ));
        }
        let mut steps = Vec::with_capacity(list.len());
        for (index, item) in list.iter().enumerate() {
            steps.push(parse_step(item).map_err(|why| format!("step {}: {why}", index + 1))?);
        }
        let in_progress = steps
            .iter()
            .filter(|s| s.status == PlanStatus::InProgress)
            .count();
        if in_progress > 1 {
            return Err(format!(
                "{in_progress} steps are in_progress: at most one step may be in progress at a time"
            ));
        }
        let chars: usize = steps
            .iter()
            .map(|s| s.step.chars().count() + s.note.as_ref().map_or(0, |n| n.chars().count()))
            .sum();
        if chars > MAX_PLAN_CHARS {
            return Err(format!(
                "the plan's text is {chars} characters, over the {MAX_PLAN_CHARS} allowed: \
                 shorten the steps and notes"
            ));
        }
        Ok(Plan { steps })
    }

    /// True when the plan has no step (never set, or cleared).
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Steps with `status`.
    pub fn count(&self, status: PlanStatus) -> usize {
        self.steps.iter().filter(|s| s.status == status).count()
    }

    /// The plan as a checklist, one line per step (`[x] step — note`), in order; the
    /// ledger carries exactly this.
    pub fn checklist(&self) -> String {
        let lines: Vec<String> = self.steps.iter().map(step_line).collect();
        lines.join("\n")
    }

    /// One line saying how far the plan is (`3 steps: 1 done, 1 in progress, 1 pending`).
    pub fn progress(&self) -> String {
        if self.is_empty() {
            return "plan cleared".to_owned();
        }
        format!(
            "{} step{}: {} done, {} in progress, {} pending",
            self.steps.len(),
            if self.steps.len() == 1 { "" } else { "s" },
            self.count(PlanStatus::Done),
            self.count(PlanStatus::InProgress),
            self.count(PlanStatus::Pending)
        )
    }
}

/// One step as a checklist line.
pub fn step_line(step: &PlanStep) -> String {
    match &step.note {
        Some(note) => format!("{} {} — {note}", step.status.checkbox(), step.step),
        None => format!("{} {}", step.status.checkbox(), step.step),
    }
}

fn parse_step(item: &Value) -> Result<PlanStep, String> {
    let Some(object) = item.as_object() else {
        return Err("must be an object {step, status, note?}".to_owned());
    };
    let step = match object.get("step") {
        Some(Value::String(text)) => one_line(text, "step", MAX_STEP_CHARS)?,
        Some(_) => return Err("`step` must be a string".to_owned()),
        None => return Err("`step` is required".to_owned()),
    };
    if step.is_empty() {
        return Err("`step` is empty".to_owned());
    }
    let status = match object.get("status") {
        Some(Value::String(word)) => PlanStatus::parse(word)
            .ok_or_else(|| format!("`status` is {word:?}: use pending, in_progress or done"))?,
        Some(_) => return Err("`status` must be a string".to_owned()),
        None => return Err("`status` is required (pending, in_progress or done)".to_owned()),
    };
    let note = match object.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => {
            Some(one_line(text, "note", MAX_NOTE_CHARS)?).filter(|n| !n.is_empty())
        }
        Some(_) => return Err("`note` must be a string".to_owned()),
    };
    Ok(PlanStep { step, status, note })
}

/// `text` trimmed, refused when it spans lines, holds control characters or is longer
/// than `max` characters.
fn one_line(text: &str, field: &str, max: usize) -> Result<String, String> {
    let text = text.trim();
    if text.chars().any(char::is_control) {
        return Err(format!(
            "`{field}` must be one line of text (no line breaks or control characters)"
        ));
    }
    let chars = text.chars().count();
    if chars > max {
        return Err(format!(
            "`{field}` is {chars} characters, over the {max} allowed"
        ));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn steps(items: Value) -> Result<Plan, String> {
        Plan::from_arguments(&json!({ "steps": items }))
    }

    #[test]
    fn a_plan_is_parsed_in_order_with_its_notes() {
        let plan = steps(json!([
            {"step": "read the parser", "status": "done", "note": "nested lists break it"},
            {"step": " fix depth tracking ", "status": "in_progress"},
            {"step": "add a regression test", "status": "pending", "note": ""},
            {"step": "run the suite", "status": "completed", "note": null},
        ]))
        .unwrap();
        assert_eq!(plan.steps.len(), 4);
        assert_eq!(plan.steps[1].step, "fix depth tracking");
        assert_eq!(plan.steps[2].note, None);
        assert_eq!(plan.steps[3].status, PlanStatus::Done);
        assert_eq!(
            plan.checklist(),
            "[x] read the parser — nested lists break it\n[~] fix depth tracking\n\
             [ ] add a regression test\n[x] run the suite"
        );
        assert_eq!(plan.progress(), "4 steps: 2 done, 1 in progress, 1 pending");
    }

    #[test]
    fn an_empty_list_clears_the_plan() {
        let plan = steps(json!([])).unwrap();
        assert!(plan.is_empty());
        assert_eq!(plan.progress(), "plan cleared");
    }

    #[test]
    fn hostile_or_malformed_arguments_are_refused_with_the_reason() {
        let cases = [
            (json!({}), "`steps` is required"),
            (json!({"steps": "do it"}), "must be a list"),
            (json!({"steps": [1]}), "step 1: must be an object"),
            (json!({"steps": [{"status": "done"}]}), "`step` is required"),
            (
                json!({"steps": [{"step": "  ", "status": "done"}]}),
                "`step` is empty",
            ),
            (
                json!({"steps": [{"step": "a", "status": "blocked"}]}),
                "use pending",
            ),
            (json!({"steps": [{"step": "a"}]}), "`status` is required"),
            (
                json!({"steps": [{"step": 3, "status": "done"}]}),
                "must be a string",
            ),
            (
                json!({"steps": [{"step": "a\nb", "status": "done"}]}),
                "one line",
            ),
            (
                json!({"steps": [{"step": "a", "status": "done", "note": 5}]}),
                "`note` must",
            ),
            (
                json!({"steps": [{"step": "x".repeat(MAX_STEP_CHARS + 1), "status": "done"}]}),
                "over the 300 allowed",
            ),
            (
                json!({"steps": [{"step": "a", "status": "done", "note": "n".repeat(501)}]}),
                "over the 500 allowed",
            ),
            (
                json!({"steps": [
                    {"step": "a", "status": "in_progress"},
                    {"step": "b", "status": "in_progress"}
                ]}),
                "at most one step may be in progress",
            ),
        ];
        for (arguments, expected) in cases {
            let error = Plan::from_arguments(&arguments).unwrap_err();
            assert!(error.contains(expected), "{arguments}: {error}");
        }
        let many: Vec<Value> = (0..=MAX_STEPS)
            .map(|i| json!({"step": format!("s{i}"), "status": "pending"}))
            .collect();
        assert!(steps(Value::from(many))
            .unwrap_err()
            .contains("at most 50 steps"));
        let long: Vec<Value> = (0..MAX_STEPS)
            .map(|_| json!({"step": "x".repeat(200), "status": "pending"}))
            .collect();
        assert!(steps(Value::from(long))
            .unwrap_err()
            .contains("over the 8000 allowed"));
    }

    #[test]
    fn a_plan_round_trips_as_the_stream_json_and_acp_shape() {
        let plan = steps(json!([{"step": "a", "status": "in_progress", "note": "why"}])).unwrap();
        let value = serde_json::to_value(&plan).unwrap();
        assert_eq!(
            value,
            json!({"steps": [{"step": "a", "status": "in_progress", "note": "why"}]})
        );
        assert_eq!(serde_json::from_value::<Plan>(value).unwrap(), plan);
    }
}
