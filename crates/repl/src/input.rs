//! Reading the user's next input: reedline on a terminal (history, multi-line editing),
//! plain lines from standard input otherwise.
//!
//! Multi-line input: Alt+Enter inserts a newline, and a line ending in `\` continues on
//! the next line (the backslash is removed). History is kept in a file next to the
//! sessions directory.

use std::borrow::Cow;
use std::io::{self, BufRead};
use std::path::PathBuf;

use reedline::{
    default_emacs_keybindings, EditCommand, Emacs, FileBackedHistory, KeyCode, KeyModifiers,
    Prompt, PromptEditMode, PromptHistorySearch, Reedline, ReedlineEvent, Signal, ValidationResult,
    Validator,
};

/// Lines of history kept.
pub const HISTORY_LINES: usize = 1_000;

/// What the user did at the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// Submitted a line (possibly several lines of text).
    Line(String),
    /// Pressed Ctrl+C at the prompt (the line was dropped).
    Interrupted,
    /// Ctrl+D on an empty prompt, or the end of standard input.
    End,
    /// Pressed Esc at the prompt (the line stays being edited; the next read goes on
    /// with it). Whether the line was empty.
    Esc {
        /// The input line held no text.
        line_empty: bool,
    },
}

/// What reedline hands back for an Esc at the prompt.
const ESC_HOST_COMMAND: &str = "pith:esc";

/// Where input comes from.
pub enum LineSource {
    /// An interactive line editor.
    Editor(Box<Reedline>),
    /// Piped standard input.
    Piped(io::StdinLock<'static>),
}

impl LineSource {
    /// Reedline with history in `history_file` (when it can be opened).
    pub fn editor(history_file: Option<PathBuf>) -> Self {
        let mut keybindings = default_emacs_keybindings();
        keybindings.add_binding(
            KeyModifiers::ALT,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![EditCommand::InsertNewline]),
        );
        // Esc does what it did (closes a menu, drops a selection), then leaves read_line
        // with the line kept, so the REPL can see Esc Esc. In a Ctrl+R search reedline
        // ignores the pair: Enter takes the line found, Ctrl+C drops it.
        keybindings.add_binding(
            KeyModifiers::NONE,
            KeyCode::Esc,
            ReedlineEvent::Multiple(vec![
                ReedlineEvent::Esc,
                ReedlineEvent::ExecuteHostCommand(ESC_HOST_COMMAND.to_owned()),
            ]),
        );
        let mut editor = Reedline::create()
            .with_edit_mode(Box::new(Emacs::new(keybindings)))
            .with_validator(Box::new(ContinuationValidator));
        if let Some(history) =
            history_file.and_then(|path| FileBackedHistory::with_file(HISTORY_LINES, path).ok())
        {
            editor = editor.with_history(Box::new(history));
        }
        Self::Editor(Box::new(editor))
    }

    /// Lines of standard input.
    pub fn piped() -> Self {
        Self::Piped(io::stdin().lock())
    }

    /// Empties the line being edited (reedline's undo brings it back).
    pub fn clear_line(&mut self) {
        if let Self::Editor(editor) = self {
            editor.run_edit_commands(&[EditCommand::Clear]);
        }
    }

    /// Reads the next entry; `initial` is pre-filled text (what was typed while busy).
    pub fn read(&mut self, initial: &str) -> io::Result<Entry> {
        match self {
            Self::Editor(editor) => {
                if !initial.is_empty() {
                    editor.run_edit_commands(&[EditCommand::InsertString(initial.to_owned())]);
                }
                match editor.read_line(&PithPrompt).map_err(io::Error::other)? {
                    Signal::Success(line) => Ok(Entry::Line(join_continuations(&line))),
                    Signal::CtrlC => Ok(Entry::Interrupted),
                    Signal::CtrlD => Ok(Entry::End),
                    Signal::HostCommand(command) if command == ESC_HOST_COMMAND => Ok(Entry::Esc {
                        line_empty: editor.current_buffer_contents().is_empty(),
                    }),
                    _ => Ok(Entry::Interrupted),
                }
            }
            Self::Piped(stdin) => {
                let mut line = String::new();
                if stdin.read_line(&mut line)? == 0 {
                    return Ok(Entry::End);
                }
                Ok(Entry::Line(line.trim_end_matches(['\n', '\r']).to_owned()))
            }
        }
    }
}

/// Removes the `\` + newline of continued lines.
pub fn join_continuations(text: &str) -> String {
    text.replace("\\\r\n", "\n").replace("\\\n", "\n")
}

/// A line ending in `\` is continued.
struct ContinuationValidator;

impl Validator for ContinuationValidator {
    fn validate(&self, line: &str) -> ValidationResult {
        if line.ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// The prompt: `› `, with `· ` on continuation lines.
struct PithPrompt;

impl Prompt for PithPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _mode: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("› ")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed("· ")
    }

    fn render_prompt_history_search_indicator(
        &self,
        history_search: PromptHistorySearch,
    ) -> Cow<'_, str> {
        Cow::Owned(format!("(search: {}) ", history_search.term))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continued_lines_lose_their_backslashes() {
        assert_eq!(join_continuations("first \\\nsecond"), "first \nsecond");
        assert_eq!(join_continuations("a\\b"), "a\\b");
        assert!(matches!(
            ContinuationValidator.validate("go on \\"),
            ValidationResult::Incomplete
        ));
        assert!(matches!(
            ContinuationValidator.validate("done"),
            ValidationResult::Complete
        ));
    }
}
