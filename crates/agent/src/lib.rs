//! pith-agent: what the three front-ends need around the tool loop, so that none builds a
//! loop or resolves a model itself.
//!
//! - [`Conversation`] ([`conversation`]): the one object the REPL, `pith run` and `pith
//!   acp` drive —
//!   open (new or resumed), run a turn, compact, switch model, clear, resume, and the
//!   read-only figures a status line or `/context` shows. It owns the store, the session,
//!   the recorder and the system prompt.
//! - [`Overrides`] and [`Settings`] ([`overrides`], [`settings`]): the command line's
//!   choices, resolved once against configuration and defaults into the settings a
//!   conversation runs with.
//! - [`recording`]: the loop's events and history rewrites become session records; a
//!   rewrite is written before the loop applies it.
//! - [`ExitCode`] ([`exit`]): the process exit codes every command shares.
//! - [`ceilings`]: the job's cost and time ceilings around a turn.
//! - [`compaction_model`]: the model summaries are requested from, when not the
//!   conversation's (`[context] compaction_model`).
//! - [`checkpoints`]: copies of what pith changes in the workspace, and rewind (its words,
//!   the same in every front-end, in [`checkpoints::text`]).
//! - [`slash`]: the slash commands every front-end parses the same way; [`sessions`]: the
//!   recorded sessions every front-end lists and removes the same way.
//! - [`diagnostics`]: `PITH_LOG` / `RUST_LOG` tracing into `$PITH_HOME/logs/pith.log`.
//! - [`mcp`]: which MCP servers a conversation gets (config files, trusted `.mcp.json`)
//!   and `pith mcp list`; [`hooks`]: which hooks it runs (config files, trusted
//!   `.pith/config.toml`); [`trust`]: the user's trust in a project's own files.
//! - [`attachments`]: `@path/to/shot.png` in a user message attaches the image.
//! - [`output_schema`]: `--output-schema`, the JSON Schema a job's final answer must
//!   match.
//! - [`subagents`]: the `task` tool, agents, and the child conversations they run.
//! - [`telemetry`]: OpenTelemetry traces and metrics of a conversation (off by default).
//!
//! Dependencies point down: front-ends → agent → {mcp, hooks} → {providers, session,
//! checkpoint, tools} → core (docs/architecture.md has the checked list).
#![forbid(unsafe_code)]

mod attachments;
mod ceilings;
mod checkpoints;
mod compaction_model;
mod config;
mod conversation;
mod cost;
mod diagnostics;
mod env;
mod error;
mod exit;
mod hooks;
mod job;
mod ledger;
mod mcp;
mod output_schema;
mod overrides;
mod oversized;
mod recording;
mod repeat_gate;
mod sessions;
mod settings;
mod slash;
mod subagents;
mod telemetry;
mod trust;
mod workspace;

pub use attachments::user_message;
pub use checkpoints::offline::{rewind_session, RewindOutcome, RewindRequest};
pub use checkpoints::rewind::RewindPlan;
pub use checkpoints::text::{plan_lines as rewind_plan_lines, turn_lines as rewind_turn_lines};
pub use conversation::{
    pin_of_argument, Conversation, Opened, PinRow, PinsView, TurnError, TurnOutcome,
};
pub use cost::{summary_cost, Prices, SpendReport};
pub use diagnostics::init as init_diagnostics;
pub use env::{Env, Frontend};
pub use error::ConversationError;
pub use exit::ExitCode;
pub use hooks::trust_question as hooks_trust_question;
pub use job::{
    auto_compaction_line, open as open_job, plan_line, typed_line, CompactionCost,
    CompactionReport, RequestEntry, RunReport,
};
pub use mcp::{list as list_mcp_servers, trust_question as mcp_trust_question};
pub use output_schema::{OutputSchema, SchemaMismatch};
pub use overrides::{Overrides, SessionChoice};
pub use pith_core::context::pins::Pin;
/// `--reasoning`'s value.
pub use pith_providers::wire::ReasoningEffort;
/// What a turn or `/compact` can end with, as the loop reports it.
pub use pith_providers::{LoopError, ManualCompaction};
pub use recording::{CompactionNote, CompactionTotals};
pub use sessions::{
    delete as delete_session, list as list_sessions, list_in as list_sessions_in,
    title as session_title, Listed,
};
pub use settings::Settings;
pub use slash::{parse as parse_slash_command, SlashCommand, EDITOR_COMMANDS, HELP as SLASH_HELP};
pub use subagents::catalog::trust_question as agents_trust_question;
pub use trust::TrustQuestion;
pub use workspace::Workspace;
