//! Rewind: which state each path goes back to, a plan that says what a rewind would do
//! (and what it refuses), and applying it so that a crash leaves every file old or new.
//!
//! Every plan is decided from the current state first: a path already in its target
//! state needs nothing, is never refused and never called changed outside.
//!
//! Safety rules: a path must be relative and plain (no `..`, `.`, or empty parts); no
//! existing parent of it may be a symlink or a file (unless the rewind removes that file
//! first); writes never follow a symlink (a link in the way is replaced, not written
//! through). Before anything is overwritten, its current content is stored, so a rewind
//! is itself undoable.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use pith_core::{FileChange, FileState};
use serde::{Deserialize, Serialize};

use crate::disk::{capture, is_absent, Keep};
use crate::error::{io_context, CheckpointError, Refusal, Result};
use crate::paths;
use crate::store::Store;

/// The name prefix of a rewind's temp files.
const TEMP_PREFIX: &str = ".pith-rewind-";

/// Where a rewind takes one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The state to put back: the `before` of the first change after the rewind point.
    pub restore: FileState,
    /// The state pith last knew: the `after` of the last change. A different state on
    /// disk means something outside pith changed the path since.
    pub last_known: FileState,
}

/// The targets of a rewind to just before `changes` (every change recorded after the
/// rewind point, oldest first).
pub fn rewind_targets<'a>(
    changes: impl IntoIterator<Item = &'a FileChange>,
) -> BTreeMap<String, Target> {
    let mut targets: BTreeMap<String, Target> = BTreeMap::new();
    for change in changes {
        targets
            .entry(change.path.clone())
            .and_modify(|target| target.last_known = change.after.clone())
            .or_insert_with(|| Target {
                restore: change.before.clone(),
                last_known: change.after.clone(),
            });
    }
    targets
}

/// One path a rewind will write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedWrite {
    /// The workspace path.
    pub path: String,
    /// What it holds now (hashed, not stored).
    pub current: FileState,
    /// What it will hold.
    pub target: FileState,
}

impl PlannedWrite {
    /// The path as front-ends show it: a directory's with a trailing `/`.
    pub fn shown_path(&self) -> String {
        pith_core::shown_path(&self.path, &self.current, &self.target)
    }
}

/// What a rewind would do, computed without writing anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestorePlan {
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// The paths to write (those already in their target state are left out), by path.
    pub writes: Vec<PlannedWrite>,
    /// Paths whose state on disk is not the one pith last knew: changed outside pith. A
    /// rewind overwrites them; ask first.
    pub changed_outside: Vec<String>,
    /// Paths the rewind cannot restore, with why. [`apply`] refuses a plan with any.
    pub refused: Vec<Refusal>,
    /// Temp files an interrupted rewind left in these directories (`.pith-rewind-…`):
    /// [`apply`] removes them.
    pub stray_temp_files: Vec<String>,
    /// Paths left as they are because their content was not kept
    /// ([`RestorePlan::skip_unkept`]): named to the user, never restored.
    pub skipped: Vec<Refusal>,
}

/// How a refusal for a content pith did not keep begins (over the per-file cap).
const NOT_KEPT: &str = "its content was not kept";
/// How a refusal for a content no longer in the store begins (the size cap, damage).
const NO_LONGER_STORED: &str = "its content is no longer in the checkpoint store";

impl RestorePlan {
    /// Moves the refusals for contents pith does not have (a file over the per-file cap, a
    /// copy the size cap removed) to [`RestorePlan::skipped`], so that the rest can be
    /// restored (`--skip-omitted`). Other refusals (unsafe paths) stay. Returns how many
    /// were moved.
    pub fn skip_unkept(&mut self) -> usize {
        let (unkept, kept): (Vec<Refusal>, Vec<Refusal>) = std::mem::take(&mut self.refused)
            .into_iter()
            .partition(|refusal| {
                refusal.reason.starts_with(NOT_KEPT) || refusal.reason.starts_with(NO_LONGER_STORED)
            });
        self.refused = kept;
        let moved = unkept.len();
        self.skipped.extend(unkept);
        moved
    }
}

/// Plans a rewind of `root` to `targets`, reading the disk and checking the store (every
/// blob it needs is read and verified).
pub fn plan(root: &Path, store: &Store, targets: &BTreeMap<String, Target>) -> Result<RestorePlan> {
    let root = root
        .canonicalize()
        .map_err(io_context(format!("resolving {}", root.display())))?;
    let removals: HashSet<&str> = targets
        .iter()
        .filter(|(_, target)| target.restore == FileState::Absent)
        .map(|(path, _)| path.as_str())
        .collect();
    // Paths where a file now gives way: removed, or a directory again.
    let gives_way: HashSet<&str> = targets
        .iter()
        .filter(|(_, target)| matches!(target.restore, FileState::Absent | FileState::Dir { .. }))
        .map(|(path, _)| path.as_str())
        .collect();
    let mut plan = RestorePlan {
        root: root.clone(),
        writes: Vec::new(),
        changed_outside: Vec::new(),
        refused: Vec::new(),
        stray_temp_files: Vec::new(),
        skipped: Vec::new(),
    };
    let mut strays = BTreeSet::new();
    let mut dirs_seen = HashSet::new();
    let keep = Keep::HashOnly {
        max_file_bytes: store.config().max_file_bytes,
    };
    for (path, target) in targets {
        let mut refuse = |reason: String| {
            plan.refused.push(Refusal {
                path: path.clone(),
                reason,
            })
        };
        if let Some(reason) = unsafe_shape(path) {
            refuse(reason.to_owned());
            continue;
        }
        let abs = paths::absolute(&root, path);
        if let Some(reason) = unsafe_parent(&root, path, &gives_way) {
            // A path to be removed that is not there is in its target state already
            // (its parent became a file, as an earlier rewind may have left it): nothing
            // to do, nothing to refuse.
            if target.restore == FileState::Absent && fs::symlink_metadata(&abs).is_err() {
                continue;
            }
            refuse(reason);
            continue;
        }
        let dir = paths::parent(path);
        if dirs_seen.insert(dir) {
            stray_temp_files(&root, dir, &mut strays);
        }
        let is_dir_now = fs::symlink_metadata(&abs).is_ok_and(|meta| meta.is_dir());
        if is_dir_now && !target.restore.is_dir() {
            // A directory goes (or gives way to a file) only when the rewind empties it;
            // one that keeps entries the rewind does not remove stays, with them.
            let mut left = Vec::new();
            entries_below(&abs, path, &mut left);
            let kept = left
                .iter()
                .find(|entry| !removals.contains(entry.trim_end_matches('/')));
            match (kept, &target.restore) {
                (Some(_), FileState::Absent) => continue,
                (Some(kept), _) => {
                    refuse(format!("is a directory now, and {kept} in it would stay"));
                    continue;
                }
                (None, _) => {}
            }
        }
        let current = capture(keep, &abs)?.state;
        // Decided from the current state first: a path already in its target state needs
        // nothing, so it is neither written nor an alarm, whoever put it there.
        if current == target.restore {
            continue;
        }
        if current != target.last_known {
            plan.changed_outside.push(path.clone());
        }
        match &target.restore {
            FileState::Omitted { reason, .. } => {
                refuse(format!("{NOT_KEPT} ({reason})"));
                continue;
            }
            FileState::File { hash, .. } if store.get(hash)?.is_none() => {
                refuse(format!(
                    "{NO_LONGER_STORED} (removed by the size cap, or damaged)"
                ));
                continue;
            }
            _ => {}
        }
        if let FileState::Omitted { reason, .. } = &current {
            refuse(format!(
                "its current content cannot be saved before it is overwritten ({reason})"
            ));
            continue;
        }
        plan.writes.push(PlannedWrite {
            path: path.clone(),
            current,
            target: target.restore.clone(),
        });
    }
    plan.stray_temp_files = strays.into_iter().collect();
    Ok(plan)
}

/// The paths of `plan` that are not in their target state now, each with what it holds:
/// after [`apply`], re-reading every path it wrote, so that a rewind says "done" only
/// when it is (a program that rewrote a file in between, a file system that lost a
/// write). Empty when every write holds.
pub fn verify(plan: &RestorePlan, max_file_bytes: u64) -> Result<Vec<String>> {
    let keep = Keep::HashOnly { max_file_bytes };
    let mut wrong = Vec::new();
    for write in &plan.writes {
        let now = capture(keep, &paths::absolute(&plan.root, &write.path))?.state;
        if now != write.target {
            wrong.push(write.path.clone());
        }
    }
    Ok(wrong)
}

/// The current state of every path `plan` writes, its content stored so that the rewind
/// can be undone; a path whose content cannot be kept is unsafe to overwrite.
fn current_states(plan: &RestorePlan, store: &Store) -> Result<Vec<FileState>> {
    let root = &plan.root;
    let mut befores = Vec::with_capacity(plan.writes.len());
    for write in &plan.writes {
        let state = capture(Keep::Store(store), &paths::absolute(root, &write.path))?.state;
        if let FileState::Omitted { reason, .. } = &state {
            return Err(CheckpointError::Unsafe {
                path: write.path.clone(),
                reason: format!(
                    "its current content cannot be saved before it is overwritten ({reason})"
                ),
            });
        }
        befores.push(state);
    }
    Ok(befores)
}

/// The order of `plan`'s writes: removals first, deepest first (a file may stand where
/// a directory goes back), then the writes, parents before children.
fn write_order(plan: &RestorePlan) -> Vec<usize> {
    let mut order: Vec<usize> = (0..plan.writes.len()).collect();
    order.sort_by_key(|&i| {
        let write = &plan.writes[i];
        let removal = write.target == FileState::Absent;
        let depth = write.path.matches('/').count();
        (
            !removal,
            if removal { usize::MAX - depth } else { depth },
            write.path.clone(),
        )
    });
    order
}

/// Applies `plan`: stores the current content of every path it writes (so the rewind can
/// be undone), then writes each path through a temp file renamed over it, and notes what
/// it wrote in the store's rewind journal. Returns the changes made (`before` = what was
/// there, `after` = the target), by path. Refuses the whole plan, writing nothing, when it
/// has refusals.
pub fn apply(plan: &RestorePlan, store: &Store) -> Result<Vec<FileChange>> {
    if !plan.refused.is_empty() {
        return Err(CheckpointError::Refused(plan.refused.clone()));
    }
    let root = &plan.root;
    let befores = current_states(plan, store)?;
    // Temp files an interrupted rewind left go first.
    for stray in &plan.stray_temp_files {
        let _ = fs::remove_file(paths::absolute(root, stray));
    }
    let order = write_order(plan);
    let linked = hard_link_groups(root, &plan.writes);
    let mut dir_modes = Vec::new();
    let mut touched_dirs = BTreeSet::new();
    for i in order {
        let write = &plan.writes[i];
        if linked.get(&i) == Some(&LinkRole::Shared) {
            continue; // written through another name of the same file
        }
        if let Some(reason) = unsafe_parent(root, &write.path, &HashSet::new()) {
            return Err(CheckpointError::Unsafe {
                path: write.path.clone(),
                reason,
            });
        }
        let abs = paths::absolute(root, &write.path);
        touched_dirs.insert(paths::parent(&write.path).to_owned());
        match &write.target {
            FileState::Absent => remove(root, &write.path)?,
            FileState::File { hash, mode, .. } => {
                let bytes = store
                    .get(hash)?
                    .ok_or_else(|| CheckpointError::MissingBlob {
                        path: write.path.clone(),
                        hash: hash.clone(),
                    })?;
                if linked.get(&i) == Some(&LinkRole::InPlace) {
                    write_in_place(&abs, &bytes, *mode)?;
                } else {
                    write_file(&abs, &bytes, *mode)?;
                }
            }
            FileState::Symlink { target } => write_symlink(&abs, target)?,
            FileState::Dir { mode } => {
                make_dir(&abs)?;
                dir_modes.push((write.path.clone(), *mode));
            }
            FileState::Omitted { reason, .. } => {
                return Err(CheckpointError::Unsafe {
                    path: write.path.clone(),
                    reason: format!("its content was not kept ({reason})"),
                })
            }
        }
    }
    // Directory modes last, deepest first: a directory made read-only still took the
    // entries the rewind put in it.
    dir_modes.sort_by_key(|(path, _)| std::cmp::Reverse(path.matches('/').count()));
    for (path, mode) in dir_modes {
        let abs = paths::absolute(root, &path);
        fs::set_permissions(&abs, fs::Permissions::from_mode(mode))
            .map_err(io_context(format!("setting the mode of {}", abs.display())))?;
    }
    for dir in touched_dirs {
        if let Ok(handle) = fs::File::open(paths::absolute(root, &dir)) {
            let _ = handle.sync_all();
        }
    }
    let changes: Vec<FileChange> = plan
        .writes
        .iter()
        .zip(befores)
        .filter(|(write, before)| *before != write.target)
        .map(|(write, before)| FileChange {
            path: write.path.clone(),
            before,
            after: write.target.clone(),
        })
        .collect();
    // Another session of this workspace must not take these writes for its own tools'.
    if let Err(error) = store.note_rewind(&changes) {
        tracing::warn!(%error, "rewind: the rewind journal could not be written");
    }
    Ok(changes)
}

/// The `.pith-rewind-…` temp files (never directories) in the directory `rel`: what a
/// rewind killed mid-write left behind.
fn stray_temp_files(root: &Path, rel: &str, out: &mut BTreeSet<String>) {
    let Ok(entries) = fs::read_dir(paths::absolute(root, rel)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(TEMP_PREFIX) && entry.file_type().is_ok_and(|kind| !kind.is_dir()) {
            out.insert(paths::join(rel, &name));
        }
    }
}

/// Why `path` is not a plain workspace-relative path, if it is not.
pub(crate) fn unsafe_shape(path: &str) -> Option<&'static str> {
    if path.is_empty() {
        Some("is empty")
    } else if path.starts_with('/') {
        Some("is absolute: it escapes the workspace")
    } else if path.contains('\0') {
        Some("contains a NUL byte")
    } else if path.split('/').any(|part| part == "..") {
        Some("climbs out with `..`: it escapes the workspace")
    } else if path.split('/').any(|part| part.is_empty() || part == ".") {
        Some("is not a plain relative path")
    } else {
        None
    }
}

/// Why writing `rel` would leave the workspace or write through something, if it would:
/// an existing parent that is a symlink, or a file the rewind does not remove (or turn
/// back into a directory) first.
fn unsafe_parent(root: &Path, rel: &str, gives_way: &HashSet<&str>) -> Option<String> {
    let mut end = 0;
    while let Some(offset) = rel[end..].find('/') {
        end += offset;
        let parent = &rel[..end];
        end += 1;
        match fs::symlink_metadata(paths::absolute(root, parent)) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Some(format!(
                "its parent {parent} is a symlink: writing through it could leave the workspace"
            ))
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) if gives_way.contains(parent) => return None,
            Ok(_) => return Some(format!("its parent {parent} is a file now")),
            Err(_) => return None,
        }
    }
    None
}

/// The files, symlinks and empty directories below the directory `abs` (relative path
/// `rel`), never following a symlink.
fn entries_below(abs: &Path, rel: &str, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(abs) else {
        return;
    };
    let mut empty = true;
    for entry in entries.flatten() {
        empty = false;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = paths::join(rel, &name);
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            entries_below(&entry.path(), &child, out);
        } else {
            out.push(child);
        }
    }
    if empty {
        out.push(format!("{rel}/"));
    }
}

/// Removes the file, symlink or directory at `rel`. A directory goes only when empty (the
/// plan checked that the rewind empties it; an entry that appeared since keeps it, and the
/// re-read after the rewind names it). Directories are states of their own: a parent left
/// empty stays unless the rewind removes it too.
fn remove(root: &Path, rel: &str) -> Result<()> {
    let abs = paths::absolute(root, rel);
    let removed = match fs::symlink_metadata(&abs) {
        Ok(meta) if meta.is_dir() => match fs::remove_dir(&abs) {
            Err(error) if error.kind() == ErrorKind::DirectoryNotEmpty => Ok(()),
            other => other,
        },
        Ok(_) => fs::remove_file(&abs),
        Err(_) => Ok(()),
    };
    match removed {
        Err(error) if !is_absent(&error) => {
            Err(io_context(format!("removing {}", abs.display()))(error))
        }
        _ => Ok(()),
    }
}

/// Makes the directory `abs` (and missing parents); a file or symlink in its place goes
/// first (the plan saw it change from a directory).
fn make_dir(abs: &Path) -> Result<()> {
    match fs::symlink_metadata(abs) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => fs::remove_file(abs).map_err(io_context(format!("removing {}", abs.display())))?,
        Err(_) => {}
    }
    fs::create_dir_all(abs).map_err(io_context(format!("creating {}", abs.display())))
}

/// How a write to a file with several hard links is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkRole {
    /// Rewritten in place, so that every name of the file keeps pointing at it.
    InPlace,
    /// Another name of a file written [`LinkRole::InPlace`]: nothing to do.
    Shared,
}

/// The writes that restore a hard-linked file through all its names at once: when every
/// name of a file (its link count) is a write of the plan to the same content, the file is
/// rewritten in place once and the link survives. Otherwise each name is written as its
/// own file (a name outside the plan must not change).
fn hard_link_groups(root: &Path, writes: &[PlannedWrite]) -> HashMap<usize, LinkRole> {
    let mut groups: HashMap<(u64, u64), (u64, Vec<usize>)> = HashMap::new();
    for (i, write) in writes.iter().enumerate() {
        if !matches!(write.target, FileState::File { .. }) {
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(paths::absolute(root, &write.path)) else {
            continue;
        };
        if meta.is_file() && meta.nlink() > 1 {
            groups
                .entry((meta.dev(), meta.ino()))
                .or_insert_with(|| (meta.nlink(), Vec::new()))
                .1
                .push(i);
        }
    }
    let mut roles = HashMap::new();
    for (links, members) in groups.into_values() {
        let same_target = members
            .iter()
            .all(|&i| writes[i].target == writes[members[0]].target);
        if members.len() as u64 == links && same_target {
            for (n, &i) in members.iter().enumerate() {
                roles.insert(
                    i,
                    if n == 0 {
                        LinkRole::InPlace
                    } else {
                        LinkRole::Shared
                    },
                );
            }
        }
    }
    roles
}

/// Rewrites the file `abs` in place (truncated, written, synced): its inode, and so its
/// other hard links, stay. Not atomic, unlike [`write_file`]: its content was stored
/// before, so a rewind cut short can be undone.
fn write_in_place(abs: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    // Never through a symlink: a name that is no longer a regular file is written as a
    // file of its own.
    if !fs::symlink_metadata(abs).is_ok_and(|meta| meta.is_file()) {
        return write_file(abs, bytes, mode);
    }
    let context = || format!("rewriting {} in place", abs.display());
    let mut file = fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(abs)
        .map_err(io_context(context()))?;
    file.write_all(bytes).map_err(io_context(context()))?;
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io_context(context()))?;
    file.sync_all().map_err(io_context(context()))?;
    Ok(())
}

/// The parent directory of `abs`, created if missing; a directory at `abs` itself (emptied
/// by the rewind's removals) is removed.
fn parent_of(abs: &Path) -> Result<&Path> {
    let parent = abs.parent().ok_or_else(|| CheckpointError::Unsafe {
        path: abs.display().to_string(),
        reason: "has no parent directory".into(),
    })?;
    fs::create_dir_all(parent).map_err(io_context(format!("creating {}", parent.display())))?;
    // An emptied directory gives way (the plan checked that the rewind empties it).
    if fs::symlink_metadata(abs).is_ok_and(|meta| meta.is_dir()) {
        fs::remove_dir(abs).map_err(io_context(format!(
            "removing the directory {}",
            abs.display()
        )))?;
    }
    Ok(parent)
}

fn write_file(abs: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let parent = parent_of(abs)?;
    let context = || format!("writing {}", abs.display());
    let mut file = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(parent)
        .map_err(io_context(context()))?;
    file.write_all(bytes).map_err(io_context(context()))?;
    file.as_file()
        .set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io_context(context()))?;
    file.as_file().sync_all().map_err(io_context(context()))?;
    file.persist(abs)
        .map_err(|error| error.error)
        .map_err(io_context(context()))?;
    Ok(())
}

fn write_symlink(abs: &Path, target: &str) -> Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let parent = parent_of(abs)?;
    let temp = parent.join(format!(
        "{TEMP_PREFIX}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let context = || format!("writing the symlink {}", abs.display());
    let _ = fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp).map_err(io_context(context()))?;
    if let Err(error) = fs::rename(&temp, abs) {
        let _ = fs::remove_file(&temp);
        return Err(io_context(context())(error));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: &str) -> FileState {
        FileState::File {
            hash: hash.into(),
            size: 1,
            mode: 0o644,
        }
    }

    #[test]
    fn targets_take_the_first_before_and_the_last_after() {
        let changes = [
            FileChange {
                path: "a".into(),
                before: FileState::Absent,
                after: file("1"),
            },
            FileChange {
                path: "b".into(),
                before: file("x"),
                after: FileState::Absent,
            },
            FileChange {
                path: "a".into(),
                before: file("1"),
                after: file("2"),
            },
        ];
        let targets = rewind_targets(&changes);
        assert_eq!(
            targets["a"],
            Target {
                restore: FileState::Absent,
                last_known: file("2")
            }
        );
        assert_eq!(
            targets["b"],
            Target {
                restore: file("x"),
                last_known: FileState::Absent
            }
        );
    }

    #[test]
    fn only_plain_relative_paths_are_safe() {
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/"] {
            assert!(unsafe_shape(bad).is_some(), "{bad}");
        }
        for good in ["a", "a/b.c", ".env", "a/.hidden/..x"] {
            assert_eq!(unsafe_shape(good), None, "{good}");
        }
    }
}
