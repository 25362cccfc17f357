//! `pith rewind SESSION`: a rewind of a recorded session that no conversation has open
//! (it takes the session's writer lock, so a session open elsewhere is refused). Without
//! a turn it lists the turns; with one it plans, and unless it is a dry run or files
//! changed outside pith would be overwritten without `--force`, carries out.

use std::path::PathBuf;

use pith_session::turns::{turns, Turn};
use pith_session::{Event, RewindMode, SessionStore};

use super::rewind::{carry_out, plan, RewindDone, RewindPlan, Writer};
use super::store_config;
use crate::env::Env;
use crate::error::ConversationError;
use crate::workspace::Workspace;

/// What `pith rewind` was asked.
#[derive(Debug, Clone)]
pub struct RewindRequest {
    /// The session: id, unique id prefix, directory or transcript path.
    pub session: String,
    /// The turn to rewind to (1-based); `None` lists the turns.
    pub turn: Option<u64>,
    /// What to rewind.
    pub mode: RewindMode,
    /// Plan only: write nothing.
    pub dry_run: bool,
    /// Overwrite files changed outside pith since pith last saw them.
    pub force: bool,
}

/// What `pith rewind` did.
#[derive(Debug)]
pub enum RewindOutcome {
    /// The session's turns (no turn was asked for).
    Turns {
        /// The session id.
        session: String,
        /// Its turns, on the current line.
        turns: Vec<Turn>,
    },
    /// The plan, not carried out: a dry run, or (`blocked`) files changed outside pith
    /// that `--force` is needed to overwrite.
    Planned {
        /// The plan.
        plan: Box<RewindPlan>,
        /// True when it was not carried out because of files changed outside pith.
        blocked: bool,
    },
    /// The rewind was carried out.
    Done {
        /// The plan it followed.
        plan: Box<RewindPlan>,
        /// What it did.
        done: Box<RewindDone>,
    },
}

/// Carries out `request` with pith's data directory and configuration as `env` names
/// them.
pub async fn rewind_session(
    request: RewindRequest,
    env: &Env,
) -> Result<RewindOutcome, ConversationError> {
    let store = SessionStore::from_lookup(env.as_ref()).map_err(ConversationError::usage)?;
    let mut resumed = store
        .resume(&request.session)
        .map_err(ConversationError::session)?;
    let session_id = resumed.session.id().to_owned();
    let Some(turn) = request.turn else {
        return Ok(RewindOutcome::Turns {
            session: session_id,
            turns: turns(&resumed.records),
        });
    };
    let cwd = session_cwd(&resumed.records).ok_or_else(|| {
        ConversationError::usage(format!(
            "session {session_id} names no workspace in its first record"
        ))
    })?;
    let workspace = Workspace::open(&cwd, env.as_ref())?;
    let data_dir = store.root().parent().unwrap_or(store.root());
    let blobs = pith_checkpoint::Store::open(
        &super::store_dir(data_dir, workspace.cwd()),
        store_config(&workspace.config().checkpoints),
    )
    .map_err(|e| ConversationError::failure(format!("checkpoints: {e}")))?;
    let plan = plan(
        &resumed.records,
        workspace.cwd(),
        Some(&blobs),
        turn,
        request.mode,
    )
    .map_err(|e| ConversationError::usage(e.to_string()))?;
    let refused = plan.refused();
    if !refused.is_empty() {
        return Err(ConversationError::failure(format!(
            "the rewind to before turn {turn} is refused, nothing was written: {}",
            refused.join("; ")
        )));
    }
    let blocked = !request.force && !plan.changed_outside().is_empty();
    if request.dry_run || blocked {
        return Ok(RewindOutcome::Planned {
            plan: Box::new(plan),
            blocked,
        });
    }
    let done = carry_out(plan.clone(), &mut resumed.session, Writer::Store(&blobs))
        .await
        .map_err(|e| ConversationError::failure(e.to_string()))?;
    Ok(RewindOutcome::Done {
        plan: Box::new(plan),
        done: Box::new(done),
    })
}

/// The workspace a session belongs to, from its `session_started`.
fn session_cwd(records: &[pith_session::Record]) -> Option<PathBuf> {
    records.first().and_then(|record| match &record.event {
        Event::SessionStarted { cwd, .. } => Some(cwd.clone()),
        _ => None,
    })
}
