//! Lifecycle hooks: programs the user configures to run at points of the agent's life
//! (Claude Code's convention; docs/hooks.md is the user's guide).
//!
//! - [`config`]: the `[hooks]` tables of the config files ([`HooksConfig`]);
//! - [`runner`]: one program in its own process group, JSON on stdin, bounded output,
//!   killed with its group at its timeout or when the turn is cancelled;
//! - [`outcome`]: its exit code and output read as a [`HookRun`] and an effect;
//! - [`Hooks`]: every event — the loop's ([`LoopHooks`]: `PreToolUse`, `PostToolUse`,
//!   `PreCompact`, `PostCompact`, `Stop`) and the conversation's
//!   ([`Hooks::session_start`], [`Hooks::user_prompt_submit`]).
//!
//! Hooks of one event run one after the other, in configuration order; a block stops the
//! rest. A hook that fails, crashes, prints garbage or times out is reported (its run has
//! outcome `error` or `timeout`) and otherwise ignored: it never breaks a turn.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod outcome;
mod runner;
mod runs;

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use pith_core::context::squash::SquashConfig;
use pith_core::hooks::{CompactGate, CompactionAsk, CompactionFacts, Hooked, ToolGate};
use pith_core::{HookEvent, HookOutcome, HookRun, LoopHooks, ToolCall, ToolResult};
use pith_tools::{Approval, Approver, PermissionRequest};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::runs::Runs;

pub use config::{HookOrigin, HookSpec, HooksConfig, HooksConfigError};
pub use outcome::Effect;

/// Why a session starts, as `SessionStart` hooks are told (`source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    /// A new session.
    New,
    /// A recorded session continued.
    Resume,
    /// The conversation continues after a compaction.
    Compact,
}

impl SessionSource {
    /// `new`, `resume` or `compact`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::New => "new",
            Self::Resume => "resume",
            Self::Compact => "compact",
        }
    }
}

/// What the `UserPromptSubmit` hooks decided about a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptGate {
    /// Send it, with this context added when there is some.
    Proceed {
        /// Context to add after the prompt.
        context: Option<String>,
    },
    /// Do not send it.
    Block {
        /// Why, for the user.
        reason: String,
    },
}

/// The session the hooks run for: part of every hook's input.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    /// The session id.
    pub session_id: String,
    /// Its transcript file.
    pub transcript_path: PathBuf,
    /// The workspace (hooks run in it).
    pub cwd: PathBuf,
}

/// The configured hooks of one session; see the crate docs.
pub struct Hooks {
    config: Arc<HooksConfig>,
    session: SessionInfo,
    approver: Option<Arc<dyn Approver>>,
    squash: SquashConfig,
}

pith_core::debug_fields!(Hooks { config, session });

impl Hooks {
    /// The hooks of `config` for `session`; their output is squashed with `squash`.
    pub fn new(config: Arc<HooksConfig>, session: SessionInfo, squash: SquashConfig) -> Self {
        Self {
            config,
            session,
            approver: None,
            squash,
        }
    }

    /// Who answers a `PreToolUse` hook's `ask` (the REPL); without one such a call is
    /// refused.
    pub fn with_approver(mut self, approver: Option<Arc<dyn Approver>>) -> Self {
        self.approver = approver;
        self
    }

    /// True when no hook is configured for `event`.
    pub fn none_for(&self, event: HookEvent) -> bool {
        self.config.matching(event, None).is_empty()
    }

    /// Runs the hooks of `event` matching `subject`, one after the other, with `fields`
    /// added to the common input; stops after the first that blocks.
    async fn run_event(
        &self,
        event: HookEvent,
        subject: Option<&str>,
        fields: Value,
        cancel: &CancellationToken,
    ) -> Runs {
        let specs = self.config.matching(event, subject);
        if specs.is_empty() {
            return Runs::default();
        }
        let mut input = json!({
            "hook_event_name": event.as_str(),
            "session_id": self.session.session_id,
            "transcript_path": self.session.transcript_path,
            "cwd": self.session.cwd,
        });
        if let (Some(input), Value::Object(fields)) = (input.as_object_mut(), fields) {
            input.extend(fields);
        }
        let input = input.to_string();
        let env = [
            ("PITH_PROJECT_DIR", self.session.cwd.display().to_string()),
            ("PITH_SESSION_ID", self.session.session_id.clone()),
            ("PITH_HOOK_EVENT", event.as_str().to_owned()),
        ];
        let mut runs = Runs::default();
        for spec in specs {
            if cancel.is_cancelled() {
                break;
            }
            let captured = runner::run(
                runner::Invocation {
                    command: &spec.command,
                    cwd: &self.session.cwd,
                    input: input.as_bytes(),
                    timeout: spec.timeout,
                    env: &env,
                },
                cancel,
            )
            .await;
            let (run, effect) = outcome::interpret(spec, &captured, &self.squash);
            tracing::debug!(
                event = %event,
                command = %spec.command,
                outcome = run.outcome.as_str(),
                exit_code = ?run.exit_code,
                duration_ms = run.duration_ms,
                "hook ran"
            );
            let blocked = matches!(effect, Effect::Block(_));
            runs.push(run, effect);
            if blocked {
                break;
            }
        }
        runs
    }

    /// `SessionStart` (`new` or `resume`; `compact` runs with `PostCompact`): context to
    /// add to the first prompt, if any. A block cannot stop a session: it is shown only.
    pub async fn session_start(
        &self,
        source: SessionSource,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let runs = self
            .run_event(
                HookEvent::SessionStart,
                Some(source.as_str()),
                json!({"source": source.as_str()}),
                cancel,
            )
            .await;
        runs.answer_with(Runs::contexts)
    }

    /// `UserPromptSubmit`: block `prompt`, or send it with added context.
    pub async fn user_prompt_submit(
        &self,
        prompt: &str,
        cancel: &CancellationToken,
    ) -> Hooked<PromptGate> {
        let runs = self
            .run_event(
                HookEvent::UserPromptSubmit,
                None,
                json!({"prompt": prompt}),
                cancel,
            )
            .await;
        runs.gate(
            |reason| PromptGate::Block { reason },
            |context| PromptGate::Proceed { context },
        )
    }

    /// Asks the user about a call a hook wants confirmed; `None` approver refuses.
    async fn ask(&self, call: &ToolCall, reason: &str) -> ToolGate {
        let Some(approver) = &self.approver else {
            return ToolGate::Deny {
                reason: format!(
                    "a PreToolUse hook asked for the user's approval ({reason}), and there is \
                     no one to ask in this run; the call was not run"
                ),
            };
        };
        let mut summary = call.arguments.to_string();
        if summary.chars().count() > 200 {
            summary = summary.chars().take(200).collect::<String>() + "…";
        }
        let answer = approver
            .decide(PermissionRequest {
                tool: call.name.clone(),
                summary: format!("{summary} — a hook asks: {reason}"),
                session_scope: "this call only (a hook asked)".into(),
                details: None,
            })
            .await;
        match answer {
            Approval::AllowOnce | Approval::AllowForSession => ToolGate::Run { pre_approved: true },
            Approval::Deny { feedback } => ToolGate::Deny {
                reason: feedback.unwrap_or_else(|| "the user refused this call".into()),
            },
        }
    }
}

#[async_trait]
impl LoopHooks for Hooks {
    async fn pre_tool_use(&self, call: &ToolCall, cancel: &CancellationToken) -> Hooked<ToolGate> {
        let runs = self
            .run_event(
                HookEvent::PreToolUse,
                Some(&call.name),
                json!({"tool_name": call.name, "tool_input": call.arguments, "tool_use_id": call.id}),
                cancel,
            )
            .await;
        let mut value = ToolGate::Run {
            pre_approved: false,
        };
        let mut ask = None;
        for effect in runs.effects() {
            match effect {
                Effect::Block(reason) => {
                    value = ToolGate::Deny {
                        reason: format!("a PreToolUse hook refused this call: {reason}"),
                    };
                    ask = None;
                    break;
                }
                Effect::Ask(reason) => ask = Some(reason.clone()),
                Effect::Allow => value = ToolGate::Run { pre_approved: true },
                _ => {}
            }
        }
        if let Some(reason) = ask {
            value = self.ask(call, &reason).await;
        }
        runs.answer(value)
    }

    async fn post_tool_use(
        &self,
        call: &ToolCall,
        result: &ToolResult,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let runs = self
            .run_event(
                HookEvent::PostToolUse,
                Some(&call.name),
                json!({
                    "tool_name": call.name,
                    "tool_input": call.arguments,
                    "tool_use_id": call.id,
                    "tool_response": {"content": result.content, "is_error": result.is_error},
                }),
                cancel,
            )
            .await;
        // Exit 2 after the call ran: there is nothing left to block, and stderr is for
        // the model, like any context.
        runs.answer_with(|runs| {
            runs.joined(|effect| match effect {
                Effect::Context(text) | Effect::Block(text) => Some(text.as_str()),
                _ => None,
            })
        })
    }

    async fn pre_compact(
        &self,
        ask: CompactionAsk<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<CompactGate> {
        let trigger = ask.trigger.as_str();
        let runs = self
            .run_event(
                HookEvent::PreCompact,
                Some(trigger),
                json!({"trigger": trigger, "tokens_before": ask.tokens_before,
                       "custom_instructions": ask.focus}),
                cancel,
            )
            .await;
        runs.gate(
            |reason| CompactGate::Block { reason },
            |instructions| CompactGate::Proceed { instructions },
        )
    }

    async fn post_compact(
        &self,
        facts: CompactionFacts<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let mut runs = self
            .run_event(
                HookEvent::PostCompact,
                Some(facts.trigger.as_str()),
                json!({"trigger": facts.trigger.as_str(), "tokens_before": facts.tokens_before,
                       "tokens_after": facts.tokens_after, "summary": facts.summary}),
                cancel,
            )
            .await;
        runs.extend(
            self.run_event(
                HookEvent::SessionStart,
                Some(SessionSource::Compact.as_str()),
                json!({"source": SessionSource::Compact.as_str()}),
                cancel,
            )
            .await,
        );
        runs.answer_with(Runs::contexts)
    }

    async fn stop(
        &self,
        last_text: &str,
        continued: bool,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let runs = self
            .run_event(
                HookEvent::Stop,
                None,
                json!({"stop_hook_active": continued, "last_assistant_message": last_text}),
                cancel,
            )
            .await;
        runs.answer_with(Runs::first_block)
    }
}

/// True when a run needs the user's attention (it blocked, failed or timed out, or has a
/// message): what front-ends show.
pub fn worth_showing(run: &HookRun) -> bool {
    run.outcome != HookOutcome::Proceed || run.message.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(dir: &std::path::Path, toml_text: &str) -> Hooks {
        let table: toml::Table = toml::from_str(toml_text).unwrap();
        let mut config = HooksConfig::default();
        config.add_table(&table, HookOrigin::User).unwrap();
        Hooks::new(
            Arc::new(config),
            SessionInfo {
                session_id: "s-1".into(),
                transcript_path: dir.join("transcript.jsonl"),
                cwd: dir.to_path_buf(),
            },
            SquashConfig::default(),
        )
    }

    #[tokio::test]
    async fn the_input_carries_the_common_and_the_event_fields() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = hooks(
            dir.path(),
            "[[PreToolUse]]\nmatcher = \"bash\"\ncommand = \"cat > input.json\"",
        );
        let call = ToolCall {
            id: "call-1".into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
        };
        let cancel = CancellationToken::new();
        let gate = hooks.pre_tool_use(&call, &cancel).await;
        assert_eq!(
            gate.value,
            ToolGate::Run {
                pre_approved: false
            }
        );
        assert_eq!(gate.runs.len(), 1);
        let input: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("input.json")).unwrap()).unwrap();
        assert_eq!(input["hook_event_name"], "PreToolUse");
        assert_eq!(input["session_id"], "s-1");
        assert_eq!(input["tool_name"], "bash");
        assert_eq!(input["tool_input"]["command"], "ls");
        assert_eq!(input["tool_use_id"], "call-1");
        assert!(input["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with("transcript.jsonl"));
        // Another tool does not match.
        let other = ToolCall {
            name: "read".into(),
            ..call
        };
        assert!(hooks.pre_tool_use(&other, &cancel).await.runs.is_empty());
    }

    #[tokio::test]
    async fn a_block_stops_the_later_hooks_and_ask_without_anyone_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = hooks(
            dir.path(),
            r#"
            [[PreToolUse]]
            command = "echo '{\"decision\": \"ask\", \"reason\": \"sure?\"}'"
            [[PreToolUse]]
            command = "echo nope >&2; exit 2"
            [[PreToolUse]]
            command = "touch never"
            [[UserPromptSubmit]]
            command = "echo first"
            [[UserPromptSubmit]]
            command = "exit 7"
            [[UserPromptSubmit]]
            command = "echo second"
            "#,
        );
        let call = ToolCall {
            id: "c".into(),
            name: "write".into(),
            arguments: json!({}),
        };
        let cancel = CancellationToken::new();
        let gate = hooks.pre_tool_use(&call, &cancel).await;
        assert_eq!(gate.runs.len(), 2);
        assert!(
            matches!(&gate.value, ToolGate::Deny { reason } if reason.contains("nope")),
            "{:?}",
            gate.value
        );
        assert!(!dir.path().join("never").exists());

        let prompt = hooks.user_prompt_submit("hi", &cancel).await;
        assert_eq!(
            prompt.value,
            PromptGate::Proceed {
                context: Some("first\nsecond".into())
            },
            "a failing hook in between is ignored"
        );
        assert_eq!(prompt.runs[1].outcome, HookOutcome::Error);

        let asking = Hooks {
            config: Arc::new({
                let table: toml::Table = toml::from_str(
                    "[[PreToolUse]]\ncommand = \"echo '{\\\"decision\\\": \\\"ask\\\"}'\"",
                )
                .unwrap();
                let mut config = HooksConfig::default();
                config.add_table(&table, HookOrigin::User).unwrap();
                config
            }),
            ..hooks
        };
        let gate = asking.pre_tool_use(&call, &cancel).await;
        assert!(
            matches!(&gate.value, ToolGate::Deny { reason } if reason.contains("no one to ask")),
            "{:?}",
            gate.value
        );
    }
}
