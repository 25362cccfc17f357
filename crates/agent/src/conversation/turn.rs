//! Running turns: the user message recorded before anything is sent (cut to its share
//! of the window when it is too large), the prompt hooks (`SessionStart`,
//! `UserPromptSubmit`) before it, the MCP tools installed before the first turn, the
//! loop's turn with its events recorded on the way to the front-end, the output schema
//! checked after it, the time ceiling around it, telemetry over it; and manual
//! compaction.

use crate::recording::write_checkpoint;
use std::sync::Arc;

use pith_core::hooks::context_block;
use pith_core::{EventSink, HookEvent, HookRun, LoopEvent, Message, Part};
use pith_hooks::PromptGate;
use pith_providers::models::project::CutInstructions;
use pith_providers::{AgentLoop, LoopError, ManualCompaction};
use pith_session::Event;
use tokio_util::sync::CancellationToken;

use crate::ceilings::TurnDeadline;
use crate::conversation::outcome::{TurnError, TurnOutcome};
use crate::conversation::state::Conversation;
use crate::output_schema::OutputSchema;
use crate::recording::{Recording, TurnRecorder};
use crate::telemetry::{Telemetry, TracedModel, TurnFacts, TurnTrace};

impl Conversation {
    /// Runs one user turn: records the message, runs the loop with `sink` receiving its
    /// events, records the end of the turn. `cancel` stops the whole turn.
    pub async fn run_turn(
        &mut self,
        text: &str,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        self.run_message(Message::user(text), sink, cancel).await
    }

    /// The user message for `text` with the images its `@paths` name (see
    /// [`crate::attachments`]), and a notice per image left out.
    pub fn user_message(&self, text: &str) -> (Message, Vec<String>) {
        crate::attachments::user_message(text, self.cwd(), self.settings.image_limits())
    }

    /// [`Conversation::run_turn`] with a prepared user message (text and images). The
    /// turn runs under the time ceiling, if there is one (see [`crate::ceilings`]).
    pub async fn run_message(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let Some(telemetry) = self.telemetry.clone() else {
            return self.run_message_untraced(user, sink, cancel).await;
        };
        let prompt = user.text_content();
        let mut trace = self.trace(&telemetry, sink, "turn", Some(&prompt));
        let outcome = self.run_message_untraced(user, &mut trace, cancel).await;
        let answer = match &outcome.structured_output {
            Some(value) => value.to_string(),
            None => outcome.text.clone(),
        };
        let error = outcome
            .error
            .as_ref()
            .map(ToString::to_string)
            .or_else(|| outcome.record_error.clone());
        let usage = outcome.total_usage();
        trace.finish(TurnFacts {
            requests: outcome.summary.requests,
            tool_calls: outcome.summary.tool_calls,
            usage,
            cost: self.summary_cost(&usage, &outcome.compaction_model_usage),
            exit_code: outcome.exit_code().code(),
            answer: Some(&answer),
            error: error.as_deref(),
            error_type: outcome.error_kind(),
        });
        outcome
    }

    /// The root span `name` (`turn`, `compaction manual`) of this session's model, in
    /// front of `sink`.
    fn trace<'s>(
        &self,
        telemetry: &Arc<Telemetry>,
        sink: &'s mut dyn EventSink,
        name: &'static str,
        prompt: Option<&str>,
    ) -> TurnTrace<'s> {
        let model = TracedModel {
            spec: self.settings.model.spec(),
            id: self.settings.model.model.clone(),
            pricing: self.settings.model.pricing,
        };
        TurnTrace::start(telemetry, sink, name, model, self.session.id(), prompt)
    }

    async fn run_message_untraced(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> TurnOutcome {
        let deadline = TurnDeadline::start(
            &self.factory.meter,
            cancel,
            self.factory.delegation.child.is_some(),
        );
        let schema = self.output_schema.clone();
        self.agent.options_mut().output = schema.as_ref().map(|s| s.request(false));
        let mut outcome = match self.prompt_for_turn(user, sink, &deadline).await {
            Ok(user) => self.run_recorded(user, sink, cancel, &deadline).await,
            Err(error) => TurnOutcome::failed(error),
        };
        if let Some(schema) = schema {
            if outcome.error.is_none() && outcome.record_error.is_none() {
                self.check_output(&schema, &mut outcome, sink, cancel, &deadline)
                    .await;
            }
        }
        outcome.error = outcome.error.map(|error| match error {
            TurnError::Loop(error) => TurnError::Loop(crate::ceilings::explain(
                error,
                cancel,
                &deadline,
                &self.factory.meter,
            )),
            other => other,
        });
        outcome
    }

    /// Sets the schema the final answer of every turn must match (`--output-schema`;
    /// see [`crate::output_schema`]): its instructions follow each prompt, each request
    /// asks for it natively where the protocol can, and an answer that does not validate
    /// gets one correction.
    pub fn set_output_schema(&mut self, schema: Option<OutputSchema>) {
        self.output_schema = schema.map(Arc::new);
    }

    /// Validates the turn's final answer against `schema`; when it does not match, asks
    /// the model once to correct it (a recorded follow-up turn whose request forces the
    /// answer where the protocol can) and validates again.
    async fn check_output(
        &mut self,
        schema: &OutputSchema,
        outcome: &mut TurnOutcome,
        sink: &mut dyn EventSink,
        user_cancel: &CancellationToken,
        deadline: &TurnDeadline,
    ) {
        let mismatch = match schema.validate(&self.last_answer()) {
            Ok(value) => {
                outcome.structured_output = Some(value);
                return;
            }
            Err(mismatch) => mismatch,
        };
        sink.emit(LoopEvent::Notice(format!(
            "the answer does not match the output schema ({mismatch}); asking the model once to correct it"
        )));
        self.agent.options_mut().output = Some(schema.request(true));
        let correction = Message::user(schema.correction(&mismatch));
        let next = self
            .run_recorded(correction, sink, user_cancel, deadline)
            .await;
        self.agent.options_mut().output = Some(schema.request(false));
        let failed = next.error.is_some() || next.record_error.is_some();
        outcome.absorb(next);
        if failed {
            return;
        }
        match schema.validate(&self.last_answer()) {
            Ok(value) => outcome.structured_output = Some(value),
            Err(mismatch) => outcome.error = Some(TurnError::SchemaNotMet(mismatch)),
        }
    }

    /// The text of the last assistant message: the turn's final answer.
    fn last_answer(&self) -> String {
        self.agent
            .history()
            .last()
            .filter(|m| m.role == pith_core::Role::Assistant)
            .map(Message::text_content)
            .unwrap_or_default()
    }

    /// The user's message as the turn sends it: with the context of the prompt hooks
    /// ([`Self::before_prompt`], not in a child) and the output schema's instructions.
    async fn prompt_for_turn(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        deadline: &TurnDeadline,
    ) -> Result<Message, TurnError> {
        let mut user = if self.factory.delegation.child.is_some() {
            user
        } else {
            self.before_prompt(user, sink, deadline.token()).await?
        };
        if let Some(schema) = &self.output_schema {
            append_text(&mut user, &schema.instructions());
        }
        Ok(user)
    }

    /// Records `user`, runs the loop's turn for it and records the end of the turn.
    async fn run_recorded(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        user_cancel: &CancellationToken,
        deadline: &TurnDeadline,
    ) -> TurnOutcome {
        let cancel = deadline.token();
        let user = match self.fit_user_message(user, sink) {
            Ok(user) => self.with_unshown_pins(user, sink),
            Err(error) => return TurnOutcome::failed(error),
        };
        // What changed since the last look was changed outside pith: recorded before the
        // message, so that a rewind to this turn keeps it. For a resumed session, the
        // last look is the transcript's: what differs from it on disk comes first.
        if std::mem::take(&mut self.reconcile) {
            self.reconcile_with_disk(sink).await;
        }
        self.checkpoint(true, sink).await;
        if let Err(error) = self.session.append(Event::UserMessage {
            message: user.clone(),
        }) {
            return TurnOutcome::failed(TurnError::Record(format!(
                "cannot record the message, so it was not sent: {error}"
            )));
        }
        self.unused = false;
        self.session_context = None;
        self.agent.pins_mut().mark_all_shown();
        self.prepare_mcp_tools(sink, cancel).await;
        // Edits to AGENTS.md or PITH.md apply from the next turn; an unchanged prompt
        // stays byte-identical for the prompt cache.
        let (prompt, cut) = self.system_prompt();
        if self.factory.delegation.child.is_none() {
            for file in cut {
                if self.instructions_warned.insert(file.name.clone()) {
                    let warning = self.settings.instruction_warnings(&[file]);
                    for line in warning {
                        sink.emit(LoopEvent::Notice(line));
                    }
                }
            }
        }
        if prompt != self.agent.system_prompt() {
            self.agent.set_system_prompt(prompt);
        }
        let mut recorder = TurnRecorder::new();
        let result = {
            let keep_prepared = self.keep_prepared_summaries;
            let (agent, mut recording) = self.recording(&mut recorder, sink);
            let result = agent.run_turn(user, &mut recording, cancel).await;
            if !keep_prepared {
                agent.abandon_prepared_summary(&mut recording).await;
            }
            result
        };
        // Changes no call accounted for (a call cancelled before its checkpoint) are the
        // turn's.
        self.checkpoint(false, sink).await;
        // MCP failures during the turn: the model had each as a tool error; tell the user.
        if let Some(hub) = &self.mcp {
            for notice in hub.take_notices().await {
                sink.emit(LoopEvent::Notice(notice));
            }
        }
        let (summary, error) = match result {
            Ok(summary) => (summary, None),
            Err(failure) => (
                failure.summary,
                Some(crate::ceilings::explain(
                    failure.error,
                    user_cancel,
                    deadline,
                    &self.factory.meter,
                )),
            ),
        };
        let interrupted = matches!(error, Some(LoopError::Cancelled));
        let record_error = recorder
            .finish(
                &mut self.session,
                interrupted,
                error.as_ref().map(ToString::to_string),
            )
            .err()
            .map(|e| format!("cannot record the end of the turn: {e}"));
        let children = recorder.children().to_vec();
        self.children.extend(children.iter().cloned());
        let compaction = recorder.compaction_totals();
        self.compaction_totals += compaction;
        TurnOutcome {
            compaction,
            text: recorder.final_text(),
            summary,
            compaction_model_usage: self.agent.take_compaction_model_usage(),
            compactions: recorder.compactions().to_vec(),
            error: error.map(TurnError::Loop),
            record_error,
            children,
            structured_output: None,
            requests: recorder.requests().to_vec(),
        }
    }

    /// The system prompt as of now: the base instructions, or a child's agent prompt,
    /// with the environment and the project's instruction files read afresh (within
    /// their share of the window), and the files cut to fit.
    fn system_prompt(&self) -> (String, Vec<CutInstructions>) {
        match &self.factory.delegation.child {
            Some(child) => {
                let counter = self.settings.counter();
                let prompt = pith_providers::models::project::agent_system_prompt_for(
                    self.cwd(),
                    &child.agent.prompt,
                    self.settings.concise_output,
                    Some(self.settings.instruction_budget(&counter)),
                );
                (prompt, Vec::new())
            }
            None => self.settings.system_prompt(self.cwd()),
        }
    }

    /// The user's message within its share of the window (`[context]
    /// user_message_percent`): a larger one is stored beside the transcript and sent as
    /// its head and tail with the file to read (see [`crate::oversized`]); the user is
    /// told in one line. `Err` when it cannot be stored: then nothing is sent.
    fn fit_user_message(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
    ) -> Result<Message, TurnError> {
        let max_tokens = usize::try_from(
            self.settings
                .context
                .user_message_tokens(self.settings.budget.input_budget),
        )
        .unwrap_or(usize::MAX);
        let counter = Arc::clone(self.agent.counter());
        let spill = self.toolset.env().capture.spill_dir().clone();
        match crate::oversized::fit_user_message(user, max_tokens, counter.as_ref(), &spill) {
            Ok((user, None)) => Ok(user),
            Ok((user, Some(spilled))) => {
                sink.emit(LoopEvent::Notice(spilled.notice(max_tokens)));
                Ok(user)
            }
            Err(error) => Err(TurnError::Record(format!(
                "your message is larger than its share of the context window ({} tokens) and could not be stored beside the transcript, so it was not sent: {error}",
                pith_core::thousands(max_tokens as u64)
            ))),
        }
    }

    /// The hooks before a prompt is sent: `SessionStart` (once per session) and
    /// `UserPromptSubmit`. Their runs are recorded and shown; the message to send is the
    /// prompt with their context after it, or the turn ends here when a hook blocked it.
    async fn before_prompt(
        &mut self,
        user: Message,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<Message, TurnError> {
        let text = user.text_content();
        let text = text.as_str();
        let hooks = Arc::clone(&self.hooks);
        let mut runs = Vec::new();
        if let Some(source) = self.session_start.take() {
            let hooked = hooks.session_start(source, cancel).await;
            runs.extend(hooked.runs);
            self.session_context = hooked.value;
        }
        let gate = hooks.user_prompt_submit(text, cancel).await;
        runs.extend(gate.runs);
        self.record_hook_runs(runs, sink);
        if cancel.is_cancelled() {
            return Err(TurnError::Loop(LoopError::Cancelled));
        }
        let prompt_context = match gate.value {
            PromptGate::Block { reason } => return Err(TurnError::Blocked(reason)),
            PromptGate::Proceed { context } => context,
        };
        let mut added = String::new();
        if let Some(context) = &self.session_context {
            added.push_str(&context_block(HookEvent::SessionStart, context));
        }
        if let Some(context) = prompt_context {
            added.push_str(&context_block(HookEvent::UserPromptSubmit, &context));
        }
        let mut user = user;
        append_text(&mut user, &added);
        Ok(user)
    }

    /// Records hook runs that happened outside the loop and shows them to `sink`. A run
    /// that cannot be recorded is still shown, with a notice.
    fn record_hook_runs(&mut self, runs: Vec<HookRun>, sink: &mut dyn EventSink) {
        for run in runs {
            match self.session.append(Event::HookRun(run.clone())) {
                Ok(_) => self.unused = false,
                Err(error) => sink.emit(LoopEvent::Notice(format!(
                    "cannot record the {} hook's run: {error}",
                    run.event
                ))),
            }
            sink.emit(LoopEvent::Hook(run));
        }
    }

    /// Waits for the MCP servers to start (each within its start-up timeout), tells
    /// `sink` about those that failed, and installs their tools into the loop's registry,
    /// once per loop. [`Conversation::run_turn`] does it first; a front-end may do it
    /// earlier (e.g. for `/context`). Free once done.
    pub async fn prepare_mcp_tools(
        &mut self,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) {
        let Some(hub) = self.mcp.clone() else {
            return;
        };
        if self.mcp_installed {
            return;
        }
        tokio::select! {
            () = hub.wait_started() => {}
            () = cancel.cancelled() => return,
        }
        for notice in hub.take_notices().await {
            sink.emit(LoopEvent::Notice(notice));
        }
        let budget = self.settings.budget.input_budget
            * u64::from(self.settings.context.mcp_defer_percent)
            / 100;
        let registry = self.toolset.registry();
        let counter = self.agent.counter().clone();
        let installed = hub
            .install(&registry, self.toolset.env(), budget, counter.as_ref())
            .await;
        if installed.deferred {
            pith_mcp::reload_from_history(&registry.loader(), self.agent.history());
        }
        self.mcp_installed = true;
    }

    /// Manual compaction (`/compact [focus]`): the summary streams to `sink`; on success
    /// the replacement was persisted, then installed. On failure or cancellation the
    /// history is unchanged.
    pub async fn compact(
        &mut self,
        focus: Option<&str>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        let Some(telemetry) = self.telemetry.clone() else {
            return self.compact_untraced(focus, sink, cancel).await;
        };
        let mut trace = self.trace(&telemetry, sink, "compaction manual", focus);
        let result = self.compact_untraced(focus, &mut trace, cancel).await;
        trace.finish_manual_compaction(&result);
        result
    }

    async fn compact_untraced(
        &mut self,
        focus: Option<&str>,
        sink: &mut dyn EventSink,
        cancel: &CancellationToken,
    ) -> Result<ManualCompaction, LoopError> {
        let mut recorder = TurnRecorder::new();
        let result = {
            let (agent, mut recording) = self.recording(&mut recorder, sink);
            agent.compact(focus, &mut recording, cancel).await
        };
        self.compaction_totals += recorder.compaction_totals();
        result
    }

    /// Compares the files the transcript last recorded with the disk and records what
    /// differs as changed outside pith (before = the recorded state, after = the disk's,
    /// whose content the first snapshot stored). Needs the first snapshot, so it waits for
    /// it; a session that recorded no file change waits for nothing.
    async fn reconcile_with_disk(&mut self, sink: &mut dyn EventSink) {
        let Some(checkpoints) = self.factory.checkpoints.clone() else {
            return;
        };
        let Ok(records) = self.records() else {
            return;
        };
        let known = pith_session::last_known_states(&records, checkpoints.root());
        let mut changes = Vec::new();
        for (path, recorded) in known {
            match checkpoints.engine().known_state(&path).await {
                Ok(now) if now != recorded => changes.push(pith_core::FileChange {
                    path,
                    before: recorded,
                    after: now,
                }),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "checkpoint: the recorded files could not be compared");
                    return;
                }
            }
        }
        if changes.is_empty() {
            return;
        }
        let record = pith_session::Checkpoint {
            root: checkpoints.root().to_path_buf(),
            call_id: None,
            tool: None,
            outside: true,
            rewind_elsewhere: false,
            changes,
            bytes: 0,
        };
        write_checkpoint(&mut self.session, &checkpoints, record, sink);
    }

    /// Observes the workspace and records what changed, as made `outside` pith or not
    /// (see [`crate::checkpoints::Checkpoints::observe`]), when the conversation keeps
    /// checkpoints; records observed after calls and not written yet go first.
    async fn checkpoint(&mut self, outside: bool, sink: &mut dyn EventSink) {
        let Some(checkpoints) = self.factory.checkpoints.clone() else {
            return;
        };
        // Observed first: what another session's rewind wrote joins the pending records.
        let observed = checkpoints.observe(None, outside).await;
        for record in checkpoints.take_pending() {
            write_checkpoint(&mut self.session, &checkpoints, record, sink);
        }
        if let Some(record) = observed {
            write_checkpoint(&mut self.session, &checkpoints, record, sink);
        }
    }

    /// The loop, and the sink that records its events through `recorder` into the
    /// session before they reach `sink`.
    fn recording<'a>(
        &'a mut self,
        recorder: &'a mut TurnRecorder,
        sink: &'a mut dyn EventSink,
    ) -> (&'a mut AgentLoop, Recording<'a>) {
        let recording = Recording {
            recorder,
            session: &mut self.session,
            frontend: sink,
            checkpoints: self.factory.checkpoints.as_deref(),
        };
        (&mut self.agent, recording)
    }
}

/// Appends `added` to the message's text (its images stay where they are).
fn append_text(message: &mut Message, added: &str) {
    if added.is_empty() {
        return;
    }
    match message.parts.iter_mut().find_map(|part| match part {
        Part::Text { text } => Some(text),
        _ => None,
    }) {
        Some(text) => text.push_str(added),
        None => message.parts.insert(
            0,
            Part::Text {
                text: added.to_owned(),
            },
        ),
    }
}
