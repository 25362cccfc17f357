//! The loop factory: builds the tool loop of a conversation's session — its tools (a
//! child's only its agent's), the `task` tool or its depth-limit stand-in, the spend
//! guard, the hooks and the repeat gate — whenever the conversation opens, switches
//! model, clears or resumes.

use std::sync::Arc;

use pith_core::context::ledger::Ledger;
use pith_core::context::pins::Pins;
use pith_core::{Message, SpendMeter, ToolRegistry};
use pith_hooks::{Hooks, HooksConfig, SessionInfo};

use crate::checkpoints::hooks::CheckpointHooks;
use crate::checkpoints::Checkpoints;
use pith_providers::AgentLoop;
use pith_session::Session;
use pith_tools::{ToolsConfig, Toolset};

use crate::env::Frontend;
use crate::error::ConversationError;
use crate::overrides::Overrides;
use crate::settings::Settings;
use crate::subagents::depth::DepthLimit;
use crate::subagents::{Agents, ChildLauncher, ChildRunner, ChildSpec, SubagentLimits, TaskTool};
use crate::workspace::Workspace;

/// What a conversation may delegate to subagents, and what it is when it is one.
#[derive(Clone)]
pub(super) struct Delegation {
    /// Opens and runs the children of `task` calls.
    pub(super) runner: Arc<dyn ChildRunner>,
    /// The agents offered to `task`.
    pub(super) agents: Agents,
    /// `[agents]` limits.
    pub(super) limits: SubagentLimits,
    /// Set for a child conversation.
    pub(super) child: Option<ChildSpec>,
}

/// What every loop of a conversation is built from, fixed while it lives.
pub(super) struct LoopFactory {
    /// The workspace and its configuration.
    pub(super) workspace: Workspace,
    /// The environment and the approver.
    pub(super) frontend: Frontend,
    /// What the conversation may delegate, and what it is when it is a child.
    pub(super) delegation: Delegation,
    /// What the conversation (and its subagents) spent, against its ceilings.
    pub(super) meter: Arc<SpendMeter>,
    /// The hooks that run (the user's, and the project's once trusted).
    pub(super) hooks_config: Arc<HooksConfig>,
    /// The conversation's checkpoints (a top-level conversation's, when on).
    pub(super) checkpoints: Option<Arc<Checkpoints>>,
}

/// What one loop is built for: the settings and choices in force, the session, and the
/// history and session ledger it starts from.
pub(super) struct LoopParts<'a> {
    /// The settings (model, budget, tools, context).
    pub(super) settings: &'a Settings,
    /// The command line's choices, the children's starting point.
    pub(super) overrides: &'a Overrides,
    /// The session the loop records into.
    pub(super) session: &'a mut Session,
    /// The history to start from.
    pub(super) history: Vec<Message>,
    /// The session ledger to start from.
    pub(super) ledger: Ledger,
    /// The pins to start from.
    pub(super) pins: Pins,
}

/// A conversation's loop, its tool set (MCP tools join its registry before the first
/// turn) and the session's hooks.
pub(super) struct BuiltLoop {
    /// The loop.
    pub(super) agent: AgentLoop,
    /// Its tools.
    pub(super) toolset: Toolset,
    /// The session's hooks (also installed in the loop).
    pub(super) hooks: Arc<Hooks>,
}

impl LoopFactory {
    /// The loop of `parts.session` with its tools, hooks, history and ledger. A child's
    /// loop has only its agent's tools; a conversation above the depth limit also gets
    /// the `task` tool, whose children start from `parts.overrides`.
    pub(super) fn build(&self, parts: LoopParts<'_>) -> Result<BuiltLoop, ConversationError> {
        let LoopParts {
            settings,
            overrides,
            session,
            history,
            ledger,
            pins,
        } = parts;
        session.set_max_record_bytes(settings.max_record_bytes);
        let tools = self.toolset(settings, session)?;
        let registry = self.registry(&tools, settings, overrides, session);
        let mut agent = settings
            .build_loop(self.workspace.cwd(), registry)
            .map_err(ConversationError::usage)?;
        if settings.model.takes_prompt_cache_key() {
            agent.options_mut().prompt_cache.key = Some(session.id().to_owned());
        }
        agent.set_history(history);
        agent.set_ledger(ledger);
        agent.set_pins(pins);
        let guard =
            crate::ceilings::spend_guard(&self.meter, settings, Arc::clone(agent.counter()))
                .map_err(ConversationError::usage)?;
        agent.set_spend_guard(guard);
        if let Some(summaries) = &settings.compaction_model {
            let summary_model = summaries
                .summary_model(&self.meter, Arc::clone(agent.counter()))
                .map_err(ConversationError::usage)?;
            agent.set_summary_model(Some(summary_model));
        }
        agent.set_file_probe(tools.disk_probe());
        let (hooks, loop_hooks) = self.hooks(settings, session);
        agent.set_hooks(loop_hooks);
        agent.set_repeat_gate(Arc::new(crate::repeat_gate::AskToGoOn::new(
            self.frontend.approver.clone(),
        )));
        Ok(BuiltLoop {
            agent,
            toolset: tools,
            hooks,
        })
    }

    /// The built-in tools in the workspace, with the front-end's approver, buffers,
    /// terminal and change tracker.
    fn toolset(
        &self,
        settings: &Settings,
        session: &Session,
    ) -> Result<Toolset, ConversationError> {
        let frontend = &self.frontend;
        let spill_dir = session.spill_dir().map_err(ConversationError::failure)?;
        let mut tools = ToolsConfig::new(self.workspace.cwd(), spill_dir)
            .with_mode(settings.approval)
            .with_sandbox(settings.sandbox.clone())
            .with_images(settings.image_limits());
        if let Some(approver) = &frontend.approver {
            tools = tools.with_approver(approver.clone());
        }
        if let Some(files) = &frontend.files {
            tools = tools.with_files(files.clone());
        }
        if let Some(terminal) = &frontend.terminal {
            tools = tools.with_terminal(terminal.clone());
        }
        if let Some(changes) = &frontend.changes {
            tools = tools.with_changes(changes.clone());
        }
        tools.squash = settings.context.squash.clone();
        Toolset::new(tools).map_err(ConversationError::usage)
    }

    /// The loop's registry: every tool, or a child's agent's own; and the `task` tool
    /// below the depth limit (a stand-in that explains the limit above it).
    fn registry(
        &self,
        tools: &Toolset,
        settings: &Settings,
        overrides: &Overrides,
        session: &Session,
    ) -> ToolRegistry {
        let delegation = &self.delegation;
        let registry = match &delegation.child {
            None => tools.registry(),
            Some(child) => {
                let all = tools.registry();
                ToolRegistry::new(
                    child
                        .agent
                        .tools
                        .iter()
                        .filter_map(|name| all.get(name))
                        .collect(),
                )
            }
        };
        let depth = delegation.child.as_ref().map_or(0, |c| c.depth);
        if depth < delegation.limits.max_depth {
            let launcher = ChildLauncher {
                runner: Arc::clone(&delegation.runner),
                workspace: self.workspace.clone(),
                overrides: overrides.clone(),
                frontend: self.frontend.clone(),
                parent_model: settings.model.spec(),
                permissions: tools.permissions(),
                capture: tools.env().capture.clone(),
                agents: delegation.agents.clone(),
                limits: delegation.limits,
                depth: depth + 1,
                parent_session: session.id().to_owned(),
                meter: Arc::clone(&self.meter),
                slots: Arc::new(tokio::sync::Semaphore::new(delegation.limits.max_parallel)),
                questions: Arc::default(),
            };
            registry.register(Arc::new(TaskTool::new(Arc::new(launcher))));
        } else {
            registry.defer(Arc::new(DepthLimit {
                max_depth: delegation.limits.max_depth,
            }));
        }
        registry
    }

    /// The session's hooks, and what the loop calls: them, behind the checkpoints when
    /// they are on.
    fn hooks(
        &self,
        settings: &Settings,
        session: &Session,
    ) -> (Arc<Hooks>, Arc<dyn pith_core::LoopHooks>) {
        let hooks = Arc::new(
            Hooks::new(
                Arc::clone(&self.hooks_config),
                SessionInfo {
                    session_id: session.id().to_owned(),
                    transcript_path: session.transcript_path().to_path_buf(),
                    cwd: self.workspace.cwd().to_path_buf(),
                },
                settings.context.squash.clone(),
            )
            .with_approver(self.frontend.approver.clone()),
        );
        let loop_hooks: Arc<dyn pith_core::LoopHooks> = match &self.checkpoints {
            Some(checkpoints) => Arc::new(CheckpointHooks {
                inner: hooks.clone(),
                checkpoints: Arc::clone(checkpoints),
            }),
            None => hooks.clone(),
        };
        (hooks, loop_hooks)
    }
}
