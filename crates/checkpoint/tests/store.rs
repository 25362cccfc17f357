//! The blob store: deduplication, caps and GC.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use pith_checkpoint::{hash_bytes, Store, StoreConfig};

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
    assert_eq!(store.size_bytes().unwrap(), 15);
    // A second handle counts the same.
    let again = Store::open(dir.path(), StoreConfig::default()).unwrap();
    assert_eq!(again.size_bytes().unwrap(), 15);
}

#[test]
fn gc_removes_the_oldest_unreferenced_blobs_until_under_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_store_bytes: 250,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    let blobs: Vec<String> = (0..5u8)
        .map(|i| store.put(&[i; 100]).unwrap().hash)
        .collect();
    // Blob 0 is the oldest but referenced; 1 is next; 4 is the newest.
    for (i, hash) in blobs.iter().enumerate() {
        age(&store, hash, Duration::from_secs(10_000 - i as u64 * 1000));
    }
    let keep: HashSet<String> = [blobs[0].clone()].into();
    let report = store.gc(&keep).unwrap();
    assert_eq!(report.removed, 3);
    assert_eq!(report.freed_bytes, 300);
    assert_eq!(report.size_bytes, 200);
    assert!(store.get(&blobs[0]).unwrap().is_some(), "referenced: kept");
    for gone in &blobs[1..4] {
        assert!(store.get(gone).unwrap().is_none());
    }
    assert!(store.get(&blobs[4]).unwrap().is_some(), "newest: kept");
    assert_eq!(store.size_bytes().unwrap(), 200);
}

#[test]
fn a_blob_referenced_again_becomes_young() {
    let dir = tempfile::tempdir().unwrap();
    let config = StoreConfig {
        max_store_bytes: 100,
        ..StoreConfig::default()
    };
    let store = Store::open(dir.path(), config).unwrap();
    let old = store.put(&[1; 100]).unwrap().hash;
    let newer = store.put(&[2; 100]).unwrap().hash;
    age(&store, &old, Duration::from_secs(20_000));
    age(&store, &newer, Duration::from_secs(10_000));
    // Referencing the old one again refreshes it: the other one goes.
    assert_eq!(store.put(&[1; 100]).unwrap().added_bytes, 0);
    store.gc(&HashSet::new()).unwrap();
    assert!(store.get(&old).unwrap().is_some());
    assert!(store.get(&newer).unwrap().is_none());
    assert_eq!(old, hash_bytes(&[1; 100]));
}
