//! The rewind journal: what each rewind wrote, kept for an hour in the project's store
//! (`rewinds/<nanoseconds>-<pid>.json`). Two sessions of one workspace share that store, so
//! a session that finds a change whose new state another process's rewind just wrote knows
//! it was not its own tool's: it records the change apart and never rewinds it (a rewind
//! of session B while session C runs is not charged to C's checkpoint).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use pith_core::{FileChange, FileState};
use serde::{Deserialize, Serialize};

use crate::error::{io_context, Result};

/// How long a note is kept: a session that has not observed the workspace for an hour
/// records what it finds as made outside pith, the rewind included.
const KEPT_FOR: Duration = Duration::from_secs(3600);

/// One note: the process that rewound, and the states it wrote.
#[derive(Debug, Serialize, Deserialize)]
struct Note {
    pid: u32,
    written: Vec<(String, FileState)>,
}

/// Notes that this process's rewind wrote `changes` (each path's `after`).
pub(crate) fn note(store_dir: &Path, changes: &[FileChange]) -> Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let dir = store_dir.join("rewinds");
    fs::create_dir_all(&dir).map_err(io_context(format!("creating {}", dir.display())))?;
    let note = Note {
        pid: std::process::id(),
        written: changes
            .iter()
            .map(|change| (change.path.clone(), change.after.clone()))
            .collect(),
    };
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let path = dir.join(format!("{nanos}-{}.json", note.pid));
    let context = || format!("writing {}", path.display());
    let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(io_context(context()))?;
    let bytes = serde_json::to_vec(&note).unwrap_or_default();
    file.write_all(&bytes).map_err(io_context(context()))?;
    file.persist(&path)
        .map_err(|error| error.error)
        .map_err(io_context(context()))?;
    Ok(())
}

/// The states other processes' rewinds wrote within the last hour, by path. Older notes
/// (and unreadable ones) are removed on the way.
pub(crate) fn written_elsewhere(store_dir: &Path) -> HashMap<String, Vec<FileState>> {
    let mut written: HashMap<String, Vec<FileState>> = HashMap::new();
    let Ok(entries) = fs::read_dir(store_dir.join("rewinds")) else {
        return written;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "json") {
            continue; // a note being written
        }
        let age = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .unwrap_or_default();
        let note = fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Note>(&bytes).ok());
        match note {
            Some(note) if age <= KEPT_FOR => {
                if note.pid != me {
                    for (path, state) in note.written {
                        written.entry(path).or_default().push(state);
                    }
                }
            }
            _ => {
                let _ = fs::remove_file(&path);
            }
        }
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_of_other_processes_are_read_and_this_one_s_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let change = FileChange {
            path: "a.txt".into(),
            before: FileState::Absent,
            after: FileState::Symlink { target: "b".into() },
        };
        note(dir.path(), std::slice::from_ref(&change)).unwrap();
        assert!(written_elsewhere(dir.path()).is_empty(), "its own note");
        // The same note from another process.
        let other = Note {
            pid: std::process::id() + 1,
            written: vec![("a.txt".into(), change.after.clone())],
        };
        let path = dir.path().join("rewinds/1-other.json");
        fs::write(&path, serde_json::to_vec(&other).unwrap()).unwrap();
        assert_eq!(written_elsewhere(dir.path())["a.txt"], [change.after]);
        // A damaged note is removed.
        fs::write(dir.path().join("rewinds/2-bad.json"), "{").unwrap();
        written_elsewhere(dir.path());
        assert!(!dir.path().join("rewinds/2-bad.json").exists());
    }
}
