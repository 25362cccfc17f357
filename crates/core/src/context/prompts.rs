//! Every prompt text pith sends for compaction, in one file so that they can be reviewed
//! together. [`crate::context::summary`] assembles them; nothing else should embed prompt prose.

/// The shared summary schema: the five sections every compaction summary starts from.
/// Both manual and automatic compaction present it as a baseline, not a cage.
pub const SUMMARY_SECTIONS: &str = "\
## Goal
What the user is trying to achieve, in their terms.

## Key Instructions
Every constraint, preference and instruction the user gave that still applies (quote \
them when wording matters).

## Discoveries
Facts learned about the codebase, the environment and the requirements: what exists \
where, how it behaves, what was ruled out and why.

## Accomplished
Work completed, work remaining, the change in progress and the very next action.

## Relevant Files
Files read or changed, commands run and their outcome, errors seen (exact text), \
identifiers and tool results that later work depends on.";

/// Words a summary written next to a session ledger should stay under. The ledger
/// carries the user's messages, the files, the commands, the failing tests and the full
/// outputs, so the summary keeps only what it cannot: intent, reasoning, decisions and
/// the next step. Output is the dearest and slowest part of a compaction, so it is
/// asked to be short (about 1,000 tokens of English prose).
pub const LEDGER_SUMMARY_WORDS: usize = 750;

/// The summary schema when a session ledger goes with the summary: the ledger's facts
/// are not asked for again (no `## Relevant Files`; `## Key Instructions` only for what
/// the ledger cut), and the length is bounded by [`LEDGER_SUMMARY_WORDS`].
pub const LEDGER_SUMMARY_SECTIONS: &str = "\
## Goal
What the user is trying to achieve, in their terms, and how the request changed along the \
way.

## Key Instructions
Only instructions the ledger does not show whole: from user messages it lists as cut, and \
rules learned from the project or its tools. Write \"All in the ledger.\" when there are \
none.

## Discoveries
Facts learned about the codebase, the environment and the requirements: what exists \
where, how it behaves, what was ruled out and why, the decisions taken and why, and the \
identifiers and exact tool output lines later work depends on.

## Accomplished
Work completed, work remaining, the change in progress and the very next action.

Keep the summary under about 750 words: the ledger already carries the rest.";

/// Guidance shared by the manual and the automatic compaction prompts.
pub const COMPACTION_GUIDANCE: &str = "\
This is a context compaction request. Your reply will REPLACE the conversation history \
above: after it, the earlier messages are gone and work continues from your summary \
alone, so anything you leave out is lost.

Rules:
- Do not call any tools. Work only from the conversation history above; tool calls are \
rejected during compaction.
- Be exact: keep file paths, commands, function and type names, identifiers, error \
messages and numbers verbatim. Never write \"as discussed above\" or refer to messages \
the reader will no longer have.
- Keep every user instruction that still applies, word for word when the wording matters.
- Use the sections below as a baseline. Add sections or detail when the conversation \
calls for it; omit nothing that the next step depends on.";

/// Extra requirements for automatic compaction, which runs privately inside a turn.
pub const AUTO_COMPACTION_REQUIREMENTS: &str = "\
This compaction happens automatically in the middle of an active task, and the task \
continues right after it:
- Preserve the progress of the current task: tool calls made, what their results showed \
(quote the meaningful lines of tool output), and what you were about to do next.
- Do not restate the latest user message: it is kept verbatim next to your summary.
- Start directly with the first section heading. No preamble, no closing remarks.";

/// Introduces the session ledger in a summary request: the facts pith keeps anyway, so
/// the summary can spend its words elsewhere.
pub const LEDGER_IN_SUMMARY_REQUEST: &str = "\
pith keeps the facts below and attaches them to your summary verbatim: the user's \
messages (listed below by number; their text is in the conversation above), the files \
read and changed, the latest commands and their errors, the failing tests and the files \
holding full outputs. Do not copy them into your summary; spend it on what they do not \
say: the user's intent, your reasoning, the decisions taken and why, what was ruled out, \
and the exact next step.";

/// Opening of the files re-attached to a replacement after a compaction.
pub const RESTORED_FILES_INTRO: &str = "\
The current content of the files worked on most recently, read from disk after the \
compaction (as `read` shows them):";

/// First line of the deterministic summary used when the model could not write one (it
/// kept calling tools past the allowed rounds).
pub const FALLBACK_SUMMARY_HEADER: &str = "\
[No model summary: the model kept calling tools instead of writing one, so pith compacted \
without it. The user's earlier messages follow, newest first; re-read files and re-run \
commands for anything else you need.]";

/// The summary pith writes itself when the model could not and the session ledger (which
/// holds the user's messages) goes with it.
pub const FALLBACK_SUMMARY_WITH_LEDGER: &str = "\
[No model summary: the model kept calling tools instead of writing one, so pith compacted \
without it. The session ledger below keeps the user's messages and the session's facts; \
re-read files and re-run commands for anything else you need.]";

/// Opening of the note pith adds to the history after an answer that was cut off (see
/// [`truncation_notice`]); pith's own notes to the model all start with `[pith]`.
pub const TRUNCATION_NOTICE_PREFIX: &str = "[pith] Your previous answer was cut off";

/// The note the model reads after an answer of its was cut off for `reason`.
pub fn truncation_notice(reason: &str) -> String {
    format!(
        "{TRUNCATION_NOTICE_PREFIX}: {reason}. Tool calls that were not complete were not run. \
Carry on from where it stopped, more briefly; write large content in several smaller steps."
    )
}

/// Prefix of the optional focus text a user gives to `/compact`.
pub const MANUAL_FOCUS_PREFIX: &str = "The user asked this summary to focus on:";

/// Closing line of both prompts.
pub const CLOSING_LINE: &str = "Write the summary now.";

/// The tool-error text returned for every tool call attempted during compaction.
pub const TOOLS_DISABLED_DURING_COMPACTION: &str =
    "Tool calls are disabled during compaction; use the history.";

/// Opening tag of the compacted context in an automatic replacement.
pub const COMPACTED_CONTEXT_OPEN: &str = "<compacted_context>";
/// Closing tag of the compacted context in an automatic replacement.
pub const COMPACTED_CONTEXT_CLOSE: &str = "</compacted_context>";
/// Opening tag of the retained last user message in an automatic replacement.
pub const LAST_USER_MESSAGE_OPEN: &str = "<last_user_message>";
/// Closing tag of the retained last user message in an automatic replacement.
pub const LAST_USER_MESSAGE_CLOSE: &str = "</last_user_message>";

/// The agent's base instructions: the first section of every system prompt.
pub const BASE_INSTRUCTIONS: &str = "\
You are pith, a coding agent working in the user's terminal on their repository.

# How you work
- Understand before you change: read the relevant code with the tools (read, grep, glob, \
ls) instead of guessing. Quote exact paths, identifiers and error text.
- Make focused changes with `edit` (exact-match replacements) or `write`, then verify them \
with `bash` (build, tests, linters) when that is possible.
- Large tool outputs are compressed before you see them. Gaps are marked \
`[N lines omitted]`; when a result ends with `[full output: PATH]`, the complete output \
is in that file and you can `read` it (`$PITH_SPILL_DIR` in PATH works as written, in `read` \
and in `bash`).
- Long conversations are compacted: earlier messages may be replaced by a summary. Trust \
the summary and the retained latest user message; re-read files when you need exact \
content.
- For multi-step work, keep a short plan with `update_plan` and update it as steps \
finish (it survives compaction); skip the plan for simple tasks of one or two steps.
- Do exactly what was asked; ask when a request is ambiguous or a step is destructive.
- When you are done, reply with a short account of what you changed and how you checked it.";

/// The optional concise-output section (config `concise_output = true`): fewer output
/// tokens, with a carve-out where terseness would be dangerous.
pub const CONCISE_OUTPUT: &str = "\
# Output style: concise
Write tersely: drop filler, pleasantries, hedging and articles where meaning survives; \
prefer fragments and lists. Keep code, commands, paths, identifiers and error messages \
exact and complete. Exception: when confirming a destructive operation (deleting data, \
force-pushing, dropping tables, overwriting work) or giving a security warning, write in \
full, clear sentences.";
