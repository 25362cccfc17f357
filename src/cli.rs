//! Command-line definitions (clap derive). Parsing only; see `commands` for behaviour.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// pith — a terminal coding agent whose long sessions never overflow the context window.
#[derive(Debug, Parser)]
#[command(name = "pith", version, about, long_about = None)]
pub struct Cli {
    /// What to do; with no command pith starts the interactive REPL.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// pith's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one agent job without the REPL (scripts and CI).
    Run(PendingArgs),
    /// Count the tokens of a file or of standard input.
    Tokens(TokensArgs),
    /// Squash a tool output the way pith does before the model sees it.
    Compress(CompressArgs),
    /// List recorded sessions.
    Sessions(PendingArgs),
    /// Render a recorded session transcript.
    Replay(PendingArgs),
}

/// Arguments of a command whose issue has not landed yet (accepted, then refused).
#[derive(Debug, Args)]
pub struct PendingArgs {
    /// Ignored until the command is available.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    pub rest: Vec<String>,
}

/// `pith tokens [FILE|-] [--encoding o200k|cl100k]`.
#[derive(Debug, Args)]
pub struct TokensArgs {
    /// File to count; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
    /// BPE vocabulary to count with.
    #[arg(long, value_enum, default_value_t = EncodingArg::O200k)]
    pub encoding: EncodingArg,
}

/// `pith compress [--tool NAME] [--command CMD] [--exit-code N] [FILE|-]`.
#[derive(Debug, Args)]
pub struct CompressArgs {
    /// File holding the tool output; `-` or nothing reads standard input.
    pub file: Option<PathBuf>,
    /// Tool that produced the output (`bash`, `grep`, `read`, ...).
    #[arg(long, default_value = "bash")]
    pub tool: String,
    /// Shell command that produced the output; without it the family is judged from
    /// the content.
    #[arg(long)]
    pub command: Option<String>,
    /// Exit code of the command.
    #[arg(long, allow_negative_numbers = true)]
    pub exit_code: Option<i32>,
}

/// Token encodings selectable on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EncodingArg {
    /// o200k_base (GPT-4o and later; the default).
    O200k,
    /// cl100k_base (GPT-4, GPT-3.5).
    Cl100k,
}

impl From<EncodingArg> for pith_core::Encoding {
    fn from(arg: EncodingArg) -> Self {
        match arg {
            EncodingArg::O200k => pith_core::Encoding::O200kBase,
            EncodingArg::Cl100k => pith_core::Encoding::Cl100kBase,
        }
    }
}
