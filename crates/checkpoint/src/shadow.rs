//! The shadow index: the known current state of every kept workspace path, kept current
//! by re-reading the paths the tracker names. Its states' bytes are in the store, so the
//! `before` of any change is already kept when the change is found.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ops::Bound;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use pith_core::{FileChange, FileState};

use crate::disk::{capture, capture_with, Keep};
use crate::git::{BlobId, GitIndex, GitObjects};
use crate::index;
use crate::paths;
use crate::rules::Rules;
use crate::store::{hex_bytes, hex_string, Store};
use crate::walk::{walk, StatKey};

/// One path's known state, compact: a shadow holds one per kept path (100,000 in a large
/// repository), so the two common kinds of file carry no heap string.
#[derive(Debug, Clone)]
pub(crate) enum Entry {
    /// A file git's index vouched for at the snapshot, not copied yet: its bytes are git's
    /// blob until they change ([`Shadow::resolved`] copies them into the store).
    Git { stat: StatKey, blob: BlobId },
    /// A regular file whose bytes are in the store: its size and mode are the stat key's,
    /// its hash the SHA-256 of its bytes.
    File { stat: StatKey, hash: Box<[u8; 32]> },
    /// Any other state (directories, symlinks, omitted files).
    Other(Box<(FileState, Option<StatKey>)>),
}

impl Entry {
    fn new(state: FileState, stat: Option<StatKey>) -> Entry {
        if let (FileState::File { hash, size, mode }, Some(stat)) = (&state, stat) {
            let fits = *size == stat.size && *mode == stat.mode & 0o7777;
            if let Some(hash) = hex_bytes(hash).filter(|_| fits) {
                return Entry::File {
                    stat,
                    hash: Box::new(hash),
                };
            }
        }
        Entry::Other(Box::new((state, stat)))
    }

    /// The stat key it was known by.
    fn stat(&self) -> Option<StatKey> {
        match self {
            Entry::Git { stat, .. } | Entry::File { stat, .. } => Some(*stat),
            Entry::Other(other) => other.1,
        }
    }

    /// The state; a file known by its git blob has an empty hash.
    fn state(&self) -> FileState {
        match self {
            Entry::Git { stat, .. } => FileState::File {
                hash: String::new(),
                size: stat.size,
                mode: stat.mode & 0o7777,
            },
            Entry::File { stat, hash } => FileState::File {
                hash: hex_string(hash),
                size: stat.size,
                mode: stat.mode & 0o7777,
            },
            Entry::Other(other) => other.0.clone(),
        }
    }

    fn is_dir(&self) -> bool {
        matches!(self, Entry::Other(other) if other.0.is_dir())
    }

    /// The hash of a regular file's bytes in the store, when it is one.
    fn stored_hash(&self) -> Option<String> {
        match self {
            Entry::File { hash, .. } => Some(hex_string(hash)),
            Entry::Other(other) => match &other.0 {
                FileState::File { hash, .. } => Some(hash.clone()),
                _ => None,
            },
            Entry::Git { .. } => None,
        }
    }
}

/// What the first snapshot of a session did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SnapshotReport {
    /// Paths recorded (files, symlinks and omitted ones).
    pub files: usize,
    /// Directories recorded (their modes; an empty directory is part of the state).
    pub dirs: usize,
    /// Their total size in bytes (regular files, omitted ones included).
    pub bytes: u64,
    /// Bytes the snapshot added to the store (new content).
    pub added_bytes: u64,
    /// Files whose hash came from the previous session's index (not read again).
    pub reused: usize,
    /// Files git's index vouched for: not read, not copied (their bytes are git's blobs
    /// until they change).
    pub from_git: usize,
    /// Paths left out of the store (over the per-file cap, unreadable, special files), with
    /// the reason.
    pub omitted: Vec<(String, String)>,
    /// How long it took.
    pub elapsed: Duration,
}

/// What one observation found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Observation {
    /// The paths whose state changed since the last observation, sorted by path.
    pub changes: Vec<FileChange>,
    /// Bytes of new content this observation added to the store.
    pub bytes_added: u64,
}

/// The shadow and the rules it was built with.
#[derive(Debug)]
pub(crate) struct Shadow {
    entries: BTreeMap<Box<str>, Entry>,
    rules: Rules,
    /// git's object store, for the files recorded by blob id.
    git: Option<GitObjects>,
}

impl Shadow {
    /// The first snapshot: walks `root`, keeps every file (by its git blob id where git's
    /// index vouches for it, reusing the previous session's index where the stat key is
    /// unchanged, copying it into the store otherwise), and saves the index when it
    /// changed. `entering` is called with each kept directory below the root before the
    /// walk lists it (the tracker watches it then: one walk does both).
    pub(crate) fn snapshot_calling(
        root: &Path,
        store: &Store,
        entering: &mut dyn FnMut(&str),
    ) -> crate::Result<(Shadow, SnapshotReport)> {
        let started = Instant::now();
        let mut first = FirstSnapshot {
            root,
            store,
            git: GitIndex::open(root),
            known: index::load(store.dir()),
            report: SnapshotReport::default(),
        };
        let mut rules = Rules::new(root);
        // Sized for the tree up front: a vector of 100,000 entries is not copied as it
        // grows, and the map is built from it sorted, its nodes full.
        let expected = first.git.as_ref().map_or(0, GitIndex::len) + first.known.len();
        let mut found: Vec<(Box<str>, Entry)> = Vec::with_capacity(expected + expected / 8 + 64);
        let mut failure = None;
        walk(root, "", &mut rules, |rel, meta| {
            if meta.is_dir() {
                entering(rel);
                // Directories are states too (empty ones, modes): nothing to store.
                let mode = meta.permissions().mode() & 0o7777;
                let entry = Entry::new(FileState::Dir { mode }, Some(StatKey::of(meta)));
                first.report.dirs += 1;
                found.push((rel.into(), entry));
                return true;
            }
            match first.file(rel, meta) {
                Ok(Some(entry)) => found.push((rel.into(), entry)),
                Ok(None) => {}
                Err(error) => {
                    failure = Some(error);
                    return false;
                }
            }
            true
        });
        if let Some(error) = failure {
            return Err(error);
        }
        let FirstSnapshot {
            git,
            known,
            mut report,
            ..
        } = first;
        // git's index is not needed any more (about 10 MB at 100,000 files): freed before
        // the shadow's map is built.
        let git = git.map(|index| index.objects());
        found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // An index that would come out as it was read (every file it names reused, none
        // gone, none new) is not written again.
        let copied_files = found
            .iter()
            .filter(|(_, entry)| matches!(entry, Entry::File { .. }))
            .count();
        if report.reused != copied_files || known.len() != report.reused {
            index::save(store.dir(), &known, || {
                stored_files(found.iter().map(|(path, entry)| (path, entry)))
            })?;
        }
        drop(known);
        let shadow = Shadow {
            entries: found.into_iter().collect(),
            rules,
            git,
        };
        report.elapsed = started.elapsed();
        Ok((shadow, report))
    }

    /// Saves the stat index of the kept files for the next session: what changed since
    /// the index on disk is appended to its journal.
    pub(crate) fn save_index(&self, store: &Store) -> crate::Result<()> {
        let known = index::load(store.dir());
        index::save(store.dir(), &known, || stored_files(self.entries.iter()))?;
        Ok(())
    }

    /// Re-reads `changed` (paths relative to the root) and what they stand for: a path
    /// that was a directory stands for the paths the shadow knows below it, a path that is
    /// a new directory now for the kept paths below it (a directory pith already knew
    /// stands only for itself); a file with other hard links for its other names; and
    /// the directories on the way that pith did not know yet. Returns the changes,
    /// sorted.
    pub(crate) fn observe(
        &mut self,
        root: &Path,
        store: &Store,
        changed: &[String],
    ) -> crate::Result<Observation> {
        let mut targets: BTreeSet<String> = BTreeSet::new();
        for path in changed {
            let now = std::fs::symlink_metadata(paths::absolute(root, path)).ok();
            let is_dir = now.as_ref().is_some_and(|meta| meta.is_dir());
            // A directory pith knows, still the same one (its mode changed, or an entry
            // came or went: those are named on their own): only itself is read again.
            let same_dir = is_dir
                && self.entries.get(path.as_str()).is_some_and(|entry| {
                    entry.is_dir()
                        && entry.stat().map(|stat| stat.ino) == now.as_ref().map(|meta| meta.ino())
                });
            if !same_dir {
                let prefix = format!("{path}/");
                targets.extend(
                    self.entries
                        .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                        .take_while(|(known, _)| known.starts_with(&prefix))
                        .map(|(known, _)| known.to_string()),
                );
            }
            if is_dir && !same_dir {
                walk(root, path, &mut self.rules, |rel, _| {
                    targets.insert(rel.to_owned());
                    true
                });
            }
            targets.insert(path.clone());
            // Directories created on the way (a tool that writes `new/dir/file` creates
            // them) are changes too: each ancestor the shadow does not know yet.
            let mut ancestor = paths::parent(path);
            while !ancestor.is_empty()
                && !self.entries.contains_key(ancestor)
                && !self.rules.is_ignored(ancestor, true)
            {
                targets.insert(ancestor.to_owned());
                ancestor = paths::parent(ancestor);
            }
            // A file with other hard links changed under their names too: the shadow's
            // paths with its inode are read again.
            if let Some(meta) = &now {
                if meta.is_file() && meta.nlink() > 1 {
                    let ino = meta.ino();
                    targets.extend(
                        self.entries
                            .iter()
                            .filter(|(_, entry)| entry.stat().is_some_and(|stat| stat.ino == ino))
                            .map(|(known, _)| known.to_string()),
                    );
                }
            }
        }
        self.reread(root, store, targets.into_iter())
    }

    /// Compares the whole tree with the shadow (after the tracker lost track): re-reads
    /// every file whose stat key changed, and every known path that is gone.
    pub(crate) fn rescan(&mut self, root: &Path, store: &Store) -> crate::Result<Observation> {
        let mut targets = BTreeSet::new();
        let mut seen = HashSet::new();
        let entries = &self.entries;
        walk(root, "", &mut self.rules, |rel, meta| {
            seen.insert(rel.to_owned());
            let unchanged = entries
                .get(rel)
                .is_some_and(|entry| entry.stat() == Some(StatKey::of(meta)));
            if !unchanged {
                targets.insert(rel.to_owned());
            }
            true
        });
        targets.extend(
            self.entries
                .keys()
                .filter(|path| !seen.contains(&***path))
                .map(|path| path.to_string()),
        );
        self.reread(root, store, targets.into_iter())
    }

    fn reread(
        &mut self,
        root: &Path,
        store: &Store,
        targets: impl Iterator<Item = String>,
    ) -> crate::Result<Observation> {
        let mut observation = Observation::default();
        for path in targets {
            let captured = capture(Keep::Store(store), &paths::absolute(root, &path))?;
            observation.bytes_added += captured.added_bytes;
            // A file known by its git blob, read again unchanged (same stat), has just been
            // stored by the capture: no need to read git's copy.
            let unchanged = captured.stat.is_some()
                && self.entries.get(path.as_str()).is_some_and(|entry| {
                    matches!(entry, Entry::Git { .. }) && entry.stat() == captured.stat
                });
            let before = if unchanged {
                captured.state.clone()
            } else {
                self.resolved(&path, store)?
            };
            if captured.state == FileState::Absent {
                self.entries.remove(path.as_str());
            } else {
                self.entries.insert(
                    path.as_str().into(),
                    Entry::new(captured.state.clone(), captured.stat),
                );
            }
            if before != captured.state {
                observation.changes.push(FileChange {
                    path,
                    before,
                    after: captured.state,
                });
            }
        }
        Ok(observation)
    }

    /// The state the shadow knows for `path` (a file known by its git blob is copied into
    /// the store first).
    pub(crate) fn state(&mut self, path: &str, store: &Store) -> crate::Result<FileState> {
        self.resolved(path, store)
    }

    /// The known state of `path`, with a file known by its git blob copied into the store
    /// now: its bytes are read from git's object store, checked against the recorded size
    /// and stored. A blob git no longer has (or that differs) makes the state omitted,
    /// with why.
    fn resolved(&mut self, path: &str, store: &Store) -> crate::Result<FileState> {
        let Some(entry) = self.entries.get_mut(path) else {
            return Ok(FileState::Absent);
        };
        let Entry::Git { stat, blob } = *entry else {
            return Ok(entry.state());
        };
        let (size, mode) = (stat.size, stat.mode & 0o7777);
        let bytes = self.git.as_ref().and_then(|git| git.read(blob));
        let state = match bytes {
            Some(bytes) if bytes.len() as u64 == size => FileState::File {
                hash: store.put(&bytes)?.hash,
                size,
                mode,
            },
            Some(_) => FileState::Omitted {
                size,
                reason: "git's copy of it differs from the file (a checkout filter?)".into(),
            },
            None => FileState::Omitted {
                size,
                reason: "its content was in git's object store, which no longer has it".into(),
            },
        };
        *entry = Entry::new(state.clone(), Some(stat));
        Ok(state)
    }

    /// The blobs the shadow's states reference (to keep through a GC).
    pub(crate) fn hashes(&self) -> HashSet<String> {
        self.entries
            .values()
            .filter_map(Entry::stored_hash)
            .collect()
    }
}

/// The files of `entries` whose bytes are in the store, as the stat index records them.
fn stored_files<'a>(
    entries: impl Iterator<Item = (&'a Box<str>, &'a Entry)>,
) -> impl Iterator<Item = (&'a str, StatKey, [u8; 32])> {
    entries.filter_map(|(path, entry)| match entry {
        Entry::File { stat, hash } => Some((&**path, *stat, **hash)),
        _ => None,
    })
}

/// What the first snapshot's walk needs for each file.
struct FirstSnapshot<'a> {
    root: &'a Path,
    store: &'a Store,
    git: Option<GitIndex>,
    known: index::Known,
    report: SnapshotReport,
}

impl FirstSnapshot<'_> {
    /// The entry of the file (not a directory) `rel` with lstat `meta`: by its git blob
    /// id, by the stat index's hash, or copied into the store now; None when it vanished.
    fn file(&mut self, rel: &str, meta: &std::fs::Metadata) -> crate::Result<Option<Entry>> {
        let (store, report) = (self.store, &mut self.report);
        let stat = StatKey::of(meta);
        let within_cap = stat.size <= store.config().max_file_bytes;
        let blob = (self.git.as_mut())
            .filter(|_| within_cap)
            .and_then(|git| git.clean_blob(rel, meta));
        if let Some(blob) = blob {
            report.from_git += 1;
            report.files += 1;
            report.bytes += stat.size;
            return Ok(Some(Entry::Git { stat, blob }));
        }
        // A file whose stat key the previous session's index has, and whose blob the
        // store still holds, is not read again.
        let reused = (self.known.get(rel))
            .filter(|(known_stat, hash)| *known_stat == stat && store.contains_digest(hash));
        if let Some((_, hash)) = reused {
            report.reused += 1;
            report.files += 1;
            report.bytes += stat.size;
            let hash = Box::new(*hash);
            return Ok(Some(Entry::File { stat, hash }));
        }
        let captured = capture_with(Keep::Store(store), &paths::absolute(self.root, rel), meta)?;
        report.added_bytes += captured.added_bytes;
        match &captured.state {
            FileState::Absent => return Ok(None),
            FileState::File { size, .. } => report.bytes += size,
            FileState::Omitted { size, reason } => {
                report.bytes += size;
                report.omitted.push((rel.to_owned(), reason.clone()));
            }
            FileState::Symlink { .. } | FileState::Dir { .. } => {}
        }
        report.files += 1;
        Ok(Some(Entry::new(captured.state, captured.stat)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shadow holds one entry per kept path: the two common kinds (a file git vouches
    /// for, a stored file) stay small and carry no heap string (docs/benchmarks.md, peak
    /// memory at 100,001 files).
    #[test]
    fn entries_are_compact_and_keep_their_state() {
        assert!(
            std::mem::size_of::<Entry>() <= 56,
            "{}",
            std::mem::size_of::<Entry>()
        );
        let stat = StatKey {
            size: 5,
            mtime_ns: 1,
            ino: 2,
            mode: 0o100_640,
        };
        let hash = crate::store::hash_bytes(b"hello");
        let state = FileState::File {
            hash: hash.clone(),
            size: 5,
            mode: 0o640,
        };
        let entry = Entry::new(state.clone(), Some(stat));
        assert!(matches!(entry, Entry::File { .. }));
        assert_eq!(entry.state(), state);
        assert_eq!(entry.stored_hash(), Some(hash));
        assert_eq!(entry.stat(), Some(stat));
        // A state the compact form cannot hold exactly is kept as it is.
        let odd = FileState::File {
            hash: "not hex".into(),
            size: 5,
            mode: 0o640,
        };
        let entry = Entry::new(odd.clone(), Some(stat));
        assert_eq!(entry.state(), odd);
        let dir = Entry::new(FileState::Dir { mode: 0o700 }, None);
        assert!(dir.is_dir());
        assert_eq!(dir.stored_hash(), None);
        assert_eq!(hex_bytes("00"), None);
        assert_eq!(hex_bytes(&"A".repeat(64)), None, "lowercase only");
    }
}
