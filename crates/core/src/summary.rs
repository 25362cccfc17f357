//! The compaction summary: prompts, validation and replacement histories.
//!
//! Manual (`/compact [focus]`) and automatic compaction share one schema
//! ([`crate::prompts::SUMMARY_SECTIONS`]) and one guidance text; the automatic prompt adds
//! its own requirements. The builders here are the only way pith turns a summary into a
//! new history.

use thiserror::Error;

use crate::message::{Message, Role};
use crate::prompts::{
    AUTO_COMPACTION_REQUIREMENTS, CLOSING_LINE, COMPACTED_CONTEXT_CLOSE, COMPACTED_CONTEXT_OPEN,
    COMPACTION_GUIDANCE, LAST_USER_MESSAGE_CLOSE, LAST_USER_MESSAGE_OPEN, MANUAL_FOCUS_PREFIX,
    SUMMARY_SECTIONS,
};

/// The five section headings, in order.
pub const SECTION_HEADINGS: [&str; 5] = [
    "## Goal",
    "## Key Instructions",
    "## Discoveries",
    "## Accomplished",
    "## Relevant Files",
];

/// The prompt for `/compact`, sent as the last user message after the normal history.
/// `focus` is the user's optional steering text; blank focus is ignored.
pub fn manual_prompt(focus: Option<&str>) -> String {
    let mut prompt = format!("{COMPACTION_GUIDANCE}\n\n{SUMMARY_SECTIONS}\n");
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str(&format!("\n{MANUAL_FOCUS_PREFIX} {focus}\n"));
    }
    prompt.push_str(&format!("\n{CLOSING_LINE}"));
    prompt
}

/// The prompt for automatic compaction, sent as the last user message of the private
/// summary request.
pub fn auto_prompt() -> String {
    format!(
        "{COMPACTION_GUIDANCE}\n\n{AUTO_COMPACTION_REQUIREMENTS}\n\n{SUMMARY_SECTIONS}\n\n{CLOSING_LINE}"
    )
}

/// Why a summary was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SummaryError {
    /// The model produced no text (or only whitespace).
    #[error("the compaction summary is empty")]
    Empty,
}

/// Accepts a summary that is non-empty after trimming and returns it trimmed.
pub fn validate_summary(summary: &str) -> Result<&str, SummaryError> {
    let trimmed = summary.trim();
    if trimmed.is_empty() {
        Err(SummaryError::Empty)
    } else {
        Ok(trimmed)
    }
}

/// The text of the compacted user message of an automatic replacement.
pub fn compacted_user_text(summary: &str, last_user_message: &str) -> String {
    format!(
        "{COMPACTED_CONTEXT_OPEN}{summary}{COMPACTED_CONTEXT_CLOSE}\n{LAST_USER_MESSAGE_OPEN}{last_user_message}{LAST_USER_MESSAGE_CLOSE}"
    )
}

/// The provider-facing replacement after an automatic compaction: the original system
/// message(s), then one user message holding the summary and the latest user message
/// verbatim.
pub fn build_auto_replacement(
    system_messages: &[Message],
    summary: &str,
    last_user_message: &str,
) -> Vec<Message> {
    let mut replacement: Vec<Message> = system_messages
        .iter()
        .filter(|m| m.role == Role::System)
        .cloned()
        .collect();
    replacement.push(Message::user(compacted_user_text(
        summary,
        last_user_message,
    )));
    replacement
}

/// The history after a manual compaction: one user message holding the summary.
pub fn build_manual_replacement(summary: &str) -> Vec<Message> {
    vec![Message::user(summary)]
}

/// The replacement without system messages: what front-ends store and persist (the
/// system prompt is rebuilt fresh for every user turn, so storing it would duplicate it).
pub fn strip_system(replacement: &[Message]) -> Vec<Message> {
    replacement
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompts::TOOLS_DISABLED_DURING_COMPACTION;

    #[test]
    fn both_prompts_carry_every_section_and_the_no_tools_rule() {
        for prompt in [manual_prompt(None), auto_prompt()] {
            for heading in SECTION_HEADINGS {
                assert!(prompt.contains(heading), "missing {heading}");
            }
            assert!(prompt.contains("Do not call any tools"));
            assert!(prompt.contains("verbatim"));
        }
    }

    #[test]
    fn manual_prompt_includes_focus_only_when_given() {
        let with = manual_prompt(Some("  keep the API changes "));
        assert!(with.contains("focus on: keep the API changes\n"));
        assert!(!manual_prompt(None).contains(MANUAL_FOCUS_PREFIX));
        assert!(!manual_prompt(Some("   ")).contains(MANUAL_FOCUS_PREFIX));
    }

    #[test]
    fn auto_prompt_adds_the_automatic_requirements() {
        let auto = auto_prompt();
        assert!(auto.contains("kept verbatim next to your summary"));
        assert!(auto.contains("No preamble"));
        assert!(!manual_prompt(None).contains("No preamble"));
    }

    #[test]
    fn empty_or_blank_summaries_are_rejected() {
        assert_eq!(validate_summary(""), Err(SummaryError::Empty));
        assert_eq!(validate_summary(" \n\t "), Err(SummaryError::Empty));
        assert_eq!(validate_summary("\n## Goal\nx\n"), Ok("## Goal\nx"));
    }

    #[test]
    fn auto_replacement_is_system_then_one_compacted_user_message() {
        let systems = vec![
            Message::system("You are pith."),
            Message::system("AGENTS.md: be kind"),
        ];
        let replacement = build_auto_replacement(&systems, "## Goal\nship", "fix the bug");
        assert_eq!(replacement.len(), 3);
        assert_eq!(&replacement[..2], &systems[..]);
        assert_eq!(replacement[2].role, Role::User);
        assert_eq!(
            replacement[2].text_content(),
            "<compacted_context>## Goal\nship</compacted_context>\n<last_user_message>fix the bug</last_user_message>"
        );
    }

    #[test]
    fn strip_system_keeps_only_the_conversation() {
        let replacement = build_auto_replacement(&[Message::system("sys")], "s", "u");
        let stored = strip_system(&replacement);
        assert_eq!(stored.len(), 1);
        assert_eq!(stored[0].role, Role::User);
    }

    #[test]
    fn manual_replacement_is_one_user_message() {
        assert_eq!(build_manual_replacement("sum"), vec![Message::user("sum")]);
    }

    #[test]
    fn the_denial_text_is_the_specified_one() {
        assert_eq!(
            TOOLS_DISABLED_DURING_COMPACTION,
            "Tool calls are disabled during compaction; use the history."
        );
    }
}
