//! The [`Conversation`] value: what it holds, and the read-only figures a status line or
//! `/context` shows. Opening is in `open`, turns in `turn`, switching session or model in
//! `switch`, building the loop in `factory`.

use std::path::Path;
use std::sync::Arc;

use pith_core::context::ledger::RenderedLedger;
use pith_core::{
    ChildRun, ContextBudget, Message, RequestEstimate, SpendMeter, TokenCounter, Usage,
};
use pith_hooks::{Hooks, SessionSource};
use pith_mcp::McpHub;
use pith_providers::AgentLoop;
use pith_session::{Session, SessionStore, SessionSummary};
use pith_tools::{PermissionMode, Toolset};

use crate::conversation::factory::LoopFactory;
use crate::error::ConversationError;
use crate::output_schema::OutputSchema;
use crate::overrides::Overrides;
use crate::recording::CompactionTotals;
use crate::settings::Settings;
use crate::subagents::Agents;
use crate::telemetry::Telemetry;

/// One conversation; see the module docs.
pub struct Conversation {
    /// What every loop of the conversation is built from: the workspace and its
    /// configuration (read once, when the conversation opened), the front-end, the
    /// delegation, the spend meter and the hooks that run.
    pub(super) factory: LoopFactory,
    /// The command line's choices (the model's changes with `/model`).
    pub(super) overrides: Overrides,
    /// The session store.
    pub(super) store: SessionStore,
    /// The settings in force.
    pub(super) settings: Settings,
    /// The current session.
    pub(super) session: Session,
    /// Created by this process and still without a user message: removed when left.
    pub(super) unused: bool,
    /// A resumed session whose recorded files have not been compared with the disk yet:
    /// done at its next turn's start, so an edit made between two `pith run --session`
    /// jobs (or REPL runs) is recorded as a change outside pith, as the REPL records one
    /// made between its turns.
    pub(super) reconcile: bool,
    /// The tool loop of the current session and model.
    pub(super) agent: AgentLoop,
    /// The tools of `agent` (MCP tools are installed into its registry).
    pub(super) toolset: Toolset,
    /// The conversation's MCP servers, shared by every loop it builds.
    pub(super) mcp: Option<Arc<McpHub>>,
    /// The MCP tools are in `agent`'s registry.
    pub(super) mcp_installed: bool,
    /// The hooks of the current session (also installed in `agent`).
    pub(super) hooks: Arc<Hooks>,
    /// The `SessionStart` hooks have yet to run for the current session (with this
    /// source), before its next prompt.
    pub(super) session_start: Option<SessionSource>,
    /// Context the `SessionStart` hooks added, waiting for a prompt that is sent.
    pub(super) session_context: Option<String>,
    /// The child conversations run since the conversation opened (for `/context`).
    pub(super) children: Vec<ChildRun>,
    /// Instruction files the user was warned about (cut to their share of the window).
    pub(super) instructions_warned: std::collections::BTreeSet<String>,
    /// What compaction did and cost since the conversation opened (`/context`).
    pub(super) compaction_totals: CompactionTotals,
    /// The schema the final answer must match (`--output-schema`).
    pub(super) output_schema: Option<Arc<OutputSchema>>,
    /// OpenTelemetry export, when configured (a top-level conversation only).
    pub(super) telemetry: Option<Arc<Telemetry>>,
    /// A summary prepared in the background outlives the turn (a REPL or an editor's
    /// session, whose next turn may use it); otherwise it ends with the turn, counted as
    /// unused (a `pith run` job, a subagent's task).
    pub(super) keep_prepared_summaries: bool,
}

impl Conversation {
    /// Tokens of the MCP tool definitions the next request advertises (the loader and
    /// its catalog included): the `/context` row.
    pub fn mcp_definition_tokens(&self) -> usize {
        let definitions: Vec<_> = self
            .agent
            .tools()
            .definitions()
            .into_iter()
            .filter(|d| pith_mcp::is_mcp_definition(&d.name))
            .collect();
        pith_core::tokens::count_tools(self.agent.counter().as_ref(), &definitions)
    }

    /// The conversation's MCP servers, if any are configured.
    pub fn mcp(&self) -> Option<&Arc<McpHub>> {
        self.mcp.as_ref()
    }

    /// Closes the conversation; a session this process created and never used is
    /// removed, so session lists do not fill up with empty ones.
    pub fn close(self) {
        if let Some(telemetry) = &self.telemetry {
            telemetry.shutdown();
        }
        retire(self.session, self.unused);
    }

    /// The sessions of this conversation's project, newest activity first.
    pub fn project_sessions(&self) -> Result<Vec<SessionSummary>, ConversationError> {
        crate::sessions::list_in(
            &self.store,
            Some(self.factory.workspace.cwd()),
            crate::sessions::Listed::All,
        )
        .map_err(ConversationError::session)
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.session.id()
    }

    /// The transcript file.
    pub fn transcript_path(&self) -> &Path {
        self.session.transcript_path()
    }

    /// pith's data directory (sessions, logs, the REPL's input history).
    pub fn data_dir(&self) -> Option<&Path> {
        self.store.root().parent()
    }

    /// The workspace.
    pub fn cwd(&self) -> &Path {
        self.factory.workspace.cwd()
    }

    /// The settings in force.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// `provider/model`.
    pub fn model_spec(&self) -> String {
        self.settings.model.spec()
    }

    /// The budget in force.
    pub fn budget(&self) -> ContextBudget {
        self.settings.budget
    }

    /// Tool permissions.
    pub fn approval(&self) -> PermissionMode {
        self.settings.approval
    }

    /// The permission policy of the current session's tools, to switch the approval
    /// mode while the conversation runs (ACP's `session/set_mode`). `/model`, `/clear`
    /// and `/resume` build a new policy from the settings' mode.
    pub fn permissions(&self) -> Arc<pith_tools::PermissionPolicy> {
        self.toolset.permissions()
    }

    /// Whether automatic compaction is on.
    pub fn auto_compaction(&self) -> bool {
        self.settings.loop_options.auto_compaction
    }

    /// What compaction did and cost since the conversation opened (manual compactions
    /// included): the `/context` rows.
    pub fn compaction_totals(&self) -> CompactionTotals {
        self.compaction_totals
    }

    /// Lets a summary prepared in the background outlive the turn that started it (for
    /// front-ends whose sessions take more turns: the REPL, `pith acp`). Off by default:
    /// a one-shot job ends its prepared summary with the turn and reports it unused.
    pub fn keep_prepared_summaries(&mut self, keep: bool) {
        self.keep_prepared_summaries = keep;
    }

    /// The token that cancels the summary being prepared in the background, if one is
    /// (a front-end shows it, and Esc cancels it, in the turns after the one it began).
    pub fn prepared_summary_cancel(&self) -> Option<tokio_util::sync::CancellationToken> {
        self.agent.prepared_summary_cancel()
    }

    /// The cost of `usage` in US dollars: the provider's own figure when it reported one,
    /// else the model's prices; `None` when neither is known.
    pub fn cost_of(&self, usage: &Usage) -> Option<f64> {
        if usage.provider_cost_nanousd > 0 {
            return Some(usage.provider_cost_nanousd as f64 / 1e9);
        }
        self.settings.model.pricing.map(|p| p.cost(usage))
    }

    /// The cost of summary requests that used `usage`, of which `part` went to the
    /// compaction model: each part at its model's prices.
    pub fn summary_cost(&self, usage: &Usage, part: &Usage) -> Option<f64> {
        crate::cost::summary_cost(
            usage,
            part,
            &self.model_spec(),
            self.compaction_model_spec().as_deref(),
            &self.prices(),
        )
    }

    /// The compaction model's `provider/model`, when summaries go to another model
    /// (`[context] compaction_model`).
    pub fn compaction_model_spec(&self) -> Option<String> {
        self.settings
            .compaction_model
            .as_ref()
            .map(crate::compaction_model::CompactionModel::spec)
    }

    /// The prices of every model (the configuration's, else the catalog's), for costs.
    pub fn prices(&self) -> crate::cost::Prices {
        crate::cost::Prices::new(self.factory.workspace.config().model_tables())
    }

    /// What the current session spent so far, read from its records
    /// (`pith_session::SessionSpend`, the definition every front-end shows). An
    /// unreadable transcript is an error naming it.
    pub fn session_spend(&self) -> Result<pith_session::SessionSpend, ConversationError> {
        let transcript = self
            .session
            .read(pith_session::ReadOptions::default())
            .map_err(ConversationError::session)?;
        Ok(pith_session::SessionSpend::from_records(
            &transcript.records,
        ))
    }

    /// [`Conversation::session_spend`] as reports show it: usage, cost and cache hits.
    pub fn spend_report(&self) -> Result<crate::cost::SpendReport, ConversationError> {
        Ok(crate::cost::SpendReport::of(
            &self.session_spend()?,
            &self.prices(),
        ))
    }

    /// The conversation's calibration of pith's count against the server's reports.
    pub fn calibration(&self) -> pith_core::context::Calibration {
        self.agent.calibration()
    }

    /// The compaction governor's state: whether automatic compaction is paused and why,
    /// this turn's automatic compactions (`/context`, the REPL's status line).
    pub fn governor(&self) -> &pith_core::context::Governor {
        self.agent.governor()
    }

    /// The estimate of the next request as the history stands, as front-ends show it:
    /// counted, never the start-up upper bound the loop may decide on before the
    /// counter's tables are ready (it waits for them: a few milliseconds once per
    /// process; docs/context-budget.md).
    pub fn estimate(&mut self) -> RequestEstimate {
        self.agent.counted_estimate()
    }

    /// The session ledger as the next compaction would carry it (`None` when the ledger
    /// is off or has nothing yet), for `/ledger` and `/context`.
    pub fn ledger_preview(&self) -> Option<RenderedLedger> {
        self.agent.render_ledger(false)
    }

    /// The ledger's token budget (0 when it is off).
    pub fn ledger_budget_tokens(&self) -> usize {
        self.agent.ledger_budget_tokens()
    }

    /// The history, without the system prompt.
    pub fn history(&self) -> &[Message] {
        self.agent.history()
    }

    /// The counter the estimate uses.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        self.agent.counter()
    }

    /// The child conversations (`task` calls) run in the current session since it was
    /// opened or switched to, with what each used: the `/context` rows.
    pub fn children(&self) -> &[ChildRun] {
        &self.children
    }

    /// What the conversation and its subagents spent so far, against its ceilings.
    pub fn spend(&self) -> &Arc<SpendMeter> {
        &self.factory.meter
    }

    /// The agents `task` offers (a child at the depth limit has no `task` tool).
    pub fn agents(&self) -> &Agents {
        &self.factory.delegation.agents
    }
}

/// Closes `session`; removes its directory when it was never used.
pub(super) fn retire(session: Session, unused: bool) {
    let dir = session.dir().to_path_buf();
    drop(session);
    if unused {
        let _ = std::fs::remove_dir_all(dir);
    }
}

pith_core::debug_fields!(Conversation |this| {
    session: this.session.id(),
    model: this.settings.model.spec(),
    cwd: this.factory.workspace.cwd(),
});
