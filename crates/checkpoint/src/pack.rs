//! Packs: blobs smaller than [`PACK_BELOW`] are appended to pack files instead of taking
//! a file (and a 4 KiB block) each, so that a store of many small files uses about the
//! bytes it holds on disk.
//!
//! A pack is `packs/<seconds>-<pid>-<random>.pack`, written by one process only (it
//! creates the file and appends to it; another process never writes to it), as records:
//! the blob's SHA-256 (32 bytes), its length (4 bytes, little-endian), its bytes. Each
//! record is one `write`. The index (hash → pack, offset, length) is not stored: each
//! process reads the packs' record headers when it first needs them, and again from where
//! it stopped when a blob it looks for is not known yet. A record cut short by a crash
//! (its length runs past the end) ends the pack for readers, and a record whose bytes do
//! not hash to its name is missing (`Store::get` verifies), so no torn
//! blob is ever visible. A writer that fails a write starts a new pack.
//!
//! GC (see `Store::gc`) treats a pack as one unit, aged by its last
//! append: when the store is over its cap, an old pack goes whole, after the blobs of it
//! that are still referenced are appended to this process's pack. Only packs no process
//! has appended to for an hour are collected (a writer starts a new pack every half hour).

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use crate::error::{io_context, Result};

/// Blobs smaller than this go into packs; larger ones are files of their own.
pub(crate) const PACK_BELOW: usize = 16 * 1024;
/// A record's header: hash and length.
const HEADER: usize = 32 + 4;
/// A writer starts a new pack past this size or age.
const ROLL_BYTES: u64 = 64 << 20;
const ROLL_AGE: Duration = Duration::from_secs(1800);

/// Where a packed blob is.
#[derive(Debug, Clone, Copy)]
struct Location {
    pack: u32,
    offset: u64,
    len: u32,
}

/// One pack file as this process knows it.
#[derive(Debug)]
struct PackFile {
    name: String,
    /// Bytes of it read so far (up to the end of its last whole record).
    scanned: u64,
    /// False once removed by GC.
    live: bool,
}

#[derive(Debug)]
struct Writer {
    file: fs::File,
    pack: u32,
    len: u64,
    created: Instant,
}

#[derive(Debug, Default)]
struct State {
    loaded: bool,
    index: HashMap<[u8; 32], Location>,
    packs: Vec<PackFile>,
    writer: Option<Writer>,
}

/// The store's packs, as one process sees them.
#[derive(Debug)]
pub(crate) struct Packs {
    dir: PathBuf,
    state: Mutex<State>,
}

/// A pack file on disk, for GC.
#[derive(Debug)]
pub(crate) struct PackUnit {
    pub name: String,
    pub size: u64,
    pub modified: SystemTime,
}

impl Packs {
    /// The packs in `dir` (created when missing).
    pub(crate) fn open(dir: PathBuf) -> Result<Packs> {
        fs::create_dir_all(&dir).map_err(io_context(format!("creating {}", dir.display())))?;
        Ok(Packs {
            dir,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !state.loaded {
            state.loaded = true;
            refresh(&self.dir, &mut state);
        }
        state
    }

    /// True when a blob `hash` is in a pack this process knows (no new read of the
    /// packs).
    pub(crate) fn knows(&self, hash: &[u8; 32]) -> bool {
        self.lock().index.contains_key(hash)
    }

    /// True when a blob `hash` is in a pack, reading what other processes appended when
    /// it is not known yet.
    pub(crate) fn contains(&self, hash: &[u8; 32]) -> bool {
        let mut state = self.lock();
        if state.index.contains_key(hash) {
            return true;
        }
        refresh(&self.dir, &mut state);
        state.index.contains_key(hash)
    }

    /// True when the packs already read record `hash` (no refresh: a miss may be a blob
    /// packed by another process since, or a loose one).
    pub(crate) fn holds(&self, hash: &[u8; 32]) -> bool {
        self.lock().index.contains_key(hash)
    }

    /// The bytes recorded under `hash` (not verified), or None.
    /// A pack another process removed (GC) is forgotten and the packs read again: its
    /// blobs that were kept are in that process's pack now.
    pub(crate) fn get(&self, hash: &[u8; 32]) -> Result<Option<Vec<u8>>> {
        let mut state = self.lock();
        if !state.index.contains_key(hash) {
            refresh(&self.dir, &mut state);
        }
        let mut retried = false;
        let (file, location, path) = loop {
            let Some(location) = state.index.get(hash).copied() else {
                return Ok(None);
            };
            let path = self.dir.join(&state.packs[location.pack as usize].name);
            match fs::File::open(&path) {
                Ok(file) => break (file, location, path),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound && !retried => {
                    retried = true;
                    state.packs[location.pack as usize].live = false;
                    state.index.retain(|_, at| at.pack != location.pack);
                    refresh(&self.dir, &mut state);
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(error) => return Err(io_context(format!("opening {}", path.display()))(error)),
            }
        };
        let mut bytes = vec![0; location.len as usize];
        match file.read_exact_at(&mut bytes, location.offset) {
            Ok(()) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(error) => Err(io_context(format!("reading {}", path.display()))(error)),
        }
    }

    /// Appends `bytes` under `hash` to this process's pack.
    pub(crate) fn append(&self, hash: &[u8; 32], bytes: &[u8]) -> Result<()> {
        let mut state = self.lock();
        append_locked(&self.dir, &mut state, hash, bytes)
    }

    /// The pack files on disk.
    pub(crate) fn units(&self) -> Vec<PackUnit> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let meta = entry.metadata().ok()?;
                name.ends_with(".pack").then(|| PackUnit {
                    name,
                    size: meta.len(),
                    modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                })
            })
            .collect()
    }

    /// Removes the pack `name` after appending to this process's pack its blobs whose
    /// hash `keep` holds; returns the bytes appended. Not this process's own pack.
    pub(crate) fn remove(&self, name: &str, keep: &dyn Fn(&[u8; 32]) -> bool) -> Result<u64> {
        let mut state = self.lock();
        refresh(&self.dir, &mut state);
        let Some(pack) = state.packs.iter().position(|p| p.name == name && p.live) else {
            return Ok(0);
        };
        let pack = pack as u32;
        if state.writer.as_ref().is_some_and(|w| w.pack == pack) {
            return Ok(0);
        }
        let path = self.dir.join(name);
        let kept: Vec<([u8; 32], Location)> = state
            .index
            .iter()
            .filter(|(hash, at)| at.pack == pack && keep(hash))
            .map(|(hash, at)| (*hash, *at))
            .collect();
        let mut moved = 0;
        if !kept.is_empty() {
            let file =
                fs::File::open(&path).map_err(io_context(format!("opening {}", path.display())))?;
            for (hash, at) in kept {
                let mut bytes = vec![0; at.len as usize];
                if file.read_exact_at(&mut bytes, at.offset).is_err() {
                    continue;
                }
                append_locked(&self.dir, &mut state, &hash, &bytes)?;
                moved += bytes.len() as u64;
            }
        }
        state.index.retain(|_, at| at.pack != pack);
        state.packs[pack as usize].live = false;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_context(format!("removing {}", path.display()))(error)),
        }
        Ok(moved)
    }
}

fn append_locked(dir: &Path, state: &mut State, hash: &[u8; 32], bytes: &[u8]) -> Result<()> {
    let len = u32::try_from(bytes.len()).map_err(|_| {
        io_context("packing a blob".to_owned())(std::io::Error::other("blob too large to pack"))
    })?;
    let stale = state
        .writer
        .as_ref()
        .is_some_and(|w| w.len >= ROLL_BYTES || w.created.elapsed() >= ROLL_AGE);
    if stale {
        state.writer = None;
    }
    if state.writer.is_none() {
        let seconds = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let file = tempfile::Builder::new()
            .prefix(&format!("{seconds}-{}-", std::process::id()))
            .suffix(".pack")
            .tempfile_in(dir)
            .map_err(io_context(format!("creating a pack in {}", dir.display())))?;
        let (file, path) = file.keep().map_err(|error| {
            io_context(format!("creating a pack in {}", dir.display()))(error.error)
        })?;
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default()
            .to_owned();
        state.packs.push(PackFile {
            name,
            scanned: 0,
            live: true,
        });
        state.writer = Some(Writer {
            file,
            pack: (state.packs.len() - 1) as u32,
            len: 0,
            created: Instant::now(),
        });
    }
    let Some(writer) = state.writer.as_mut() else {
        return Ok(());
    };
    let mut record = Vec::with_capacity(HEADER + bytes.len());
    record.extend_from_slice(hash);
    record.extend_from_slice(&len.to_le_bytes());
    record.extend_from_slice(bytes);
    if let Err(error) = writer.file.write_all(&record) {
        // What was written of the record ends this pack for readers: never append after it.
        state.writer = None;
        return Err(io_context(format!(
            "appending to a pack in {}",
            dir.display()
        ))(error));
    }
    let location = Location {
        pack: writer.pack,
        offset: writer.len + HEADER as u64,
        len,
    };
    writer.len += record.len() as u64;
    let pack = writer.pack as usize;
    state.packs[pack].scanned = writer.len;
    state.index.insert(*hash, location);
    Ok(())
}

/// Reads the record headers of every pack from where this process stopped.
fn refresh(dir: &Path, state: &mut State) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let writing = state.writer.as_ref().map(|w| w.pack);
    for entry in entries.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.ends_with(".pack") {
            continue;
        }
        let pack = match state.packs.iter().position(|p| p.name == name) {
            Some(pack) => pack,
            None => {
                state.packs.push(PackFile {
                    name,
                    scanned: 0,
                    live: true,
                });
                state.packs.len() - 1
            }
        };
        if writing == Some(pack as u32) || !state.packs[pack].live {
            continue;
        }
        let Ok(bytes) = fs::read(entry.path()) else {
            continue;
        };
        let mut at = state.packs[pack].scanned as usize;
        while let Some(header) = bytes.get(at..at + HEADER) {
            let mut hash = [0; 32];
            hash.copy_from_slice(&header[..32]);
            let mut len = [0; 4];
            len.copy_from_slice(&header[32..]);
            let len = u32::from_le_bytes(len);
            let end = at + HEADER + len as usize;
            if end > bytes.len() {
                break;
            }
            state.index.entry(hash).or_insert(Location {
                pack: pack as u32,
                offset: (at + HEADER) as u64,
                len,
            });
            at = end;
        }
        state.packs[pack].scanned = at as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_blobs_read_back_across_processes_and_a_torn_tail_is_not_seen() {
        let dir = tempfile::tempdir().unwrap();
        let one = Packs::open(dir.path().to_path_buf()).unwrap();
        one.append(&[1; 32], b"first").unwrap();
        one.append(&[2; 32], b"second").unwrap();
        assert_eq!(one.get(&[2; 32]).unwrap().unwrap(), b"second");
        // Another process sees them, and what is appended later.
        let two = Packs::open(dir.path().to_path_buf()).unwrap();
        assert!(two.knows(&[1; 32]));
        one.append(&[3; 32], b"third").unwrap();
        assert!(!two.knows(&[3; 32]));
        assert_eq!(two.get(&[3; 32]).unwrap().unwrap(), b"third");
        // A record cut short by a crash is not there.
        let unit = &one.units()[0];
        let path = dir.path().join(&unit.name);
        let mut torn = Vec::new();
        torn.extend_from_slice(&[4; 32]);
        torn.extend_from_slice(&100u32.to_le_bytes());
        torn.extend_from_slice(b"only part");
        fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&torn)
            .unwrap();
        let three = Packs::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(three.get(&[4; 32]).unwrap(), None);
        assert_eq!(three.get(&[1; 32]).unwrap().unwrap(), b"first");
        // Removing a pack keeps what is asked for, in the remover's own pack.
        let moved = three.remove(&unit.name, &|hash| *hash == [2; 32]).unwrap();
        assert_eq!(moved, 6);
        assert!(!path.exists());
        assert_eq!(three.get(&[2; 32]).unwrap().unwrap(), b"second");
        assert_eq!(three.get(&[1; 32]).unwrap(), None);
        let four = Packs::open(dir.path().to_path_buf()).unwrap();
        assert_eq!(four.get(&[2; 32]).unwrap().unwrap(), b"second");
        assert!(!four.contains(&[1; 32]));
    }
}
