//! The status line: model, context use against the input budget, the distance to the
//! automatic compaction threshold, whether automatic compaction is paused (and why), and —
//! under a cost ceiling — the spend against it. Pure text; the thresholds come from
//! [`ContextBudget`].

use pith_agent::Conversation;
use pith_core::context::{GovernorNotice, PauseReason};
use pith_core::thousands;
use pith_core::ContextBudget;

/// What the status line shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// `provider/model`.
    pub model: String,
    /// Estimated (or last reported) input tokens of the next request.
    pub used: u64,
    /// The budget in force.
    pub budget: ContextBudget,
    /// Whether automatic compaction is on.
    pub auto_compaction: bool,
    /// Automatic compaction is paused: why, and the estimate it waits for.
    pub paused: Option<(PauseReason, u64)>,
    /// Dollars spent and the cost ceiling (`--max-cost`), when there is one.
    pub spend: Option<(f64, f64)>,
    /// The checkpoint store's size for this project, once a checkpoint was taken.
    pub checkpoints: Option<u64>,
}

impl Status {
    /// The status of `conversation`, with nothing used yet (the caller fills `used` from
    /// the estimate or the reported usage).
    pub fn of(conversation: &Conversation) -> Self {
        Self {
            model: conversation.model_spec(),
            used: 0,
            budget: conversation.budget(),
            auto_compaction: conversation.auto_compaction(),
            paused: conversation
                .governor()
                .breaker
                .as_ref()
                .map(|b| (b.reason.clone(), b.until)),
            spend: conversation
                .spend()
                .ceilings()
                .max_cost
                .map(|max| (conversation.spend().spent(), max)),
            checkpoints: conversation.checkpoint_store_bytes(),
        }
    }

    /// Follows what the governor said during a turn.
    pub fn note_governor(&mut self, notice: &GovernorNotice) {
        if let GovernorNotice::Paused {
            reason,
            until_tokens,
            ..
        } = notice
        {
            self.paused = Some((reason.clone(), *until_tokens));
        }
    }

    /// `model · used / input budget tokens (N%) · M to auto-compact[ · $spent / $max]`.
    pub fn text(&self) -> String {
        let budget = &self.budget;
        let percent = (self.used * 100)
            .checked_div(budget.input_budget)
            .unwrap_or(100);
        let distance = if !self.auto_compaction {
            "auto-compact off".to_owned()
        } else if let Some((reason, until)) = self.paused.as_ref().filter(|(_, u)| self.used < *u) {
            format!(
                "auto-compact paused ({}) until {}",
                reason.label(),
                thousands(*until)
            )
        } else if budget.reaches_auto(self.used) {
            "auto-compact due".to_owned()
        } else {
            format!(
                "{} to auto-compact",
                thousands(budget.room_to_auto(self.used))
            )
        };
        let spend = match self.spend {
            Some((spent, max)) => format!(" · ${spent:.2} / ${max:.2}"),
            None => String::new(),
        };
        let checkpoints = match self.checkpoints {
            Some(bytes) => format!(" · checkpoints {}", pith_core::human_bytes(bytes)),
            None => String::new(),
        };
        format!(
            "{} · {} / {} tokens ({percent}%) · {distance}{spend}{checkpoints}",
            self.model,
            thousands(self.used),
            thousands(budget.input_budget)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_shows_use_against_the_budget_and_room_to_the_threshold() {
        let budget = ContextBudget::for_window(200_000);
        let mut status = Status {
            model: "anthropic/claude".into(),
            used: 19_000,
            budget,
            auto_compaction: true,
            paused: None,
            spend: None,
            checkpoints: None,
        };
        assert_eq!(
            status.text(),
            "anthropic/claude · 19,000 / 190,000 tokens (10%) · 152,000 to auto-compact"
        );
        status.used = budget.auto_threshold;
        assert!(
            status.text().ends_with("auto-compact due"),
            "{}",
            status.text()
        );
        status.paused = Some((PauseReason::FreedTooLittle { freed: 900 }, 180_000));
        assert!(
            status
                .text()
                .ends_with("auto-compact paused (freed too little) until 180,000"),
            "{}",
            status.text()
        );
        status.used = 180_000;
        assert!(status.text().ends_with("auto-compact due"));
        status.auto_compaction = false;
        assert!(status.text().ends_with("auto-compact off"));
        status.spend = Some((0.4213, 5.0));
        assert!(
            status.text().ends_with("auto-compact off · $0.42 / $5.00"),
            "{}",
            status.text()
        );
    }
}
