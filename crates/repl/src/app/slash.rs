//! The slash commands other than `/compact` (which is a job, see `jobs`).

use pith_core::thousands;
use pith_session::sessions_table;

use super::App;
use crate::commands::HELP;
use crate::context_view::ContextFigures;
use crate::render::Tone;

impl App {
    pub(super) fn help(&mut self) {
        let mut text = String::from("Commands:\n");
        for (usage, what) in HELP {
            text.push_str(&format!("  {usage:<18} {what}\n"));
        }
        text.push_str(
            "Keys while pith works: Esc cancels a running compaction (the answer keeps \
             streaming), Ctrl+C stops the turn.\nAt the prompt: Alt+Enter or a trailing \\ \
             for a new line, Esc Esc lists the turns to rewind to (on a line with text, \
             clears it), Ctrl+D on an empty prompt leaves.",
        );
        self.screen.block(&text);
    }

    pub(super) fn context_report(&mut self) {
        let estimate = self.conversation.estimate();
        let figures = ContextFigures::new(
            self.conversation.budget(),
            estimate,
            self.conversation.history(),
            self.conversation.counter().as_ref(),
        )
        .with_mcp_definitions(self.conversation.mcp_definition_tokens())
        .with_ledger(
            self.conversation
                .ledger_preview()
                .map_or(0, |ledger| ledger.tokens),
            self.conversation.ledger_budget_tokens(),
        )
        .with_children(self.conversation.children());
        let totals = self.conversation.compaction_totals();
        let cost = self
            .conversation
            .summary_cost(&totals.usage, &totals.compaction_model_usage);
        let governor = self.conversation.governor();
        let calibration = self.conversation.calibration();
        let mut figures = figures.with_compactions(totals, cost);
        if let Some(model) = self.conversation.compaction_model_spec() {
            let part = totals.compaction_model_usage;
            let cost = pith_agent::summary_cost(
                &part,
                &part,
                &model,
                Some(&model),
                &self.conversation.prices(),
            );
            figures = figures.with_compaction_model(model, cost);
        }
        let figures = figures.with_governor(crate::context_view::GovernorView {
            paused: governor
                .breaker
                .as_ref()
                .filter(|b| (estimate.total as u64) < b.until)
                .map(|b| (b.reason.clone(), b.until)),
            attempts_this_turn: (governor.attempts_this_turn, governor.max_per_turn),
            factor: calibration.factor(),
            deaf: calibration.is_deaf(),
        });
        let mut lines = figures.lines();
        match self.conversation.spend_report() {
            Ok(spend) => lines.push(spend.line()),
            Err(error) => lines.push(format!("Session: cost unknown ({error})")),
        }
        lines.push(crate::context_view::checkpoints_line(
            self.conversation.checkpoint_store_bytes(),
        ));
        lines.extend(crate::context_view::pins_lines(
            &self.conversation.pins_view(),
        ));
        self.screen.block(&lines.join("\n"));
    }

    /// `/pin`: lists the pins; `/pin PATH` or `/pin "text"` makes one.
    pub(super) fn pin(&mut self, argument: Option<String>) {
        let Some(argument) = argument else {
            let lines = crate::context_view::pins_lines(&self.conversation.pins_view());
            self.screen.block(&lines.join("\n"));
            return;
        };
        match self.conversation.pin(pith_agent::pin_of_argument(&argument)) {
            Ok(row) => self.screen.message(
                Tone::Info,
                &format!(
                    "Pinned {} ({} tokens): the model sees it with your next message, and every compaction keeps it whole.",
                    row.pin.label(),
                    thousands(row.tokens.unwrap_or(0) as u64)
                ),
            ),
            Err(error) => self.screen.message(Tone::Error, &error.to_string()),
        }
    }

    /// `/unpin N|PATH|"text"|all`.
    pub(super) fn unpin(&mut self, target: &str) {
        match self.conversation.unpin(target) {
            Ok(removed) => {
                let names: Vec<String> = removed.iter().map(pith_agent::Pin::label).collect();
                let text = if names.is_empty() {
                    "Nothing was pinned.".to_owned()
                } else {
                    format!(
                        "Unpinned {}: compactions from now on no longer carry it.",
                        names.join(", ")
                    )
                };
                self.screen.message(Tone::Info, &text);
            }
            Err(error) => self.screen.message(Tone::Error, &error.to_string()),
        }
    }

    pub(super) fn ledger_report(&mut self) {
        let budget = self.conversation.ledger_budget_tokens();
        if budget == 0 {
            self.screen.message(
                Tone::Dim,
                "The session ledger is off ([context] ledger_percent = 0).",
            );
            return;
        }
        match self.conversation.ledger_preview() {
            None => self.screen.message(
                Tone::Dim,
                "The session ledger is empty: nothing sent or done yet.",
            ),
            Some(ledger) => {
                let omitted = if ledger.omitted > 0 {
                    format!(", {} older entries left out for the budget", ledger.omitted)
                } else {
                    String::new()
                };
                self.screen.block(&format!(
                    "{}\nSession ledger: {} of {} tokens{omitted}. Every compaction carries it verbatim.",
                    ledger.text.trim_end(),
                    thousands(ledger.tokens as u64),
                    thousands(budget as u64),
                ));
            }
        }
    }

    pub(super) fn sessions(&mut self) {
        let sessions = match self.conversation.project_sessions() {
            Ok(sessions) => sessions,
            Err(e) => {
                self.screen
                    .message(Tone::Error, &format!("cannot list sessions: {e}"));
                return;
            }
        };
        let mut table = Vec::new();
        let prices = self.conversation.prices();
        let price = |model: &str| prices.of(model);
        if sessions_table(&sessions, &price, &mut table).is_ok() {
            self.screen.block(&String::from_utf8_lossy(&table));
        }
        let current = format!("current: {}", self.conversation.session_id());
        self.screen.message(Tone::Dim, &current);
    }

    pub(super) fn resume(&mut self, query: &str) {
        match self.conversation.resume(query) {
            Ok(opened) => {
                for notice in &opened.notices {
                    self.screen.message(Tone::Error, notice);
                }
                if let Some(records) = &opened.resumed {
                    self.show_replay(records);
                }
                self.refresh_status();
                self.banner();
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }

    pub(super) fn clear(&mut self) {
        match self.conversation.clear() {
            Ok(()) => {
                self.refresh_status();
                self.screen.message(Tone::Info, "New session.");
                self.banner();
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }

    pub(super) fn switch_model(&mut self, name: Option<String>) {
        let Some(name) = name else {
            let text = self.status.text();
            self.screen.message(Tone::Info, &text);
            return;
        };
        match self.conversation.switch_model(&name) {
            Ok(notices) => {
                for notice in &notices {
                    self.screen.message(Tone::Error, notice);
                }
                self.refresh_status();
                let text = format!("Model: {}", self.status.text());
                self.screen.message(Tone::Info, &text);
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }
}
