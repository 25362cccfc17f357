//! Checkpoints of a conversation (docs/rewind.md): the session's [`Checkpointer`] (change
//! tracker, content store, first snapshot) wired to the loop and the transcript.
//!
//! - After every tool call ([`hooks`]), what changed in the workspace is observed: the
//!   store then holds the contents before and after, and a `checkpoint` record (written
//!   by the turn's recording, [`Checkpoints::take_pending`]) names them.
//! - At a turn's start, changes made since the last observation are recorded first, as
//!   made outside pith; at its end, changes no call accounted for (a cancelled call) are
//!   recorded as the turn's.
//! - [`rewind`] plans and carries out a return to the state before a turn, live or from
//!   a transcript (`pith rewind`); [`text`] says it, the same in every front-end.
//!
//! Only a top-level conversation keeps checkpoints: a subagent's changes are observed when
//! its parent's `task` call ends. A conversation whose checkpoints cannot start goes on
//! without them, with a notice.

pub mod hooks;
pub mod offline;
pub mod rewind;
pub mod text;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pith_checkpoint::{CheckpointConfig, Checkpointer, StoreConfig};
use pith_core::{ChangeFeed, CheckpointSummary, FileChange, FileState};
use pith_session::Checkpoint;

use crate::config::CheckpointsConfig;

/// One MiB.
const MIB: u64 = 1024 * 1024;

/// Where the checkpoint store of the project at `root` lives: `DATA/checkpoints/KEY`, with
/// `DATA` pith's data directory (`$PITH_HOME`).
pub fn store_dir(data_dir: &Path, root: &Path) -> PathBuf {
    data_dir
        .join("checkpoints")
        .join(pith_checkpoint::project_key(root))
}

/// The store's caps from `[checkpoints]`.
pub fn store_config(config: &CheckpointsConfig) -> StoreConfig {
    let defaults = StoreConfig::default();
    StoreConfig {
        max_file_bytes: config
            .max_file_mib
            .map_or(defaults.max_file_bytes, |mib| mib.saturating_mul(MIB)),
        max_store_bytes: config
            .max_store_mib
            .map_or(defaults.max_store_bytes, |mib| mib.saturating_mul(MIB)),
    }
}

/// The files whose new content `record` could not keep (a cap), each with why:
/// `path (reason)`.
pub fn omitted(record: &Checkpoint) -> Vec<String> {
    record
        .changes
        .iter()
        .filter_map(|change| match &change.after {
            FileState::Omitted { reason, .. } => Some(format!("{} ({reason})", change.path)),
            _ => None,
        })
        .collect()
}

/// The checkpoints of one conversation.
#[derive(Debug)]
pub struct Checkpoints {
    engine: Arc<Checkpointer>,
    /// Observed changes not yet written to the transcript.
    pending: Mutex<Vec<Checkpoint>>,
    /// Every content this session's checkpoints name: kept by the store's GC, so this
    /// session's rewinds stay possible (other sessions' oldest copies go first).
    named: Mutex<HashSet<String>>,
    /// The store stayed over its cap after a GC (said once).
    over_cap: AtomicBool,
}

impl Checkpoints {
    /// Starts checkpoints of the workspace `root` with the store under `data_dir`; returns
    /// at once (the first snapshot runs in the background). `None` when `[checkpoints]`
    /// turns them off; an error in words when they cannot start.
    pub fn start(
        root: &Path,
        data_dir: &Path,
        config: &CheckpointsConfig,
    ) -> Result<Option<Arc<Self>>, String> {
        if config.enabled == Some(false) {
            return Ok(None);
        }
        let settings = CheckpointConfig {
            store: store_config(config),
            ..CheckpointConfig::default()
        };
        let engine = Checkpointer::start(root, &store_dir(data_dir, root), settings)
            .map_err(|error| format!("checkpoints are off for this session: {error}"))?;
        Ok(Some(Arc::new(Self {
            engine: Arc::new(engine),
            pending: Mutex::new(Vec::new()),
            named: Mutex::new(HashSet::new()),
            over_cap: AtomicBool::new(false),
        })))
    }

    /// The session's change tracker, for `bash`'s file effects.
    pub fn feed(&self) -> Arc<dyn ChangeFeed> {
        Arc::clone(&self.engine) as Arc<dyn ChangeFeed>
    }

    /// Waits until the first snapshot is done (at once after it): every file's pre-image
    /// is then known. A failed snapshot is logged, not waited on again.
    pub async fn wait_for_snapshot(&self) {
        if let Err(error) = self.engine.snapshot_report().await {
            tracing::warn!(%error, "checkpoint: the first snapshot failed");
        }
    }

    /// The engine (store, tracker, rewind).
    pub fn engine(&self) -> &Arc<Checkpointer> {
        &self.engine
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        self.engine.root()
    }

    /// Observes the workspace and returns a record of what changed: attributed to the call
    /// `call` (id and tool) when given, else to the turn (`outside` false) or to someone
    /// outside pith (`outside` true). Changes another session's rewind made go into a
    /// record of their own (`rewind_elsewhere`), queued with the pending records.
    /// `None` when nothing (else) changed or the observation failed (logged: checkpoints
    /// never fail a turn).
    pub async fn observe(&self, call: Option<(&str, &str)>, outside: bool) -> Option<Checkpoint> {
        if call.is_none() && !self.engine.is_started() {
            // Nothing ran since the session started (every tool call waits for the first
            // snapshot): a turn's start or end does not wait for it.
            return None;
        }
        let observation = match self.engine.observe().await {
            Ok(observation) => observation,
            Err(error) => {
                tracing::warn!(%error, "checkpoint: the workspace could not be observed");
                return None;
            }
        };
        if observation.changes.is_empty() {
            return None;
        }
        {
            let mut named = self.named.lock().unwrap_or_else(PoisonError::into_inner);
            for change in &observation.changes {
                for state in [&change.before, &change.after] {
                    if let FileState::File { hash, .. } = state {
                        named.insert(hash.clone());
                    }
                }
            }
        }
        if observation.bytes_added > 0 {
            self.keep_under_cap().await;
        }
        // What another session's rewind wrote is not this call's (nor this turn's): it is
        // recorded apart, before, and this session never rewinds it.
        let elsewhere = self.engine.store().rewinds_elsewhere();
        let (foreign, own): (Vec<FileChange>, Vec<FileChange>) =
            observation.changes.into_iter().partition(|change| {
                elsewhere
                    .get(&change.path)
                    .is_some_and(|states| states.contains(&change.after))
            });
        if !foreign.is_empty() {
            self.lock().push(Checkpoint {
                root: self.root().to_path_buf(),
                call_id: None,
                tool: None,
                outside: true,
                rewind_elsewhere: true,
                changes: foreign,
                bytes: 0,
            });
        }
        if own.is_empty() {
            return None;
        }
        Some(Checkpoint {
            root: self.root().to_path_buf(),
            call_id: call.map(|(id, _)| id.to_owned()),
            tool: call.map(|(_, tool)| tool.to_owned()),
            outside,
            rewind_elsewhere: false,
            changes: own,
            bytes: observation.bytes_added,
        })
    }

    /// Runs the store's GC when it is over its cap: the oldest contents that neither the
    /// workspace's current state nor this session's checkpoints name go first.
    async fn keep_under_cap(&self) {
        let store = self.engine.store();
        let cap = store.config().max_store_bytes;
        if store.size_bytes().map_or(true, |size| size <= cap) {
            return;
        }
        let mut keep = match self.engine.referenced_hashes().await {
            Ok(keep) => keep,
            Err(error) => {
                tracing::warn!(%error, "checkpoint GC skipped");
                return;
            }
        };
        keep.extend(
            self.named
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .cloned(),
        );
        let store = Arc::clone(store);
        let collected = tokio::task::spawn_blocking(move || store.gc(&keep)).await;
        match collected {
            Ok(Ok(report)) => {
                tracing::info!(
                    removed = report.removed,
                    freed = report.freed_bytes,
                    "checkpoint GC"
                );
                if report.size_bytes > cap && !self.over_cap.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        size = report.size_bytes,
                        cap,
                        "checkpoint store over its cap"
                    );
                }
            }
            Ok(Err(error)) => tracing::warn!(%error, "checkpoint GC failed"),
            Err(error) => tracing::warn!(%error, "checkpoint GC did not finish"),
        }
    }

    /// Observes after the call `id` of `tool` and keeps the record for the transcript.
    pub async fn after_call(&self, id: &str, tool: &str) {
        if let Some(record) = self.observe(Some((id, tool)), false).await {
            self.lock().push(record);
        }
    }

    /// The records observed since the last call, oldest first.
    pub fn take_pending(&self) -> Vec<Checkpoint> {
        std::mem::take(&mut *self.lock())
    }

    /// The store's size for this project, in bytes (0 when it cannot be read).
    pub fn store_bytes(&self) -> u64 {
        self.engine.store().size_bytes().unwrap_or(0)
    }

    /// What front-ends show of `record` (its `id` is set once the record is written).
    pub fn summary(&self, record: &Checkpoint) -> CheckpointSummary {
        CheckpointSummary {
            id: String::new(),
            call_id: record.call_id.clone(),
            files: record.changes.iter().map(FileChange::shown_path).collect(),
            bytes: record.bytes,
            store_bytes: self.store_bytes(),
            omitted: record
                .changes
                .iter()
                .filter(|c| !c.after.is_restorable())
                .map(|c| c.path.clone())
                .collect(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Checkpoint>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(seed: u8, len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[tokio::test]
    async fn the_store_is_kept_under_its_cap_by_evicting_other_sessions_oldest_copies() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("small.txt"), "small\n").unwrap();
        let config = CheckpointsConfig {
            enabled: None,
            max_store_mib: Some(1),
            max_file_mib: None,
        };
        // Copies an earlier session left: 3 × 400 KB, older than anything this one stores.
        let earlier = pith_checkpoint::Store::open(
            &store_dir(&data, &root.canonicalize().unwrap()),
            store_config(&config),
        )
        .unwrap();
        let old: Vec<String> = (0..3)
            .map(|i| earlier.put(&noise(i, 400_000)).unwrap().hash)
            .collect();
        drop(earlier);
        let checkpoints = Checkpoints::start(&root, &data, &config).unwrap().unwrap();
        assert!(checkpoints.observe(None, true).await.is_none());
        // As a writing tool does: the snapshot first, so the write is a change (a file
        // written before the snapshot reaches it has its new content as its first state).
        checkpoints.wait_for_snapshot().await;
        std::fs::write(root.join("big.bin"), noise(9, 400_000)).unwrap();
        let record = checkpoints
            .observe(Some(("c1", "write")), false)
            .await
            .unwrap();
        assert_eq!(record.changes.len(), 1);
        let store = checkpoints.engine().store();
        assert!(
            store.size_bytes().unwrap() <= 1024 * 1024,
            "over the cap: {}",
            store.size_bytes().unwrap()
        );
        assert!(
            old.iter().any(|hash| !store.contains(hash)),
            "an old copy was evicted"
        );
        let FileState::File { hash, .. } = &record.changes[0].after else {
            panic!("{record:?}")
        };
        assert!(store.contains(hash), "this session's copy is kept");
        assert!(!checkpoints.over_cap.load(Ordering::Relaxed));
    }

    #[test]
    fn checkpoints_can_be_turned_off() {
        let dir = tempfile::tempdir().unwrap();
        let off = CheckpointsConfig {
            enabled: Some(false),
            ..CheckpointsConfig::default()
        };
        assert!(Checkpoints::start(dir.path(), dir.path(), &off)
            .unwrap()
            .is_none());
    }
}
