//! The background task of a summary prepared ahead ([`PreparedSummary`]): what it covers
//! and how to wait for it. What the loop does with it is in `prepared`.

use std::time::Instant;

use pith_core::{RequestReport, Usage};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::tool_loop::summary_outcome::SummaryOutcome;

/// What the background task returns: how the summary ended and the requests it sent.
pub(super) type Finished = (SummaryOutcome, Vec<RequestReport>);

/// A summary request running (or done) in the background.
pub(super) struct PreparedSummary {
    /// The history's length when it started: the summary covers the messages before it.
    pub mark: usize,
    /// The history's epoch then (`ContextState::epoch`).
    pub epoch: u64,
    /// pith's count of the summary request, weighed against its reported usage.
    pub counted: u64,
    /// Most tokens of the summary.
    pub allowance: u64,
    /// Cancels only this summary (a child of the turn's token where it started).
    pub cancel: CancellationToken,
    /// When it started.
    pub started: Instant,
    /// The task; `None` once joined.
    pub task: Option<JoinHandle<Finished>>,
    /// The compaction model its requests go to (`provider/model`), if not the loop's.
    pub model: Option<String>,
}

impl Drop for PreparedSummary {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl PreparedSummary {
    /// Waits for the task (cancelling it first when `cancel` fires).
    pub async fn join(&mut self, cancel: &CancellationToken) -> Finished {
        let Some(task) = self.task.as_mut() else {
            return failed("the prepared summary was already taken");
        };
        let joined = tokio::select! {
            joined = &mut *task => joined,
            () = cancel.cancelled() => {
                self.cancel.cancel();
                task.await
            }
        };
        self.task = None;
        joined.unwrap_or_else(|error| failed(&format!("the summary task stopped: {error}")))
    }
}

/// A task that ended without an outcome of its own.
fn failed(reason: &str) -> Finished {
    (
        SummaryOutcome::Failed {
            reason: reason.to_owned(),
            usage: Usage::default(),
        },
        Vec::new(),
    )
}
