//! Switching what a conversation runs: another model for the same history
//! (`/model`), a new session (`/clear`), another recorded session (`/resume`). The
//! settings are resolved again against the configuration the conversation opened with;
//! the MCP servers and the hooks that run stay.

use std::path::Path;

use pith_core::context::pins::Pins;
use pith_hooks::SessionSource;
use pith_session::Session;

use crate::conversation::factory::{BuiltLoop, LoopParts};
use crate::conversation::open::{create_session, Opened};
use crate::conversation::state::{retire, Conversation};
use crate::error::ConversationError;
use crate::overrides::Overrides;
use crate::settings::Settings;

impl Conversation {
    /// Continues this conversation with another model (`/model provider/model`): the
    /// history stays, the settings are resolved again for the new model. Returns the
    /// notices to show.
    pub fn switch_model(&mut self, spec: &str) -> Result<Vec<String>, ConversationError> {
        let overrides = Overrides {
            model: Some(spec.to_owned()),
            ..self.overrides.clone()
        };
        self.reconfigure(overrides)
    }

    /// Continues this conversation with another reasoning setting (an editor's
    /// `thought_level`; `--reasoning` on the command line): the settings are resolved
    /// again with it. Returns the notices to show.
    pub fn set_reasoning(
        &mut self,
        reasoning: pith_providers::wire::ReasoningEffort,
    ) -> Result<Vec<String>, ConversationError> {
        let overrides = Overrides {
            reasoning: Some(reasoning),
            ..self.overrides.clone()
        };
        self.reconfigure(overrides)
    }

    /// The reasoning setting in force (`None`: the provider's default).
    pub fn reasoning(&self) -> Option<pith_providers::wire::ReasoningEffort> {
        self.settings.loop_options.reasoning
    }

    /// The models this conversation may switch to: its own first, then
    /// `pith_providers::models::builtin::model_choices` (the keyed providers' catalog
    /// models and the configured ones).
    pub fn model_choices(&self) -> Vec<String> {
        let env = self.factory.frontend.env.clone();
        let lookup = move |name: &str| env(name);
        let current = self.model_spec();
        let mut choices = vec![current.clone()];
        choices.extend(
            pith_providers::models::builtin::model_choices(
                &self.factory.workspace.config().model_tables(),
                &lookup,
            )
            .into_iter()
            .filter(|spec| *spec != current),
        );
        choices
    }

    /// Keeps the current session even if it is never prompted (an editor lists what it
    /// created, and may load it later): it is not removed when left.
    pub fn keep(&mut self) {
        self.unused = false;
    }

    /// Resolves the settings again with `overrides` and rebuilds the loop on the same
    /// history; a model change is recorded (`model_switched`), so that later costs are
    /// priced at the new model.
    fn reconfigure(&mut self, overrides: Overrides) -> Result<Vec<String>, ConversationError> {
        let settings = self.resolve_settings(&overrides, None)?;
        let built = self.factory.build(LoopParts {
            settings: &settings,
            overrides: &overrides,
            session: &mut self.session,
            history: self.agent.history().to_vec(),
            ledger: self.agent.ledger().clone(),
            pins: self.agent.pins().clone(),
        })?;
        let mut notices = settings.notices.clone();
        let switched = settings.model.spec() != self.settings.model.spec();
        if switched {
            // The requests from here on go to the new model: their cost is its
            // (pith_session::spend).
            let record = pith_session::Event::ModelSwitched {
                provider: settings.model.provider.clone(),
                model: settings.model.model.clone(),
            };
            if let Err(error) = self.session.append(record) {
                notices.push(format!(
                    "the switch could not be recorded ({error}): later costs may be priced at the previous model"
                ));
            }
        }
        self.overrides = overrides;
        self.settings = settings;
        self.install(built);
        Ok(notices)
    }

    /// Starts a new session with the same settings (`/clear`). The previous session is
    /// closed, and removed if it was never used.
    pub fn clear(&mut self) -> Result<(), ConversationError> {
        let mut session = create_session(&self.store, self.cwd(), &self.settings, None)?;
        let built = self.factory.build(LoopParts {
            settings: &self.settings,
            overrides: &self.overrides,
            session: &mut session,
            history: Vec::new(),
            ledger: crate::ledger::fresh(self.cwd()),
            pins: Pins::new(),
        })?;
        self.replace_session(session, built, true);
        self.session_start = Some(SessionSource::New);
        Ok(())
    }

    /// Switches to another recorded session of any project (`/resume ID`), with its
    /// recorded model. The previous session is closed, and removed if it was never used.
    pub fn resume(&mut self, query: &str) -> Result<Opened<()>, ConversationError> {
        let target = self
            .store
            .locate(query)
            .map_err(ConversationError::session)?;
        if same_dir(&target, self.session.dir()) {
            return Err(ConversationError::Usage(
                "That is the current session.".into(),
            ));
        }
        let mut resumed = self
            .store
            .resume(&target.display().to_string())
            .map_err(ConversationError::session)?;
        let overrides = Overrides {
            model: None,
            ..self.overrides.clone()
        };
        let settings = self.resolve_settings(&overrides, resumed.recorded_model.as_deref())?;
        let built = self.factory.build(LoopParts {
            settings: &settings,
            overrides: &overrides,
            session: &mut resumed.session,
            history: resumed.history,
            ledger: crate::ledger::rebuild(self.cwd(), &resumed.records),
            pins: pith_session::pins_on_line(&resumed.records),
        })?;
        let mut notices = settings.notices.clone();
        notices.extend(resumed.warnings.iter().map(|w| format!("warning: {w}")));
        self.settings = settings;
        self.replace_session(resumed.session, built, false);
        self.reconcile = true;
        self.session_start = Some(SessionSource::Resume);
        Ok(Opened {
            value: (),
            notices,
            resumed: Some(resumed.records),
        })
    }

    /// Settings for `overrides` against the configuration the conversation opened with.
    fn resolve_settings(
        &self,
        overrides: &Overrides,
        recorded_model: Option<&str>,
    ) -> Result<Settings, ConversationError> {
        let env = &self.factory.frontend.env;
        Settings::resolve(
            overrides,
            recorded_model,
            self.factory.workspace.config(),
            env.as_ref(),
        )
        .map_err(ConversationError::usage)
    }

    /// Makes `built` the conversation's loop (its MCP tools are installed again before
    /// the next turn).
    pub(super) fn install(&mut self, built: BuiltLoop) {
        self.agent = built.agent;
        self.toolset = built.toolset;
        self.hooks = built.hooks;
        self.mcp_installed = false;
    }

    /// Makes `session` (with `built`, its loop) the current one; the previous session is
    /// closed, and removed when it was never used.
    fn replace_session(&mut self, session: Session, built: BuiltLoop, unused: bool) {
        let previous = std::mem::replace(&mut self.session, session);
        let was_unused = std::mem::replace(&mut self.unused, unused);
        self.reconcile = false;
        self.install(built);
        self.session_context = None;
        self.children.clear();
        retire(previous, was_unused);
    }
}

/// Whether `a` and `b` name the same directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
