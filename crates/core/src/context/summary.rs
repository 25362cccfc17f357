//! The compaction summary: prompts, validation and replacement histories.
//!
//! Manual (`/compact [focus]`) and automatic compaction share one schema
//! ([`crate::context::prompts::SUMMARY_SECTIONS`]) and one guidance text; the automatic prompt adds
//! its own requirements. The builders here are the only way pith turns a summary into a
//! new history.

use thiserror::Error;

use crate::context::prompts::{
    AUTO_COMPACTION_REQUIREMENTS, CLOSING_LINE, COMPACTED_CONTEXT_CLOSE, COMPACTED_CONTEXT_OPEN,
    COMPACTION_GUIDANCE, FALLBACK_SUMMARY_HEADER, LAST_USER_MESSAGE_CLOSE, LAST_USER_MESSAGE_OPEN,
    LEDGER_IN_SUMMARY_REQUEST, LEDGER_SUMMARY_SECTIONS, MANUAL_FOCUS_PREFIX, RESTORED_FILES_INTRO,
    SUMMARY_SECTIONS,
};
use crate::context::tokens::TokenCounter;
use crate::protocol::message::{Message, Part, Role};

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
    manual_prompt_with(focus, None)
}

/// [`manual_prompt`] showing the session ledger the replacement will carry.
pub fn manual_prompt_with(focus: Option<&str>, ledger: Option<&str>) -> String {
    let mut prompt = format!(
        "{COMPACTION_GUIDANCE}\n\n{}{}\n",
        ledger_note(ledger),
        sections_for(ledger)
    );
    if let Some(focus) = focus.map(str::trim).filter(|f| !f.is_empty()) {
        prompt.push_str(&format!("\n{MANUAL_FOCUS_PREFIX} {focus}\n"));
    }
    prompt.push_str(&format!("\n{CLOSING_LINE}"));
    prompt
}

/// The prompt for automatic compaction, sent as the last user message of the private
/// summary request.
pub fn auto_prompt() -> String {
    auto_prompt_with(None)
}

/// [`auto_prompt`] showing the session ledger the replacement will carry.
pub fn auto_prompt_with(ledger: Option<&str>) -> String {
    format!(
        "{COMPACTION_GUIDANCE}\n\n{AUTO_COMPACTION_REQUIREMENTS}\n\n{}{}\n\n{CLOSING_LINE}",
        ledger_note(ledger),
        sections_for(ledger)
    )
}

/// The summary schema: the full one, or the shorter one when a ledger carries the facts.
fn sections_for(ledger: Option<&str>) -> &'static str {
    if ledger.is_some() {
        LEDGER_SUMMARY_SECTIONS
    } else {
        SUMMARY_SECTIONS
    }
}

/// The ledger paragraph of a summary request (empty without a ledger).
fn ledger_note(ledger: Option<&str>) -> String {
    match ledger {
        Some(ledger) => format!("{LEDGER_IN_SUMMARY_REQUEST}\n{ledger}\n\n"),
        None => String::new(),
    }
}

/// A file re-attached to a replacement, as `read` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoredFile {
    /// The path, as the ledger shows it.
    pub path: String,
    /// Its content as the `read` tool shows it (numbered lines, paging note).
    pub content: String,
}

/// What a compaction's replacement message is made of.
#[derive(Debug, Clone, Copy)]
pub struct ReplacementParts<'a> {
    /// The summary (the model's, or pith's fallback).
    pub summary: &'a str,
    /// The rendered session ledger.
    pub ledger: Option<&'a str>,
    /// The user's pins, as [`super::pins::render_pins`] rendered them (empty: none).
    pub pins: &'a str,
    /// Files re-attached, read fresh from disk.
    pub restored_files: &'a [RestoredFile],
    /// The latest user message, quoted verbatim (automatic compaction: the task goes
    /// on; a manual compaction's ledger lists every user message instead).
    pub last_user_message: Option<&'a str>,
}

/// The text of the one user message a compaction leaves: the summary, the ledger, the
/// restored files and the latest user message, each in its own tag. Without ledger and
/// restored files this is exactly [`compacted_user_text`] (automatic) or the summary
/// alone (manual).
pub fn replacement_text(parts: ReplacementParts<'_>) -> String {
    if parts.ledger.is_none() && parts.restored_files.is_empty() && parts.pins.is_empty() {
        return match parts.last_user_message {
            Some(last) => compacted_user_text(parts.summary, last),
            None => parts.summary.to_owned(),
        };
    }
    let mut text = format!(
        "{COMPACTED_CONTEXT_OPEN}{}{COMPACTED_CONTEXT_CLOSE}",
        parts.summary
    );
    if let Some(ledger) = parts.ledger {
        text.push('\n');
        text.push_str(ledger);
    }
    if !parts.pins.is_empty() {
        text.push('\n');
        text.push_str(parts.pins);
    }
    if !parts.restored_files.is_empty() {
        text.push_str(&format!("\n{RESTORED_FILES_INTRO}"));
        for file in parts.restored_files {
            text.push_str(&format!(
                "\n<restored_file path=\"{}\">\n{}\n</restored_file>",
                file.path,
                file.content.trim_end()
            ));
        }
    }
    if let Some(last) = parts.last_user_message {
        text.push_str(&format!(
            "\n{LAST_USER_MESSAGE_OPEN}{last}{LAST_USER_MESSAGE_CLOSE}"
        ));
    }
    text
}

/// A summary prompt with the instructions a `PreCompact` hook added, after it.
pub fn with_hook_instructions(prompt: String, instructions: Option<&str>) -> String {
    match instructions.map(str::trim).filter(|i| !i.is_empty()) {
        Some(instructions) => {
            format!("{prompt}\n\nAdditional instructions for this summary:\n{instructions}")
        }
        None => prompt,
    }
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

/// The replacement without system messages: what front-ends store and persist (the
/// system prompt is rebuilt fresh for every user turn, so storing it would duplicate it).
pub fn strip_system(replacement: &[Message]) -> Vec<Message> {
    replacement
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect()
}

/// The summary pith writes itself when the model could not (it kept calling tools past
/// the allowed rounds): [`FALLBACK_SUMMARY_HEADER`], then the user's text messages of
/// `history` except the last one (which every replacement keeps verbatim), newest first,
/// within `max_tokens`. A message that does not fit whole keeps its head and tail around
/// `[N tokens omitted]`; messages left out entirely are counted in a last line, never
/// dropped silently.
pub fn fallback_summary(
    history: &[Message],
    counter: &dyn TokenCounter,
    max_tokens: usize,
) -> String {
    let mut user_texts: Vec<String> = history
        .iter()
        .filter(|m| m.role == Role::User && m.parts.iter().any(|p| matches!(p, Part::Text { .. })))
        .map(Message::text_content)
        .collect();
    user_texts.pop();
    let mut out = String::from(FALLBACK_SUMMARY_HEADER);
    let mut left = max_tokens.saturating_sub(counter.count(&out));
    let mut omitted = 0;
    for (index, text) in user_texts.iter().rev().enumerate() {
        let tokens = counter.count(text) + 4;
        let entry = if tokens <= left {
            text.clone()
        } else if left >= 64 {
            head_tail_tokens(counter, text, left - 16)
        } else {
            omitted = user_texts.len() - index;
            break;
        };
        left = left.saturating_sub(counter.count(&entry) + 4);
        out.push_str("\n\n---\n");
        out.push_str(&entry);
    }
    if omitted > 0 {
        out.push_str(&format!("\n\n[{omitted} older user message(s) omitted]"));
    }
    out
}

/// The head of `text` within `max_tokens`, ended at a line break when one is near;
/// `None` when the whole text fits.
pub fn head_tokens(counter: &dyn TokenCounter, text: &str, max_tokens: usize) -> Option<String> {
    let total = counter.count(text);
    if total <= max_tokens {
        return None;
    }
    let mut end = floor_boundary(text, text.len() * max_tokens / total.max(1));
    while end > 0 && counter.count(&text[..end]) > max_tokens {
        end = floor_boundary(text, end * 9 / 10);
    }
    let head = &text[..end];
    // Prefer ending at a line break in the last fifth of the head.
    let head = match head.rfind('\n') {
        Some(line) if line >= end * 4 / 5 => &head[..line],
        _ => head,
    };
    Some(head.to_owned())
}

/// The largest char boundary of `text` not after `index`.
fn floor_boundary(text: &str, index: usize) -> usize {
    let mut cut = index.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

/// `text` cut to about `max_tokens`: its head and tail around one `[N tokens omitted]`
/// marker. Text that fits is returned whole.
pub fn head_tail_tokens(counter: &dyn TokenCounter, text: &str, max_tokens: usize) -> String {
    let total = counter.count(text);
    if total <= max_tokens {
        return text.to_owned();
    }
    // Characters per token of this text, to place the cut; then trim until it fits.
    let chars: Vec<char> = text.chars().collect();
    let mut keep_chars = (chars.len() * max_tokens / total.max(1)).max(2);
    loop {
        let head: String = chars[..keep_chars / 2].iter().collect();
        let tail: String = chars[chars.len() - keep_chars / 2..].iter().collect();
        let kept = counter.count(&head) + counter.count(&tail);
        let marker = format!("\n[{} tokens omitted]\n", total.saturating_sub(kept));
        if kept + counter.count(&marker) <= max_tokens || keep_chars <= 2 {
            return format!("{head}{marker}{tail}");
        }
        keep_chars = keep_chars * 9 / 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::prompts::TOOLS_DISABLED_DURING_COMPACTION;

    #[test]
    fn a_head_within_the_budget_ends_at_a_line_when_it_can() {
        let counter =
            crate::context::tokens::BpeCounter::new(crate::context::tokens::Encoding::O200kBase);
        let text: String = (0..400)
            .map(|i| format!("line {i} of the summary\n"))
            .collect();
        assert_eq!(head_tokens(&counter, "short", 10), None);
        let head = head_tokens(&counter, &text, 200).unwrap();
        assert!(counter.count(&head) <= 200);
        assert!(counter.count(&head) > 150, "{}", counter.count(&head));
        assert!(text.starts_with(&head));
        assert!(head.ends_with("of the summary"), "{head:?}");
        let unicode = "é".repeat(5_000);
        let head = head_tokens(&counter, &unicode, 100).unwrap();
        assert!(counter.count(&head) <= 100 && !head.is_empty());
    }

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
    fn with_a_ledger_the_prompts_ask_for_a_short_summary_without_the_ledgers_facts() {
        let ledger = "<session_ledger>\n## Files\n- a.rs: read\n</session_ledger>";
        for prompt in [
            manual_prompt_with(None, Some(ledger)),
            auto_prompt_with(Some(ledger)),
        ] {
            assert!(prompt.contains(ledger), "{prompt}");
            assert!(prompt.contains(LEDGER_IN_SUMMARY_REQUEST));
            for heading in &SECTION_HEADINGS[..4] {
                assert!(prompt.contains(heading), "missing {heading}");
            }
            assert!(!prompt.contains("## Relevant Files"), "{prompt}");
            let limit = format!(
                "under about {} words",
                crate::context::prompts::LEDGER_SUMMARY_WORDS
            );
            assert!(prompt.contains(&limit), "{prompt}");
            assert!(prompt.contains("Do not call any tools"));
        }
        // Without a ledger the summary must carry everything: full schema, no limit.
        for prompt in [manual_prompt(None), auto_prompt()] {
            assert!(prompt.contains("## Relevant Files"));
            assert!(!prompt.contains("words"), "{prompt}");
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
    fn hook_instructions_follow_the_prompt_only_when_there_are_some() {
        assert_eq!(with_hook_instructions("P".into(), None), "P");
        assert_eq!(with_hook_instructions("P".into(), Some("  \n")), "P");
        assert_eq!(
            with_hook_instructions("P".into(), Some("keep the TODO list\n")),
            "P\n\nAdditional instructions for this summary:\nkeep the TODO list"
        );
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
    fn the_denial_text_is_the_specified_one() {
        assert_eq!(
            TOOLS_DISABLED_DURING_COMPACTION,
            "Tool calls are disabled during compaction; use the history."
        );
    }

    #[test]
    fn the_fallback_summary_keeps_earlier_user_messages_newest_first_within_its_budget() {
        let counter = crate::BpeCounter::new(crate::Encoding::O200kBase);
        let history = vec![
            Message::user("first: never touch the public API"),
            Message::assistant("ok"),
            Message::user("second: run cargo test before you commit"),
            Message::tool_result("c", "output", false),
            Message::user("the latest request"),
        ];
        let summary = fallback_summary(&history, &counter, 1_000);
        assert!(summary.starts_with(FALLBACK_SUMMARY_HEADER));
        let second = summary.find("second: run cargo test").unwrap();
        let first = summary.find("first: never touch").unwrap();
        assert!(second < first, "newest first: {summary}");
        assert!(!summary.contains("the latest request"), "kept separately");

        let long = Message::user(format!("start {} end", "word ".repeat(2_000)));
        let history = vec![long, Message::user("older one"), Message::user("latest")];
        let summary = fallback_summary(&history, &counter, 300);
        assert!(
            counter.count(&summary) <= 300,
            "{}",
            counter.count(&summary)
        );
        assert!(summary.contains("older one"));
        let history = vec![
            Message::user(format!("start {} end", "word ".repeat(2_000))),
            Message::user("latest"),
        ];
        let summary = fallback_summary(&history, &counter, 300);
        assert!(
            summary.contains("tokens omitted]")
                && summary.contains("start")
                && summary.contains("end"),
            "{summary}"
        );
        let tiny = fallback_summary(&history, &counter, 70);
        assert!(tiny.contains("[1 older user message(s) omitted]"), "{tiny}");
    }
}
