//! The REPL side of `--approval ask`: tool calls' permission questions travel over a
//! channel to the busy loop, which shows them and sends the user's answer back.

use async_trait::async_trait;
use pith_tools::{Approval, Approver, PermissionRequest};
use tokio::sync::{mpsc, oneshot};

/// A question waiting for the user, with the way back to the tool call.
#[derive(Debug)]
pub struct ApprovalQuestion {
    /// What the tool wants to do.
    pub request: PermissionRequest,
    /// Where the answer goes; closed when the call was cancelled meanwhile.
    pub answer: oneshot::Sender<Approval>,
}

/// An [`Approver`] that forwards every question to the REPL's busy loop.
#[derive(Debug, Clone)]
pub struct ChannelApprover {
    questions: mpsc::UnboundedSender<ApprovalQuestion>,
}

impl ChannelApprover {
    /// An approver and the receiving end the busy loop reads.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<ApprovalQuestion>) {
        let (questions, receiver) = mpsc::unbounded_channel();
        (Self { questions }, receiver)
    }
}

#[async_trait]
impl Approver for ChannelApprover {
    /// Cancel-safe: dropping the future drops the answer receiver, which withdraws the
    /// question.
    async fn decide(&self, request: PermissionRequest) -> Approval {
        let (answer, reply) = oneshot::channel();
        let unanswered = || Approval::Deny {
            feedback: Some("the question could not be shown to the user".to_owned()),
        };
        if self
            .questions
            .send(ApprovalQuestion { request, answer })
            .is_err()
        {
            return unanswered();
        }
        reply.await.unwrap_or_else(|_| unanswered())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_answer_given_in_the_loop_reaches_the_tool_call() {
        let (approver, mut questions) = ChannelApprover::new();
        let asking = tokio::spawn(async move {
            approver
                .decide(PermissionRequest {
                    tool: "bash".into(),
                    summary: "run: ls".into(),
                    session_scope: "this exact command: ls".into(),
                    details: None,
                })
                .await
        });
        let question = questions.recv().await.unwrap();
        assert_eq!(question.request.tool, "bash");
        question.answer.send(Approval::AllowOnce).unwrap();
        assert_eq!(asking.await.unwrap(), Approval::AllowOnce);
    }

    #[tokio::test]
    async fn a_dropped_question_is_a_refusal() {
        let (approver, questions) = ChannelApprover::new();
        drop(questions);
        let answer = approver
            .decide(PermissionRequest {
                tool: "write".into(),
                summary: "a.rs".into(),
                session_scope: "edits".into(),
                details: None,
            })
            .await;
        assert!(matches!(answer, Approval::Deny { .. }));
    }
}
