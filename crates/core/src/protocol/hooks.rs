//! The seam between the tool loop and lifecycle hooks.
//!
//! Hooks are programs the user configures to run at points of the agent's life (see
//! docs/hooks.md). The loop never starts a process itself: it holds one
//! [`LoopHooks`] value and calls it at the points it owns — before and after each tool
//! call, before and after a summary compaction, and when the model stops — and acts on
//! what comes back. Running the programs, matching them, parsing their output and asking
//! the user is the implementation's business (`pith-hooks`); [`NoHooks`] proceeds
//! everywhere, at no cost.
//!
//! Every call returns the value the loop acts on together with the [`HookRun`]s behind
//! it, which the loop reports as [`crate::LoopEvent::Hook`] in the order they ran, so
//! front-ends show them and the conversation records them. A hook that fails, crashes or
//! times out is a run with [`HookOutcome::Error`] or [`HookOutcome::Timeout`] and the loop
//! proceeds as if it were not configured: a hook never breaks a turn.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::protocol::message::{ToolCall, ToolResult};
use crate::protocol::rewrite::CompactionTrigger;

/// The points of the agent's life a hook can run at (Claude Code's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum HookEvent {
    /// A session starts: new, resumed, or continued after a compaction.
    #[serde(rename = "SessionStart")]
    SessionStart,
    /// The user sent a prompt; before it is recorded or sent.
    #[serde(rename = "UserPromptSubmit")]
    UserPromptSubmit,
    /// Before a tool call runs.
    #[serde(rename = "PreToolUse")]
    PreToolUse,
    /// After a tool call ran, before the model sees its result.
    #[serde(rename = "PostToolUse")]
    PostToolUse,
    /// Before a summary compaction.
    #[serde(rename = "PreCompact")]
    PreCompact,
    /// After a summary compaction produced its replacement, before it is installed.
    #[serde(rename = "PostCompact")]
    PostCompact,
    /// The model answered without tool calls: the turn would end.
    #[serde(rename = "Stop")]
    Stop,
}

impl HookEvent {
    /// Every event, in the order of a session's life.
    pub const ALL: [HookEvent; 7] = [
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PreCompact,
        Self::PostCompact,
        Self::Stop,
    ];

    /// The name in configuration files and hook input (`PreToolUse`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PreCompact => "PreCompact",
            Self::PostCompact => "PostCompact",
            Self::Stop => "Stop",
        }
    }
}

/// A name that is not one of the [`HookEvent`]s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook event `{0}` (expected one of SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, PreCompact, PostCompact, Stop)")]
pub struct UnknownHookEvent(pub String);

named_enum_text!(HookEvent, UnknownHookEvent);

/// How one run of one hook ended, as pith read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum HookOutcome {
    /// Exit 0: proceed (its output may have added context or a decision).
    #[serde(rename = "proceed")]
    Proceed,
    /// Exit 2, or a JSON decision to block or deny.
    #[serde(rename = "block")]
    Block,
    /// Any other exit, a crash, a program that could not start or output pith could not
    /// read: shown to the user, otherwise ignored.
    #[serde(rename = "error")]
    Error,
    /// It ran past its timeout and its process group was killed; ignored otherwise.
    #[serde(rename = "timeout")]
    Timeout,
}

impl HookOutcome {
    /// `proceed`, `block`, `error` or `timeout`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Proceed => "proceed",
            Self::Block => "block",
            Self::Error => "error",
            Self::Timeout => "timeout",
        }
    }
}

/// One run of one hook command: what front-ends show and the transcript records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    /// The event it ran for.
    #[serde(rename = "event")]
    pub event: HookEvent,
    /// The configured matcher, when the hook has one.
    #[serde(rename = "matcher")]
    pub matcher: Option<String>,
    /// The command line as configured.
    #[serde(rename = "command")]
    pub command: String,
    /// How it ended.
    #[serde(rename = "outcome")]
    pub outcome: HookOutcome,
    /// The exit code, when the program exited (not when it was killed or never started).
    #[serde(rename = "exit_code")]
    pub exit_code: Option<i32>,
    /// Wall time from start to end, milliseconds.
    #[serde(rename = "duration_ms")]
    pub duration_ms: u64,
    /// The decision it gave in JSON output (`allow`, `deny`, `ask`, `block`), if any.
    #[serde(rename = "decision")]
    pub decision: Option<String>,
    /// What the user should read: the reason of a block, the error, a `systemMessage`.
    #[serde(rename = "message")]
    pub message: Option<String>,
    /// Its standard output, squashed like a tool output.
    #[serde(rename = "stdout", default)]
    pub stdout: String,
    /// Its standard error, squashed like a tool output.
    #[serde(rename = "stderr", default)]
    pub stderr: String,
}

/// What [`LoopHooks::pre_tool_use`] decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolGate {
    /// Run the call. With `pre_approved` a hook (or the user, asked on a hook's request)
    /// approved it: the permission policy does not ask again, though what the mode
    /// refuses stays refused and writes stay confined to the workspace.
    Run {
        /// Approved by a hook or on its request.
        pre_approved: bool,
    },
    /// Do not run it; the model gets `reason` as the call's error result.
    Deny {
        /// Why, for the model.
        reason: String,
    },
}

/// What [`LoopHooks::pre_compact`] decided about a summary compaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompactGate {
    /// Compact; `instructions`, when set, are added to the summary request.
    Proceed {
        /// More instructions for the summary.
        instructions: Option<String>,
    },
    /// Do not compact (honoured for automatic compactions only: the overflow fallback
    /// still fits a request that would not fit).
    Block {
        /// Why, for the user.
        reason: String,
    },
}

/// A value the loop acts on, with the hook runs that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hooked<T> {
    /// The decision or context.
    pub value: T,
    /// Every hook run behind it, in the order they were configured.
    pub runs: Vec<HookRun>,
}

impl<T> Hooked<T> {
    /// `value` without any hook run (no hook configured for the event).
    pub fn none(value: T) -> Self {
        Self {
            value,
            runs: Vec::new(),
        }
    }
}

/// A summary compaction about to start, as [`LoopHooks::pre_compact`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionAsk<'a> {
    /// Automatic or manual.
    pub trigger: CompactionTrigger,
    /// Estimated input tokens of the history to summarize.
    pub tokens_before: u64,
    /// The user's `/compact` text, if any.
    pub focus: Option<&'a str>,
}

/// A summary compaction about to be installed, as [`LoopHooks::post_compact`] sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionFacts<'a> {
    /// Automatic or manual.
    pub trigger: CompactionTrigger,
    /// Estimated input tokens before.
    pub tokens_before: u64,
    /// Estimated input tokens of the replacement (before hook context is added).
    pub tokens_after: u64,
    /// The summary inside the replacement.
    pub summary: &'a str,
}

/// The hooks the tool loop calls. See the module docs.
///
/// Contract: every method returns (never fails) and honours `cancel` by ending its
/// programs; the loop calls them from the task that runs the turn, one at a time. A method
/// whose event has no hook configured returns at once with no runs. Context strings are
/// ready for the model (squashed, bounded); the loop only places them.
#[async_trait]
pub trait LoopHooks: Send + Sync {
    /// Before `call` runs: run it, deny it, or run it approved.
    async fn pre_tool_use(&self, call: &ToolCall, cancel: &CancellationToken) -> Hooked<ToolGate> {
        let _ = (call, cancel);
        Hooked::none(ToolGate::Run {
            pre_approved: false,
        })
    }

    /// After `call` ran with `result`: context to append to the result, if any.
    async fn post_tool_use(
        &self,
        call: &ToolCall,
        result: &ToolResult,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let _ = (call, result, cancel);
        Hooked::none(None)
    }

    /// Before the summary compaction `ask` describes.
    async fn pre_compact(
        &self,
        ask: CompactionAsk<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<CompactGate> {
        let _ = (ask, cancel);
        Hooked::none(CompactGate::Proceed { instructions: None })
    }

    /// After a summary compaction produced its replacement and before it is persisted:
    /// context to append to the replacement (the `PostCompact` hooks and the
    /// `SessionStart` hooks of source `compact`), if any.
    async fn post_compact(
        &self,
        facts: CompactionFacts<'_>,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let _ = (facts, cancel);
        Hooked::none(None)
    }

    /// The model answered without tool calls (`last_text` is its answer). `Some(message)`
    /// continues the turn with `message` as the next user message. `continued` is true
    /// when a Stop hook already continued this turn.
    async fn stop(
        &self,
        last_text: &str,
        continued: bool,
        cancel: &CancellationToken,
    ) -> Hooked<Option<String>> {
        let _ = (last_text, continued, cancel);
        Hooked::none(None)
    }
}

/// No hooks: every method proceeds without running anything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl LoopHooks for NoHooks {}

/// How hook context is placed in a message the model reads: fenced and named after its
/// event, after a blank line, so it reads as an addition and never merges with the text
/// before it.
pub fn context_block(event: HookEvent, context: &str) -> String {
    format!(
        "\n\n<hook_context event=\"{}\">\n{}\n</hook_context>",
        event.as_str(),
        context.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_round_trip_and_unknown_names_are_named() {
        for event in HookEvent::ALL {
            assert_eq!(event.as_str().parse::<HookEvent>(), Ok(event));
        }
        let error = "PreToolUsage".parse::<HookEvent>().unwrap_err();
        assert!(error.to_string().contains("`PreToolUsage`"), "{error}");
        assert!(error.to_string().contains("PreToolUse"), "{error}");
    }

    #[tokio::test]
    async fn no_hooks_proceeds_everywhere_without_runs() {
        let hooks = NoHooks;
        let cancel = CancellationToken::new();
        let call = ToolCall {
            id: "c".into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
        };
        let gate = hooks.pre_tool_use(&call, &cancel).await;
        assert_eq!(
            gate,
            Hooked::none(ToolGate::Run {
                pre_approved: false
            })
        );
        let result = ToolResult::new("c", "ok", false);
        assert_eq!(
            hooks.post_tool_use(&call, &result, &cancel).await,
            Hooked::none(None)
        );
        assert!(matches!(
            hooks
                .pre_compact(
                    CompactionAsk {
                        trigger: CompactionTrigger::Auto,
                        tokens_before: 10,
                        focus: None
                    },
                    &cancel
                )
                .await
                .value,
            CompactGate::Proceed { instructions: None }
        ));
        assert_eq!(hooks.stop("done", false, &cancel).await, Hooked::none(None));
    }

    #[test]
    fn context_is_fenced_after_a_blank_line() {
        assert_eq!(
            context_block(HookEvent::PostCompact, "rules\n"),
            "\n\n<hook_context event=\"PostCompact\">\nrules\n</hook_context>"
        );
    }
}
