//! The session's checkpointer: the tracker, the store and the shadow together. It starts
//! in the background (the tracker, whose watches the first snapshot's walk adds
//! directory by directory as it enters them) and, on each
//! [`Checkpointer::observe`], turns what the tracker saw into [`FileChange`]s whose
//! `before` and `after` contents are both in the store.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use pith_core::{ChangeFeed, ChangeMark, FileChange, FileState};
use tokio::sync::watch;

use crate::error::{io_context, CheckpointError, Result};
use crate::restore::{apply, plan, RestorePlan, Target};
use crate::shadow::{Observation, Shadow, SnapshotReport};
use crate::store::{Store, StoreConfig};
use crate::tracker::{Tracker, TrackerConfig};

/// How a [`Checkpointer`] runs.
#[derive(Debug, Clone)]
pub struct CheckpointConfig {
    /// The store's caps.
    pub store: StoreConfig,
    /// The tracker's settings.
    pub tracker: TrackerConfig,
    /// Whether to track changes at all. Without a tracker, only
    /// [`Checkpointer::observe_paths`] finds changes (pith's own writes), and
    /// [`Checkpointer::observe`] compares the whole tree.
    pub track: bool,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            store: StoreConfig::default(),
            tracker: TrackerConfig::default(),
            track: true,
        }
    }
}

/// What [`Checkpointer::rewind`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rewound {
    /// The changes found just before the rewind (since the last observation): record them
    /// like any observation, before the rewind.
    pub pending: Observation,
    /// The rewind's own changes (`before` = what was there, stored; `after` = the target).
    /// Rewinding them undoes the rewind.
    pub applied: Vec<FileChange>,
}

/// What the background start produced.
#[derive(Debug)]
struct Ready {
    tracker: Option<Arc<Tracker>>,
    shadow: Mutex<Shadow>,
    report: SnapshotReport,
}

impl Ready {
    fn shadow(&self) -> MutexGuard<'_, Shadow> {
        self.shadow
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

type Started = Option<std::result::Result<Arc<Ready>, String>>;

/// Checkpoints of one workspace for one session.
#[derive(Debug)]
pub struct Checkpointer {
    root: PathBuf,
    store: Arc<Store>,
    ready: watch::Receiver<Started>,
}

impl Checkpointer {
    /// Opens the store in `store_dir` and starts, on a thread of its own, the tracker over
    /// `root` and then the first snapshot. Returns at once: every other method waits for
    /// the snapshot. Changes made while the snapshot runs are found by the first
    /// [`Checkpointer::observe`]; a file changed before the snapshot reached it has its new
    /// content as its first known state.
    pub fn start(root: &Path, store_dir: &Path, config: CheckpointConfig) -> Result<Checkpointer> {
        let root = root
            .canonicalize()
            .map_err(io_context(format!("resolving {}", root.display())))?;
        let store = Arc::new(Store::open(store_dir, config.store)?);
        let (sender, ready) = watch::channel(None);
        let thread_root = root.clone();
        let thread_store = Arc::clone(&store);
        std::thread::Builder::new()
            .name("pith-snapshot".into())
            .spawn(move || {
                let started = start_in_background(&thread_root, &thread_store, &config);
                let _ = sender.send(Some(
                    started.map(Arc::new).map_err(|error| error.to_string()),
                ));
            })
            .map_err(io_context("starting the snapshot thread"))?;
        Ok(Checkpointer { root, store, ready })
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The blob store (for rewinds and GC).
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// The first snapshot's report, once it is done.
    pub async fn snapshot_report(&self) -> Result<SnapshotReport> {
        Ok(self.ready().await?.report.clone())
    }

    /// The tracker, once started (None when tracking is off or could not start).
    pub async fn tracker(&self) -> Result<Option<Arc<Tracker>>> {
        Ok(self.ready().await?.tracker.clone())
    }

    /// Everything that changed in the workspace since the last observation (or the
    /// snapshot), with the new contents stored. Waits for the snapshot first.
    pub async fn observe(&self) -> Result<Observation> {
        let ready = self.ready().await?;
        let changed = match &ready.tracker {
            Some(tracker) => tracker.drain().await,
            None => None,
        };
        let root = self.root.clone();
        let store = Arc::clone(&self.store);
        blocking(move || {
            let mut shadow = ready.shadow();
            match changed {
                Some(paths) => shadow.observe(&root, &store, &paths),
                None => shadow.rescan(&root, &store),
            }
        })
        .await
    }

    /// Re-reads the given paths (relative to the root, `/` separators) and returns their
    /// changes: for pith's own writes, which need no tracker. Paths that are absolute or
    /// climb out of the root are refused.
    pub async fn observe_paths(&self, paths: &[String]) -> Result<Observation> {
        for path in paths {
            if let Some(reason) = crate::restore::unsafe_shape(path) {
                return Err(CheckpointError::Unsafe {
                    path: path.clone(),
                    reason: reason.into(),
                });
            }
        }
        let ready = self.ready().await?;
        let root = self.root.clone();
        let store = Arc::clone(&self.store);
        let paths = paths.to_vec();
        blocking(move || ready.shadow().observe(&root, &store, &paths)).await
    }

    /// Plans a rewind of the workspace to `targets` (see [`plan`]); writes nothing.
    pub async fn plan_rewind(&self, targets: BTreeMap<String, Target>) -> Result<RestorePlan> {
        let root = self.root.clone();
        let store = Arc::clone(&self.store);
        blocking(move || plan(&root, &store, &targets)).await
    }

    /// Applies a rewind plan (see [`apply`]) and keeps the shadow in step: first observes
    /// what changed since the last observation (so those changes are not mistaken for the
    /// rewind's), then applies, then re-reads the rewound paths (so the next observation
    /// does not report the rewind again).
    pub async fn rewind(&self, plan: RestorePlan) -> Result<Rewound> {
        if !plan.refused.is_empty() {
            return Err(CheckpointError::Refused(plan.refused));
        }
        let pending = self.observe().await?;
        let store = Arc::clone(&self.store);
        let applied = blocking(move || apply(&plan, &store)).await?;
        let paths: Vec<String> = applied.iter().map(|change| change.path.clone()).collect();
        self.observe_paths(&paths).await?;
        Ok(Rewound { pending, applied })
    }

    /// The state the shadow knows for `path` now (as of the last observation).
    pub async fn known_state(&self, path: &str) -> Result<FileState> {
        let ready = self.ready().await?;
        let store = Arc::clone(&self.store);
        let path = path.to_owned();
        blocking(move || ready.shadow().state(&path, &store)).await
    }

    /// The blobs the current states reference: a GC must keep them (with those the
    /// transcripts' checkpoint records reference).
    pub async fn referenced_hashes(&self) -> Result<HashSet<String>> {
        Ok(self.ready().await?.shadow().hashes())
    }

    /// Saves the stat index for the next session (the snapshot saves it too; call this at
    /// the end of a session so that the next snapshot re-reads less).
    pub async fn save_index(&self) -> Result<()> {
        let ready = self.ready().await?;
        let store = Arc::clone(&self.store);
        blocking(move || ready.shadow().save_index(&store)).await
    }

    /// True once the first snapshot finished (or failed): calls no longer wait. A caller
    /// with nothing to attribute yet (a turn that ran no tool) skips its observation
    /// rather than wait for the snapshot.
    pub fn is_started(&self) -> bool {
        self.ready.borrow().is_some()
    }

    async fn ready(&self) -> Result<Arc<Ready>> {
        let mut ready = self.ready.clone();
        let started = ready
            .wait_for(Option::is_some)
            .await
            .map_err(|_| CheckpointError::Snapshot("its thread ended without a result".into()))?;
        match started.as_ref() {
            Some(Ok(ready)) => Ok(Arc::clone(ready)),
            Some(Err(error)) => Err(CheckpointError::Snapshot(error.clone())),
            None => Err(CheckpointError::Snapshot("no result".into())),
        }
    }
}

fn start_in_background(root: &Path, store: &Store, config: &CheckpointConfig) -> Result<Ready> {
    // The tracker watches each directory as the snapshot's walk enters it, before the
    // walk reads anything there: one walk of the tree, not one each.
    let tracker = if config.track {
        match Tracker::start_unwalked(root, config.tracker.clone()) {
            Ok(tracker) => Some(Arc::new(tracker)),
            Err(error) => {
                tracing::warn!(
                    "checkpoints: no change tracker ({error}); comparing the tree instead"
                );
                None
            }
        }
    } else {
        None
    };
    let (shadow, report) = Shadow::snapshot_calling(root, store, &mut |dir| {
        if let Some(tracker) = &tracker {
            tracker.watch_directory(dir);
        }
    })?;
    Ok(Ready {
        tracker,
        shadow: Mutex::new(shadow),
        report,
    })
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| CheckpointError::Snapshot(format!("a checkpoint task failed: {error}")))?
}

/// The checkpointer answers as its tracker (None before or without one).
#[async_trait]
impl ChangeFeed for Checkpointer {
    async fn mark(&self) -> ChangeMark {
        match self.tracker().await {
            Ok(Some(tracker)) => tracker.mark().await,
            _ => ChangeMark(0),
        }
    }

    async fn changed_since(&self, since: ChangeMark) -> Option<Vec<String>> {
        match self.tracker().await {
            Ok(Some(tracker)) => tracker.changed_since(since).await,
            _ => None,
        }
    }
}
