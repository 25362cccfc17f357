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
    Compress(PendingArgs),
    /// List recorded sessions (of the current project unless --all).
    Sessions(SessionsArgs),
    /// Render a recorded session transcript.
    Replay(ReplayArgs),
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

/// `pith sessions [--all] [--json]`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// List the sessions of every project, not only the current directory's.
    #[arg(long)]
    pub all: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `pith replay <id|path> [--view ui|model] [--format text|json] [--skip-corrupt]`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Session id (or a unique prefix of one), session directory, or transcript path.
    pub session: String,
    /// What to show: what the user saw, or the history the model would continue from.
    #[arg(long, value_enum, default_value_t = ReplayView::Ui)]
    pub view: ReplayView,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReplayFormat::Text)]
    pub format: ReplayFormat,
    /// Skip corrupt lines (each one is reported) instead of failing on the first.
    #[arg(long)]
    pub skip_corrupt: bool,
}

/// Views of a transcript `pith replay` can render.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayView {
    /// Every visible item, compaction markers and pre-compaction output included.
    Ui,
    /// The projected conversation history (compactions applied).
    Model,
}

/// Output formats of `pith replay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayFormat {
    /// Plain text.
    Text,
    /// One JSON document.
    Json,
}
