//! Slash commands, one vocabulary for every front-end: what the user typed at the REPL's
//! prompt or in an editor's prompt, parsed into a [`SlashCommand`], with each command's
//! one-line help. Pure: the front-end carries a command out, and decides which it offers
//! (`pith acp` offers those an editor has no better way to do, [`SlashSlashCommand::in_editor`]).

use pith_session::RewindMode;

/// The slash commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
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

/// The command `text` is: `None` when it does not start with a slash; else the command's
/// name and the command, or why it is not one (an unknown name, or a known one used
/// wrongly).
pub fn parse(text: &str) -> Option<(String, Result<SlashCommand, String>)> {
    let command_line = text.trim().strip_prefix('/')?;
    let (name, rest) = match command_line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command_line, ""),
    };
    let argument = (!rest.is_empty()).then(|| rest.to_owned());
    let command = match name {
        "compact" => Ok(SlashCommand::Compact { focus: argument }),
        "context" => no_argument(SlashCommand::Context, name, &argument),
        "ledger" => no_argument(SlashCommand::Ledger, name, &argument),
        "sessions" => no_argument(SlashCommand::Sessions, name, &argument),
        "pin" => Ok(SlashCommand::Pin { argument }),
        "unpin" => match argument {
            Some(target) => Ok(SlashCommand::Unpin { target }),
            None => Err(
                "/unpin needs what to remove: its number in /pin's list, its path, or all"
                    .to_owned(),
            ),
        },
        "clear" => no_argument(SlashCommand::Clear, name, &argument),
        "help" | "?" => no_argument(SlashCommand::Help, name, &argument),
        "exit" | "quit" => no_argument(SlashCommand::Exit, name, &argument),
        "resume" => match argument {
            Some(id) if !id.contains(char::is_whitespace) => Ok(SlashCommand::Resume { id }),
            Some(_) => Err("/resume takes one session id".to_owned()),
            None => Err("/resume needs a session id; /sessions lists them".to_owned()),
        },
        "model" => match argument {
            Some(name) if name.contains(char::is_whitespace) => {
                Err("/model takes one name, provider/model".to_owned())
            }
            name => Ok(SlashCommand::Model { name }),
        },
        "rewind" => parse_rewind(argument.as_deref()),
        _ => Err(format!("unknown command /{name}; /help lists the commands")),
    };
    Some((name.to_owned(), command))
}

impl SlashCommand {
    /// True for the commands `pith acp` offers: the editor owns the list of sessions and
    /// the conversation's history, so `/sessions`, `/resume`, `/clear`, `/rewind`,
    /// `/help` and `/exit` are not among them.
    pub fn in_editor(name: &str) -> bool {
        EDITOR_COMMANDS.contains(&name)
    }
}

/// The names of the commands an editor's prompt takes ([`SlashCommand::in_editor`]).
pub const EDITOR_COMMANDS: [&str; 6] = ["compact", "context", "ledger", "pin", "unpin", "model"];

/// How `/rewind` is used, for its errors.
const REWIND_USAGE: &str = "/rewind N [code|conversation|both]: N is a turn number from /rewind";

/// `/rewind`'s arguments: nothing, or a turn number and an optional mode.
fn parse_rewind(argument: Option<&str>) -> Result<SlashCommand, String> {
    let Some(argument) = argument else {
        return Ok(SlashCommand::Rewind {
            turn: None,
            mode: RewindMode::Both,
        });
    };
    if argument.trim() == "undo" {
        return Ok(SlashCommand::RewindUndo);
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
    Ok(SlashCommand::Rewind {
        turn: Some(turn),
        mode,
    })
}

fn no_argument(
    command: SlashCommand,
    name: &str,
    argument: &Option<String>,
) -> Result<SlashCommand, String> {
    match argument {
        None => Ok(command),
        Some(_) => Err(format!("/{name} takes no argument")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command of `text` (`Err`: not one), for the assertions.
    fn cmd(text: &str) -> Result<SlashCommand, String> {
        parse(text).map_or_else(|| Err("not a command".to_owned()), |(_, c)| c)
    }

    #[test]
    fn compact_keeps_its_focus_text_verbatim() {
        assert_eq!(
            cmd("/compact keep the API changes"),
            Ok(SlashCommand::Compact {
                focus: Some("keep the API changes".into())
            })
        );
        assert_eq!(
            cmd("  /compact  "),
            Ok(SlashCommand::Compact { focus: None })
        );
    }

    #[test]
    fn commands_with_arguments_are_checked() {
        assert_eq!(
            cmd("/resume 0193abc"),
            Ok(SlashCommand::Resume {
                id: "0193abc".into()
            })
        );
        assert!(matches!(cmd("/resume"), Err(m) if m.contains("/sessions")));
        assert_eq!(
            cmd("/model openai/gpt-4o"),
            Ok(SlashCommand::Model {
                name: Some("openai/gpt-4o".into())
            })
        );
        assert_eq!(cmd("/model"), Ok(SlashCommand::Model { name: None }));
        assert!(cmd("/clear now").is_err());
        assert!(matches!(cmd("/frobnicate"), Err(m) if m.contains("/help")));
        assert_eq!(cmd("/quit"), Ok(SlashCommand::Exit));
        assert_eq!(cmd("/context"), Ok(SlashCommand::Context));
        assert_eq!(cmd("/ledger"), Ok(SlashCommand::Ledger));
        assert_eq!(
            cmd("/pin \"keep the API\""),
            Ok(SlashCommand::Pin {
                argument: Some("\"keep the API\"".into())
            })
        );
        assert_eq!(cmd("/pin"), Ok(SlashCommand::Pin { argument: None }));
        assert_eq!(
            cmd("/unpin 2"),
            Ok(SlashCommand::Unpin { target: "2".into() })
        );
        assert!(cmd("/unpin").is_err());
        assert!(cmd("/ledger x").is_err());
        assert_eq!(cmd("/sessions"), Ok(SlashCommand::Sessions));
        assert_eq!(cmd("/help"), Ok(SlashCommand::Help));
    }

    #[test]
    fn rewind_lists_without_an_argument_and_defaults_to_both() {
        assert_eq!(
            cmd("/rewind"),
            Ok(SlashCommand::Rewind {
                turn: None,
                mode: RewindMode::Both
            })
        );
        assert_eq!(
            cmd("/rewind 2"),
            Ok(SlashCommand::Rewind {
                turn: Some(2),
                mode: RewindMode::Both
            })
        );
        assert_eq!(
            cmd("/rewind  3   code "),
            Ok(SlashCommand::Rewind {
                turn: Some(3),
                mode: RewindMode::Code
            })
        );
        assert_eq!(
            cmd("/rewind 1 conversation"),
            Ok(SlashCommand::Rewind {
                turn: Some(1),
                mode: RewindMode::Conversation
            })
        );
        assert_eq!(
            cmd("/rewind 1 both"),
            Ok(SlashCommand::Rewind {
                turn: Some(1),
                mode: RewindMode::Both
            })
        );
    }

    #[test]
    fn rewind_undo_is_its_own_command() {
        assert_eq!(cmd("/rewind undo"), Ok(SlashCommand::RewindUndo));
        assert!(cmd("/rewind undo 2").is_err());
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
                matches!(cmd(bad), Err(ref m) if m.contains("/rewind N")),
                "{bad}: {:?}",
                cmd(bad)
            );
        }
    }

    #[test]
    fn the_editor_commands_are_named_and_parse() {
        for name in EDITOR_COMMANDS {
            assert!(SlashCommand::in_editor(name));
            let input = if name == "unpin" { " all" } else { "" };
            assert!(cmd(&format!("/{name}{input}")).is_ok(), "{name}");
        }
        assert!(!SlashCommand::in_editor("rewind"));
        assert_eq!(
            parse("/etc/hosts is wrong").map(|(name, _)| name),
            Some("etc/hosts".to_owned())
        );
        assert!(parse("fix /compact").is_none());
    }
}
