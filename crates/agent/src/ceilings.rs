//! The job's ceilings around one turn (`--max-cost`, `--max-duration`, `[limits]`).
//!
//! The cost ceiling is enforced by the loop before every request (pith-providers
//! `tool_loop/spend.rs`, on the conversation's [`SpendMeter`], which its subagents share).
//! The time ceiling is enforced twice: no request starts after the turn's deadline, and a
//! [`TurnDeadline`] cancels whatever runs at the deadline (a long answer, a tool call) —
//! through a child of the turn's token, so the turn stops as if interrupted and its partial
//! result is recorded. [`explain`] then names the ceiling as the reason, so the job ends
//! with its own exit code rather than "interrupted".

use std::sync::Arc;
use std::time::Instant;

use pith_core::{CeilingReached, SpendMeter, TokenCounter};
use pith_providers::SpendGuard;
use pith_providers::{LoopError, ProviderError};
use tokio_util::sync::CancellationToken;

use crate::settings::Settings;

/// The guard a loop of `settings` gets on `meter`: `None` without ceilings.
pub fn spend_guard(
    meter: &Arc<SpendMeter>,
    settings: &Settings,
    counter: Arc<dyn TokenCounter>,
) -> Result<Option<Arc<SpendGuard>>, String> {
    if meter.ceilings().is_empty() {
        return Ok(None);
    }
    SpendGuard::new(Arc::clone(meter), settings.model.pricing, counter).map(|g| Some(Arc::new(g)))
}

/// A running turn's deadline: its token is cancelled when the time ceiling is reached.
/// Dropping it stops the timer and clears the meter's deadline.
pub struct TurnDeadline {
    token: CancellationToken,
    timer: Option<tokio::task::JoinHandle<()>>,
    meter: Arc<SpendMeter>,
}

impl TurnDeadline {
    /// Starts the turn's clock on `meter` under `cancel`. A subagent's turn (`child`)
    /// runs under its parent's deadline and starts none of its own.
    pub fn start(meter: &Arc<SpendMeter>, cancel: &CancellationToken, child: bool) -> Self {
        let token = cancel.child_token();
        let deadline = if child {
            None
        } else {
            meter.start_turn(Instant::now())
        };
        let timer = deadline.map(|deadline| {
            let token = token.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until(deadline.into()).await;
                tracing::info!("time ceiling reached: stopping the turn");
                token.cancel();
            })
        });
        Self {
            token,
            timer,
            meter: Arc::clone(meter),
        }
    }

    /// The token the turn runs under.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// True when the clock was started by this turn (a child's is its parent's).
    fn owns_deadline(&self) -> bool {
        self.timer.is_some()
    }
}

impl Drop for TurnDeadline {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.abort();
            self.meter.end_turn();
        }
    }
}

/// The reason a turn stopped, with a cancellation caused by the time ceiling (not by
/// `cancel`, the user's token) named as that ceiling.
pub fn explain(
    error: LoopError,
    cancel: &CancellationToken,
    deadline: &TurnDeadline,
    meter: &SpendMeter,
) -> LoopError {
    match error {
        LoopError::Cancelled
            if !cancel.is_cancelled()
                && deadline.token.is_cancelled()
                && deadline.owns_deadline() =>
        {
            match meter.ceilings().max_duration {
                Some(max) => {
                    LoopError::Provider(ProviderError::Ceiling(CeilingReached::Duration { max }))
                }
                None => LoopError::Cancelled,
            }
        }
        other => other,
    }
}

/// The ceiling behind `error`, if one stopped the turn.
pub fn reached(error: &LoopError) -> Option<&CeilingReached> {
    match error {
        LoopError::Provider(ProviderError::Ceiling(reached)) => Some(reached),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::Ceilings;
    use std::time::Duration;

    #[tokio::test]
    async fn the_deadline_cancels_the_turn_and_is_named_as_the_time_ceiling() {
        let meter = Arc::new(SpendMeter::new(Ceilings {
            max_cost: None,
            max_duration: Some(Duration::from_millis(30)),
        }));
        let cancel = CancellationToken::new();
        let deadline = TurnDeadline::start(&meter, &cancel, false);
        assert!(meter.deadline().is_some());
        tokio::time::timeout(Duration::from_secs(5), deadline.token().cancelled())
            .await
            .expect("the deadline fires");
        assert!(!cancel.is_cancelled(), "the user's token is left alone");
        let error = explain(LoopError::Cancelled, &cancel, &deadline, &meter);
        assert!(matches!(
            reached(&error),
            Some(CeilingReached::Duration { .. })
        ));
        drop(deadline);
        assert!(
            meter.deadline().is_none(),
            "the turn's deadline ends with it"
        );
    }

    #[tokio::test]
    async fn an_interrupt_stays_an_interrupt_and_a_child_starts_no_clock() {
        let meter = Arc::new(SpendMeter::new(Ceilings {
            max_cost: None,
            max_duration: Some(Duration::from_secs(60)),
        }));
        let cancel = CancellationToken::new();
        let deadline = TurnDeadline::start(&meter, &cancel, false);
        cancel.cancel();
        assert!(deadline.token().is_cancelled());
        assert!(matches!(
            explain(LoopError::Cancelled, &cancel, &deadline, &meter),
            LoopError::Cancelled
        ));
        drop(deadline);
        let child = TurnDeadline::start(&meter, &CancellationToken::new(), true);
        assert!(meter.deadline().is_none());
        drop(child);
    }
}
