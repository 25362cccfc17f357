//! The stat index a session leaves in the store directory (`index.bin`): for each kept
//! file, its stat key and blob, so that the next session's first snapshot re-reads only
//! the files whose size, mtime, inode or mode changed.
//!
//! Compact and binary: a header (magic, the moment it was saved, the entry count), one
//! record per file (path length and bytes, size, mtime, inode, mode, the blob's 32-byte
//! SHA-256), and the SHA-256 of all of it last. It is written to a temporary file and
//! renamed over the old one, and only when it changed (a session whose snapshot reused
//! every entry leaves it as it is), so a start in an unchanged tree writes nothing. A torn
//! or damaged file fails its checksum and is ignored whole: every file is hashed again,
//! no stale entry is trusted.
//!
//! An entry whose mtime is within [`RACY_WINDOW_NS`] of the moment the index was saved is
//! not trusted: the file could have changed again within the same mtime tick.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{io_context, Result};
use crate::walk::StatKey;

const FILE_NAME: &str = "index.bin";
/// The JSON index of earlier versions: removed when the binary one is saved.
const OLD_FILE_NAME: &str = "index.json";
const MAGIC: &[u8; 8] = b"PITHIDX1";
const RACY_WINDOW_NS: i64 = 2_000_000_000;
/// Bytes of a record after its path: size, mtime, inode, mode, hash.
const RECORD_TAIL: usize = 8 + 8 + 8 + 4 + 32;

/// The trusted entries of the saved index, by path: stat key and the blob's SHA-256
/// (empty when there is none or it is damaged).
pub(crate) fn load(store_dir: &Path) -> HashMap<String, (StatKey, [u8; 32])> {
    let path = store_dir.join(FILE_NAME);
    let Ok(bytes) = std::fs::read(&path) else {
        return HashMap::new();
    };
    match parse(&bytes) {
        Some(entries) => entries,
        None => {
            tracing::warn!("{}: damaged; hashing every file again", path.display());
            HashMap::new()
        }
    }
}

/// The trusted entries of an index file's bytes, or None when they are not a whole,
/// intact index.
fn parse(bytes: &[u8]) -> Option<HashMap<String, (StatKey, [u8; 32])>> {
    let body_len = bytes.len().checked_sub(32)?;
    let (body, checksum) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != checksum {
        return None;
    }
    let mut reader = Reader(body);
    if reader.take(8)? != MAGIC {
        return None;
    }
    let saved_at_ns = i64::from_le_bytes(reader.array()?);
    let count = u32::from_le_bytes(reader.array()?);
    let mut entries = HashMap::with_capacity(count as usize);
    for _ in 0..count {
        let len = u16::from_le_bytes(reader.array()?);
        let path = std::str::from_utf8(reader.take(usize::from(len))?).ok()?;
        let tail = reader.take(RECORD_TAIL)?;
        let field = |at: usize| -> [u8; 8] {
            let mut out = [0; 8];
            out.copy_from_slice(&tail[at..at + 8]);
            out
        };
        let mut mode = [0; 4];
        mode.copy_from_slice(&tail[24..28]);
        let mut hash = [0; 32];
        hash.copy_from_slice(&tail[28..]);
        let stat = StatKey {
            size: u64::from_le_bytes(field(0)),
            mtime_ns: i64::from_le_bytes(field(8)),
            ino: u64::from_le_bytes(field(16)),
            mode: u32::from_le_bytes(mode),
        };
        if stat.mtime_ns < saved_at_ns.saturating_sub(RACY_WINDOW_NS) {
            entries.insert(path.to_owned(), (stat, hash));
        }
    }
    reader.0.is_empty().then_some(entries)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Some(out)
    }
}

/// Saves `entries` (path, stat key, blob's SHA-256) as the index, atomically. Paths
/// longer than 65,535 bytes are left out (their files are hashed again next time).
pub(crate) fn save(
    store_dir: &Path,
    entries: impl Iterator<Item = (String, StatKey, [u8; 32])>,
) -> Result<()> {
    let saved_at_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&saved_at_ns.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    for (path, stat, hash) in entries {
        let Ok(len) = u16::try_from(path.len()) else {
            continue;
        };
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.extend_from_slice(path.as_bytes());
        bytes.extend_from_slice(&stat.size.to_le_bytes());
        bytes.extend_from_slice(&stat.mtime_ns.to_le_bytes());
        bytes.extend_from_slice(&stat.ino.to_le_bytes());
        bytes.extend_from_slice(&stat.mode.to_le_bytes());
        bytes.extend_from_slice(&hash);
        count = count.saturating_add(1);
    }
    bytes[16..20].copy_from_slice(&count.to_le_bytes());
    let checksum = Sha256::digest(&bytes);
    bytes.extend_from_slice(&checksum);
    let path = store_dir.join(FILE_NAME);
    let context = format!("saving {}", path.display());
    let mut file = tempfile::NamedTempFile::new_in(store_dir.join("tmp"))
        .map_err(io_context(context.clone()))?;
    file.write_all(&bytes)
        .map_err(io_context(context.clone()))?;
    file.persist(&path)
        .map_err(|error| error.error)
        .map_err(io_context(context))?;
    // The JSON index of an older pith is not read any more.
    let _ = std::fs::remove_file(store_dir.join(OLD_FILE_NAME));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_entries_load_back_except_racy_ones_and_a_torn_file_trusts_nothing() {
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
            [
                ("a".to_owned(), old, [1; 32]),
                ("b".to_owned(), racy, [2; 32]),
                ("dir/é c".to_owned(), old, [3; 32]),
            ]
            .into_iter(),
        )
        .unwrap();
        let loaded = load(dir.path());
        assert_eq!(loaded.len(), 2);
        assert_eq!(loaded["a"], (old, [1; 32]));
        assert_eq!(loaded["dir/é c"], (old, [3; 32]));
        let bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
        // Every torn prefix, and any flipped byte, is ignored whole.
        for cut in 0..bytes.len() {
            assert!(parse(&bytes[..cut]).is_none(), "torn at {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            assert!(parse(&damaged).is_none(), "damaged at {at}");
        }
        std::fs::write(dir.path().join(FILE_NAME), "{damaged").unwrap();
        assert!(load(dir.path()).is_empty());
    }

    #[test]
    fn saving_removes_the_old_json_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        std::fs::write(dir.path().join(OLD_FILE_NAME), "{}").unwrap();
        save(dir.path(), std::iter::empty()).unwrap();
        assert!(!dir.path().join(OLD_FILE_NAME).exists());
        assert!(load(dir.path()).is_empty());
        assert!(dir.path().join(FILE_NAME).exists());
    }
}
