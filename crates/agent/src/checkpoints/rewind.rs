//! A rewind: back to the state just before a user turn, of the files (`code`), of the
//! conversation, or both (docs/rewind.md). The same two steps serve `/rewind` in a live
//! conversation and `pith rewind` on a transcript:
//!
//! 1. [`plan`] reads the records: which turn, and for the files, the state each path had
//!    then (the `before` of its first change recorded after the turn's message), what is
//!    on disk now, and what pith last knew (a difference is a change made outside pith,
//!    which the user is asked about). Nothing is written.
//! 2. [`carry_out`] writes the files (each through a temporary file and a rename; the
//!    contents it overwrites are stored first, so the rewind can itself be undone) and
//!    appends one `rewind` record. Nothing earlier in the transcript changes; a
//!    conversation rewind is read from that record by projection.

use std::path::{Path, PathBuf};

use pith_checkpoint::{rewind_targets, Checkpointer, RestorePlan, Store};
use pith_core::FileChange;
use pith_session::{changes_after_in, last_code_rewind, turn_seq, turns, Turn};
use pith_session::{Checkpoint, Event, Record, Rewind, RewindMode, Session};

/// Why a rewind cannot be planned or carried out.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    /// The session has no such turn on its current line.
    #[error("the session has no turn {turn} (its turns are 1 to {count})")]
    NoSuchTurn {
        /// The turn asked for.
        turn: u64,
        /// How many turns the session has.
        count: usize,
    },
    /// Some files cannot be put back (caps, a missing copy, a path escaping the
    /// workspace): nothing was written.
    #[error("the rewind was refused, nothing was written: {0}")]
    Refused(String),
    /// The checkpoint store failed.
    #[error("checkpoints: {0}")]
    Checkpoint(#[from] pith_checkpoint::CheckpointError),
    /// The files were asked for, but this conversation keeps no checkpoints.
    #[error(
        "checkpoints are off ([checkpoints] enabled = false): only the conversation can be rewound"
    )]
    NoCheckpoints,
    /// `--undo`, but the session has no rewind that wrote files.
    #[error("there is no rewind of the files to undo in this session")]
    NothingToUndo,
    /// The transcript could not be written (the files, if any, were rewound).
    #[error("cannot record the rewind: {0}")]
    Record(#[from] pith_session::SessionError),
}

/// What a rewind would do.
#[derive(Debug, Clone)]
pub struct RewindPlan {
    /// The turn rewound to (the state just before it).
    pub turn: Turn,
    /// What is rewound.
    pub mode: RewindMode,
    /// The workspace root.
    pub root: PathBuf,
    /// For a code rewind: the files to write, and what is in the way.
    pub files: Option<RestorePlan>,
    /// True for the undo of the latest rewind of the files ([`plan_undo`]).
    pub undo: bool,
}

impl RewindPlan {
    /// Its first line for the user: which turn (or which rewind undone), and what.
    pub fn headline(&self) -> String {
        if self.undo {
            format!(
                "Undo of the latest rewind (to before turn {}): the files it overwrote",
                self.turn.number
            )
        } else {
            format!(
                "Rewind to before turn {} ({}): {}",
                self.turn.number,
                self.turn.preview,
                self.mode.describe()
            )
        }
    }

    /// The paths the rewind writes.
    pub fn writes(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| f.writes.iter().map(|w| w.shown_path()))
            .collect()
    }

    /// The paths it would overwrite that changed outside pith since pith last saw them:
    /// the user is asked first.
    pub fn changed_outside(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| f.changed_outside.iter().cloned())
            .collect()
    }

    /// The paths left as they are because their content was not kept (`--skip-omitted`),
    /// each with why.
    pub fn skipped(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| {
                f.skipped
                    .iter()
                    .map(|r| format!("{} ({})", r.path, r.reason))
            })
            .collect()
    }

    /// Whether every refusal is for a content pith did not keep (so `--skip-omitted`
    /// would restore the rest).
    pub fn only_unkept_refused(&self) -> bool {
        self.files.as_ref().is_some_and(|files| {
            let mut copy = files.clone();
            copy.skip_unkept() > 0 && copy.refused.is_empty()
        })
    }

    /// The paths it cannot put back, each with why: a plan with any is refused.
    pub fn refused(&self) -> Vec<String> {
        self.files
            .iter()
            .flat_map(|f| {
                f.refused
                    .iter()
                    .map(|r| format!("{} ({})", r.path, r.reason))
            })
            .collect()
    }
}

/// What a rewind did.
#[derive(Debug, Clone)]
pub struct RewindDone {
    /// The record appended.
    pub record: Rewind,
    /// Changes made outside pith found just before the files were written (recorded
    /// first, so that a rewind of the rewind brings them back).
    pub outside: Option<Checkpoint>,
    /// Paths re-read after the rewind that are not in the state it wrote (something
    /// changed them in between): empty when the rewind is done as planned.
    pub not_as_planned: Vec<String>,
}

/// Plans a rewind of the session whose records are `records` to just before turn `turn`
/// (1-based, on the current line), for the workspace `root`, with the contents in `store`
/// (needed to rewind the files; `None` when checkpoints are off).
pub fn plan(
    records: &[Record],
    root: &Path,
    store: Option<&Store>,
    turn: u64,
    mode: RewindMode,
) -> Result<RewindPlan, RewindError> {
    let listed = turns(records);
    let found = turn_seq(records, turn)
        .and_then(|seq| listed.iter().find(|t| t.seq == seq).cloned())
        .ok_or(RewindError::NoSuchTurn {
            turn,
            count: listed.len(),
        })?;
    let files = match (mode.rewinds_code(), store) {
        (false, _) => None,
        (true, Some(store)) => {
            let changes = changes_after_in(records, found.seq, root);
            let targets = rewind_targets(&changes);
            Some(pith_checkpoint::plan(root, store, &targets)?)
        }
        (true, None) => return Err(RewindError::NoCheckpoints),
    };
    Ok(RewindPlan {
        turn: found,
        mode,
        root: root.to_path_buf(),
        files,
        undo: false,
    })
}

/// Plans the undo of the session's latest rewind that wrote files under `root`: each path
/// it wrote goes back to what it overwrote. The undo is a code rewind recorded like any
/// other (same turn), so undoing again redoes the rewind.
pub fn plan_undo(
    records: &[Record],
    root: &Path,
    store: &Store,
) -> Result<RewindPlan, RewindError> {
    let (record, rewind) = last_code_rewind(records, root).ok_or(RewindError::NothingToUndo)?;
    let targets = rewind_targets(&rewind.changes);
    Ok(RewindPlan {
        turn: Turn {
            number: rewind.turn,
            seq: rewind.to_seq,
            ts: record.ts.clone(),
            preview: format!("undo of the rewind recorded at {}", record.ts),
            files: Vec::new(),
        },
        mode: RewindMode::Code,
        root: root.to_path_buf(),
        files: Some(pith_checkpoint::plan(root, store, &targets)?),
        undo: true,
    })
}

/// How a rewind writes the files.
#[derive(Debug, Clone, Copy)]
pub enum Writer<'a> {
    /// The live engine of a conversation: it observes what changed since its last look
    /// first, and keeps its shadow in step.
    Live(&'a Checkpointer),
    /// Directly against the store (`pith rewind` on a recorded session).
    Store(&'a Store),
    /// No checkpoints: only a conversation rewind can be carried out.
    None,
}

/// Carries out `plan` and records it in `session`, writing the files with `writer`.
pub async fn carry_out(
    plan: RewindPlan,
    session: &mut Session,
    writer: Writer<'_>,
) -> Result<RewindDone, RewindError> {
    let refused = plan.refused();
    if !refused.is_empty() {
        return Err(RewindError::Refused(refused.join("; ")));
    }
    let mut outside = None;
    let planned = plan.files.clone();
    let applied = match (plan.files, writer) {
        (None, _) => Vec::new(),
        (Some(_), Writer::None) => return Err(RewindError::NoCheckpoints),
        (Some(files), Writer::Live(engine)) => {
            let rewound = engine.rewind(files).await?;
            if !rewound.pending.changes.is_empty() {
                let record = Checkpoint {
                    root: plan.root.clone(),
                    call_id: None,
                    tool: None,
                    outside: true,
                    rewind_elsewhere: false,
                    changes: rewound.pending.changes,
                    bytes: rewound.pending.bytes_added,
                };
                let events = record.clone().split().into_iter().map(Event::Checkpoint);
                session.append_batch(events.collect())?;
                outside = Some(record);
            }
            rewound.applied
        }
        (Some(files), Writer::Store(store)) => pith_checkpoint::apply(&files, store)?,
    };
    // Every "done" is checked: each path written is read again.
    let not_as_planned = match (&planned, writer) {
        (Some(files), Writer::Live(engine)) => {
            pith_checkpoint::verify(files, engine.store().config().max_file_bytes)?
        }
        (Some(files), Writer::Store(store)) => {
            pith_checkpoint::verify(files, store.config().max_file_bytes)?
        }
        _ => Vec::new(),
    };
    let record = Rewind {
        to_seq: plan.turn.seq,
        turn: plan.turn.number,
        mode: plan.mode,
        root: plan.root,
        restored: applied.iter().map(FileChange::shown_path).collect(),
        changes: applied,
    };
    session.append(Event::Rewind(record.clone()))?;
    Ok(RewindDone {
        record,
        outside,
        not_as_planned,
    })
}
