//! The stat index a session leaves in the store directory (`index.json`): for each kept
//! file, its stat key and blob, so that the next session's first snapshot re-reads only
//! the files whose size, mtime, inode or mode changed.
//!
//! An entry whose mtime is within [`RACY_WINDOW_NS`] of the moment the index was saved is
//! not trusted: the file could have changed again within the same mtime tick.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{io_context, Result};
use crate::walk::StatKey;

const FILE_NAME: &str = "index.json";
const VERSION: u32 = 1;
const RACY_WINDOW_NS: i64 = 2_000_000_000;

#[derive(Serialize, Deserialize)]
struct IndexFile {
    version: u32,
    saved_at_ns: i64,
    entries: Vec<IndexEntry>,
}

#[derive(Serialize, Deserialize)]
struct IndexEntry {
    path: String,
    stat: StatKey,
    hash: String,
}

/// The trusted entries of the saved index (empty when there is none or it is damaged).
pub(crate) fn load(store_dir: &Path) -> HashMap<String, (StatKey, String)> {
    let path = store_dir.join(FILE_NAME);
    let Ok(bytes) = std::fs::read(&path) else {
        return HashMap::new();
    };
    let index: IndexFile = match serde_json::from_slice(&bytes) {
        Ok(index) => index,
        Err(error) => {
            tracing::warn!("{}: {error}; hashing every file again", path.display());
            return HashMap::new();
        }
    };
    if index.version != VERSION {
        return HashMap::new();
    }
    index
        .entries
        .into_iter()
        .filter(|entry| entry.stat.mtime_ns < index.saved_at_ns - RACY_WINDOW_NS)
        .map(|entry| (entry.path, (entry.stat, entry.hash)))
        .collect()
}

/// Saves `entries` (path, stat key, blob) as the index, atomically.
pub(crate) fn save<'a>(
    store_dir: &Path,
    entries: impl Iterator<Item = (&'a str, &'a StatKey, &'a str)>,
) -> Result<()> {
    let saved_at_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let index = IndexFile {
        version: VERSION,
        saved_at_ns,
        entries: entries
            .map(|(path, stat, hash)| IndexEntry {
                path: path.to_owned(),
                stat: *stat,
                hash: hash.to_owned(),
            })
            .collect(),
    };
    let path = store_dir.join(FILE_NAME);
    let context = format!("saving {}", path.display());
    let bytes =
        serde_json::to_vec(&index).map_err(|error| io_context(context.clone())(error.into()))?;
    let mut file = tempfile::NamedTempFile::new_in(store_dir.join("tmp"))
        .map_err(io_context(context.clone()))?;
    file.write_all(&bytes)
        .map_err(io_context(context.clone()))?;
    file.persist(&path)
        .map_err(|error| error.error)
        .map_err(io_context(context))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_entries_load_back_except_racy_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        let old = StatKey {
            size: 1,
            mtime_ns: 1_000,
            ino: 7,
            mode: 0o100644,
        };
        let racy = StatKey {
            mtime_ns: i64::MAX - 1,
            ..old
        };
        save(
            dir.path(),
            [("a", &old, "h1"), ("b", &racy, "h2")].into_iter(),
        )
        .unwrap();
        let loaded = load(dir.path());
        assert_eq!(loaded.len(), 1);
        assert_eq!(loaded["a"], (old, "h1".to_owned()));
        std::fs::write(dir.path().join(FILE_NAME), "{damaged").unwrap();
        assert!(load(dir.path()).is_empty());
    }
}
