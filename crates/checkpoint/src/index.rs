//! The stat index a session leaves in the store directory: for each kept file, its stat
//! key and blob, so that the next session's first snapshot re-reads only the files whose
//! size, mtime, inode or mode changed.
//!
//! Two files, both binary and checksummed:
//!
//! - **`index.bin`, the base**: a header (magic, the moment it was saved, the entry
//!   count), one record per file (path length and bytes, size, mtime, inode, mode, the
//!   blob's 32-byte SHA-256), and the SHA-256 of all of it last. Written to a temporary
//!   file and renamed over the old one.
//! - **`index.log`, the journal**: a header naming the base it extends (the base's
//!   checksum), then one batch per save that changed anything: the batch's length, the
//!   moment it was saved, its records (a path set to a stat key and hash, or removed),
//!   and the SHA-256 of the base's checksum, the length and the batch. A start that
//!   changed k files appends k records: O(changes), not O(files).
//!
//! Loading replays the journal's batches over the base in order and stops at the first
//! batch that is torn or damaged: nothing after it is trusted, and the next save folds
//! everything into a new base. A journal written for another base (a fold that crashed
//! before it removed the journal) is ignored whole. A damaged base trusts nothing: every
//! file is hashed again. What is kept is always a state some save wrote, and an entry is
//! only ever used when its stat key still matches the file exactly.
//!
//! The journal is folded into a new base (and removed) when it would grow past a
//! quarter of the base's size, so loading stays O(files) and saving O(changes) amortized.
//! A save that changes nothing writes nothing.
//!
//! An entry whose mtime is within [`RACY_WINDOW_NS`] of the moment its record was saved is
//! not trusted: the file could have changed again within the same mtime tick.

use std::collections::{HashMap, HashSet};
use std::io::{Seek, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{io_context, Result};
use crate::walk::StatKey;

const FILE_NAME: &str = "index.bin";
const JOURNAL_NAME: &str = "index.log";
/// The JSON index of earlier versions: removed when the binary one is saved.
const OLD_FILE_NAME: &str = "index.json";
const MAGIC: &[u8; 8] = b"PITHIDX1";
const JOURNAL_MAGIC: &[u8; 8] = b"PITHJNL1";
const RACY_WINDOW_NS: i64 = 2_000_000_000;
/// Bytes of a record after its path: size, mtime, inode, mode, hash.
const RECORD_TAIL: usize = 8 + 8 + 8 + 4 + 32;
/// A journal record's operation byte.
const OP_REMOVE: u8 = 0;
const OP_SET: u8 = 1;
/// The journal is folded into the base once it would be larger than the base over this.
const FOLD_DIVISOR: u64 = 4;

/// One path's record: its stat key, the blob's SHA-256, and whether it can be trusted
/// (not saved within the racy window of its mtime).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    stat: StatKey,
    hash: [u8; 32],
    trusted: bool,
}

/// The journal as loading found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum JournalState {
    /// No journal: the next batch starts one.
    Absent,
    /// Intact and written for the base: the next batch is appended at `len`.
    Clean { len: u64 },
    /// Torn, damaged or written for another base: the next save folds.
    Unusable,
}

/// The saved index as loaded: every record (trusted or not, so that a save can tell what
/// changed), the base's checksum and size, and the journal's state.
#[derive(Debug)]
pub(crate) struct Known {
    records: HashMap<Box<str>, Record>,
    /// The base's checksum and length, when it is intact.
    base: Option<([u8; 32], u64)>,
    journal: JournalState,
}

impl Known {
    /// The trusted stat key and hash of `path`, if any.
    pub(crate) fn get(&self, path: &str) -> Option<(StatKey, &[u8; 32])> {
        self.records
            .get(path)
            .filter(|record| record.trusted)
            .map(|record| (record.stat, &record.hash))
    }

    /// How many records were loaded (trusted or not).
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }
}

/// What a save wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Saved {
    /// Nothing changed: nothing written.
    Unchanged,
    /// A batch of this many bytes appended to the journal.
    Appended(u64),
    /// A new base of this many bytes written (the journal removed).
    Folded(u64),
}

/// The saved index: the base with the journal's intact batches replayed over it (empty
/// when the base is missing or damaged).
pub(crate) fn load(store_dir: &Path) -> Known {
    let mut known = Known {
        records: HashMap::new(),
        base: None,
        journal: JournalState::Absent,
    };
    let path = store_dir.join(FILE_NAME);
    let Ok(bytes) = std::fs::read(&path) else {
        return known;
    };
    let Some(id) = parse_base(&bytes, &mut known.records) else {
        tracing::warn!("{}: damaged; hashing every file again", path.display());
        known.records.clear();
        return known;
    };
    known.base = Some((id, bytes.len() as u64));
    drop(bytes);
    if let Ok(journal) = std::fs::read(store_dir.join(JOURNAL_NAME)) {
        known.journal = replay(&journal, &id, &mut known.records);
        if known.journal == JournalState::Unusable {
            tracing::warn!("{JOURNAL_NAME}: torn or damaged; its tail is not trusted");
        }
    }
    known
}

/// Reads an index file's bytes into `records`; returns its checksum, or None when they
/// are not a whole, intact index (`records` then holds part of it).
fn parse_base(bytes: &[u8], records: &mut HashMap<Box<str>, Record>) -> Option<[u8; 32]> {
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
    records.reserve(count as usize);
    for _ in 0..count {
        let (path, record) = reader.record(saved_at_ns)?;
        records.insert(path.into(), record);
    }
    let mut id = [0; 32];
    id.copy_from_slice(checksum);
    reader.0.is_empty().then_some(id)
}

/// Replays the journal's batches over `records`, up to the first torn or damaged one.
fn replay(
    bytes: &[u8],
    base_id: &[u8; 32],
    records: &mut HashMap<Box<str>, Record>,
) -> JournalState {
    let mut reader = Reader(bytes);
    let header_ok = reader.take(8) == Some(JOURNAL_MAGIC) && reader.take(32) == Some(base_id);
    if !header_ok {
        return JournalState::Unusable;
    }
    while !reader.0.is_empty() {
        let Some(batch) = reader.batch(base_id) else {
            return JournalState::Unusable;
        };
        // The batch is whole and intact: its records are decoded before any is applied.
        let Some(changes) = decode_batch(batch) else {
            return JournalState::Unusable;
        };
        for (path, record) in changes {
            match record {
                Some(record) => {
                    records.insert(path.into(), record);
                }
                None => {
                    records.remove(path);
                }
            }
        }
    }
    JournalState::Clean {
        len: bytes.len() as u64,
    }
}

/// A batch's records: each path with its new record, or None when it was removed.
fn decode_batch(batch: &[u8]) -> Option<Vec<(&str, Option<Record>)>> {
    let mut reader = Reader(batch);
    let saved_at_ns = i64::from_le_bytes(reader.array()?);
    let mut changes = Vec::new();
    while !reader.0.is_empty() {
        match reader.array::<1>()?[0] {
            OP_SET => {
                let (path, record) = reader.record(saved_at_ns)?;
                changes.push((path, Some(record)));
            }
            OP_REMOVE => changes.push((reader.path()?, None)),
            _ => return None,
        }
    }
    Some(changes)
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

    fn path(&mut self) -> Option<&'a str> {
        let len = u16::from_le_bytes(self.array()?);
        std::str::from_utf8(self.take(usize::from(len))?).ok()
    }

    /// A path and its record, trusted unless its mtime is within the racy window of
    /// `saved_at_ns`.
    fn record(&mut self, saved_at_ns: i64) -> Option<(&'a str, Record)> {
        let path = self.path()?;
        let stat = StatKey {
            size: u64::from_le_bytes(self.array()?),
            mtime_ns: i64::from_le_bytes(self.array()?),
            ino: u64::from_le_bytes(self.array()?),
            mode: u32::from_le_bytes(self.array()?),
        };
        let hash = self.array()?;
        let trusted = stat.mtime_ns < saved_at_ns.saturating_sub(RACY_WINDOW_NS);
        Some((
            path,
            Record {
                stat,
                hash,
                trusted,
            },
        ))
    }

    /// The next whole batch whose checksum holds, or None.
    fn batch(&mut self, base_id: &[u8; 32]) -> Option<&'a [u8]> {
        let len_bytes = self.array::<4>()?;
        let body = self.take(usize::try_from(u32::from_le_bytes(len_bytes)).ok()?)?;
        let checksum = self.take(32)?;
        (batch_checksum(base_id, &len_bytes, body).as_slice() == checksum).then_some(body)
    }
}

fn batch_checksum(base_id: &[u8; 32], len_bytes: &[u8; 4], body: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(base_id);
    hasher.update(len_bytes);
    hasher.update(body);
    hasher.finalize().into()
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Appends a path and its record's tail (no operation byte); false when the path is too
/// long for the format (over 65,535 bytes: its file is hashed again next time).
fn put_record(bytes: &mut Vec<u8>, path: &str, stat: StatKey, hash: &[u8; 32]) -> bool {
    let Ok(len) = u16::try_from(path.len()) else {
        return false;
    };
    bytes.reserve(2 + path.len() + RECORD_TAIL);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(path.as_bytes());
    bytes.extend_from_slice(&stat.size.to_le_bytes());
    bytes.extend_from_slice(&stat.mtime_ns.to_le_bytes());
    bytes.extend_from_slice(&stat.ino.to_le_bytes());
    bytes.extend_from_slice(&stat.mode.to_le_bytes());
    bytes.extend_from_slice(hash);
    true
}

/// Saves `current` (path, stat key, blob's SHA-256: every kept file now; called twice)
/// against what was `known`: the changed and removed records are appended to the
/// journal, or everything is folded into a new base when there is no usable base or
/// journal, or the journal would grow past a quarter of the base.
pub(crate) fn save<'a, I>(store_dir: &Path, known: &Known, current: impl Fn() -> I) -> Result<Saved>
where
    I: Iterator<Item = (&'a str, StatKey, [u8; 32])>,
{
    let (base_id, base_len) = match (known.base, known.journal) {
        (Some(base), JournalState::Absent | JournalState::Clean { .. }) => base,
        _ if known.base.is_none() && current().next().is_none() => return Ok(Saved::Unchanged),
        _ => return fold(store_dir, current()).map(Saved::Folded),
    };
    let Some(batch) = diff(known, &current) else {
        return Ok(Saved::Unchanged);
    };
    let journal_len = match known.journal {
        JournalState::Clean { len } => len,
        _ => 0,
    };
    let batch_len = 4 + batch.len() as u64 + 32;
    if journal_len.max(40) + batch_len > base_len / FOLD_DIVISOR {
        return fold(store_dir, current()).map(Saved::Folded);
    }
    append(store_dir, &base_id, journal_len, &batch).map(Saved::Appended)
}

/// The body of a batch of what changed from `known` to `current`, or None when nothing
/// did (a record that was not trusted is written again, so that it can be next time).
fn diff<'a, I>(known: &Known, current: &impl Fn() -> I) -> Option<Vec<u8>>
where
    I: Iterator<Item = (&'a str, StatKey, [u8; 32])>,
{
    let mut body = now_ns().to_le_bytes().to_vec();
    let header = body.len();
    let mut still_known = 0;
    for (path, stat, hash) in current() {
        match known.records.get(path) {
            Some(record) if record.stat == stat && record.hash == hash && record.trusted => {
                still_known += 1;
            }
            other => {
                still_known += usize::from(other.is_some());
                body.push(OP_SET);
                if !put_record(&mut body, path, stat, &hash) {
                    body.pop();
                }
            }
        }
    }
    if still_known < known.records.len() {
        let now: HashSet<&str> = current().map(|(path, _, _)| path).collect();
        let mut gone: Vec<&str> = (known.records.keys())
            .map(|path| &**path)
            .filter(|path| !now.contains(path))
            .collect();
        gone.sort_unstable();
        for path in gone {
            // A path too long to be recorded was never in the index.
            if let Ok(len) = u16::try_from(path.len()) {
                body.push(OP_REMOVE);
                body.extend_from_slice(&len.to_le_bytes());
                body.extend_from_slice(path.as_bytes());
            }
        }
    }
    (body.len() > header).then_some(body)
}

/// Appends a batch to the journal (starting it, with its header, when `journal_len` is
/// 0); returns the bytes written.
fn append(store_dir: &Path, base_id: &[u8; 32], journal_len: u64, body: &[u8]) -> Result<u64> {
    let path = store_dir.join(JOURNAL_NAME);
    let context = || format!("appending to {}", path.display());
    let len_bytes = u32::try_from(body.len())
        .map_err(|_| std::io::Error::other("a batch over 4 GiB"))
        .map_err(io_context(context()))?
        .to_le_bytes();
    let mut bytes = Vec::with_capacity(body.len() + 80);
    if journal_len == 0 {
        bytes.extend_from_slice(JOURNAL_MAGIC);
        bytes.extend_from_slice(base_id);
    }
    bytes.extend_from_slice(&len_bytes);
    bytes.extend_from_slice(body);
    bytes.extend_from_slice(&batch_checksum(base_id, &len_bytes, body));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(false)
        .open(&path)
        .map_err(io_context(context()))?;
    // Anything past the length loading found intact (a torn batch of a crashed save, or
    // a journal another session started) is cut, so this batch follows intact ones.
    file.set_len(journal_len).map_err(io_context(context()))?;
    file.seek(std::io::SeekFrom::Start(journal_len))
        .map_err(io_context(context()))?;
    file.write_all(&bytes).map_err(io_context(context()))?;
    Ok(bytes.len() as u64)
}

/// Writes `entries` as a new base, atomically, and removes the journal; returns the
/// base's size. Paths longer than 65,535 bytes are left out.
fn fold<'a>(
    store_dir: &Path,
    entries: impl Iterator<Item = (&'a str, StatKey, [u8; 32])>,
) -> Result<u64> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&now_ns().to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    let mut count = 0u32;
    for (path, stat, hash) in entries {
        if put_record(&mut bytes, path, stat, &hash) {
            count = count.saturating_add(1);
        }
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
    // A journal left behind by a crash here names the old base and is ignored.
    let _ = std::fs::remove_file(store_dir.join(JOURNAL_NAME));
    // The JSON index of an older pith is not read any more.
    let _ = std::fs::remove_file(store_dir.join(OLD_FILE_NAME));
    Ok(bytes.len() as u64)
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
