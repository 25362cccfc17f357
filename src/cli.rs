//! Command-line definitions (clap derive). Parsing only; see `commands` for behaviour.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// pith — a terminal coding agent whose long sessions never overflow the context window.
#[derive(Debug, Parser)]
#[command(name = "pith", version, about, long_about = None, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do; with no command pith starts the interactive REPL.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Options of the interactive REPL (used when no command is given).
    #[command(flatten)]
    pub repl: ReplArgs,
}

/// `pith` with no subcommand: the interactive REPL.
#[derive(Debug, Args)]
pub struct ReplArgs {
    /// The options the REPL shares with `pith acp`.
    #[command(flatten)]
    pub session: SessionOptions,
    /// Continue the latest session of this project.
    #[arg(long = "continue", conflicts_with = "resume")]
    pub continue_latest: bool,
    /// Continue this session (id, unique id prefix, or transcript path).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
}

/// The options of an interactive front-end, the REPL's and `pith acp`'s alike, so that an
/// editor's agent settings can pass what a user types after `pith`.
#[derive(Debug, Args)]
pub struct SessionOptions {
    /// The model and what it may do, as `pith run` takes them too.
    #[command(flatten)]
    pub shared: ModelOptions,
    /// Tool permissions: ask (default: writes, edits and commands ask first), read-only,
    /// auto-edit or full. In `pith acp`, what a session starts with; the editor's mode
    /// selector changes it.
    #[arg(long, value_enum)]
    pub approval: Option<ReplApprovalArg>,
}

/// The options every front-end takes the same way (the REPL, `pith acp`, `pith run`):
/// the model, its window, compaction, the sandbox, reasoning and the cost ceiling.
#[derive(Debug, Args)]
pub struct ModelOptions {
    /// Model as provider/model (default: the resumed session's, then config, then the
    /// first provider whose API key is set, then the local model).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The model summaries are requested from, with its own window and prices
    /// (default: `[context] compaction_model`, else the conversation's model).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub compaction_model: Option<String>,
    /// Override the model's context window (tokens).
    #[arg(long, value_name = "TOKENS")]
    pub context_window: Option<u64>,
    /// Disable automatic compaction.
    #[arg(long)]
    pub no_auto_compact: bool,
    /// Where `bash` may write: read-only, workspace-write or off (default: the
    /// configuration's `sandbox`, else workspace-write; read-only with --approval
    /// read-only). See docs/sandbox.md.
    #[arg(long, value_name = "MODE")]
    pub sandbox: Option<pith_tools::SandboxMode>,
    /// Let sandboxed commands reach the network.
    #[arg(long)]
    pub allow_network: bool,
    /// How hard the model may think: low, medium, high, off, or a token budget such as
    /// 8000 (Anthropic extended thinking; OpenAI reasoning effort). Default: the model's
    /// `reasoning` in config, else the provider's default.
    #[arg(long, value_name = "LEVEL|TOKENS", value_parser = parse_reasoning)]
    pub reasoning: Option<pith_agent::ReasoningEffort>,
    /// Most US dollars the session (or job) may spend, its compactions and subagents
    /// included (default: `[limits] max_cost`; needs the model's prices): the request
    /// that would cross it is not sent; `pith run` then ends with exit code 5, and the
    /// REPL's status line shows the spend against it.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
}

/// `--reasoning`'s value.
fn parse_reasoning(text: &str) -> Result<pith_agent::ReasoningEffort, String> {
    pith_agent::ReasoningEffort::parse(text)
}

/// Approval modes of the REPL.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ReplApprovalArg {
    /// Writes, edits, commands and reads outside the workspace ask first.
    Ask,
    /// Reading tools only.
    ReadOnly,
    /// Reading, writing and editing; commands ask first.
    AutoEdit,
    /// Everything.
    Full,
}

/// pith's subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one agent job without the REPL (scripts and CI).
    Run(Box<RunArgs>),
    /// Count the tokens of a file or of standard input.
    Tokens(TokensArgs),
    /// Squash a tool output the way pith does before the model sees it.
    Compress(CompressArgs),
    /// List recorded sessions (of the current project unless --all).
    Sessions(SessionsArgs),
    /// Render a recorded session transcript.
    Replay(ReplayArgs),
    /// MCP servers: `pith mcp list`.
    Mcp(McpArgs),
    /// Serve an editor over the Agent Client Protocol on stdin/stdout (Zed, JetBrains,
    /// Neovim; see docs/acp.md).
    Acp(AcpArgs),
    /// Rewind a session to just before one of its turns: the files pith changed, the
    /// conversation, or both (without --to: list its turns). See docs/rewind.md.
    Rewind(RewindArgs),
    /// Runs one `bash` command in the sandbox, for an editor's terminal (internal: `pith
    /// acp` asks the editor to run it).
    #[command(name = "sandbox-exec", hide = true)]
    SandboxExec(SandboxExecArgs),
}

/// `pith rewind SESSION [--to TURN] [--code|--conversation|--both] [--dry-run] [--force]`.
#[derive(Debug, Args)]
pub struct RewindArgs {
    /// Session id (or a unique prefix of one), session directory, or transcript path.
    pub session: String,
    /// The turn to go back to: the state just before it (turn numbers as listed without
    /// --to, 1 is the first).
    #[arg(long, value_name = "TURN")]
    pub to: Option<u64>,
    /// Restore the files only (the conversation goes on as it is).
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    pub code: bool,
    /// Continue the conversation from before the turn (the files stay as they are).
    #[arg(long, conflicts_with_all = ["code", "both"])]
    pub conversation: bool,
    /// Both (the default).
    #[arg(long, conflicts_with_all = ["code", "conversation"])]
    pub both: bool,
    /// Say what would be done, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// When some contents were not kept (a file over the per-file cap, a copy the size cap
    /// removed), restore the rest and leave those files as they are (named).
    #[arg(long)]
    pub skip_omitted: bool,
    /// Undo the session's latest code rewind: put back the files as they were just before
    /// it (an undo is itself a rewind, so undoing again redoes it).
    #[arg(long, conflicts_with_all = ["to", "conversation", "both"])]
    pub undo: bool,
    /// Overwrite files changed outside pith since pith last saw them (without it, such a
    /// rewind stops and names them).
    #[arg(long)]
    pub force: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `pith sandbox-exec --spec JSON` (internal).
#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// The command and its sandbox settings, as JSON.
    #[arg(long)]
    pub spec: String,
}

/// `pith acp`: the REPL's options, so an editor's agent settings can pass them.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The options `pith acp` shares with the REPL.
    #[command(flatten)]
    pub session: SessionOptions,
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

/// `pith replay <id|path> [--view ui|model] [--format text|json] [--skip-corrupt]
/// [--expand]`.
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
    /// Show each subagent's transcript nested under the `task` call that ran it (text UI
    /// view; collapsed to one line by default).
    #[arg(long)]
    pub expand: bool,
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

/// `pith run`: one agent job without the REPL.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The prompt; `-` reads it from standard input.
    #[arg(value_name = "PROMPT", conflicts_with = "prompt")]
    pub positional: Option<String>,
    /// The prompt (same as the positional argument).
    #[arg(short = 'p', long = "prompt", value_name = "TEXT")]
    pub prompt: Option<String>,
    /// The model and what it may do, as the REPL and `pith acp` take them.
    #[command(flatten)]
    pub shared: ModelOptions,
    /// Continue this session (id, unique id prefix, or transcript path).
    #[arg(long, value_name = "ID", conflicts_with = "fork")]
    pub session: Option<String>,
    /// Start a new session that branches from another: `ID` continues from its whole
    /// history, `ID@TURN` from just before its turn TURN (see docs/rewind.md).
    #[arg(long, value_name = "ID[@TURN]")]
    pub fork: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg::Text)]
    pub format: FormatArg,
    /// Tool permissions: read-only (default), auto-edit (writes and edits, no commands)
    /// or full (everything, writes confined to the workspace).
    #[arg(long, value_enum, default_value_t = ApprovalArg::ReadOnly)]
    pub approval: ApprovalArg,
    /// Stop after this many model requests.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Longest the job may run, in seconds: at the ceiling it is stopped and ends with
    /// exit code 124 (default: `[limits] max_duration_s`).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_duration: Option<u64>,
    /// Workspace directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Use the project's own .mcp.json servers and .pith/config.toml hooks even if they
    /// are not trusted yet (for this run only; nothing is recorded).
    #[arg(long)]
    pub trust_project: bool,
    /// With --format stream-json, also emit text and reasoning deltas as they arrive.
    #[arg(long)]
    pub include_partial: bool,
    /// A JSON Schema (draft 2020-12) the final answer must match: the result carries it
    /// as `structured_output`; an answer that still does not match after one correction
    /// ends the job with exit code 4.
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// Pin a file of the workspace for the whole session: every compaction carries it
    /// whole, as it is on disk then (repeatable; see docs/context-pipeline.md, "Pins").
    #[arg(long, value_name = "PATH")]
    pub pin: Vec<PathBuf>,
    /// Pin a note for the whole session, carried verbatim by every compaction
    /// (repeatable).
    #[arg(long, value_name = "TEXT")]
    pub pin_note: Vec<String>,
}

/// `pith mcp …`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: McpCommand,
}

/// MCP subcommands.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start the configured MCP servers and show each one's status, tool count and
    /// definition tokens.
    List {
        /// Include the project's .mcp.json even if it is not trusted yet.
        #[arg(long)]
        trust_project: bool,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Workspace directory (default: the current directory).
        #[arg(long, value_name = "DIR")]
        cwd: Option<PathBuf>,
    },
}

/// Output formats of `pith run`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    /// The final answer as text.
    Text,
    /// One JSON result object.
    Json,
    /// One JSON event per line, then the result object.
    StreamJson,
}

/// Approval modes available without a terminal.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ApprovalArg {
    /// Reading tools only.
    ReadOnly,
    /// Reading, writing and editing; commands refused.
    AutoEdit,
    /// Everything.
    Full,
}
