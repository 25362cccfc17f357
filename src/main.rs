//! The `pith` binary: parses the command line and dispatches to the crate that owns the
//! command. No behaviour lives here.

mod cli;
mod commands;
mod exit;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    let outcome = match cli.command {
        Some(cli::Command::Tokens(args)) => commands::tokens::run(args),
        Some(cli::Command::Sessions(args)) => commands::sessions::run(args),
        Some(cli::Command::Replay(args)) => commands::replay::run(args),
        Some(cli::Command::Run(args)) => commands::run::run(args),
        None => commands::repl::run(cli.repl),
        Some(cli::Command::Compress(_)) => commands::not_yet_available(cli.command.as_ref()),
    };
    std::process::exit(exit::report(outcome));
}
