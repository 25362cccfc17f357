//! Crash trials: SIGKILL a process applying a large rewind at random moments; after each
//! kill every file must hold, byte for byte, its old content or its new one (never a mix,
//! never a truncation), and the only stray files are the rewind's own temp files, which
//! the next rewind of those directories removes.
//!
//! `PITH_CRASH_TRIALS` (default 30) and `PITH_CRASH_SEED` tune a run.
#![allow(clippy::unwrap_used, missing_docs)] // test code

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pith_checkpoint::{Store, StoreConfig, Target};
use pith_core::FileState;

/// One path's two versions (None = absent) and modes.
struct Versions {
    old: Option<(Vec<u8>, u32)>,
    new: Option<(Vec<u8>, u32)>,
}

fn content(i: usize, version: u8, rng: &mut fastrand::Rng) -> Vec<u8> {
    let size = if i.is_multiple_of(10) {
        1_000_000
    } else {
        rng.usize(100..4000)
    };
    let mut bytes = vec![version; size];
    bytes[..8].copy_from_slice(&(i as u64).to_le_bytes());
    bytes
}

fn versions(rng: &mut fastrand::Rng) -> BTreeMap<String, Versions> {
    let mut all = BTreeMap::new();
    for i in 0..160 {
        let path = format!("d{}/f{i}", i % 8);
        let old = Some((content(i, b'o', rng), 0o644));
        let new = Some((
            content(i, b'n', rng),
            if i % 16 == 1 { 0o755 } else { 0o644 },
        ));
        let (old, new) = match i % 8 {
            6 => (old, None),
            7 => (None, new),
            _ => (old, new),
        };
        all.insert(path, Versions { old, new });
    }
    all
}

fn write_version(root: &Path, all: &BTreeMap<String, Versions>) {
    if root.exists() {
        fs::remove_dir_all(root).unwrap();
    }
    fs::create_dir_all(root).unwrap();
    for (path, versions) in all {
        if let Some((bytes, mode)) = &versions.old {
            let abs = root.join(path);
            fs::create_dir_all(abs.parent().unwrap()).unwrap();
            fs::write(&abs, bytes).unwrap();
            fs::set_permissions(&abs, fs::Permissions::from_mode(*mode)).unwrap();
        }
    }
}

/// Checks every file; returns (paths already new, stray temp files).
fn check(root: &Path, all: &BTreeMap<String, Versions>) -> Result<(usize, usize), String> {
    let mut new_count = 0;
    for (path, versions) in all {
        let abs = root.join(path);
        let now = match fs::symlink_metadata(&abs) {
            Ok(meta) => Some((fs::read(&abs).unwrap(), meta.permissions().mode() & 0o7777)),
            Err(_) => None,
        };
        let is_old = now.as_ref().map(|(b, _)| b) == versions.old.as_ref().map(|(b, _)| b);
        let is_new = now.as_ref().map(|(b, _)| b) == versions.new.as_ref().map(|(b, _)| b);
        if !is_old && !is_new {
            let len = now.map(|(b, _)| b.len());
            return Err(format!(
                "{path} is torn: {len:?} bytes, neither old nor new"
            ));
        }
        if is_new && versions.old != versions.new {
            new_count += 1;
        }
    }
    let mut strays = 0;
    for dir in fs::read_dir(root).unwrap() {
        for entry in fs::read_dir(dir.unwrap().path()).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(".pith-rewind-") {
                strays += 1;
            } else if !name.starts_with('f') {
                return Err(format!("unexpected file {name}"));
            }
        }
    }
    Ok((new_count, strays))
}

#[test]
fn sigkill_during_a_rewind_never_leaves_a_torn_file() {
    let trials: usize = std::env::var("PITH_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let seed: u64 = std::env::var("PITH_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    println!("rewind crash trials: {trials}, PITH_CRASH_SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("work");
    let store_dir = scratch.path().join("store");
    let all = versions(&mut rng);
    let store = Store::open(&store_dir, StoreConfig::default()).unwrap();
    let mut targets = BTreeMap::new();
    for (path, versions) in &all {
        let state = |version: &Option<(Vec<u8>, u32)>| match version {
            Some((bytes, mode)) => FileState::File {
                hash: store.put(bytes).unwrap().hash,
                size: bytes.len() as u64,
                mode: *mode,
            },
            None => FileState::Absent,
        };
        targets.insert(
            path.clone(),
            Target {
                restore: state(&versions.new),
                last_known: state(&versions.old),
            },
        );
    }
    let targets_file = scratch.path().join("targets.json");
    fs::write(&targets_file, serde_json::to_vec(&targets).unwrap()).unwrap();
    let writer = env!("CARGO_BIN_EXE_pith-rewind-crash-writer");
    let command = || {
        let mut command = Command::new(writer);
        command
            .arg(&root)
            .arg(&store_dir)
            .arg(&targets_file)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        command
    };

    // Spawns the writer and returns once it has planned (it is about to write).
    let spawn_planned = || {
        let mut child = command().spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "planned");
        child
    };

    // One uninterrupted run: it ends with every file new, and sets the kill window (the
    // time the writes take).
    write_version(&root, &all);
    let mut child = spawn_planned();
    let started = Instant::now();
    assert!(child.wait().unwrap().success());
    let full = started.elapsed();
    let changed = all.values().filter(|v| v.old != v.new).count();
    assert_eq!(check(&root, &all).unwrap(), (changed, 0));

    let (mut partial, mut strays_seen) = (0, 0);
    for trial in 0..trials {
        write_version(&root, &all);
        let delay = Duration::from_micros(rng.u64(0..=full.as_micros() as u64));
        let mut child = spawn_planned();
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        match check(&root, &all) {
            Ok((new_count, strays)) => {
                if new_count > 0 && new_count < changed {
                    partial += 1;
                }
                strays_seen += strays;
            }
            Err(problem) => panic!("trial {trial} (seed {seed}, kill after {delay:?}): {problem}"),
        }
    }
    // A complete rewind after the last kill leaves no stray temp file.
    let mut child = spawn_planned();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        check(&root, &all).unwrap(),
        (changed, 0),
        "no temp file is left"
    );
    println!(
        "writes took {full:?}; {partial} of {trials} kills landed mid-rewind; {strays_seen} stray temp files"
    );
}
