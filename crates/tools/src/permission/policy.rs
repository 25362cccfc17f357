//! The policy of one session: the verdict per mode, the session's grants and asking the
//! approver (the table is in the parent module's docs).

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use pith_core::{ToolContext, ToolError};
use tokio_util::sync::CancellationToken;

use super::action::{Action, AutoApprove, Grant, ONE_CALL_ONLY};
use super::approval::{Approval, Approver, PermissionRequest};
use super::mode::PermissionMode;

/// The permission policy of one session: the current mode, the approver and the grants
/// given with "allow for this session". Shared (`Arc`) by all tools; the front-end keeps
/// a handle to switch modes.
pub struct PermissionPolicy {
    mode: Mutex<PermissionMode>,
    approver: Option<Arc<dyn Approver>>,
    grants: Mutex<HashSet<Grant>>,
    asking: tokio::sync::Mutex<()>,
}

pith_core::debug_fields!(PermissionPolicy |this| {
    mode: this.mode(),
    has_approver: this.approver.is_some(),
});

enum Verdict {
    Allow,
    Ask,
    Deny(String),
}

impl PermissionPolicy {
    /// A policy in `mode`; `approver` answers `ask` requests (None: headless, refuse).
    pub fn new(mode: PermissionMode, approver: Option<Arc<dyn Approver>>) -> Self {
        Self {
            mode: Mutex::new(mode),
            approver,
            grants: Mutex::new(HashSet::new()),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// The current mode.
    pub fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Switches mode (e.g. the user toggled it); session grants are kept.
    pub fn set_mode(&self, mode: PermissionMode) {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner) = mode;
    }

    fn verdict(&self, action: &Action) -> Verdict {
        let mode = self.mode();
        match (action, mode) {
            (Action::ReadOutside { .. }, PermissionMode::Ask) => Verdict::Ask,
            (Action::ReadOutside { .. }, _) => Verdict::Allow,
            (Action::Edit { tool, .. }, PermissionMode::ReadOnly) => Verdict::Deny(format!(
                "`{tool}` is not available in read-only mode; nothing was changed. Ask the \
                 user to switch to a mode that allows edits if the change is needed."
            )),
            (Action::Edit { .. }, PermissionMode::Ask) => Verdict::Ask,
            (Action::Edit { .. }, _) => Verdict::Allow,
            (Action::Execute { .. }, PermissionMode::ReadOnly) => Verdict::Deny(
                "`bash` is not available in read-only mode; the command was not run. Use \
                 read, grep, glob and ls to inspect the workspace."
                    .to_owned(),
            ),
            (Action::Execute { .. }, PermissionMode::Full) => Verdict::Allow,
            (Action::Execute { .. }, _) => Verdict::Ask,
            (Action::RunUnsandboxed { .. }, PermissionMode::Ask | PermissionMode::AutoEdit) => {
                Verdict::Ask
            }
            (Action::RunUnsandboxed { .. }, _) => Verdict::Deny(format!(
                "commands never leave the sandbox without the user's approval, and `{mode}` \
                 mode does not ask"
            )),
            (Action::External { read_only_hint, .. }, PermissionMode::ReadOnly) => {
                if *read_only_hint {
                    Verdict::Allow
                } else {
                    Verdict::Deny(format!(
                        "`{}` is not marked read-only by its server, so it is not available \
                         in read-only mode; it was not called",
                        action.tool()
                    ))
                }
            }
            (Action::External { .. }, PermissionMode::Ask) => Verdict::Ask,
            (
                Action::External {
                    read_only_hint,
                    auto_approve,
                    ..
                },
                mode,
            ) => {
                let auto = auto_approve.unwrap_or(if mode == PermissionMode::Full {
                    AutoApprove::All
                } else {
                    AutoApprove::ReadOnly
                });
                match auto {
                    AutoApprove::All => Verdict::Allow,
                    AutoApprove::ReadOnly if *read_only_hint => Verdict::Allow,
                    AutoApprove::ReadOnly | AutoApprove::None => Verdict::Ask,
                }
            }
        }
    }

    /// True when a command the sandbox denied may be offered to the user to run once
    /// without the sandbox: the mode asks before commands (`ask`, `auto-edit`) and an
    /// approver is there to answer. Headless runs and `full` mode never escalate.
    pub fn offers_escalation(&self) -> bool {
        self.approver.is_some()
            && matches!(self.mode(), PermissionMode::Ask | PermissionMode::AutoEdit)
    }

    fn granted(&self, grant: &Grant) -> bool {
        self.grants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(grant)
    }

    /// Decides whether `action` of the call `ctx` may run: [`PermissionPolicy::authorize`],
    /// except that a call a `PreToolUse` hook approved (`ctx.pre_approved`) is not asked
    /// about again. What the mode refuses stays refused, and running a command without
    /// the sandbox is always the user's decision.
    pub async fn authorize_call(&self, action: Action, ctx: &ToolContext) -> Result<(), ToolError> {
        self.authorize_as(action, &ctx.cancel, ctx.pre_approved)
            .await
    }

    /// Decides whether `action` may run, asking the approver when the mode says so.
    /// `Ok(())` means go ahead; a refusal is [`ToolError::Denied`] and cancellation while
    /// waiting for the user is [`ToolError::Cancelled`].
    pub async fn authorize(
        &self,
        action: Action,
        cancel: &CancellationToken,
    ) -> Result<(), ToolError> {
        self.authorize_as(action, cancel, false).await
    }

    async fn authorize_as(
        &self,
        action: Action,
        cancel: &CancellationToken,
        pre_approved: bool,
    ) -> Result<(), ToolError> {
        match self.verdict(&action) {
            Verdict::Allow => return Ok(()),
            Verdict::Deny(reason) => return Err(ToolError::Denied(reason)),
            Verdict::Ask if pre_approved && !matches!(action, Action::RunUnsandboxed { .. }) => {
                return Ok(())
            }
            Verdict::Ask => {}
        }
        let grant = action.grant();
        if grant.as_ref().is_some_and(|grant| self.granted(grant)) {
            return Ok(());
        }
        let Some(approver) = &self.approver else {
            return Err(ToolError::Denied(format!(
                "{} needs the user's approval in `{}` mode, and no one can approve it in this \
                 run; it was not done",
                action.summary(),
                self.mode()
            )));
        };
        let _one_question_at_a_time = tokio::select! {
            guard = self.asking.lock() => guard,
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        // Another call may have been granted the same scope while this one waited.
        if grant.as_ref().is_some_and(|grant| self.granted(grant)) {
            return Ok(());
        }
        let request = PermissionRequest {
            tool: action.tool().to_owned(),
            summary: action.summary(),
            session_scope: grant
                .as_ref()
                .map_or_else(|| ONE_CALL_ONLY.to_owned(), Grant::describe),
            details: action.details(),
        };
        let approval = tokio::select! {
            approval = approver.decide(request) => approval,
            () = cancel.cancelled() => return Err(ToolError::Cancelled),
        };
        match approval {
            Approval::AllowOnce => Ok(()),
            Approval::AllowForSession => {
                if let Some(grant) = grant {
                    self.grants
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(grant);
                }
                Ok(())
            }
            Approval::Deny { feedback } => Err(ToolError::Denied(match feedback {
                Some(text) if !text.trim().is_empty() => {
                    format!("the user declined this call and said: {}", text.trim())
                }
                _ => "the user declined this call; it was not run".to_owned(),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Scripted {
        answer: Approval,
        asked: AtomicUsize,
        last: Mutex<Option<PermissionRequest>>,
    }

    #[async_trait]
    impl Approver for Scripted {
        async fn decide(&self, request: PermissionRequest) -> Approval {
            self.asked.fetch_add(1, Ordering::SeqCst);
            *self.last.lock().unwrap() = Some(request);
            self.answer.clone()
        }
    }

    fn scripted(answer: Approval) -> Arc<Scripted> {
        Arc::new(Scripted {
            answer,
            asked: AtomicUsize::new(0),
            last: Mutex::new(None),
        })
    }

    fn edit() -> Action {
        Action::Edit {
            tool: "write".into(),
            summary: "write src/a.rs (12 bytes)".into(),
            preview: None,
        }
    }

    fn run(command: &str) -> Action {
        Action::Execute {
            command: command.into(),
        }
    }

    #[tokio::test]
    async fn a_call_a_hook_approved_is_not_asked_about_but_refusals_and_escalation_stand() {
        let approver = scripted(Approval::Deny { feedback: None });
        let policy = PermissionPolicy::new(PermissionMode::Ask, Some(approver.clone()));
        let approved = ToolContext {
            cancel: CancellationToken::new(),
            call_id: "c".into(),
            pre_approved: true,
            progress: None,
        };
        policy.authorize_call(edit(), &approved).await.unwrap();
        policy.authorize_call(run("make"), &approved).await.unwrap();
        assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
        let unsandboxed = Action::RunUnsandboxed {
            command: "make".into(),
            reason: "denied".into(),
        };
        assert!(
            policy.authorize_call(unsandboxed, &approved).await.is_err(),
            "leaving the sandbox is always the user's decision"
        );
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1);
        let read_only = PermissionPolicy::new(PermissionMode::ReadOnly, None);
        assert!(
            read_only
                .authorize_call(run("make"), &approved)
                .await
                .is_err(),
            "a hook cannot lift what the mode refuses"
        );
        let not_approved = ToolContext {
            pre_approved: false,
            ..approved
        };
        assert!(policy.authorize_call(edit(), &not_approved).await.is_err());
    }

    #[tokio::test]
    async fn read_only_mode_refuses_edits_and_commands_without_asking() {
        let approver = scripted(Approval::AllowOnce);
        let policy = PermissionPolicy::new(PermissionMode::ReadOnly, Some(approver.clone()));
        let cancel = CancellationToken::new();
        assert!(matches!(
            policy.authorize(edit(), &cancel).await,
            Err(ToolError::Denied(_))
        ));
        assert!(matches!(
            policy.authorize(run("ls"), &cancel).await,
            Err(ToolError::Denied(_))
        ));
        assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn auto_edit_allows_edits_and_asks_for_commands() {
        let approver = scripted(Approval::Deny {
            feedback: Some("use cargo check instead".into()),
        });
        let policy = PermissionPolicy::new(PermissionMode::AutoEdit, Some(approver.clone()));
        let cancel = CancellationToken::new();
        policy.authorize(edit(), &cancel).await.unwrap();
        let err = policy
            .authorize(run("cargo build"), &cancel)
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("use cargo check instead"),
            "the user's feedback reaches the model: {err}"
        );
        let request = approver.last.lock().unwrap().clone().unwrap();
        assert_eq!(request.tool, "bash");
        assert_eq!(request.summary, "run: cargo build");
    }

    #[tokio::test]
    async fn allow_for_session_covers_later_calls_of_the_same_scope_only() {
        let approver = scripted(Approval::AllowForSession);
        let policy = PermissionPolicy::new(PermissionMode::Ask, Some(approver.clone()));
        let cancel = CancellationToken::new();
        policy.authorize(edit(), &cancel).await.unwrap();
        policy.authorize(edit(), &cancel).await.unwrap();
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1, "edits granted");
        policy.authorize(run("make"), &cancel).await.unwrap();
        policy.authorize(run("make"), &cancel).await.unwrap();
        policy
            .authorize(run("make install"), &cancel)
            .await
            .unwrap();
        assert_eq!(
            approver.asked.load(Ordering::SeqCst),
            3,
            "a command grant covers that exact command only"
        );
    }

    #[tokio::test]
    async fn headless_ask_refuses_with_a_clear_reason() {
        let policy = PermissionPolicy::new(PermissionMode::Ask, None);
        let err = policy
            .authorize(edit(), &CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("needs the user's approval"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn outside_reads_ask_only_in_ask_mode() {
        let approver = scripted(Approval::AllowOnce);
        let cancel = CancellationToken::new();
        let outside = || Action::ReadOutside {
            tool: "read".into(),
            path: "/etc/hosts".into(),
        };
        for mode in [
            PermissionMode::ReadOnly,
            PermissionMode::AutoEdit,
            PermissionMode::Full,
        ] {
            let policy = PermissionPolicy::new(mode, Some(approver.clone()));
            policy.authorize(outside(), &cancel).await.unwrap();
        }
        assert_eq!(approver.asked.load(Ordering::SeqCst), 0);
        let policy = PermissionPolicy::new(PermissionMode::Ask, Some(approver.clone()));
        policy.authorize(outside(), &cancel).await.unwrap();
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1);
    }

    fn external(read_only_hint: bool, auto_approve: Option<AutoApprove>) -> Action {
        Action::External {
            tool: "mcp__srv__do".into(),
            summary: "{}".into(),
            read_only_hint,
            auto_approve,
        }
    }

    #[tokio::test]
    async fn external_tools_follow_the_mode_the_hint_and_the_server_setting() {
        use PermissionMode::*;
        let cancel = CancellationToken::new();
        // (mode, read-only hint, server setting) -> asked?, allowed?
        let table = [
            (ReadOnly, true, None, false, true),
            (ReadOnly, false, Some(AutoApprove::All), false, false),
            (Ask, true, Some(AutoApprove::All), true, true),
            (AutoEdit, true, None, false, true),
            (AutoEdit, false, None, true, true),
            (AutoEdit, false, Some(AutoApprove::All), false, true),
            (AutoEdit, true, Some(AutoApprove::None), true, true),
            (Full, false, None, false, true),
            (Full, false, Some(AutoApprove::ReadOnly), true, true),
            (Full, true, Some(AutoApprove::ReadOnly), false, true),
        ];
        for (mode, hint, auto, asks, allowed) in table {
            let approver = scripted(Approval::AllowOnce);
            let policy = PermissionPolicy::new(mode, Some(approver.clone()));
            let outcome = policy.authorize(external(hint, auto), &cancel).await;
            let case = format!("{mode} hint={hint} auto={auto:?}");
            assert_eq!(outcome.is_ok(), allowed, "{case}: {outcome:?}");
            assert_eq!(approver.asked.load(Ordering::SeqCst) == 1, asks, "{case}");
        }
    }

    #[tokio::test]
    async fn allow_for_session_covers_one_external_tool() {
        let approver = scripted(Approval::AllowForSession);
        let policy = PermissionPolicy::new(PermissionMode::Ask, Some(approver.clone()));
        let cancel = CancellationToken::new();
        policy
            .authorize(external(false, None), &cancel)
            .await
            .unwrap();
        policy
            .authorize(external(false, None), &cancel)
            .await
            .unwrap();
        assert_eq!(approver.asked.load(Ordering::SeqCst), 1);
        let request = approver.last.lock().unwrap().clone().unwrap();
        assert_eq!(request.tool, "mcp__srv__do");
        assert_eq!(request.session_scope, "every call of mcp__srv__do");
        let other = Action::External {
            tool: "mcp__srv__other".into(),
            summary: "{}".into(),
            read_only_hint: false,
            auto_approve: None,
        };
        policy.authorize(other, &cancel).await.unwrap();
        assert_eq!(
            approver.asked.load(Ordering::SeqCst),
            2,
            "another tool asks"
        );
    }

    struct Never;

    #[async_trait]
    impl Approver for Never {
        async fn decide(&self, _request: PermissionRequest) -> Approval {
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn cancelling_the_turn_while_the_user_thinks_cancels_the_call() {
        let policy = PermissionPolicy::new(PermissionMode::Ask, Some(Arc::new(Never)));
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            canceller.cancel();
        });
        let outcome = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            policy.authorize(run("rm -rf target"), &cancel),
        )
        .await
        .expect("authorize must return once the turn is cancelled");
        assert_eq!(outcome, Err(ToolError::Cancelled));
    }

    #[tokio::test]
    async fn running_without_the_sandbox_asks_every_time_and_only_in_modes_that_ask() {
        let escalate = || Action::RunUnsandboxed {
            command: "cat ~/.ssh/id_rsa".into(),
            reason: "the sandbox denied it".into(),
        };
        let approver = scripted(Approval::AllowForSession);
        let policy = PermissionPolicy::new(PermissionMode::AutoEdit, Some(approver.clone()));
        assert!(policy.offers_escalation());
        let cancel = CancellationToken::new();
        policy.authorize(escalate(), &cancel).await.unwrap();
        policy.authorize(escalate(), &cancel).await.unwrap();
        assert_eq!(
            approver.asked.load(Ordering::SeqCst),
            2,
            "never granted for the session"
        );
        let request = approver.last.lock().unwrap().clone().unwrap();
        assert_eq!(request.tool, "bash");
        assert_eq!(
            request.summary,
            "run once without the sandbox: cat ~/.ssh/id_rsa"
        );
        assert!(request.session_scope.contains("this run only"));
        assert!(request
            .details
            .unwrap()
            .starts_with("the sandbox denied it"));

        for mode in [PermissionMode::Full, PermissionMode::ReadOnly] {
            let policy = PermissionPolicy::new(mode, Some(approver.clone()));
            assert!(!policy.offers_escalation(), "{mode}");
            assert!(policy.authorize(escalate(), &cancel).await.is_err());
        }
        let headless = PermissionPolicy::new(PermissionMode::Ask, None);
        assert!(!headless.offers_escalation());
        assert!(headless.authorize(escalate(), &cancel).await.is_err());
    }

    #[tokio::test]
    async fn switching_mode_takes_effect_immediately() {
        let policy = PermissionPolicy::new(PermissionMode::ReadOnly, None);
        let cancel = CancellationToken::new();
        assert!(policy.authorize(edit(), &cancel).await.is_err());
        policy.set_mode(PermissionMode::Full);
        policy.authorize(edit(), &cancel).await.unwrap();
        policy.authorize(run("ls"), &cancel).await.unwrap();
    }
}
