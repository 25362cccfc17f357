use std::collections::BTreeMap;

use super::*;

type State = BTreeMap<String, (StatKey, [u8; 32])>;

fn stat(i: u64) -> StatKey {
    StatKey {
        size: i,
        mtime_ns: 1_000 + i as i64,
        ino: 7 + i,
        mode: 0o100_644,
    }
}

fn store_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    dir
}

/// `files` paths `dir{i/50}/file{i}.rs`, each with its own stat key and hash.
fn tree(files: u64) -> State {
    (0..files)
        .map(|i| {
            let mut hash = [0; 32];
            hash[..8].copy_from_slice(&i.to_le_bytes());
            (format!("dir{}/file{i}.rs", i / 50), (stat(i), hash))
        })
        .collect()
}

/// A session start: loads the index and saves `state` against it.
fn start(dir: &Path, state: &State) -> Saved {
    let known = load(dir);
    save(dir, &known, || {
        state
            .iter()
            .map(|(path, (stat, hash))| (path.as_str(), *stat, *hash))
    })
    .unwrap()
}

/// The trusted entries of the index as loaded.
fn loaded(dir: &Path) -> State {
    let known = load(dir);
    known
        .records
        .iter()
        .filter(|(_, record)| record.trusted)
        .map(|(path, record)| (path.to_string(), (record.stat, record.hash)))
        .collect()
}

fn size(dir: &Path, name: &str) -> u64 {
    std::fs::metadata(dir.join(name)).map_or(0, |meta| meta.len())
}

/// `k` files of `state` changed (new stat key and hash).
fn change(state: &mut State, from: u64, k: u64) {
    for i in from..from + k {
        let path = format!("dir{}/file{i}.rs", i / 50);
        let entry = state.get_mut(&path).unwrap();
        entry.0.mtime_ns += 1_000;
        entry.0.size += 1;
        entry.1[31] ^= 0xff;
    }
}

#[test]
fn saved_entries_load_back_except_racy_ones_and_a_damaged_base_trusts_nothing() {
    let dir = store_dir();
    let old = stat(1);
    let racy = StatKey {
        mtime_ns: i64::MAX - 1,
        ..old
    };
    let state: State = [
        ("a".to_owned(), (old, [1; 32])),
        ("b".to_owned(), (racy, [2; 32])),
        ("dir/é c".to_owned(), (old, [3; 32])),
    ]
    .into_iter()
    .collect();
    assert!(matches!(start(dir.path(), &state), Saved::Folded(_)));
    let trusted = loaded(dir.path());
    assert_eq!(trusted.len(), 2);
    assert_eq!(trusted["a"], (old, [1; 32]));
    assert_eq!(trusted["dir/é c"], (old, [3; 32]));
    assert_eq!(load(dir.path()).get("b"), None, "racy");
    // The racy record is written again (it may be trusted next time; a base this small
    // is folded rather than journaled).
    assert_ne!(start(dir.path(), &state), Saved::Unchanged);
    let bytes = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
    // Every torn prefix, and any flipped byte, is ignored whole.
    for cut in 0..bytes.len() {
        assert!(
            parse_base(&bytes[..cut], &mut HashMap::new()).is_none(),
            "torn at {cut}"
        );
    }
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        std::fs::write(dir.path().join(FILE_NAME), &damaged).unwrap();
        let known = load(dir.path());
        assert_eq!(known.len(), 0, "damaged at {at}");
        assert!(known.get("a").is_none());
    }
    std::fs::write(dir.path().join(FILE_NAME), "{damaged").unwrap();
    assert_eq!(load(dir.path()).len(), 0);
    // A damaged base is replaced whole at the next save.
    assert!(matches!(start(dir.path(), &state), Saved::Folded(_)));
    assert_eq!(loaded(dir.path()).len(), 2);
}

#[test]
fn a_start_that_changes_k_files_writes_bytes_for_k_records_not_for_the_tree() {
    let dir = store_dir();
    let mut state = tree(2_000);
    assert!(matches!(start(dir.path(), &state), Saved::Folded(_)));
    let base = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
    assert!(base.len() > 150_000, "{}", base.len());
    assert_eq!(start(dir.path(), &state), Saved::Unchanged);
    assert_eq!(
        size(dir.path(), JOURNAL_NAME),
        0,
        "an unchanged start writes nothing"
    );

    // Each start changes 5 files, removes one and adds one: 7 records of about 80 bytes.
    let record_max = (1 + 2 + "dir39/file1999.rs".len() + RECORD_TAIL) as u64;
    let mut journal = Vec::new();
    for round in 0..3u64 {
        change(&mut state, round * 10, 5);
        state.remove(&format!("dir39/file{}.rs", 1_999 - round));
        state.insert(format!("new/{round}.rs"), (stat(round), [9; 32]));
        let Saved::Appended(written) = start(dir.path(), &state) else {
            panic!("round {round}: appended");
        };
        let header = if round == 0 { 40 } else { 0 };
        assert!(written <= header + 4 + 8 + 7 * record_max + 32, "{written}");
        assert_eq!(
            size(dir.path(), JOURNAL_NAME),
            journal.len() as u64 + written
        );
        let now = std::fs::read(dir.path().join(JOURNAL_NAME)).unwrap();
        assert!(now.starts_with(&journal), "appended, not rewritten");
        journal = now;
        assert_eq!(
            std::fs::read(dir.path().join(FILE_NAME)).unwrap(),
            base,
            "the base is left as it is"
        );
        assert_eq!(loaded(dir.path()), state, "round {round}");
    }
}

#[test]
fn the_journal_is_folded_into_the_base_past_a_quarter_of_it() {
    let dir = store_dir();
    let mut state = tree(1_000);
    start(dir.path(), &state);
    let base_len = size(dir.path(), FILE_NAME);
    let mut folded = false;
    for round in 0..20 {
        change(&mut state, round * 20, 20);
        match start(dir.path(), &state) {
            Saved::Appended(_) => {
                assert!(size(dir.path(), JOURNAL_NAME) <= base_len / FOLD_DIVISOR);
            }
            Saved::Folded(written) => {
                assert!(round >= 2, "not before the journal is a quarter: {round}");
                assert_eq!(written, size(dir.path(), FILE_NAME));
                assert!(!dir.path().join(JOURNAL_NAME).exists(), "journal removed");
                folded = true;
                break;
            }
            Saved::Unchanged => panic!("round {round} changed files"),
        }
        assert_eq!(loaded(dir.path()), state);
    }
    assert!(folded);
    assert_eq!(loaded(dir.path()), state);
    // The next change starts a new journal over the new base.
    change(&mut state, 900, 1);
    assert!(matches!(start(dir.path(), &state), Saved::Appended(_)));
    assert_eq!(loaded(dir.path()), state);
}

/// A base and a journal of two batches, and the states after each (base, one, two).
fn journal_of_two_batches(dir: &Path) -> [State; 3] {
    let mut state = tree(500);
    start(dir, &state);
    let first = state.clone();
    change(&mut state, 0, 3);
    state.remove("dir9/file499.rs");
    start(dir, &state);
    let second = state.clone();
    change(&mut state, 100, 2);
    state.insert("new.rs".into(), (stat(3), [4; 32]));
    start(dir, &state);
    [first, second, state]
}

/// Where the journal's first batch ends: after the journal's 40-byte header come the
/// batch's length (4 bytes), its body and its SHA-256.
fn first_batch_end(journal: &[u8]) -> usize {
    let body = u32::from_le_bytes(journal[40..44].try_into().unwrap()) as usize;
    44 + body + 32
}

#[test]
fn a_torn_journal_tail_is_dropped_and_nothing_after_it_is_trusted() {
    let dir = store_dir();
    let states = journal_of_two_batches(dir.path());
    let journal = std::fs::read(dir.path().join(JOURNAL_NAME)).unwrap();
    let first_batch_end = first_batch_end(&journal);
    for cut in 0..journal.len() {
        std::fs::write(dir.path().join(JOURNAL_NAME), &journal[..cut]).unwrap();
        let expected = if cut < first_batch_end {
            &states[0]
        } else {
            &states[1]
        };
        assert_eq!(&loaded(dir.path()), expected, "cut at {cut}");
    }
    // The next start cuts the torn tail (or folds) and saves what it found.
    std::fs::write(dir.path().join(JOURNAL_NAME), &journal[..journal.len() - 5]).unwrap();
    assert_ne!(start(dir.path(), &states[2]), Saved::Unchanged);
    assert_eq!(loaded(dir.path()), states[2]);
}

#[test]
fn every_flipped_byte_of_the_journal_trusts_nothing_from_its_batch_on() {
    let dir = store_dir();
    let states = journal_of_two_batches(dir.path());
    let journal = std::fs::read(dir.path().join(JOURNAL_NAME)).unwrap();
    let first_batch_end = first_batch_end(&journal);
    for at in 0..journal.len() {
        let mut damaged = journal.clone();
        damaged[at] ^= 0x10;
        std::fs::write(dir.path().join(JOURNAL_NAME), &damaged).unwrap();
        // The header names the base: damaged, the journal is ignored whole.
        let expected = if at < first_batch_end {
            &states[0]
        } else {
            &states[1]
        };
        let known = load(dir.path());
        assert_eq!(known.journal, JournalState::Unusable, "damaged at {at}");
        assert_eq!(&loaded(dir.path()), expected, "damaged at {at}");
    }
    // A damaged journal is folded away at the next save.
    let mut damaged = journal;
    damaged[50] ^= 0x10;
    std::fs::write(dir.path().join(JOURNAL_NAME), &damaged).unwrap();
    assert!(matches!(start(dir.path(), &states[2]), Saved::Folded(_)));
    assert!(!dir.path().join(JOURNAL_NAME).exists());
    assert_eq!(loaded(dir.path()), states[2]);
}

#[test]
fn a_journal_of_another_base_is_ignored() {
    let dir = store_dir();
    let states = journal_of_two_batches(dir.path());
    let journal = std::fs::read(dir.path().join(JOURNAL_NAME)).unwrap();
    // A fold that crashed before it removed the journal: a new base, the old journal.
    let known = load(dir.path());
    fold(
        dir.path(),
        states[0]
            .iter()
            .map(|(path, (stat, hash))| (path.as_str(), *stat, *hash)),
    )
    .unwrap();
    drop(known);
    std::fs::write(dir.path().join(JOURNAL_NAME), &journal).unwrap();
    assert_eq!(loaded(dir.path()), states[0]);
    assert!(matches!(start(dir.path(), &states[2]), Saved::Folded(_)));
    assert_eq!(loaded(dir.path()), states[2]);
}

#[test]
fn saving_removes_the_old_json_index() {
    let dir = store_dir();
    std::fs::write(dir.path().join(OLD_FILE_NAME), "{}").unwrap();
    start(dir.path(), &tree(1));
    assert!(!dir.path().join(OLD_FILE_NAME).exists());
    assert_eq!(loaded(dir.path()), tree(1));
    assert!(dir.path().join(FILE_NAME).exists());
}
