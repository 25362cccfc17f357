//! What the user typed at the prompt: a message, a slash command (parsed by
//! [`pith_agent::slash`], the vocabulary every front-end shares), or nothing. The REPL
//! session carries commands out.

pub use pith_agent::{SlashCommand as Command, SLASH_HELP as HELP};

/// One line of input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A message for the agent.
    Prompt(String),
    /// A slash command.
    Command(Command),
    /// A slash command pith does not know, or one used wrongly; the text says why.
    Invalid(String),
    /// An empty line.
    Empty,
}

/// Parses one submitted line.
pub fn parse_input(line: &str) -> Input {
    if line.trim().is_empty() {
        return Input::Empty;
    }
    match pith_agent::parse_slash_command(line) {
        None => Input::Prompt(line.trim_end().to_owned()),
        Some((_, Ok(command))) => Input::Command(command),
        Some((_, Err(message))) => Input::Invalid(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_a_prompt_and_blank_lines_are_empty() {
        assert_eq!(
            parse_input("fix the bug\nin main.rs\n"),
            Input::Prompt("fix the bug\nin main.rs".into())
        );
        assert_eq!(parse_input("   \n"), Input::Empty);
    }

    #[test]
    fn commands_are_the_shared_vocabulary() {
        assert_eq!(parse_input("/quit"), Input::Command(Command::Exit));
        assert!(matches!(parse_input("/frobnicate"), Input::Invalid(m) if m.contains("/help")));
    }
}
