//! Running one child conversation for a `task` call.
//!
//! A [`ChildLauncher`] belongs to the parent conversation's loop. For each call it waits
//! for one of the parent's slots (at most [`SubagentLimits::max_parallel`] children run
//! at a time), has its [`ChildRunner`] open a child conversation — a new session of the
//! same store with its own history, budget and compaction, the parent's workspace and
//! configuration, the agent's model (else the parent's), the agent's tools under the
//! parent's approval mode *as it is now*, no MCP servers — and run one turn of it with a
//! child of the turn's cancellation token. The child's events go to the parent's
//! front-end through the call's [`pith_core::Progress`] handle, each wrapped in a
//! [`SubagentEvent`]. Questions of a child name its agent and never overlap with another
//! child's.
//!
//! A child is a conversation, and a conversation's loop holds a launcher: the runner is
//! the conversation module's ([`crate::conversation`]), given to the launcher as a trait
//! object, so that this module does not depend on the conversation that depends on it.

use std::sync::Arc;

use async_trait::async_trait;
use pith_core::{
    ChildRun, EventSink, LoopEvent, Message, Progress, Role, SpendMeter, SubagentEvent,
    ToolContext, ToolError,
};
use pith_tools::Capture;
use pith_tools::{Approval, Approver, PermissionPolicy, PermissionRequest};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::conversation::outcome::TurnOutcome;
use crate::env::Frontend;
use crate::overrides::{Overrides, SessionChoice};
use crate::subagents::catalog::Agents;
use crate::subagents::definition::AgentDefinition;
use crate::workspace::Workspace;

/// How many children run at once, and how deep they may nest (`[agents]` in config).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubagentLimits {
    /// Children of one conversation running at the same time (default 3).
    pub max_parallel: usize,
    /// Levels of children below the user's conversation (default 1: children cannot
    /// start children).
    pub max_depth: u32,
}

impl Default for SubagentLimits {
    fn default() -> Self {
        Self {
            max_parallel: 3,
            max_depth: 1,
        }
    }
}

impl SubagentLimits {
    /// The `[agents]` table of the configuration (`max_parallel`, `max_depth`); missing
    /// keys keep their defaults, others are errors.
    pub fn from_table(table: &toml::Table) -> Result<Self, String> {
        let mut limits = Self::default();
        for (key, value) in table {
            let number = value
                .as_integer()
                .filter(|n| *n >= 0)
                .ok_or_else(|| format!("[agents] {key} must be a non-negative integer"))?;
            match key.as_str() {
                "max_parallel" if number >= 1 => limits.max_parallel = number as usize,
                "max_parallel" => return Err("[agents] max_parallel must be at least 1".into()),
                "max_depth" => {
                    limits.max_depth = u32::try_from(number)
                        .map_err(|_| "[agents] max_depth is too large".to_owned())?
                }
                other => {
                    return Err(format!(
                        "unknown key `{other}` in [agents] (known: max_parallel, max_depth)"
                    ))
                }
            }
        }
        Ok(limits)
    }
}

/// What a child conversation is, besides the settings it is opened with.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// The agent it runs.
    pub agent: AgentDefinition,
    /// Its depth: 1 for a child of the user's conversation.
    pub depth: u32,
    /// The session of the conversation whose `task` call starts it.
    pub parent_session: String,
    /// The account it spends from: its parent's (the job's ceilings cover subagents).
    pub meter: Arc<SpendMeter>,
}

/// What a child conversation is opened with.
pub struct ChildStart {
    /// The parent's workspace and configuration (a child does not read them again).
    pub workspace: Workspace,
    /// The child's choices: the parent's, with the agent's model and turn limit and the
    /// parent's approval mode as it is now.
    pub overrides: Overrides,
    /// The parent's environment, and its approver naming the agent.
    pub frontend: Frontend,
    /// What the child is.
    pub spec: ChildSpec,
}

/// One child to run: how it is opened, the prompt of its one turn, and where its events
/// go.
pub struct ChildTask {
    /// What the child conversation is opened with.
    pub start: ChildStart,
    /// The prompt of its turn.
    pub prompt: String,
    /// Where its events go (announced once its session is open).
    pub events: ChildEvents,
}

/// Opens and runs child conversations (implemented by the conversation module; see the
/// module docs).
#[async_trait]
pub trait ChildRunner: Send + Sync {
    /// Opens the child of `task`, runs its turn and closes it. `Err` when the child cannot
    /// be opened, saying why; a child that failed or was cancelled after it started is an
    /// outcome with an error (its session exists).
    async fn run(&self, task: ChildTask, cancel: CancellationToken)
        -> Result<ChildOutcome, String>;
}

/// What the parent needs to start its children; see the module docs.
pub struct ChildLauncher {
    /// Opens and runs each child.
    pub runner: Arc<dyn ChildRunner>,
    /// The parent's workspace and configuration.
    pub workspace: Workspace,
    /// The parent's command-line choices (window, sandbox, …).
    pub overrides: Overrides,
    /// The parent's environment and approver.
    pub frontend: Frontend,
    /// The parent's model, `provider/model` (the children's default).
    pub parent_model: String,
    /// The parent's permission policy: a child runs under its mode as it is when the
    /// child starts.
    pub permissions: Arc<PermissionPolicy>,
    /// The parent's squash and spill, for the children's answers.
    pub capture: Capture,
    /// The agents offered.
    pub agents: Agents,
    /// The limits.
    pub limits: SubagentLimits,
    /// The depth of the children this launcher starts.
    pub depth: u32,
    /// The parent's session id (the children's `session_started` names it).
    pub parent_session: String,
    /// The parent's spend meter, which its children charge too.
    pub meter: Arc<SpendMeter>,
    /// Free slots for running children.
    pub slots: Arc<Semaphore>,
    /// One question to the user at a time, across children.
    pub questions: Arc<tokio::sync::Mutex<()>>,
}

/// How a child's turn ended.
#[derive(Debug, Clone)]
pub struct ChildOutcome {
    /// The child, and what it used.
    pub run: ChildRun,
    /// Its final answer (what it said, also when it failed).
    pub text: String,
    /// Why it did not finish, if it did not.
    pub error: Option<String>,
}

impl ChildLauncher {
    /// The agents offered.
    pub fn agents(&self) -> &Agents {
        &self.agents
    }

    /// The limits.
    pub fn limits(&self) -> SubagentLimits {
        self.limits
    }

    /// The parent's squash and spill.
    pub fn capture(&self) -> &Capture {
        &self.capture
    }

    /// Runs `prompt` in a new child conversation of `agent` for the call of `ctx`.
    /// A child that cannot be opened is a [`ToolError::Failed`]; a child that failed or
    /// was cancelled after it started is an outcome with an error (its session exists).
    pub async fn run(
        &self,
        agent: &AgentDefinition,
        prompt: &str,
        description: &str,
        ctx: &ToolContext,
    ) -> Result<ChildOutcome, ToolError> {
        let _slot = tokio::select! {
            slot = Arc::clone(&self.slots).acquire_owned() => slot
                .map_err(|_| ToolError::Failed("the subagent slots are closed".into()))?,
            () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        let cancel = ctx.cancel.child_token();
        let overrides = Overrides {
            model: Some(
                agent
                    .model
                    .clone()
                    .unwrap_or_else(|| self.parent_model.clone()),
            ),
            approval: Some(self.permissions.mode()),
            max_turns: agent.max_turns.or(self.overrides.max_turns),
            session: SessionChoice::New,
            ..self.overrides.clone()
        };
        let frontend = Frontend {
            env: Arc::clone(&self.frontend.env),
            approver: self.frontend.approver.as_ref().map(|inner| {
                Arc::new(AgentApprover {
                    agent: agent.name.clone(),
                    inner: Arc::clone(inner),
                    questions: Arc::clone(&self.questions),
                }) as Arc<dyn Approver>
            }),
            files: self.frontend.files.clone(),
            terminal: self.frontend.terminal.clone(),
            changes: self.frontend.changes.clone(),
        };
        let spec = ChildSpec {
            agent: agent.clone(),
            depth: self.depth,
            parent_session: self.parent_session.clone(),
            meter: Arc::clone(&self.meter),
        };
        let events = ChildEvents {
            progress: ctx.progress.clone(),
            call_id: ctx.call_id.clone(),
            agent: agent.name.clone(),
            description: description.to_owned(),
        };
        let start = ChildStart {
            workspace: self.workspace.clone(),
            overrides,
            frontend,
            spec,
        };
        let task = ChildTask {
            start,
            prompt: prompt.to_owned(),
            events,
        };
        self.runner.run(task, cancel).await.map_err(|error| {
            ToolError::Failed(format!("cannot start the `{}` agent: {error}", agent.name))
        })
    }
}

impl ChildOutcome {
    /// What a child's turn amounts to for its parent: the child (its `session_id`,
    /// `agent`, `model`) and what it used; its report, which is its last answer
    /// (`last`, the last message of its history) when the turn succeeded — what it said on
    /// the way stays in its transcript — and everything it said when it failed; and why
    /// it failed.
    pub fn of_turn(
        session_id: &str,
        agent: &str,
        model: String,
        outcome: TurnOutcome,
        last: Option<&Message>,
    ) -> Self {
        let run = ChildRun {
            session_id: session_id.to_owned(),
            agent: agent.to_owned(),
            model,
            usage: outcome.total_usage(),
            requests: outcome.summary.requests,
            tool_calls: outcome.summary.tool_calls,
        };
        let error = match (&outcome.error, &outcome.record_error) {
            (Some(error), _) => Some(error.to_string()),
            (None, Some(error)) => Some(error.clone()),
            (None, None) => None,
        };
        let text = match (&outcome.error, last) {
            (None, Some(last)) if last.role == Role::Assistant => last.text_content(),
            _ => outcome.text,
        };
        Self { run, text, error }
    }
}

/// Where a child's events go, before its session is open: the parent's front-end,
/// through the `task` call's progress handle.
pub struct ChildEvents {
    progress: Option<Progress>,
    call_id: String,
    agent: String,
    description: String,
}

impl ChildEvents {
    /// The sink of the child's events once its session `session_id` is open: it first
    /// says the child started (with the call's description) and shows `notices`, what
    /// opening it said.
    pub fn started(self, session_id: &str, notices: Vec<String>) -> impl EventSink {
        let mut sink = Forward {
            progress: self.progress,
            call_id: self.call_id,
            agent: self.agent,
            session_id: session_id.to_owned(),
        };
        sink.emit(LoopEvent::Notice(format!(
            "subagent {} started: {}",
            sink.agent,
            if self.description.trim().is_empty() {
                "(no description)"
            } else {
                self.description.trim()
            }
        )));
        for notice in notices {
            sink.emit(LoopEvent::Notice(notice));
        }
        sink
    }
}

/// The child's events, wrapped for the parent's front-end.
struct Forward {
    progress: Option<Progress>,
    call_id: String,
    agent: String,
    session_id: String,
}

impl EventSink for Forward {
    fn emit(&mut self, event: LoopEvent) {
        if let Some(progress) = &self.progress {
            progress.send(LoopEvent::Subagent(SubagentEvent {
                call_id: self.call_id.clone(),
                agent: self.agent.clone(),
                session_id: self.session_id.clone(),
                event: Box::new(event),
            }));
        }
    }
}

/// The parent's approver, for a child: the question names the agent, and children ask
/// one at a time.
struct AgentApprover {
    agent: String,
    inner: Arc<dyn Approver>,
    questions: Arc<tokio::sync::Mutex<()>>,
}

#[async_trait]
impl Approver for AgentApprover {
    async fn decide(&self, request: PermissionRequest) -> Approval {
        let _turn = self.questions.lock().await;
        self.inner
            .decide(PermissionRequest {
                summary: format!("[subagent {}] {}", self.agent, request.summary),
                ..request
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_come_from_the_agents_table() {
        let table: toml::Table = toml::from_str("max_parallel = 5\nmax_depth = 2").unwrap();
        assert_eq!(
            SubagentLimits::from_table(&table).unwrap(),
            SubagentLimits {
                max_parallel: 5,
                max_depth: 2
            }
        );
        assert_eq!(
            SubagentLimits::from_table(&toml::Table::new()).unwrap(),
            SubagentLimits::default()
        );
        for bad in [
            "max_parallel = 0",
            "max_depth = -1",
            "max_paralel = 2",
            "max_depth = \"1\"",
        ] {
            let table: toml::Table = toml::from_str(bad).unwrap();
            assert!(SubagentLimits::from_table(&table).is_err(), "{bad}");
        }
    }

    struct Recorder(std::sync::Mutex<Vec<String>>);

    #[async_trait]
    impl Approver for Recorder {
        async fn decide(&self, request: PermissionRequest) -> Approval {
            self.0.lock().unwrap().push(request.summary);
            Approval::AllowOnce
        }
    }

    #[tokio::test]
    async fn a_childs_question_names_its_agent() {
        let inner = Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
        let approver = AgentApprover {
            agent: "explore".into(),
            inner: inner.clone(),
            questions: Arc::default(),
        };
        let answer = approver
            .decide(PermissionRequest {
                tool: "read".into(),
                summary: "/etc/hosts".into(),
                session_scope: "reads outside".into(),
                details: None,
            })
            .await;
        assert_eq!(answer, Approval::AllowOnce);
        assert_eq!(
            inner.0.lock().unwrap().as_slice(),
            ["[subagent explore] /etc/hosts"]
        );
    }
}
