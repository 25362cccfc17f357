//! The session's change tracker: which workspace paths changed, at a cost per question
//! that does not grow with the tree.
//!
//! One inotify instance watches every directory the ignore rules keep (non-recursive
//! watches, added for directories as they appear, so `target/` or `node_modules/` floods
//! cost nothing). A question first passes a *barrier*: the tracker creates a directory in
//! a private place the same instance watches, then reads the queue until that directory's
//! event; one instance's events are queued in order, so every change made before the
//! question has then been applied. (The queue is read under the tracker's lock by a thread
//! woken by poll, or by the question itself, which usually finds its own event at once.) When watches run out (`fs.inotify.max_user_watches`, or
//! [`TrackerConfig::max_watches`]) the tracker scans stat keys instead, up to
//! [`TrackerConfig::scan_cap`] files; beyond that, and after a queue overflow for marks
//! taken before it, it answers "unknown" (None).

mod log;
mod scan;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use inotify::{Inotify, WatchMask};
use pith_core::{ChangeFeed, ChangeMark};
use tempfile::TempDir;

use crate::error::{io_context, Result};
use watch::{Inner, Mode, Shared};

/// How a [`Tracker`] runs.
#[derive(Debug, Clone)]
pub struct TrackerConfig {
    /// The most directories to watch before falling back to scanning (the kernel's
    /// `fs.inotify.max_user_watches` applies too). 0 means scan from the start.
    pub max_watches: usize,
    /// The most files a fallback scan covers; beyond it the tracker answers None.
    pub scan_cap: usize,
    /// How long a barrier waits for its own event before the answer is None.
    pub barrier_timeout: Duration,
    /// Where the private barrier directory goes (outside the workspace); the system's
    /// temporary directory when None.
    pub private_dir: Option<PathBuf>,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            max_watches: usize::MAX,
            scan_cap: 200_000,
            barrier_timeout: Duration::from_secs(2),
            private_dir: None,
        }
    }
}

/// How a tracker currently learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrackerMode {
    /// inotify, with this many directories watched.
    Watching {
        /// Watched workspace directories.
        watches: usize,
    },
    /// Stat scans on each question (watches ran out or were not allowed).
    Scanning {
        /// The tree has more files than the scan cap: every answer is None.
        over_cap: bool,
    },
}

/// Who walks the tree to add the watches when a tracker starts.
#[derive(Debug, Clone, Copy)]
enum Walk {
    /// The tracker, at once.
    Whole,
    /// The caller, directory by directory ([`Tracker::watch_directory`]).
    ByCaller,
}

/// The change tracker of one workspace root. Dropping it stops its thread.
#[derive(Debug)]
pub struct Tracker {
    root: PathBuf,
    shared: Arc<Shared>,
    barrier_dir: Option<TempDir>,
    next_barrier: AtomicU64,
    config: TrackerConfig,
}

impl Tracker {
    /// Starts tracking `root`: walks it once to add the watches (blocking: run it off the
    /// async workers for a large tree). Falls back to scanning when inotify is unavailable.
    pub fn start(root: &Path, config: TrackerConfig) -> Result<Tracker> {
        Tracker::start_with(root, config, Walk::Whole)
    }

    /// Starts tracking `root` with a watch on the root only: the caller walks the tree
    /// and calls [`Tracker::watch_directory`] for each directory before listing it (the
    /// first snapshot does, so the tree is walked once, not twice).
    pub fn start_unwalked(root: &Path, config: TrackerConfig) -> Result<Tracker> {
        Tracker::start_with(root, config, Walk::ByCaller)
    }

    /// Watches the directory `rel` (relative to the root; not the directories below it),
    /// for a tracker started with [`Tracker::start_unwalked`]. Falls back to scanning when
    /// the watches run out.
    pub fn watch_directory(&self, rel: &str) {
        self.shared.lock().watch_one(rel);
    }

    fn start_with(root: &Path, config: TrackerConfig, walk: Walk) -> Result<Tracker> {
        let root = root
            .canonicalize()
            .map_err(io_context(format!("resolving {}", root.display())))?;
        let (barrier, _) = tokio::sync::watch::channel(0u64);
        let inotify = match Inotify::init() {
            Ok(inotify) => Some(inotify),
            Err(error) => {
                tracing::info!("tracker: no inotify ({error}); scanning instead");
                None
            }
        };
        let (barrier_dir, sentinel_wd, watches) = match &inotify {
            Some(inotify) => {
                let parent = config
                    .private_dir
                    .clone()
                    .unwrap_or_else(std::env::temp_dir);
                std::fs::create_dir_all(&parent)
                    .map_err(io_context(format!("creating {}", parent.display())))?;
                let dir = tempfile::Builder::new()
                    .prefix("pith-tracker-")
                    .tempdir_in(&parent)
                    .map_err(io_context(format!(
                        "creating a directory in {}",
                        parent.display()
                    )))?;
                let mut watches = inotify.watches();
                let sentinel = watches
                    .add(dir.path(), WatchMask::CREATE | WatchMask::ONLYDIR)
                    .map_err(io_context(format!("watching {}", dir.path().display())))?;
                (
                    Some(dir),
                    Some(sentinel.get_watch_descriptor_id()),
                    Some(watches),
                )
            }
            None => (None, None, None),
        };
        let poll_fd = match &inotify {
            Some(inotify) => Some(
                std::os::fd::AsFd::as_fd(inotify)
                    .try_clone_to_owned()
                    .map_err(io_context("duplicating the inotify descriptor"))?,
            ),
            None => None,
        };
        let mut inner = Inner::new(
            root.clone(),
            inotify,
            watches,
            sentinel_wd,
            config.max_watches,
            config.scan_cap,
        );
        match walk {
            Walk::Whole => inner.watch_tree("", false),
            Walk::ByCaller => inner.watch_one(""),
        }
        let shared = Arc::new(Shared {
            inner: std::sync::Mutex::new(inner),
            barrier,
        });
        if let Some(fd) = poll_fd {
            let thread_shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("pith-tracker".into())
                .spawn(move || watch::run(thread_shared, fd))
                .map_err(io_context("starting the tracker's thread"))?;
        }
        Ok(Tracker {
            root,
            shared,
            barrier_dir,
            next_barrier: AtomicU64::new(0),
            config,
        })
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How the tracker learns of changes now.
    pub fn mode(&self) -> TrackerMode {
        let inner = self.shared.lock();
        match &inner.mode {
            Mode::Watching => TrackerMode::Watching {
                watches: inner.watched.count(),
            },
            Mode::Scanning(state) => TrackerMode::Scanning {
                over_cap: state.over_cap(),
            },
        }
    }

    /// Every path changed since the last drain (or since the start), sorted; None when
    /// changes may have been missed since then (the caller must then compare the whole
    /// tree). For the checkpointer: one drainer per tracker.
    pub async fn drain(&self) -> Option<Vec<String>> {
        let settled = self.settle().await;
        let mut inner = self.shared.lock();
        let answer = if settled && !scanning_over_cap(&inner) {
            inner.log.since(inner.drained)
        } else {
            None
        };
        inner.drained = inner.log.generation();
        answer
    }

    /// Makes sure every change made before this call is in the log: a barrier when
    /// watching, a scan when scanning. False when that could not be done.
    async fn settle(&self) -> bool {
        let scanning = matches!(self.shared.lock().mode, Mode::Scanning(_));
        if scanning {
            let shared = Arc::clone(&self.shared);
            return tokio::task::spawn_blocking(move || shared.rescan())
                .await
                .unwrap_or(false);
        }
        self.barrier().await
    }

    async fn barrier(&self) -> bool {
        let Some(dir) = &self.barrier_dir else {
            return false;
        };
        let number = self.next_barrier.fetch_add(1, Ordering::SeqCst) + 1;
        let mut seen = self.shared.barrier.subscribe();
        let flag = dir.path().join(format!("b-{number}"));
        if let Err(error) = std::fs::create_dir(&flag) {
            tracing::warn!("tracker: barrier {}: {error}", flag.display());
            return false;
        }
        // Usually the event is queued already: read it here.
        let arrived_now = {
            let mut inner = self.shared.lock();
            inner.drain_events(&self.shared.barrier);
            *self.shared.barrier.borrow() >= number
        };
        let arrived = arrived_now
            || tokio::time::timeout(
                self.config.barrier_timeout,
                seen.wait_for(|seen| *seen >= number),
            )
            .await
            .is_ok_and(|result| result.is_ok());
        let _ = std::fs::remove_dir(&flag);
        if !arrived {
            tracing::warn!("tracker: barrier {number} did not arrive in time");
        }
        arrived
    }
}

fn scanning_over_cap(inner: &Inner) -> bool {
    matches!(&inner.mode, Mode::Scanning(state) if state.over_cap())
}

#[async_trait]
impl ChangeFeed for Tracker {
    async fn mark(&self) -> ChangeMark {
        // A failed barrier only makes late events count after the mark (an over-report).
        self.settle().await;
        ChangeMark(self.shared.lock().log.generation())
    }

    async fn changed_since(&self, since: ChangeMark) -> Option<Vec<String>> {
        if !self.settle().await {
            return None;
        }
        let inner = self.shared.lock();
        if scanning_over_cap(&inner) {
            return None;
        }
        inner.log.since(since.0)
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        // Wake the event thread so that it sees the flag and ends.
        if let Some(dir) = &self.barrier_dir {
            let _ = std::fs::create_dir(dir.path().join("stop"));
        }
    }
}
