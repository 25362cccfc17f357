//! The content-addressed blob store: each distinct content once, under its SHA-256, in a
//! directory outside the workspace (`$PITH_HOME/checkpoints/<project_key>/`).
//!
//! Layout: `packs/*.pack` (blobs under 16 KiB, appended to pack files, see `pack.rs`),
//! `blobs/<2 hex>/<62 hex>` (the raw bytes of larger blobs, and of small ones an older pith
//! stored, still read), `rewinds/` (the rewind journal, see `journal.rs`), `tmp/` (blobs
//! being written; a crash leaves at most a stray temp file there, never a torn blob),
//! `index.bin` and `index.log` (the shadow's stat index and its journal, see `index.rs`).
//! A large blob is written to a temp file and renamed into place; a blob whose bytes do
//! not hash to its name is treated as missing. Blobs are not fsynced: after a power cut a
//! blob may be empty or torn, which [`Store::get`] reports as missing.

use std::collections::HashSet;
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use crate::error::{io_context, Result};
use crate::pack::{Packs, PACK_BELOW};

/// A blob referenced again after this long gets its mtime refreshed (GC removes the
/// oldest first).
const TOUCH_AFTER: Duration = Duration::from_secs(3600);

/// The store's caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreConfig {
    /// A file larger than this is not kept: its state is `Omitted` (default 16 MiB).
    pub max_file_bytes: u64,
    /// [`Store::gc`] removes the oldest unreferenced blobs until the store is under this
    /// (default 1 GiB per project).
    pub max_store_bytes: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            max_file_bytes: 16 << 20,
            max_store_bytes: 1 << 30,
        }
    }
}

/// What [`Store::put`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The content's address.
    pub hash: String,
    /// Bytes added to the store (0 when the content was already there).
    pub added_bytes: u64,
}

/// What [`Store::gc`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GcReport {
    /// Blobs removed.
    pub removed: usize,
    /// Their bytes.
    pub freed_bytes: u64,
    /// The store's size afterwards.
    pub size_bytes: u64,
}

/// One project's blob store.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    config: StoreConfig,
    /// The blobs' total size, once counted.
    size: Mutex<Option<u64>>,
    packs: Packs,
}

impl Store {
    /// Opens (creating) the store in `dir`.
    pub fn open(dir: &Path, config: StoreConfig) -> Result<Store> {
        for sub in ["blobs", "tmp"] {
            let path = dir.join(sub);
            fs::create_dir_all(&path)
                .map_err(io_context(format!("creating {}", path.display())))?;
        }
        Ok(Store {
            dir: dir.to_path_buf(),
            config,
            size: Mutex::new(None),
            packs: Packs::open(dir.join("packs"))?,
        })
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The store's caps.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Stores `bytes` (once: an existing blob is only touched) and returns its address.
    pub fn put(&self, bytes: &[u8]) -> Result<Stored> {
        let digest: [u8; 32] = Sha256::digest(bytes).into();
        let hash = hex_string(&digest);
        let small = bytes.len() < PACK_BELOW;
        if small && self.packs.knows(&digest) {
            return Ok(Stored {
                hash,
                added_bytes: 0,
            });
        }
        let path = self.blob_path(&hash).unwrap_or_default();
        if let Ok(meta) = fs::metadata(&path) {
            if meta.len() == bytes.len() as u64 {
                touch_if_old(&path, &meta);
                return Ok(Stored {
                    hash,
                    added_bytes: 0,
                });
            }
        }
        if small {
            self.packs.append(&digest, bytes)?;
            if let Some(size) = self.lock_size().as_mut() {
                *size += bytes.len() as u64;
            }
            return Ok(Stored {
                hash,
                added_bytes: bytes.len() as u64,
            });
        }
        let tmp = self.dir.join("tmp");
        let mut file = tempfile::NamedTempFile::new_in(&tmp)
            .map_err(io_context(format!("creating a blob in {}", tmp.display())))?;
        file.write_all(bytes)
            .map_err(io_context(format!("writing a blob in {}", tmp.display())))?;
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .map_err(io_context(format!("creating {}", parent.display())))?;
        }
        file.persist(&path)
            .map_err(|error| error.error)
            .map_err(io_context(format!("storing {}", path.display())))?;
        if let Some(size) = self.lock_size().as_mut() {
            *size += bytes.len() as u64;
        }
        Ok(Stored {
            hash,
            added_bytes: bytes.len() as u64,
        })
    }

    /// The bytes stored under `hash`, or None when the blob is missing or damaged (its
    /// bytes do not hash to its name).
    pub fn get(&self, hash: &str) -> Result<Option<Vec<u8>>> {
        let Some(path) = self.blob_path(hash) else {
            return Ok(None);
        };
        let mut bytes = Vec::new();
        match fs::File::open(&path) {
            Ok(mut file) => {
                file.read_to_end(&mut bytes)
                    .map_err(io_context(format!("reading {}", path.display())))?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                let packed = hex_bytes(hash).map(|digest| self.packs.get(&digest));
                match packed.transpose()?.flatten() {
                    Some(packed) => bytes = packed,
                    None => return Ok(None),
                }
            }
            Err(error) => return Err(io_context(format!("opening {}", path.display()))(error)),
        }
        if hash_bytes(&bytes) != hash {
            tracing::warn!("checkpoint store: blob {hash} is damaged");
            return Ok(None);
        }
        Ok(Some(bytes))
    }

    /// True when a blob named `hash` is present (not verified; [`Store::get`] verifies),
    /// refreshing its age like [`Store::put`].
    pub fn contains(&self, hash: &str) -> bool {
        let Some(path) = self.blob_path(hash) else {
            return false;
        };
        match fs::metadata(&path) {
            Ok(meta) => {
                touch_if_old(&path, &meta);
                true
            }
            Err(_) => hex_bytes(hash).is_some_and(|digest| self.packs.contains(&digest)),
        }
    }

    /// [`Store::contains`] by the blob's 32-byte digest: the packs already read are asked
    /// first, so a packed blob costs no system call and no hex name.
    pub(crate) fn contains_digest(&self, digest: &[u8; 32]) -> bool {
        self.packs.holds(digest) || self.contains(&hex_string(digest))
    }

    /// The total size of the blobs, in bytes (counted once, then kept up to date).
    pub fn size_bytes(&self) -> Result<u64> {
        if let Some(size) = *self.lock_size() {
            return Ok(size);
        }
        let loose: u64 = self.blobs()?.iter().map(|blob| blob.size).sum();
        let packed: u64 = self.packs.units().iter().map(|pack| pack.size).sum();
        let size = loose + packed;
        *self.lock_size() = Some(size);
        Ok(size)
    }

    /// Brings the store under its size cap: removes the least recently used blobs whose
    /// hash is not in `keep` until it fits. Also removes temp files a crash left behind.
    /// A pack is one unit, aged by its last append: it goes whole, its blobs in `keep`
    /// appended to this process's pack first; packs appended to within the last hour are
    /// left alone (a process may still be writing them).
    pub fn gc(&self, keep: &HashSet<String>) -> Result<GcReport> {
        self.remove_stale_temp_files();
        let mut units: Vec<Unit> = self.blobs()?.into_iter().map(Unit::Loose).collect();
        units.extend(self.packs.units().into_iter().map(Unit::Pack));
        let mut size: u64 = units.iter().map(Unit::size).sum();
        let mut report = GcReport::default();
        if size > self.config.max_store_bytes {
            units.sort_by_key(Unit::modified);
            for unit in units {
                if size <= self.config.max_store_bytes {
                    break;
                }
                match unit {
                    Unit::Loose(blob) => {
                        if keep.contains(&blob.hash) {
                            continue;
                        }
                        match fs::remove_file(&blob.path) {
                            Ok(()) => {
                                size -= blob.size;
                                report.removed += 1;
                                report.freed_bytes += blob.size;
                            }
                            Err(error) => tracing::warn!("gc: {}: {error}", blob.path.display()),
                        }
                    }
                    Unit::Pack(pack) => {
                        let recent = pack
                            .modified
                            .elapsed()
                            .map_or(true, |age| age < TOUCH_AFTER);
                        if recent {
                            continue;
                        }
                        let kept = |digest: &[u8; 32]| keep.contains(&hex_string(digest));
                        match self.packs.remove(&pack.name, &kept) {
                            Ok(moved) => {
                                let freed = pack.size.saturating_sub(moved);
                                size = size.saturating_sub(freed);
                                report.removed += 1;
                                report.freed_bytes += freed;
                            }
                            Err(error) => tracing::warn!("gc: {}: {error}", pack.name),
                        }
                    }
                }
            }
        }
        report.size_bytes = size;
        *self.lock_size() = Some(size);
        Ok(report)
    }

    /// Notes in the rewind journal that this process's rewind wrote `changes` (each
    /// path's `after`), so that another session of the workspace does not take them for
    /// its own tools' (see `journal.rs`).
    pub fn note_rewind(&self, changes: &[pith_core::FileChange]) -> Result<()> {
        crate::journal::note(&self.dir, changes)
    }

    /// The states other processes' rewinds wrote in the last hour, by path.
    pub fn rewinds_elsewhere(
        &self,
    ) -> std::collections::HashMap<String, Vec<pith_core::FileState>> {
        crate::journal::written_elsewhere(&self.dir)
    }

    fn lock_size(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.size
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where the blob `hash` lives; None for a name that is not a SHA-256 in lowercase hex
    /// (a hostile or damaged record can name nothing outside the store).
    fn blob_path(&self, hash: &str) -> Option<PathBuf> {
        let valid =
            hash.len() == 64 && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        valid.then(|| self.dir.join("blobs").join(&hash[..2]).join(&hash[2..]))
    }

    fn blobs(&self) -> Result<Vec<BlobFile>> {
        let root = self.dir.join("blobs");
        let mut blobs = Vec::new();
        let shards =
            fs::read_dir(&root).map_err(io_context(format!("listing {}", root.display())))?;
        for shard in shards.flatten() {
            let prefix = shard.file_name().to_string_lossy().into_owned();
            let Ok(entries) = fs::read_dir(shard.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let Ok(meta) = entry.metadata() else { continue };
                blobs.push(BlobFile {
                    hash: format!("{prefix}{}", entry.file_name().to_string_lossy()),
                    path: entry.path(),
                    size: meta.len(),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                });
            }
        }
        Ok(blobs)
    }

    fn remove_stale_temp_files(&self) {
        let Ok(entries) = fs::read_dir(self.dir.join("tmp")) else {
            return;
        };
        for entry in entries.flatten() {
            let old = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|age| age > TOUCH_AFTER);
            if old {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// What GC removes: a loose blob, or a pack whole.
enum Unit {
    Loose(BlobFile),
    Pack(crate::pack::PackUnit),
}

impl Unit {
    fn size(&self) -> u64 {
        match self {
            Unit::Loose(blob) => blob.size,
            Unit::Pack(pack) => pack.size,
        }
    }

    fn modified(&self) -> SystemTime {
        match self {
            Unit::Loose(blob) => blob.modified,
            Unit::Pack(pack) => pack.modified,
        }
    }
}

struct BlobFile {
    hash: String,
    path: PathBuf,
    size: u64,
    modified: SystemTime,
}

fn touch_if_old(path: &Path, meta: &fs::Metadata) {
    let old = meta
        .modified()
        .ok()
        .and_then(|modified| modified.elapsed().ok())
        .is_some_and(|age| age > TOUCH_AFTER);
    if old {
        if let Ok(file) = fs::File::options().write(true).open(path) {
            let _ = file.set_modified(SystemTime::now());
        }
    }
}

/// The 32 bytes of a lowercase hex SHA-256, or None when `hex` is not one.
pub(crate) fn hex_bytes(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0u8; 32];
    for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
        *byte = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(bytes)
}

/// Lowercase hex of a SHA-256.
pub(crate) fn hex_string(bytes: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(64);
    for byte in bytes {
        hex.push(char::from(DIGITS[usize::from(byte >> 4)]));
        hex.push(char::from(DIGITS[usize::from(byte & 0xf)]));
    }
    hex
}

/// The lowercase hex SHA-256 of `bytes`: a blob's address.
pub fn hash_bytes(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The name of a workspace's store directory under `$PITH_HOME/checkpoints/`: the last
/// component of its canonical path and a short hash of the whole (`pith-3f2a9c01d4e5b6a7`).
pub fn project_key(root: &Path) -> String {
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let digest = hash_bytes(canonical.as_os_str().as_encoded_bytes());
    let name: String = canonical
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        digest[..16].to_owned()
    } else {
        format!("{name}-{}", &digest[..16])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_deduplicated_and_verified() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
        let big = vec![b'h'; PACK_BELOW];
        let first = store.put(&big).unwrap();
        assert_eq!(first.added_bytes, PACK_BELOW as u64);
        assert_eq!(first.hash, hash_bytes(&big));
        assert_eq!(store.put(&big).unwrap().added_bytes, 0);
        assert_eq!(store.size_bytes().unwrap(), PACK_BELOW as u64);
        assert_eq!(store.get(&first.hash).unwrap().unwrap(), big);
        // A damaged blob is missing, packed or not.
        let path = store.blob_path(&first.hash).unwrap();
        fs::write(&path, b"jello").unwrap();
        assert_eq!(store.get(&first.hash).unwrap(), None);
        let small = store.put(b"hello").unwrap().hash;
        assert_eq!(store.get(&small).unwrap().unwrap(), b"hello");
        for pack in fs::read_dir(dir.path().join("packs")).unwrap().flatten() {
            let mut bytes = fs::read(pack.path()).unwrap();
            let last = bytes.len() - 1;
            bytes[last] ^= 1;
            fs::write(pack.path(), bytes).unwrap();
        }
        assert_eq!(store.get(&small).unwrap(), None);
        // Names that are not addresses name nothing.
        assert_eq!(store.get("../../etc/passwd").unwrap(), None);
        assert!(!store.contains("ab"));
    }

    #[test]
    fn project_keys_are_stable_and_distinct() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert_eq!(project_key(a.path()), project_key(a.path()));
        assert_ne!(project_key(a.path()), project_key(b.path()));
        assert!(project_key(Path::new("/")).len() == 16);
        let key = project_key(Path::new("/nonexistent/my repo"));
        assert!(key.starts_with("my_repo-"), "{key}");
    }
}
