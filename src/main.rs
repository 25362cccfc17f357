//! The `pith` binary: parses the command line, dispatches to the crate that owns the
//! command, and prints what the command answers.
#![forbid(unsafe_code)]
// The binary: its commands print their output.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;
mod commands;
mod exit;

use clap::Parser;

fn main() {
    let cli = cli::Cli::parse();
    // PITH_LOG / RUST_LOG: tracing into $PITH_HOME/logs/pith.log, never stdout.
    if let Err(problem) = pith_agent::init_diagnostics(&|name| std::env::var(name).ok()) {
        eprintln!("pith: warning: no log: {problem}");
    }
    let outcome = match cli.command {
        Some(cli::Command::Tokens(args)) => commands::tokens::run(args),
        Some(cli::Command::Sessions(args)) => commands::sessions::run(args),
        Some(cli::Command::Replay(args)) => commands::replay::run(args),
        Some(cli::Command::Run(args)) => commands::run::run(*args),
        Some(cli::Command::Compress(args)) => commands::compress::run(args),
        Some(cli::Command::Mcp(args)) => commands::mcp::run(args),
        Some(cli::Command::Acp(args)) => commands::acp::run(args),
        Some(cli::Command::Rewind(args)) => commands::rewind::run(args),
        Some(cli::Command::SandboxExec(args)) => {
            std::process::exit(commands::sandbox_exec::run(args))
        }
        None => commands::repl::run(cli.repl),
    };
    std::process::exit(exit::report(outcome));
}
