//! pith's slash commands that make sense in an editor, as `available_commands_update`
//! advertises them, and the parsing of a prompt that starts with one. The editor owns
//! the list of sessions, so `/sessions`, `/resume`, `/clear` and `/exit` are not offered;
//! `/pin` and `/unpin` are (pins are the session's).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};

/// A slash command typed in the editor's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    /// `/compact [focus]`: summarise the conversation now.
    Compact {
        /// What the summary should keep.
        focus: Option<String>,
    },
    /// `/context`: where the context window goes.
    Context,
    /// `/ledger`: what every compaction carries verbatim.
    Ledger,
    /// `/pin [PATH|"text"]`: keep a file or a note whole through every compaction; list
    /// the pins without an argument.
    Pin {
        /// The file, or the quoted note.
        argument: Option<String>,
    },
    /// `/unpin N|PATH|"text"|all`: remove a pin.
    Unpin {
        /// What to remove.
        target: String,
    },
    /// `/model [provider/model]`: show or switch the model.
    Model {
        /// The model to switch to.
        name: Option<String>,
    },
}

/// The commands, as the editor lists them.
pub fn available() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new(
            "compact",
            "Summarise the conversation now; the text after it steers what the summary keeps",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("what the summary should keep (optional)"),
        )),
        AvailableCommand::new(
            "context",
            "Where the context window goes: used, free, thresholds, the ledger, compactions",
        ),
        AvailableCommand::new(
            "ledger",
            "The session ledger: what every compaction keeps verbatim",
        ),
        AvailableCommand::new(
            "pin",
            "Keep a file (as it is on disk) or a \"quoted note\" whole through every compaction; without input, list the pins",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("PATH or \"note\" (optional)"),
        )),
        AvailableCommand::new("unpin", "Remove a pin: its number, its path, or all")
            .input(AvailableCommandInput::Unstructured(
                UnstructuredCommandInput::new("N, PATH or all"),
            )),
        AvailableCommand::new(
            "model",
            "Show the model, or switch to another (provider/model); the history stays",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("provider/model"),
        )),
    ]
}

/// The command a prompt's text is, or `None` when it is a message for the model (text
/// that does not start with one of [`available`]'s names is never a command, so paths
/// such as `/etc/hosts` stay messages). `Err` names a command used wrongly.
pub fn parse(text: &str) -> Option<Result<SlashCommand, String>> {
    let line = text.trim().strip_prefix('/')?;
    let (name, rest) = match line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (line, ""),
    };
    let argument = (!rest.is_empty()).then(|| rest.to_owned());
    let command = match name {
        "compact" => Ok(SlashCommand::Compact { focus: argument }),
        "context" => no_argument(SlashCommand::Context, name, &argument),
        "ledger" => no_argument(SlashCommand::Ledger, name, &argument),
        "pin" => Ok(SlashCommand::Pin { argument }),
        "unpin" => match argument {
            Some(target) => Ok(SlashCommand::Unpin { target }),
            None => Err(
                "/unpin needs what to remove: its number in /pin's list, its path, or all"
                    .to_owned(),
            ),
        },
        "model" => match argument {
            Some(name) if name.contains(char::is_whitespace) => {
                Err("/model takes one name, provider/model".to_owned())
            }
            name => Ok(SlashCommand::Model { name }),
        },
        _ => return None,
    };
    Some(command)
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

    #[test]
    fn commands_parse_and_other_slashes_stay_messages() {
        assert_eq!(
            parse("/compact keep the API changes"),
            Some(Ok(SlashCommand::Compact {
                focus: Some("keep the API changes".into())
            }))
        );
        assert_eq!(
            parse("  /compact  "),
            Some(Ok(SlashCommand::Compact { focus: None }))
        );
        assert_eq!(parse("/context"), Some(Ok(SlashCommand::Context)));
        assert!(matches!(parse("/ledger now"), Some(Err(_))));
        assert_eq!(
            parse("/model openai/gpt-5"),
            Some(Ok(SlashCommand::Model {
                name: Some("openai/gpt-5".into())
            }))
        );
        assert_eq!(
            parse("/pin docs/spec.md"),
            Some(Ok(SlashCommand::Pin {
                argument: Some("docs/spec.md".into())
            }))
        );
        assert!(matches!(parse("/unpin"), Some(Err(_))));
        assert_eq!(parse("/etc/hosts is wrong"), None);
        assert_eq!(parse("fix /compact"), None);
    }

    #[test]
    fn every_advertised_command_parses() {
        for command in available() {
            let input = if command.name == "unpin" { " all" } else { "" };
            assert!(
                matches!(parse(&format!("/{}{input}", command.name)), Some(Ok(_))),
                "{}",
                command.name
            );
        }
    }
}
