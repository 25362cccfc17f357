//! pith's slash commands that make sense in an editor, as `available_commands_update`
//! advertises them, and the parsing of a prompt that starts with one. The editor owns
//! the list of sessions, so `/sessions`, `/resume`, `/clear` and `/exit` are not offered;
//! `/pin` and `/unpin` are (pins are the session's).

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};

pub use pith_agent::SlashCommand;

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
/// that does not start with the name of one of [`available`]'s commands is never a
/// command, so paths such as `/etc/hosts` stay messages). `Err` names a command used
/// wrongly. The parsing is the one every front-end shares ([`pith_agent::slash`]).
pub fn parse(text: &str) -> Option<Result<SlashCommand, String>> {
    let (name, command) = pith_agent::parse_slash_command(text)?;
    SlashCommand::in_editor(&name).then_some(command)
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
        assert_eq!(
            parse("/rewind 2"),
            None,
            "not offered in an editor: a message"
        );
        assert_eq!(parse("fix /compact"), None);
    }

    #[test]
    fn the_advertised_commands_are_the_editor_commands() {
        let names: Vec<String> = available().into_iter().map(|c| c.name).collect();
        assert_eq!(names, pith_agent::EDITOR_COMMANDS);
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
