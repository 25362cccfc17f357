//! Opening a conversation: a new or resumed session of the workspace, with the settings
//! resolved once (the command line, then the configuration, then the defaults), its MCP
//! servers, hooks, agents and telemetry; and opening the child conversations of `task`
//! calls ([`ChildConversations`]).

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use pith_core::SpendMeter;
use pith_hooks::SessionSource;
use pith_providers::models::builtin::secret_variables;
use pith_session::{NewSession, Record, Session, SessionStore};
use tokio_util::sync::CancellationToken;

use crate::checkpoints::Checkpoints;
use crate::conversation::factory::{Delegation, LoopFactory, LoopParts};
use crate::conversation::state::Conversation;
use crate::env::Frontend;
use crate::error::ConversationError;
use crate::overrides::{Overrides, SessionChoice};
use crate::recording::CompactionTotals;
use crate::settings::Settings;
use crate::subagents::{
    ChildOutcome, ChildRunner, ChildSpec, ChildStart, ChildTask, SubagentLimits,
};
use crate::telemetry::Telemetry;
use crate::workspace::Workspace;

/// A conversation just opened (or switched to by `/resume`), with what the user should
/// see first.
pub struct Opened<T> {
    /// The conversation (or, for `/resume`, nothing more).
    pub value: T,
    /// Warnings and notes (an unknown model's window, a quarantined transcript tail, …).
    pub notices: Vec<String>,
    /// The records of a resumed session, for rendering what happened before.
    pub resumed: Option<Vec<Record>>,
}

impl Conversation {
    /// Opens a new or resumed conversation in `overrides.cwd`, reading its configuration
    /// (see [`Workspace::open`]) and resolving the settings once: `overrides`, then the
    /// configuration files, then the defaults.
    pub fn open(
        overrides: Overrides,
        frontend: Frontend,
    ) -> Result<Opened<Conversation>, ConversationError> {
        let workspace = Workspace::open(&overrides.cwd, frontend.env.as_ref())?;
        Self::open_in(workspace, overrides, frontend)
    }

    /// [`Conversation::open`] in a workspace whose configuration was read already (the
    /// REPL reads it before it asks about the project's files); `overrides.cwd` is not
    /// read again.
    pub fn open_in(
        workspace: Workspace,
        overrides: Overrides,
        frontend: Frontend,
    ) -> Result<Opened<Conversation>, ConversationError> {
        Self::open_with(workspace, overrides, frontend, None)
    }

    /// Opens a child conversation for a `task` call (see [`crate::subagents::child`]): a
    /// new session of the parent's workspace running the agent of `start.spec`, with its
    /// system prompt and tools, no MCP servers and no prompt hooks.
    pub fn open_child(start: ChildStart) -> Result<Opened<Conversation>, ConversationError> {
        let ChildStart {
            workspace,
            overrides,
            frontend,
            spec,
        } = start;
        Self::open_with(workspace, overrides, frontend, Some(spec))
    }

    fn open_with(
        workspace: Workspace,
        overrides: Overrides,
        frontend: Frontend,
        child: Option<ChildSpec>,
    ) -> Result<Opened<Conversation>, ConversationError> {
        let cwd = workspace.cwd().to_path_buf();
        let store =
            SessionStore::from_lookup(frontend.env.as_ref()).map_err(ConversationError::usage)?;
        let mut notices = Vec::new();
        let servers = mcp_servers(&workspace, &frontend, &overrides, child.is_some())?;
        notices.extend(servers.notices);
        let delegation = delegation(&workspace, &frontend, &overrides, child, &mut notices)?;
        let configured =
            crate::hooks::configured_hooks(&workspace, &frontend.env, overrides.trust_project)?;
        notices.extend(configured.notices);
        let hooks_config = Arc::new(configured.config);
        let resumed = session_query(&store, &cwd, &overrides.session, &mut notices)?
            .map(|query| store.resume(&query))
            .transpose()
            .map_err(ConversationError::session)?;
        let recorded = resumed.as_ref().and_then(|r| r.recorded_model.as_deref());
        let config = workspace.config();
        let settings = Settings::resolve(&overrides, recorded, config, frontend.env.as_ref())
            .map_err(ConversationError::usage)?;
        notices.extend(settings.notices.iter().cloned());
        // A subagent spends from its parent's account.
        let meter = match &delegation.child {
            Some(child) => Arc::clone(&child.meter),
            None => Arc::new(SpendMeter::new(settings.ceilings)),
        };
        let parent = delegation.child.as_ref().map(|c| c.parent_session.as_str());
        let (mut session, history, records) =
            session_of(resumed, &store, &cwd, &settings, parent, &mut notices)?;
        let unused = records.is_none();
        let (ledger, pins) = ledger_and_pins(&cwd, records.as_deref());
        let source = if records.is_some() {
            SessionSource::Resume
        } else {
            SessionSource::New
        };
        let (checkpoints, frontend) = match &delegation.child {
            Some(_) => (None, frontend),
            None => start_checkpoints(&store, &workspace, frontend, &mut notices),
        };
        let factory = LoopFactory {
            workspace,
            frontend,
            delegation,
            meter,
            hooks_config,
            checkpoints,
        };
        let built = factory.build(LoopParts {
            settings: &settings,
            overrides: &overrides,
            session: &mut session,
            history,
            ledger,
            pins,
        })?;
        let is_child = factory.delegation.child.is_some();
        let telemetry = match is_child {
            true => None,
            false => start_telemetry(&factory, session.id(), &mut notices)?,
        };
        let mcp = crate::mcp::start(servers.servers, &factory.frontend.env, &cwd);
        let (_, cut) = settings.system_prompt(&cwd);
        let instructions_warned = cut.iter().map(|c| c.name.clone()).collect();
        if !is_child {
            notices.extend(settings.instruction_warnings(&cut));
        }
        // A child's prompt comes from its parent's model: no prompt hooks run for it.
        let session_start = (!is_child).then_some(source);
        Ok(Opened {
            value: Conversation {
                factory,
                overrides,
                store,
                settings,
                session,
                unused,
                reconcile: records.is_some(),
                agent: built.agent,
                toolset: built.toolset,
                mcp,
                mcp_installed: false,
                hooks: built.hooks,
                session_start,
                session_context: None,
                children: Vec::new(),
                instructions_warned,
                compaction_totals: CompactionTotals::default(),
                output_schema: None,
                telemetry,
                keep_prepared_summaries: false,
            },
            notices,
            resumed: records,
        })
    }
}

/// What a conversation may delegate to: the configured agents (their notices for a
/// top-level conversation only), the limits, and `child` when it is itself a subagent.
fn delegation(
    workspace: &Workspace,
    frontend: &Frontend,
    overrides: &Overrides,
    child: Option<ChildSpec>,
    notices: &mut Vec<String>,
) -> Result<Delegation, ConversationError> {
    let configured = crate::subagents::catalog::configured_agents(
        workspace.cwd(),
        &frontend.env,
        overrides.trust_project,
    )?;
    if child.is_none() {
        notices.extend(configured.notices);
    }
    Ok(Delegation {
        runner: Arc::new(ChildConversations),
        agents: configured.agents,
        limits: SubagentLimits::from_table(&workspace.config().agents)
            .map_err(|e| ConversationError::usage(format!("invalid configuration: {e}")))?,
        child,
    })
}

/// A conversation's session, its history, and its records when it was resumed.
type SessionOf = (Session, Vec<pith_core::Message>, Option<Vec<Record>>);

/// The session a conversation records to, its history and its records: the resumed
/// one (its warnings become notices), else a new one.
fn session_of(
    resumed: Option<pith_session::Resumed>,
    store: &SessionStore,
    cwd: &Path,
    settings: &Settings,
    parent: Option<&str>,
    notices: &mut Vec<String>,
) -> Result<SessionOf, ConversationError> {
    Ok(match resumed {
        Some(resumed) => {
            notices.extend(resumed.warnings.iter().map(|w| format!("warning: {w}")));
            (resumed.session, resumed.history, Some(resumed.records))
        }
        None => (
            create_session(store, cwd, settings, parent)?,
            Vec::new(),
            None,
        ),
    })
}

/// The ledger and the pins a conversation starts with: rebuilt from a resumed session's
/// records, fresh for a new one.
fn ledger_and_pins(
    cwd: &Path,
    records: Option<&[Record]>,
) -> (
    pith_core::context::ledger::Ledger,
    pith_core::context::pins::Pins,
) {
    match records {
        Some(records) => (
            crate::ledger::rebuild(cwd, records),
            pith_session::pins_on_line(records),
        ),
        None => (crate::ledger::fresh(cwd), Default::default()),
    }
}

/// The MCP servers a conversation gets: the configured ones and the front-end's extra
/// ones; none for a child (each would start its own).
fn mcp_servers(
    workspace: &Workspace,
    frontend: &Frontend,
    overrides: &Overrides,
    is_child: bool,
) -> Result<crate::mcp::McpServers, ConversationError> {
    if is_child {
        return Ok(crate::mcp::McpServers {
            servers: Vec::new(),
            notices: Vec::new(),
        });
    }
    let mut servers =
        crate::mcp::configured_servers(workspace, &frontend.env, overrides.trust_project)?;
    crate::mcp::add_extra(&mut servers, &overrides.extra_mcp_servers);
    Ok(servers)
}

/// The recorded session `choice` names, after a fork when it asks for one; `None` for a
/// new session (also when `--continue` finds none, with a notice).
fn session_query(
    store: &SessionStore,
    cwd: &Path,
    choice: &SessionChoice,
    notices: &mut Vec<String>,
) -> Result<Option<String>, ConversationError> {
    Ok(match choice {
        SessionChoice::New => None,
        SessionChoice::Resume(query) => Some(query.clone()),
        SessionChoice::Fork(query) => Some(
            store
                .fork(query)
                .map_err(ConversationError::session)?
                .id()
                .to_owned(),
        ),
        SessionChoice::ForkAt { query, turn } => Some(fork_at_turn(store, query, *turn)?),
        SessionChoice::Latest => {
            let latest = store
                .latest_session_id(cwd)
                .map_err(ConversationError::session)?;
            if latest.is_none() {
                notices.push("No earlier session in this project; starting a new one.".into());
            }
            latest
        }
    })
}

/// A top-level conversation's checkpoints, started here (the first snapshot runs in the
/// background), and the front-end whose change feed is their tracker: bash's file
/// effects come from it. `None`, with a notice, when they cannot start (or `None` when
/// they are off), and the front-end as it was.
fn start_checkpoints(
    store: &SessionStore,
    workspace: &Workspace,
    frontend: Frontend,
    notices: &mut Vec<String>,
) -> (Option<Arc<Checkpoints>>, Frontend) {
    let data_dir = store.root().parent().unwrap_or(store.root());
    let checkpoints =
        Checkpoints::start(workspace.cwd(), data_dir, &workspace.config().checkpoints)
            .unwrap_or_else(|notice| {
                notices.push(notice);
                None
            });
    match checkpoints {
        Some(checkpoints) => {
            let frontend = Frontend {
                changes: Some(checkpoints.feed()),
                ..frontend
            };
            (Some(checkpoints), frontend)
        }
        None => (None, frontend),
    }
}

/// Forks the session `query` from just before its turn `turn` (1-based, on its current
/// line): the new session's id.
fn fork_at_turn(store: &SessionStore, query: &str, turn: u64) -> Result<String, ConversationError> {
    let source = store
        .read(query, pith_session::ReadOptions::default())
        .map_err(ConversationError::session)?;
    let listed = pith_session::turns(&source.records);
    let seq = pith_session::turn_seq(&source.records, turn).ok_or_else(|| {
        ConversationError::usage(format!(
            "cannot fork {query} at turn {turn}: it has {} turn(s)",
            listed.len()
        ))
    })?;
    let fork = store
        .fork_at(query, Some(seq))
        .map_err(ConversationError::session)?;
    Ok(fork.id().to_owned())
}

/// Telemetry, when `[telemetry]` or the `OTEL_*` variables configure it. A telemetry that
/// cannot start is a notice, never a failure of the conversation.
fn start_telemetry(
    factory: &LoopFactory,
    session_id: &str,
    notices: &mut Vec<String>,
) -> Result<Option<Arc<Telemetry>>, ConversationError> {
    let config = factory.workspace.config();
    let env = &factory.frontend.env;
    if config.project_telemetry_ignored {
        notices.push(
            "the project's [telemetry] is ignored: telemetry is configured in your own config.toml or the OTEL_* variables"
                .into(),
        );
    }
    let resolved = crate::telemetry::resolve(&config.telemetry, env.as_ref())
        .map_err(ConversationError::usage)?;
    notices.extend(resolved.notices);
    let Some(settings) = resolved.settings else {
        return Ok(None);
    };
    let secrets = secret_variables(&config.model_tables())
        .iter()
        .filter_map(|name| env(name))
        .collect();
    match Telemetry::start(&settings, session_id, secrets) {
        Ok(telemetry) => Ok(Some(Arc::new(telemetry))),
        Err(error) => {
            notices.push(format!("telemetry is off: {error}"));
            Ok(None)
        }
    }
}

/// A new session; a subagent's names its `parent`.
pub(super) fn create_session(
    store: &SessionStore,
    cwd: &Path,
    settings: &Settings,
    parent: Option<&str>,
) -> Result<Session, ConversationError> {
    let new = NewSession {
        cwd: cwd.to_path_buf(),
        provider: settings.model.provider.clone(),
        model: settings.model.model.clone(),
    };
    match parent {
        Some(parent) => store.create_child(new, parent),
        None => store.create(new),
    }
    .map_err(ConversationError::failure)
}

/// Opens and runs the child conversations of `task` calls (see
/// [`crate::subagents::child`]).
struct ChildConversations;

#[async_trait]
impl ChildRunner for ChildConversations {
    async fn run(
        &self,
        task: ChildTask,
        cancel: CancellationToken,
    ) -> Result<ChildOutcome, String> {
        let ChildTask {
            start,
            prompt,
            events,
        } = task;
        let agent = start.spec.agent.name.clone();
        let opened = Conversation::open_child(start).map_err(|error| error.to_string())?;
        let mut child = opened.value;
        let mut sink = events.started(child.session_id(), opened.notices);
        let outcome = child.run_turn(&prompt, &mut sink, &cancel).await;
        let finished = ChildOutcome::of_turn(
            child.session_id(),
            &agent,
            child.model_spec(),
            outcome,
            child.history().last(),
        );
        child.close();
        Ok(finished)
    }
}
