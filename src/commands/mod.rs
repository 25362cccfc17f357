//! Command implementations that belong to the binary itself (thin glue over the crates).

pub mod repl;
pub mod replay;
pub mod run;
pub mod sessions;
pub mod tokens;

use crate::cli::Command;
use crate::exit::ExitError;

/// Refuses a command whose capability has not landed yet, naming it honestly.
pub fn not_yet_available(command: Option<&Command>) -> anyhow::Result<()> {
    let what = match command {
        None => "the interactive REPL",
        Some(Command::Run(_)) => "`pith run`",
        Some(Command::Compress(_)) => "`pith compress`",
        Some(Command::Sessions(_)) => "`pith sessions`",
        Some(Command::Replay(_)) => "`pith replay`",
        Some(Command::Tokens(_)) => "`pith tokens`",
    };
    Err(ExitError::usage(format!(
        "{what} is not yet available in this build; see `pith --help`"
    ))
    .into())
}
