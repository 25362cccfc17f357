//! The blob store: deduplication, caps and GC, packs of small blobs and their disk use.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use pith_checkpoint::{hash_bytes, Store, StoreConfig};

/// A blob size that is stored as a file of its own (packs take smaller ones).
const LARGE: usize = 20_000;

fn age(store: &Store, hash: &str, by: Duration) {
    let path = store.dir().join("blobs").join(&hash[..2]).join(&hash[2..]);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

#[test]
fn the_same_content_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    for _ in 0..3 {
        store.put(b"same bytes").unwrap();
    }
    store.put(b"other").unwrap();
    let size = store.size_bytes().unwrap();
    // Two records in a pack: their bytes and a header each.
    assert!((15..15 + 2 * 64).contains(&size), "{size}");
    // A second handle counts the same, and finds them.
    let again = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(again.size_bytes().unwrap(), size);
    assert_eq!(again.put(b"other").unwrap().added_bytes, 0);
    assert_eq!(
        again.get(&hash_bytes(b"same bytes")).unwrap().unwrap(),
        b"same bytes"
    );
    let big = vec![9u8; LARGE];
    assert_eq!(store.put(&big).unwrap().added_bytes, LARGE as u64);
    assert_eq!(store.put(&big).unwrap().added_bytes, 0);
    let third = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(third.size_bytes().unwrap(), size + LARGE as u64);
}

#[test]
fn gc_removes_the_oldest_unreferenced_blobs_until_under_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_store_bytes: 5 * LARGE as u64 / 2,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    let blobs: Vec<String> = (0..5u8)
        .map(|i| store.put(&vec![i; LARGE]).unwrap().hash)
        .collect();
    // Blob 0 is the oldest but referenced; 1 is next; 4 is the newest.
    for (i, hash) in blobs.iter().enumerate() {
        age(&store, hash, Duration::from_secs(10_000 - i as u64 * 1000));
    }
    let keep: HashSet<String> = [blobs[0].clone()].into();
    let report = store.gc(&keep).unwrap();
    assert_eq!(report.removed, 3);
    assert_eq!(report.freed_bytes, 3 * LARGE as u64);
    assert_eq!(report.size_bytes, 2 * LARGE as u64);
    assert!(store.get(&blobs[0]).unwrap().is_some(), "referenced: kept");
    for gone in &blobs[1..4] {
        assert!(store.get(gone).unwrap().is_none());
    }
    assert!(store.get(&blobs[4]).unwrap().is_some(), "newest: kept");
    assert_eq!(store.size_bytes().unwrap(), 2 * LARGE as u64);
}

#[test]
fn a_blob_referenced_again_becomes_young() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_store_bytes: LARGE as u64,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    let old = store.put(&vec![1; LARGE]).unwrap().hash;
    let newer = store.put(&vec![2; LARGE]).unwrap().hash;
    age(&store, &old, Duration::from_secs(20_000));
    age(&store, &newer, Duration::from_secs(10_000));
    // Referencing the old one again refreshes it: the other one goes.
    assert_eq!(store.put(&vec![1; LARGE]).unwrap().added_bytes, 0);
    store.gc(&HashSet::new()).unwrap();
    assert!(store.get(&old).unwrap().is_some());
    assert!(store.get(&newer).unwrap().is_none());
    assert_eq!(old, hash_bytes(&vec![1; LARGE]));
}

/// The blocks the files under `dir` take.
fn disk_use(dir: &Path) -> u64 {
    let mut total = 0;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total += meta.blocks() * 512;
            }
        }
    }
    total
}

/// Issue 41: many small blobs (a first snapshot outside git copies every file) take at
/// most 3× their bytes on disk; they are all there for another handle, and a small blob
/// an older pith stored as a file of its own is still read.
#[test]
fn many_small_blobs_take_at_most_three_times_their_bytes_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), StoreConfig::default()).unwrap();
    let mut held = 0u64;
    let mut hashes = Vec::new();
    for i in 0..5_000u32 {
        let bytes = format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(1 + i as usize % 4);
        held += store.put(bytes.as_bytes()).unwrap().added_bytes;
        hashes.push((hash_bytes(bytes.as_bytes()), bytes));
    }
    let used = disk_use(dir.path());
    assert!(used <= 3 * held, "{used} bytes on disk for {held} held");
    let again = Store::open(dir.path(), StoreConfig::default()).unwrap();
    for (hash, bytes) in hashes.iter().step_by(97) {
        assert_eq!(again.get(hash).unwrap().unwrap(), bytes.as_bytes());
        assert!(again.contains(hash));
    }
    let old = b"stored loose by an older pith";
    let hash = hash_bytes(old);
    let path = dir.path().join("blobs").join(&hash[..2]);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join(&hash[2..]), old).unwrap();
    assert_eq!(again.get(&hash).unwrap().unwrap(), old);
    assert_eq!(again.put(old).unwrap().added_bytes, 0);
}

/// GC takes an old pack whole, keeping the blobs of it that are still referenced; a pack
/// appended to within the hour is left alone.
#[test]
fn gc_drops_old_packs_and_keeps_their_referenced_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_store_bytes: 0,
        ..StoreConfig::default()
    };
    let writer = Store::open(dir.path(), config).unwrap();
    let hashes: Vec<String> = (0..4u8)
        .map(|i| writer.put(&[i; 100]).unwrap().hash)
        .collect();
    let collector = Store::open(dir.path(), config).unwrap();
    let keep: HashSet<String> = [hashes[1].clone()].into();
    collector.gc(&keep).unwrap();
    for hash in &hashes {
        assert!(
            collector.get(hash).unwrap().is_some(),
            "a recent pack stays"
        );
    }
    for pack in std::fs::read_dir(dir.path().join("packs"))
        .unwrap()
        .flatten()
    {
        let file = std::fs::File::options()
            .write(true)
            .open(pack.path())
            .unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(7200))
            .unwrap();
    }
    let report = collector.gc(&keep).unwrap();
    assert_eq!(report.removed, 1);
    assert_eq!(collector.get(&hashes[1]).unwrap().unwrap(), [1; 100]);
    assert!(collector.get(&hashes[0]).unwrap().is_none());
    // The writer's handle finds the kept blob where the collector moved it.
    assert_eq!(writer.get(&hashes[1]).unwrap().unwrap(), [1; 100]);
    assert!(writer.get(&hashes[2]).unwrap().is_none());
}
