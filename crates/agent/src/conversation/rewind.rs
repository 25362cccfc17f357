//! `/rewind` in a live conversation (docs/rewind.md): the session's turns, a plan, and
//! carrying it out with the conversation's own checkpoints; a conversation rewind then
//! rebuilds the loop from the transcript as projection reads it after the `rewind`
//! record (the history before the turn, uncompacted if the compaction came later, and
//! the ledger of that line).

use pith_session::Turn;
use pith_session::{project_model, Event, ReadOptions, Record, RewindMode};

use crate::checkpoints::rewind::{carry_out, plan, plan_undo, RewindDone, RewindPlan, Writer};
use crate::conversation::factory::LoopParts;
use crate::conversation::state::Conversation;
use crate::error::ConversationError;

impl Conversation {
    /// The user turns of this session's current line, oldest first.
    pub fn turns(&self) -> Result<Vec<Turn>, ConversationError> {
        Ok(pith_session::turns(&self.records()?))
    }

    /// The whole text the user sent in the turn whose `user_message` is record `seq`
    /// (a [`Turn::seq`]): `/rewind` puts it back in the input line after a conversation
    /// rewind, to edit and send again.
    pub fn user_text_at(&self, seq: u64) -> Result<Option<String>, ConversationError> {
        Ok(self
            .records()?
            .into_iter()
            .find(|record| record.seq == seq)
            .and_then(|record| match record.event {
                Event::UserMessage { message } => Some(message.text_content()),
                _ => None,
            }))
    }

    /// Whether this conversation keeps checkpoints (a code rewind needs them).
    pub fn keeps_checkpoints(&self) -> bool {
        self.factory.checkpoints.is_some()
    }

    /// The checkpoint store's size for this project, when checkpoints are kept.
    pub fn checkpoint_store_bytes(&self) -> Option<u64> {
        self.factory
            .checkpoints
            .as_ref()
            .map(|checkpoints| checkpoints.store_bytes())
    }

    /// What a rewind to just before turn `turn` would do; writes nothing.
    pub async fn plan_rewind(
        &self,
        turn: u64,
        mode: RewindMode,
    ) -> Result<RewindPlan, ConversationError> {
        let records = self.records()?;
        let (root, store) = match &self.factory.checkpoints {
            Some(checkpoints) => (
                checkpoints.root(),
                Some(checkpoints.engine().store().as_ref()),
            ),
            None => (self.cwd(), None),
        };
        plan(&records, root, store, turn, mode).map_err(|e| ConversationError::Usage(e.to_string()))
    }

    /// What undoing the latest rewind of the files would do (`/rewind undo`); writes
    /// nothing. Needs checkpoints.
    pub async fn plan_undo(&self) -> Result<RewindPlan, ConversationError> {
        let records = self.records()?;
        let Some(checkpoints) = &self.factory.checkpoints else {
            return Err(ConversationError::Usage(
                crate::checkpoints::rewind::RewindError::NoCheckpoints.to_string(),
            ));
        };
        plan_undo(&records, checkpoints.root(), checkpoints.engine().store())
            .map_err(|e| ConversationError::Usage(e.to_string()))
    }

    /// Carries out `plan` (from [`Conversation::plan_rewind`]): the files, then the
    /// `rewind` record; for a conversation rewind, the loop continues from the history
    /// and ledger of that point.
    pub async fn rewind(&mut self, plan: RewindPlan) -> Result<RewindDone, ConversationError> {
        let mode = plan.mode;
        let checkpoints = self.factory.checkpoints.clone();
        let writer = match &checkpoints {
            Some(checkpoints) => Writer::Live(checkpoints.engine()),
            None => Writer::None,
        };
        let done = carry_out(plan, &mut self.session, writer)
            .await
            .map_err(|e| ConversationError::Usage(e.to_string()))?;
        if mode.rewinds_conversation() {
            let records = self.records()?;
            let history = project_model(&records);
            let ledger = crate::ledger::rebuild(self.cwd(), &records);
            let settings = self.settings.clone();
            let overrides = self.overrides.clone();
            let built = self.factory.build(LoopParts {
                settings: &settings,
                overrides: &overrides,
                session: &mut self.session,
                history,
                ledger,
                pins: pith_session::pins_on_line(&records),
            })?;
            self.install(built);
        }
        Ok(done)
    }

    /// Every record of the open session.
    pub(super) fn records(&self) -> Result<Vec<Record>, ConversationError> {
        self.session
            .read(ReadOptions::default())
            .map(|transcript| transcript.records)
            .map_err(ConversationError::session)
    }
}
