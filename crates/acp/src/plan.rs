//! pith's plan (`update_plan`, [`pith_core::Plan`]) as ACP's `plan` update: the editor
//! replaces its checklist with every update, as pith replaces the plan with every call.

use agent_client_protocol::v1::schema::{Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus};
use pith_core::{PlanStatus, PlanStep};

/// The ACP plan of `plan`: one entry per step, in order. pith's steps have no priority,
/// so every entry is `medium`; a step's note follows its text after " — ".
pub fn to_acp(plan: &pith_core::Plan) -> Plan {
    Plan::new(plan.steps.iter().map(entry).collect())
}

fn entry(step: &PlanStep) -> PlanEntry {
    let content = match &step.note {
        Some(note) if !note.is_empty() => format!("{} — {note}", step.step),
        _ => step.step.clone(),
    };
    let status = match step.status {
        PlanStatus::Pending => PlanEntryStatus::Pending,
        PlanStatus::InProgress => PlanEntryStatus::InProgress,
        PlanStatus::Done => PlanEntryStatus::Completed,
    };
    PlanEntry::new(content, PlanEntryPriority::Medium, status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_step_in_order_with_its_status_and_note() {
        let plan = pith_core::Plan::from_arguments(&serde_json::json!({"steps": [
            {"step": "read the parser", "status": "done"},
            {"step": "fix the off-by-one", "status": "in_progress", "note": "line 42"},
            {"step": "run the tests", "status": "pending"},
        ]}))
        .expect("a valid plan");
        let acp = serde_json::to_value(to_acp(&plan)).expect("serialises");
        assert_eq!(
            acp,
            serde_json::json!({"entries": [
                {"content": "read the parser", "priority": "medium", "status": "completed"},
                {"content": "fix the off-by-one — line 42", "priority": "medium", "status": "in_progress"},
                {"content": "run the tests", "priority": "medium", "status": "pending"},
            ]})
        );
    }

    #[test]
    fn a_cleared_plan_is_an_empty_checklist() {
        let acp = serde_json::to_value(to_acp(&pith_core::Plan::default())).expect("serialises");
        assert_eq!(acp, serde_json::json!({"entries": []}));
    }
}
