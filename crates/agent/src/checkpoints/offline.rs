//! `pith rewind SESSION`: a rewind of a recorded session that no conversation has open.
//! Without a turn it lists the turns; with one (or `--undo`) it plans, and unless it is a
//! dry run or files changed outside pith would be overwritten without `--force`, carries
//! out. Listing and dry runs only read the transcript; a rewind that writes takes the
//! session's writer lock, so a session open elsewhere is refused then.

use std::path::PathBuf;

use pith_session::{turns, Turn};
use pith_session::{Event, RewindMode, SessionStore};

use super::rewind::{carry_out, plan, plan_undo, RewindDone, RewindPlan, Writer};
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
    /// Undo the latest rewind of the files instead (`turn` and `mode` are not used).
    pub undo: bool,
    /// Restore what can be when some contents were not kept (over the per-file cap,
    /// removed by the size cap): those paths are named and left as they are.
    pub skip_omitted: bool,
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
    // Listing and dry runs write nothing: they read the transcript without the writer
    // lock, so they work while a job holds the session (as `pith replay` does).
    let lists = request.turn.is_none() && !request.undo;
    let (records, mut writer) = if lists || request.dry_run {
        let transcript = store
            .read(&request.session, pith_session::ReadOptions::default())
            .map_err(ConversationError::session)?;
        (transcript.records, None)
    } else {
        let resumed = store
            .resume(&request.session)
            .map_err(ConversationError::session)?;
        (resumed.records, Some(resumed.session))
    };
    let records = &records;
    let session_id = match &writer {
        Some(session) => session.id().to_owned(),
        None => session_id_of(records).unwrap_or_else(|| request.session.clone()),
    };
    if lists {
        return Ok(RewindOutcome::Turns {
            session: session_id,
            turns: turns(records),
        });
    }
    let cwd = session_cwd(records).ok_or_else(|| {
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
    let mut plan = match request.turn {
        _ if request.undo => plan_undo(records, workspace.cwd(), &blobs),
        Some(turn) => plan(records, workspace.cwd(), Some(&blobs), turn, request.mode),
        None => return Err(ConversationError::usage("no turn to rewind to".to_owned())),
    }
    .map_err(|e| ConversationError::usage(e.to_string()))?;
    if request.skip_omitted {
        if let Some(files) = plan.files.as_mut() {
            files.skip_unkept();
        }
    }
    let refused = plan.refused();
    if !refused.is_empty() {
        let hint = if plan.only_unkept_refused() {
            " (--skip-omitted restores the rest and leaves these as they are)"
        } else {
            ""
        };
        let what = if plan.undo {
            "the undo of the latest rewind".to_owned()
        } else {
            format!("the rewind to before turn {}", plan.turn.number)
        };
        return Err(ConversationError::failure(format!(
            "{what} is refused, nothing was written: {}{hint}",
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
    let Some(session) = writer.as_mut() else {
        return Err(ConversationError::failure(
            "internal: a rewind that writes must hold the session's writer lock".to_owned(),
        ));
    };
    let done = carry_out(plan.clone(), session, Writer::Store(&blobs))
        .await
        .map_err(|e| ConversationError::failure(e.to_string()))?;
    Ok(RewindOutcome::Done {
        plan: Box::new(plan),
        done: Box::new(done),
    })
}

/// The session's id, from its `session_started`.
fn session_id_of(records: &[pith_session::Record]) -> Option<String> {
    records.iter().find_map(|record| match &record.event {
        pith_session::Event::SessionStarted { session_id, .. } => Some(session_id.clone()),
        _ => None,
    })
}

/// The workspace a session belongs to, from its `session_started`.
fn session_cwd(records: &[pith_session::Record]) -> Option<PathBuf> {
    records.first().and_then(|record| match &record.event {
        Event::SessionStarted { cwd, .. } => Some(cwd.clone()),
        _ => None,
    })
}
