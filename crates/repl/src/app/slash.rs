//! The slash commands other than `/compact` (which is a job, see `jobs`).

use super::*;

impl App {
    pub(super) fn help(&mut self) {
        let mut text = String::from("Commands:\n");
        for (usage, what) in HELP {
            text.push_str(&format!("  {usage:<18} {what}\n"));
        }
        text.push_str(
            "Keys while pith works: Esc cancels a running compaction (the answer keeps \
             streaming), Ctrl+C stops the turn.\nAt the prompt: Alt+Enter or a trailing \\ \
             for a new line, Ctrl+D on an empty prompt leaves.",
        );
        self.screen.block(&text);
    }

    pub(super) fn context_report(&mut self) {
        let Some(conversation) = self.conversation.as_mut() else {
            return;
        };
        let estimate = conversation.agent.estimate();
        let figures = ContextFigures::new(
            conversation.agent.budget(),
            estimate,
            conversation.agent.history(),
            self.counter.as_ref(),
        );
        self.screen.block(&figures.lines().join("\n"));
    }

    pub(super) fn sessions(&mut self) {
        let sessions = match self.store.list_sessions(Some(&self.cwd)) {
            Ok(sessions) => sessions,
            Err(e) => {
                self.screen
                    .message(Tone::Error, &format!("cannot list sessions: {e}"));
                return;
            }
        };
        let mut table = Vec::new();
        if render::sessions_table(&sessions, &mut table).is_ok() {
            self.screen.block(&String::from_utf8_lossy(&table));
        }
        if let Some(conversation) = &self.conversation {
            let current = format!("current: {}", conversation.session.id());
            self.screen.message(Tone::Dim, &current);
        }
    }

    pub(super) fn resume(&mut self, query: &str) {
        let target = match self.store.locate(query) {
            Ok(dir) => dir,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        if let Some(conversation) = &self.conversation {
            if same_dir(&target, conversation.session.dir()) {
                self.screen
                    .message(Tone::Dim, "That is the current session.");
                return;
            }
        }
        let resumed = match self.store.resume(&target.display().to_string()) {
            Ok(resumed) => resumed,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let choice = ModelChoice {
            requested: None,
            recorded: resumed.recorded_model.clone(),
            context_window: self.window_override,
        };
        let resolved = match resolve_choice(&choice, &self.config, &env) {
            Ok(resolved) => resolved,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let agent = match self.build_agent(&resumed.session, &resolved, resumed.history) {
            Ok(agent) => agent,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        for warning in &resumed.warnings {
            self.screen
                .message(Tone::Error, &format!("warning: {warning}"));
        }
        self.show_replay(&resumed.records);
        self.install(Conversation {
            agent,
            session: resumed.session,
            resolved,
            unused: false,
        });
        self.banner();
    }

    pub(super) fn clear(&mut self) {
        let Some(resolved) = self.conversation.as_ref().map(|c| c.resolved.clone()) else {
            return;
        };
        match self.new_conversation(resolved) {
            Ok(conversation) => {
                self.install(conversation);
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
        let choice = ModelChoice {
            requested: Some(name),
            recorded: None,
            context_window: self.window_override,
        };
        let resolved = match resolve_choice(&choice, &self.config, &env) {
            Ok(resolved) => resolved,
            Err(e) => {
                self.screen.message(Tone::Error, &e.to_string());
                return;
            }
        };
        let Some(conversation) = self.conversation.as_ref() else {
            return;
        };
        let history = conversation.agent.history().to_vec();
        match self.build_agent(&conversation.session, &resolved, history) {
            Ok(agent) => {
                for warning in &resolved.warnings {
                    self.screen.message(Tone::Error, warning);
                }
                if let Some(conversation) = self.conversation.as_mut() {
                    conversation.agent = agent;
                    conversation.resolved = resolved;
                }
                self.refresh_status();
                let text = format!("Model: {}", self.status.text());
                self.screen.message(Tone::Info, &text);
            }
            Err(e) => self.screen.message(Tone::Error, &e.to_string()),
        }
    }
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
