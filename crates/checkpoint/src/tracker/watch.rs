//! The tracker's inotify side: one non-recursive watch per kept directory, what each event
//! means for the [`ChangeLog`], and the thread that applies events as they come.
//!
//! Events are read and applied only under the tracker's lock, by the thread (woken by
//! poll) or by a question itself: inotify queues an event during the system call that
//! caused it, so a question that drains the queue under the lock has every earlier change
//! without waiting for another thread to be scheduled.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use tokio::sync::watch;

use super::log::ChangeLog;
use super::scan::ScanState;
use crate::paths;
use crate::rules::Rules;
use crate::walk::walk_names;

/// What a workspace directory's watch asks for. Not IN_OPEN or IN_ACCESS: reads are not
/// changes, and the snapshot reads every file.
const DIRECTORY_MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::ONLYDIR)
    .union(WatchMask::DONT_FOLLOW)
    .union(WatchMask::EXCL_UNLINK);

/// How the tracker learns of changes.
#[derive(Debug)]
pub(crate) enum Mode {
    /// inotify events.
    Watching,
    /// A stat scan on each question (watches ran out or were not allowed).
    Scanning(ScanState),
}

/// The watches, by descriptor and by directory.
#[derive(Debug)]
pub(crate) struct Watched {
    watches: Option<Watches>,
    by_wd: HashMap<i32, String>,
    by_dir: HashMap<String, WatchDescriptor>,
    max: usize,
}

/// The kernel or the configuration allows no more watches.
struct Exhausted;

impl Watched {
    fn add(&mut self, root: &std::path::Path, rel: &str) -> Result<(), Exhausted> {
        if self.by_dir.contains_key(rel) {
            return Ok(());
        }
        if self.by_dir.len() >= self.max {
            return Err(Exhausted);
        }
        let Some(watches) = self.watches.as_mut() else {
            return Err(Exhausted);
        };
        match watches.add(paths::absolute(root, rel), DIRECTORY_MASK) {
            Ok(wd) => {
                self.by_wd
                    .insert(wd.get_watch_descriptor_id(), rel.to_owned());
                self.by_dir.insert(rel.to_owned(), wd);
                Ok(())
            }
            Err(error) if error.kind() == io::ErrorKind::StorageFull => Err(Exhausted),
            Err(error) => {
                // Gone already, or not a directory any more: its parent's events tell.
                tracing::debug!("tracker: cannot watch {rel:?}: {error}");
                Ok(())
            }
        }
    }

    fn remove_below(&mut self, rel: &str) {
        let below: Vec<String> = self
            .by_dir
            .keys()
            .filter(|dir| paths::is_within(dir, rel))
            .cloned()
            .collect();
        for dir in below {
            if let Some(wd) = self.by_dir.remove(&dir) {
                self.by_wd.remove(&wd.get_watch_descriptor_id());
                if let Some(watches) = self.watches.as_mut() {
                    let _ = watches.remove(wd);
                }
            }
        }
    }

    /// How many workspace directories are watched.
    pub(crate) fn count(&self) -> usize {
        self.by_dir.len()
    }
}

/// Everything the event thread and the questions share, behind one lock.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) root: PathBuf,
    pub(crate) rules: Rules,
    pub(crate) log: ChangeLog,
    pub(crate) mode: Mode,
    pub(crate) watched: Watched,
    /// The generation the last drain reached.
    pub(crate) drained: u64,
    pub(crate) stopped: bool,
    inotify: Option<Inotify>,
    buffer: Vec<u8>,
    sentinel_wd: Option<i32>,
    scan_cap: usize,
}

impl Inner {
    pub(crate) fn new(
        root: PathBuf,
        inotify: Option<Inotify>,
        watches: Option<Watches>,
        sentinel_wd: Option<i32>,
        max_watches: usize,
        scan_cap: usize,
    ) -> Inner {
        Inner {
            rules: Rules::new(&root),
            root,
            log: ChangeLog::default(),
            mode: Mode::Watching,
            watched: Watched {
                watches,
                by_wd: HashMap::new(),
                by_dir: HashMap::new(),
                max: max_watches,
            },
            drained: 0,
            stopped: false,
            inotify,
            buffer: vec![0; 64 * 1024],
            sentinel_wd,
            scan_cap,
        }
    }

    /// Watches the one directory `rel` (not those below it) and loads its ignore rules,
    /// for a walk someone else does: the first snapshot calls it for each directory
    /// before listing it, so a change to anything the snapshot reads there is seen.
    pub(crate) fn watch_one(&mut self, rel: &str) {
        if !matches!(self.mode, Mode::Watching) {
            return;
        }
        self.rules.load_dir(rel);
        if self.watched.add(&self.root, rel).is_err() {
            self.start_scanning();
        }
    }

    /// Watches the directory `rel` and every kept directory below it; with `record`, every
    /// path found below is recorded as changed (a directory created or moved in). Falls
    /// back to scanning when the watches run out.
    pub(crate) fn watch_tree(&mut self, rel: &str, record: bool) {
        if self.watched.add(&self.root, rel).is_err() {
            self.start_scanning();
            return;
        }
        let mut exhausted = false;
        let Inner {
            root,
            rules,
            log,
            watched,
            ..
        } = self;
        walk_names(root, rel, rules, |child, is_dir| {
            if is_dir && watched.add(root, child).is_err() {
                exhausted = true;
                return false;
            }
            if record {
                log.record(child);
            }
            true
        });
        if exhausted {
            self.start_scanning();
        }
    }

    /// Drops every watch and answers from scans from now on.
    pub(crate) fn start_scanning(&mut self) {
        if matches!(self.mode, Mode::Scanning(_)) {
            return;
        }
        tracing::info!(
            "tracker: inotify watches exhausted after {}, scanning {} instead",
            self.watched.count(),
            self.root.display()
        );
        self.watched.remove_below("");
        self.log.lose();
        self.mode = Mode::Scanning(ScanState::new(&self.root, &mut self.rules, self.scan_cap));
    }

    /// Reads and applies every queued event, without blocking. False when inotify failed
    /// (the tracker then scans).
    pub(crate) fn drain_events(&mut self, barrier: &watch::Sender<u64>) -> bool {
        loop {
            let Some(inotify) = self.inotify.as_mut() else {
                return false;
            };
            let events: Vec<(i32, EventMask, Option<OsString>)> =
                match inotify.read_events(&mut self.buffer) {
                    Ok(events) => events
                        .map(|event| {
                            (
                                event.wd.get_watch_descriptor_id(),
                                event.mask,
                                event.name.map(OsStr::to_os_string),
                            )
                        })
                        .collect(),
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => return true,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                    Err(error) => {
                        tracing::warn!("tracker: reading inotify events failed: {error}");
                        self.inotify = None;
                        self.start_scanning();
                        return false;
                    }
                };
            if events.is_empty() {
                return true;
            }
            for (wd, mask, name) in events {
                self.handle(wd, mask, name.as_deref(), barrier);
            }
        }
    }

    /// Applies one inotify event.
    fn handle(
        &mut self,
        wd: i32,
        mask: EventMask,
        name: Option<&OsStr>,
        barrier: &watch::Sender<u64>,
    ) {
        if mask.contains(EventMask::Q_OVERFLOW) {
            tracing::info!("tracker: the inotify queue overflowed");
            self.log.lose();
            // Directories created meanwhile may have no watch yet.
            if matches!(self.mode, Mode::Watching) {
                self.watch_tree("", false);
            }
            return;
        }
        if Some(wd) == self.sentinel_wd {
            if mask.contains(EventMask::CREATE) {
                let number = name
                    .and_then(OsStr::to_str)
                    .and_then(|name| name.strip_prefix("b-"))
                    .and_then(|n| n.parse::<u64>().ok());
                if let Some(number) = number {
                    barrier.send_modify(|seen| *seen = (*seen).max(number));
                }
            }
            return;
        }
        if !matches!(self.mode, Mode::Watching) {
            return;
        }
        if mask.contains(EventMask::IGNORED) {
            if let Some(dir) = self.watched.by_wd.remove(&wd) {
                let same = self
                    .watched
                    .by_dir
                    .get(&dir)
                    .is_some_and(|current| current.get_watch_descriptor_id() == wd);
                if same {
                    self.watched.by_dir.remove(&dir);
                }
            }
            return;
        }
        let Some(dir) = self.watched.by_wd.get(&wd).cloned() else {
            return;
        };
        // Events about the directory itself are told by its parent's watch.
        let Some(name) = name.and_then(OsStr::to_str) else {
            return;
        };
        let rel = paths::join(&dir, name);
        let is_dir = mask.contains(EventMask::ISDIR);
        if name == ".gitignore" {
            self.rules.load_dir(&dir);
            // What is ignored changed: paths pith tracked may now be ignored (their
            // removal would go unseen) and ignored ones tracked. The next observation
            // compares the whole tree with what pith knows (a path it knew is never hidden
            // by a new rule), and directories no longer ignored get their watches.
            self.log.lose();
            if matches!(self.mode, Mode::Watching) {
                self.watch_tree("", false);
            }
        }
        if self.rules.is_ignored(&rel, is_dir) {
            return;
        }
        // A directory is a state too (created, removed, its mode changed); one moved away
        // also stands for its files, which left without events of their own.
        self.log.record(&rel);
        if !is_dir {
            return;
        }
        if mask.intersects(EventMask::MOVED_FROM | EventMask::DELETE) {
            self.watched.remove_below(&rel);
        }
        if mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
            self.watch_tree(&rel, true);
        }
    }
}

/// The tracker's shared half.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) inner: Mutex<Inner>,
    /// The highest barrier number the event thread has seen.
    pub(crate) barrier: watch::Sender<u64>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// In scanning mode, scans and records what changed; false when the tree is over the
    /// scan cap (it is then not scanned again). True in watching mode (nothing to do).
    pub(crate) fn rescan(&self) -> bool {
        let mut inner = self.lock();
        let Inner {
            root,
            rules,
            log,
            mode,
            ..
        } = &mut *inner;
        let Mode::Scanning(state) = mode else {
            return true;
        };
        if state.over_cap() {
            // Too large to scan on every question: the answer stays "unknown".
            return false;
        }
        match state.rescan(root, rules) {
            Some(changed) => {
                for path in changed {
                    log.record(&path);
                }
                true
            }
            None => false,
        }
    }
}

/// The event thread: waits until events are queued and applies them, until the tracker
/// stops. `fd` is a duplicate of the inotify descriptor, polled without the lock.
pub(crate) fn run(shared: Arc<Shared>, fd: OwnedFd) {
    use rustix::event::{poll, PollFd, PollFlags};
    loop {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => {
                tracing::warn!("tracker: polling inotify failed: {error}");
                shared.lock().start_scanning();
                return;
            }
        }
        let mut inner = shared.lock();
        if inner.stopped || !inner.drain_events(&shared.barrier) {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_overflow_voids_older_marks_and_rewatches_what_was_missed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let inotify = Inotify::init().unwrap();
        let watches = inotify.watches();
        let mut inner = Inner::new(
            root.clone(),
            Some(inotify),
            Some(watches),
            None,
            usize::MAX,
            100,
        );
        let (barrier, _) = watch::channel(0u64);
        inner.watch_tree("", false);
        let mark = inner.log.generation();
        std::fs::write(root.join("a"), "a").unwrap();
        assert!(inner.drain_events(&barrier));
        assert_eq!(inner.log.since(mark).unwrap(), ["a"]);

        // Events lost in an overflow: a directory created meanwhile has no watch.
        std::fs::create_dir(root.join("late")).unwrap();
        let mut buffer = vec![0; 4096];
        let lost = inner
            .inotify
            .as_mut()
            .unwrap()
            .read_events(&mut buffer)
            .unwrap()
            .count();
        assert!(lost > 0);
        inner.handle(0, EventMask::Q_OVERFLOW, None, &barrier);
        assert_eq!(inner.log.since(mark), None, "changes may have been missed");
        let after = inner.log.generation();
        std::fs::write(root.join("late/x"), "x").unwrap();
        assert!(inner.drain_events(&barrier));
        assert_eq!(
            inner.log.since(after).unwrap(),
            ["late/x"],
            "the missed directory is watched now"
        );
    }
}
