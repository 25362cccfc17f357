//! The shadow index: the known current state of every kept workspace path, kept current
//! by re-reading the paths the tracker names. Its states' bytes are in the store, so the
//! `before` of any change is already kept when the change is found.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use pith_core::{FileChange, FileState};

use crate::disk::{capture, capture_with, Keep};
use crate::index;
use crate::paths;
use crate::rules::Rules;
use crate::store::Store;
use crate::walk::{walk, StatKey};

/// One path's known state.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub state: FileState,
    pub stat: Option<StatKey>,
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
    entries: BTreeMap<String, Entry>,
    rules: Rules,
}

impl Shadow {
    /// The first snapshot: walks `root`, keeps every file (reusing the previous
    /// session's index where the stat key is unchanged), and saves the index.
    pub(crate) fn snapshot(root: &Path, store: &Store) -> crate::Result<(Shadow, SnapshotReport)> {
        let started = Instant::now();
        let known = index::load(store.dir());
        let mut rules = Rules::new(root);
        let mut entries = BTreeMap::new();
        let mut report = SnapshotReport::default();
        let mut failure = None;
        walk(root, "", &mut rules, |rel, meta| {
            if meta.is_dir() {
                // Directories are states too (empty ones, modes): nothing to store.
                let mode = meta.permissions().mode() & 0o7777;
                let entry = Entry {
                    state: FileState::Dir { mode },
                    stat: Some(StatKey::of(meta)),
                };
                report.dirs += 1;
                entries.insert(rel.to_owned(), entry);
                return true;
            }
            let stat = StatKey::of(meta);
            let reused = known
                .get(rel)
                .filter(|(known_stat, hash)| *known_stat == stat && store.contains(hash));
            let entry = match reused {
                Some((_, hash)) => {
                    report.reused += 1;
                    Entry {
                        state: FileState::File {
                            hash: hash.clone(),
                            size: stat.size,
                            mode: stat.mode & 0o7777,
                        },
                        stat: Some(stat),
                    }
                }
                None => match capture_with(Keep::Store(store), &paths::absolute(root, rel), meta) {
                    Ok(captured) => {
                        report.added_bytes += captured.added_bytes;
                        Entry {
                            state: captured.state,
                            stat: captured.stat,
                        }
                    }
                    Err(error) => {
                        failure = Some(error);
                        return false;
                    }
                },
            };
            match &entry.state {
                FileState::Absent => return true,
                FileState::File { size, .. } => report.bytes += size,
                FileState::Omitted { size, reason } => {
                    report.bytes += size;
                    report.omitted.push((rel.to_owned(), reason.clone()));
                }
                FileState::Symlink { .. } | FileState::Dir { .. } => {}
            }
            report.files += 1;
            entries.insert(rel.to_owned(), entry);
            true
        });
        if let Some(error) = failure {
            return Err(error);
        }
        let shadow = Shadow { entries, rules };
        shadow.save_index(store)?;
        report.elapsed = started.elapsed();
        Ok((shadow, report))
    }

    /// Saves the stat index of the kept files for the next session.
    pub(crate) fn save_index(&self, store: &Store) -> crate::Result<()> {
        index::save(
            store.dir(),
            self.entries
                .iter()
                .filter_map(|(path, entry)| match (&entry.state, &entry.stat) {
                    (FileState::File { hash, .. }, Some(stat)) => {
                        Some((path.as_str(), stat, hash.as_str()))
                    }
                    _ => None,
                }),
        )
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
        let mut targets = BTreeSet::new();
        for path in changed {
            let now = std::fs::symlink_metadata(paths::absolute(root, path)).ok();
            let is_dir = now.as_ref().is_some_and(|meta| meta.is_dir());
            // A directory pith knows, still the same one (its mode changed, or an entry
            // came or went: those are named on their own): only itself is read again.
            let same_dir = is_dir
                && self.entries.get(path).is_some_and(|entry| {
                    matches!(entry.state, FileState::Dir { .. })
                        && entry.stat.map(|stat| stat.ino) == now.as_ref().map(|meta| meta.ino())
                });
            if !same_dir {
                let prefix = format!("{path}/");
                targets.extend(
                    self.entries
                        .range(prefix.clone()..)
                        .take_while(|(known, _)| known.starts_with(&prefix))
                        .map(|(known, _)| known.clone()),
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
                            .filter(|(_, entry)| entry.stat.is_some_and(|stat| stat.ino == ino))
                            .map(|(known, _)| known.clone()),
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
                .is_some_and(|entry| entry.stat == Some(StatKey::of(meta)));
            if !unchanged {
                targets.insert(rel.to_owned());
            }
            true
        });
        targets.extend(
            self.entries
                .keys()
                .filter(|path| !seen.contains(*path))
                .cloned(),
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
            let before = self
                .entries
                .get(&path)
                .map_or(FileState::Absent, |entry| entry.state.clone());
            if captured.state == FileState::Absent {
                self.entries.remove(&path);
            } else {
                self.entries.insert(
                    path.clone(),
                    Entry {
                        state: captured.state.clone(),
                        stat: captured.stat,
                    },
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

    /// The state the shadow knows for `path`.
    pub(crate) fn state(&self, path: &str) -> FileState {
        self.entries
            .get(path)
            .map_or(FileState::Absent, |entry| entry.state.clone())
    }

    /// The blobs the shadow's states reference (to keep through a GC).
    pub(crate) fn hashes(&self) -> HashSet<String> {
        self.entries
            .values()
            .filter_map(|entry| match &entry.state {
                FileState::File { hash, .. } => Some(hash.clone()),
                _ => None,
            })
            .collect()
    }
}
