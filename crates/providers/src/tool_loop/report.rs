//! What the loop reports besides content: one [`RequestReport`] per model request
//! (usage, duration, retries) and the hook runs behind each hook decision, as
//! [`LoopEvent`]s in the order they happened.

use std::time::Instant;

use pith_core::{EventSink, HookRun, LoopEvent, RequestPurpose, RequestReport};

use crate::tool_loop::agent::AgentLoop;
use crate::tool_loop::request::{RequestFailure, Response};
use crate::wire::error::ProviderError;

/// The report of one request that started at `started` and ended with `sent`. Its id is
/// given when it is emitted ([`AgentLoop::emit_requests`]).
pub(super) fn request_report(
    agent: &AgentLoop,
    purpose: RequestPurpose,
    started: Instant,
    sent: &Result<Response, RequestFailure>,
) -> RequestReport {
    report_of(
        (agent.adapter.protocol_name(), &agent.model),
        purpose,
        started,
        sent,
    )
}

/// The report of a request sent with `protocol` to `model`; see [`request_report`].
pub(super) fn report_of(
    (protocol, model): (&str, &str),
    purpose: RequestPurpose,
    started: Instant,
    sent: &Result<Response, RequestFailure>,
) -> RequestReport {
    let (usage, usage_reported, attempts, error) = match sent {
        Ok(response) => (
            response.usage,
            response.usage_reported,
            response.attempts,
            None,
        ),
        Err(failure) => (
            Default::default(),
            false,
            failure.partial.attempts,
            Some(match &failure.error {
                ProviderError::Cancelled => "cancelled".to_owned(),
                other => other.to_string(),
            }),
        ),
    };
    RequestReport {
        id: 0,
        purpose,
        protocol: protocol.to_owned(),
        model: model.to_owned(),
        usage,
        usage_reported,
        compaction_model: None,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        retries: attempts.saturating_sub(1),
        error,
    }
}

impl AgentLoop {
    /// Numbers `reports` in the order they are given and emits them.
    pub(super) fn emit_requests(
        &mut self,
        reports: impl IntoIterator<Item = RequestReport>,
        sink: &mut dyn EventSink,
    ) {
        for mut report in reports {
            self.requests_sent += 1;
            report.id = self.requests_sent;
            sink.emit(LoopEvent::RequestFinished(report));
        }
    }
}

/// Emits the hook runs behind one decision, in the order they ran.
pub(super) fn emit_hooks(runs: Vec<HookRun>, sink: &mut dyn EventSink) {
    for run in runs {
        sink.emit(LoopEvent::Hook(run));
    }
}
