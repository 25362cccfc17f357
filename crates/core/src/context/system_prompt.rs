//! Assembly of the agent's system prompt.
//!
//! The system prompt is rebuilt for every user turn and sent with every request, so what
//! it carries survives every compaction verbatim: project instructions (`AGENTS.md`,
//! `PITH.md`) are never summarised away. Core only assembles text; reading the files is
//! the caller's job.

use crate::context::prompts::{BASE_INSTRUCTIONS, CONCISE_OUTPUT};

/// Everything the system prompt is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemPromptInputs {
    /// The workspace root the agent works in.
    pub cwd: String,
    /// Operating system and architecture, e.g. `linux x86_64`.
    pub os: String,
    /// Today's date, `YYYY-MM-DD`.
    pub date: String,
    /// Project instruction files, in order: (file name, verbatim content).
    pub project_instructions: Vec<(String, String)>,
    /// Adds the concise-output section (off by default).
    pub concise_output: bool,
}

/// Builds the system prompt: base instructions, environment, project instructions
/// verbatim, and the optional concise-output section.
pub fn build_system_prompt(inputs: &SystemPromptInputs) -> String {
    build_with_base(BASE_INSTRUCTIONS, inputs)
}

/// The system prompt of a subagent: its own prompt in place of the base instructions,
/// then the same environment, project instructions and optional sections.
pub fn build_agent_system_prompt(agent_prompt: &str, inputs: &SystemPromptInputs) -> String {
    build_with_base(agent_prompt.trim_end(), inputs)
}

fn build_with_base(base: &str, inputs: &SystemPromptInputs) -> String {
    let mut prompt = String::from(base);
    prompt.push_str("\n\n# Environment\n");
    prompt.push_str(&format!("- Working directory: {}\n", inputs.cwd));
    prompt.push_str(&format!("- Platform: {}\n", inputs.os));
    prompt.push_str(&format!("- Date: {}\n", inputs.date));
    for (name, content) in &inputs.project_instructions {
        prompt.push_str(&format!(
            "\n# Project instructions from {name} (verbatim; they always apply)\n\n{}\n",
            content.trim_end()
        ));
    }
    if inputs.concise_output {
        prompt.push('\n');
        prompt.push_str(CONCISE_OUTPUT);
        prompt.push('\n');
    }
    prompt
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> SystemPromptInputs {
        SystemPromptInputs {
            cwd: "/work/app".into(),
            os: "linux x86_64".into(),
            date: "2026-11-29".into(),
            project_instructions: vec![(
                "AGENTS.md".into(),
                "Always run `make lint`.\n\nNever touch vendor/.\n".into(),
            )],
            concise_output: false,
        }
    }

    #[test]
    fn asks_for_a_plan_only_on_multi_step_work() {
        let prompt = build_system_prompt(&inputs());
        assert!(prompt.contains("For multi-step work, keep a short plan with `update_plan`"));
        assert!(prompt.contains("skip the plan for simple tasks"));
    }

    #[test]
    fn carries_environment_and_project_instructions_verbatim() {
        let prompt = build_system_prompt(&inputs());
        assert!(prompt.contains("- Working directory: /work/app"));
        assert!(prompt.contains("- Date: 2026-11-29"));
        assert!(prompt.contains("Project instructions from AGENTS.md"));
        assert!(prompt.contains("Always run `make lint`.\n\nNever touch vendor/."));
    }

    #[test]
    fn an_agent_prompt_replaces_the_base_and_keeps_the_rest() {
        let prompt = build_agent_system_prompt("You explore.\n", &inputs());
        assert!(prompt.starts_with("You explore.\n\n# Environment\n"));
        assert!(!prompt.contains(BASE_INSTRUCTIONS));
        assert!(prompt.contains("Always run `make lint`."));
    }

    #[test]
    fn concise_section_is_off_by_default_and_keeps_its_carve_out() {
        assert!(!build_system_prompt(&inputs()).contains(CONCISE_OUTPUT));
        let concise = build_system_prompt(&SystemPromptInputs {
            concise_output: true,
            ..inputs()
        });
        assert!(concise.contains(CONCISE_OUTPUT));
        assert!(CONCISE_OUTPUT.contains("destructive"));
        assert!(CONCISE_OUTPUT.contains("security"));
    }
}
