//! The front-end's answer to the doom-loop guard ([`pith_core::RepeatGate`]): the REPL asks
//! the user, through the same approver as permission questions, whether the model may go
//! on after repeating one call with one result `[doom_loop] stop_after` times; `pith run`
//! has nobody to ask, so the turn stops (exit code 6).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use pith_core::RepeatGate;
use pith_tools::{Approval, Approver, PermissionRequest};
use tokio_util::sync::CancellationToken;

/// Asks the user through `approver` (none: stop).
pub struct AskToGoOn {
    approver: Option<Arc<dyn Approver>>,
    /// The user said "yes, for this session".
    never_ask: AtomicBool,
}

impl AskToGoOn {
    /// A gate asking through `approver`, or stopping every time without one.
    pub fn new(approver: Option<Arc<dyn Approver>>) -> Self {
        Self {
            approver,
            never_ask: AtomicBool::new(false),
        }
    }
}

#[async_trait]
impl RepeatGate for AskToGoOn {
    async fn go_on(&self, tool: &str, times: u32, cancel: &CancellationToken) -> bool {
        if self.never_ask.load(Ordering::Relaxed) {
            return true;
        }
        let Some(approver) = &self.approver else {
            return false;
        };
        let request = PermissionRequest {
            tool: "the model".to_owned(),
            summary: format!(
                "go on: it called {tool} {times} times in a row with the same arguments and got the same result each time (the doom-loop guard)"
            ),
            session_scope: "repeated calls".to_owned(),
            details: None,
        };
        let answer = tokio::select! {
            answer = approver.decide(request) => answer,
            () = cancel.cancelled() => return false,
        };
        match answer {
            Approval::AllowOnce => true,
            Approval::AllowForSession => {
                self.never_ask.store(true, Ordering::Relaxed);
                true
            }
            Approval::Deny { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    struct Answers(Mutex<Vec<Approval>>, Mutex<Vec<PermissionRequest>>);

    #[async_trait]
    impl Approver for Answers {
        async fn decide(&self, request: PermissionRequest) -> Approval {
            self.1.lock().unwrap().push(request);
            self.0.lock().unwrap().remove(0)
        }
    }

    #[tokio::test]
    async fn without_anyone_to_ask_the_turn_stops() {
        let gate = AskToGoOn::new(None);
        assert!(!gate.go_on("read", 6, &CancellationToken::new()).await);
    }

    #[tokio::test]
    async fn the_users_answer_decides_and_a_session_answer_is_remembered() {
        let answers = Arc::new(Answers(
            Mutex::new(vec![
                Approval::Deny { feedback: None },
                Approval::AllowOnce,
                Approval::AllowForSession,
            ]),
            Mutex::new(Vec::new()),
        ));
        let gate = AskToGoOn::new(Some(answers.clone()));
        let cancel = CancellationToken::new();
        assert!(!gate.go_on("bash", 6, &cancel).await);
        assert!(gate.go_on("bash", 6, &cancel).await);
        assert!(gate.go_on("bash", 6, &cancel).await);
        assert!(gate.go_on("bash", 6, &cancel).await, "not asked again");
        let asked = answers.1.lock().unwrap();
        assert_eq!(asked.len(), 3);
        assert!(asked[0].summary.contains("bash 6 times in a row"));
    }
}
