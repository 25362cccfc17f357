//! Slash commands: parsing what the user typed at the prompt into a [`Command`]. Pure;
//! the REPL session carries them out.

use pith_session::RewindMode;

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

/// The slash commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/compact [focus]`: summarise the conversation now, optionally steering the summary.
    Compact {
        /// What the summary should keep.
        focus: Option<String>,
    },
    /// `/context`: the budget breakdown.
    Context,
    /// `/ledger`: the session ledger the next compaction carries.
    Ledger,
    /// `/pin PATH` or `/pin "text"`: keep a file (as it is on disk) or a note whole
    /// through every compaction; without an argument, list the pins.
    Pin {
        /// The file, or the quoted note.
        argument: Option<String>,
    },
    /// `/unpin N|PATH|"text"|all`: remove a pin.
    Unpin {
        /// What to remove.
        target: String,
    },
    /// `/sessions`: this project's sessions.
    Sessions,
    /// `/resume ID`: switch to another session.
    Resume {
        /// Session id or unique prefix.
        id: String,
    },
    /// `/clear`: start a new session.
    Clear,
    /// `/model NAME`: switch model (`provider/model`); without NAME, show the current one.
    Model {
        /// The new model.
        name: Option<String>,
    },
    /// `/rewind [N [code|conversation|both]]`: without N, list the turns; with N, go
    /// back to just before turn N.
    Rewind {
        /// The turn to go back to (the state just before it); `None` lists the turns.
        turn: Option<u64>,
        /// What is rewound (both when not said).
        mode: RewindMode,
    },
    /// `/rewind undo`: undo the latest rewind of the files.
    RewindUndo,
    /// `/help`.
    Help,
    /// `/exit` (also `/quit`).
    Exit,
}

/// Every command with its one-line help, in `/help` order.
pub const HELP: [(&str, &str); 12] = [
    (
        "/compact [focus]",
        "summarise the conversation now; the focus text steers what the summary keeps",
    ),
    (
        "/context",
        "show where the context goes: system prompt, tools, messages, free space",
    ),
    (
        "/ledger",
        "show the session ledger: what every compaction keeps verbatim (your messages, files, commands, failing tests)",
    ),
    (
        "/pin [PATH|\"text\"]",
        "keep a file (as it is on disk) or a note whole through every compaction, for the whole session; without an argument, list the pins",
    ),
    (
        "/unpin N|PATH|all",
        "remove a pin (its number in /pin's list, its path or its note) or all of them",
    ),
    ("/sessions", "list this project's sessions"),
    ("/resume ID", "continue another session of this project"),
    (
        "/clear",
        "start a new session (the current one stays saved)",
    ),
    (
        "/model NAME",
        "switch model, e.g. /model anthropic/claude-sonnet-4-5",
    ),
    (
        "/rewind [N [mode]]",
        "list the turns (Esc Esc does too); /rewind N code|conversation|both goes back to before turn N (default both); /rewind undo undoes the latest rewind of the files",
    ),
    ("/help", "this list"),
    (
        "/exit",
        "leave pith (Ctrl+D on an empty prompt does the same)",
    ),
];

/// Parses one submitted line.
pub fn parse_input(line: &str) -> Input {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    let Some(command_line) = trimmed.strip_prefix('/') else {
        return Input::Prompt(line.trim_end().to_owned());
    };
    let (name, rest) = match command_line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command_line, ""),
    };
    let argument = (!rest.is_empty()).then(|| rest.to_owned());
    let command = match name {
        "compact" => Ok(Command::Compact { focus: argument }),
        "context" => no_argument(Command::Context, name, &argument),
        "ledger" => no_argument(Command::Ledger, name, &argument),
        "sessions" => no_argument(Command::Sessions, name, &argument),
        "pin" => Ok(Command::Pin { argument }),
        "unpin" => match argument {
            Some(target) => Ok(Command::Unpin { target }),
            None => Err(
                "/unpin needs what to remove: its number in /pin's list, its path, or all"
                    .to_owned(),
            ),
        },
        "clear" => no_argument(Command::Clear, name, &argument),
        "help" | "?" => no_argument(Command::Help, name, &argument),
        "exit" | "quit" => no_argument(Command::Exit, name, &argument),
        "resume" => match argument {
            Some(id) if !id.contains(char::is_whitespace) => Ok(Command::Resume { id }),
            Some(_) => Err("/resume takes one session id".to_owned()),
            None => Err("/resume needs a session id; /sessions lists them".to_owned()),
        },
        "model" => match argument {
            Some(name) if name.contains(char::is_whitespace) => {
                Err("/model takes one name, provider/model".to_owned())
            }
            name => Ok(Command::Model { name }),
        },
        "rewind" => parse_rewind(argument.as_deref()),
        _ => Err(format!("unknown command /{name}; /help lists the commands")),
    };
    match command {
        Ok(command) => Input::Command(command),
        Err(message) => Input::Invalid(message),
    }
}

/// How `/rewind` is used, for its errors.
const REWIND_USAGE: &str = "/rewind N [code|conversation|both]: N is a turn number from /rewind";

/// `/rewind`'s arguments: nothing, or a turn number and an optional mode.
fn parse_rewind(argument: Option<&str>) -> Result<Command, String> {
    let Some(argument) = argument else {
        return Ok(Command::Rewind {
            turn: None,
            mode: RewindMode::Both,
        });
    };
    if argument.trim() == "undo" {
        return Ok(Command::RewindUndo);
    }
    let mut words = argument.split_whitespace();
    let turn = words
        .next()
        .and_then(|word| word.parse::<u64>().ok())
        .filter(|turn| *turn > 0)
        .ok_or_else(|| REWIND_USAGE.to_owned())?;
    let mode = match words.next() {
        None | Some("both") => RewindMode::Both,
        Some("code") => RewindMode::Code,
        Some("conversation" | "conv") => RewindMode::Conversation,
        Some(other) => return Err(format!("unknown rewind mode `{other}`; {REWIND_USAGE}")),
    };
    if words.next().is_some() {
        return Err(REWIND_USAGE.to_owned());
    }
    Ok(Command::Rewind {
        turn: Some(turn),
        mode,
    })
}

fn no_argument(command: Command, name: &str, argument: &Option<String>) -> Result<Command, String> {
    match argument {
        None => Ok(command),
        Some(_) => Err(format!("/{name} takes no argument")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_keeps_its_focus_text_verbatim() {
        assert_eq!(
            parse_input("/compact keep the API changes"),
            Input::Command(Command::Compact {
                focus: Some("keep the API changes".into())
            })
        );
        assert_eq!(
            parse_input("  /compact  "),
            Input::Command(Command::Compact { focus: None })
        );
    }

    #[test]
    fn plain_text_is_a_prompt_and_blank_lines_are_empty() {
        assert_eq!(
            parse_input("fix the bug\nin main.rs\n"),
            Input::Prompt("fix the bug\nin main.rs".into())
        );
        assert_eq!(parse_input("   \n"), Input::Empty);
    }

    #[test]
    fn commands_with_arguments_are_checked() {
        assert_eq!(
            parse_input("/resume 0193abc"),
            Input::Command(Command::Resume {
                id: "0193abc".into()
            })
        );
        assert!(matches!(parse_input("/resume"), Input::Invalid(m) if m.contains("/sessions")));
        assert_eq!(
            parse_input("/model openai/gpt-4o"),
            Input::Command(Command::Model {
                name: Some("openai/gpt-4o".into())
            })
        );
        assert_eq!(
            parse_input("/model"),
            Input::Command(Command::Model { name: None })
        );
        assert!(matches!(parse_input("/clear now"), Input::Invalid(_)));
        assert!(matches!(parse_input("/frobnicate"), Input::Invalid(m) if m.contains("/help")));
        assert_eq!(parse_input("/quit"), Input::Command(Command::Exit));
        assert_eq!(parse_input("/context"), Input::Command(Command::Context));
        assert_eq!(parse_input("/ledger"), Input::Command(Command::Ledger));
        assert_eq!(
            parse_input("/pin \"keep the API\""),
            Input::Command(Command::Pin {
                argument: Some("\"keep the API\"".into())
            })
        );
        assert_eq!(
            parse_input("/pin"),
            Input::Command(Command::Pin { argument: None })
        );
        assert_eq!(
            parse_input("/unpin 2"),
            Input::Command(Command::Unpin { target: "2".into() })
        );
        assert!(matches!(parse_input("/unpin"), Input::Invalid(_)));
        assert!(matches!(parse_input("/ledger x"), Input::Invalid(_)));
        assert_eq!(parse_input("/sessions"), Input::Command(Command::Sessions));
        assert_eq!(parse_input("/help"), Input::Command(Command::Help));
    }

    #[test]
    fn rewind_lists_without_an_argument_and_defaults_to_both() {
        assert_eq!(
            parse_input("/rewind"),
            Input::Command(Command::Rewind {
                turn: None,
                mode: RewindMode::Both
            })
        );
        assert_eq!(
            parse_input("/rewind 2"),
            Input::Command(Command::Rewind {
                turn: Some(2),
                mode: RewindMode::Both
            })
        );
        assert_eq!(
            parse_input("/rewind  3   code "),
            Input::Command(Command::Rewind {
                turn: Some(3),
                mode: RewindMode::Code
            })
        );
        assert_eq!(
            parse_input("/rewind 1 conversation"),
            Input::Command(Command::Rewind {
                turn: Some(1),
                mode: RewindMode::Conversation
            })
        );
        assert_eq!(
            parse_input("/rewind 1 both"),
            Input::Command(Command::Rewind {
                turn: Some(1),
                mode: RewindMode::Both
            })
        );
    }

    #[test]
    fn rewind_undo_is_its_own_command() {
        assert_eq!(
            parse_input("/rewind undo"),
            Input::Command(Command::RewindUndo)
        );
        assert!(matches!(parse_input("/rewind undo 2"), Input::Invalid(_)));
    }

    #[test]
    fn rewind_rejects_bad_turns_modes_and_extra_words() {
        for bad in [
            "/rewind 0",
            "/rewind -1",
            "/rewind two",
            "/rewind 99999999999999999999999",
            "/rewind 1 files",
            "/rewind 1 code now",
            "/rewind code",
        ] {
            assert!(
                matches!(parse_input(bad), Input::Invalid(ref m) if m.contains("/rewind N")),
                "{bad}: {:?}",
                parse_input(bad)
            );
        }
    }
}
