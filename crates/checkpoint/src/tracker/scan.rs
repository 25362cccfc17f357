//! The fallback when inotify cannot watch the tree (watches exhausted, or none allowed):
//! a map of every kept path's stat key (files and directories), compared with a fresh walk on each question.
//! Bounded: beyond `cap` entries the tracker answers "unknown".

use std::collections::HashMap;
use std::path::Path;

use crate::rules::Rules;
use crate::walk::{walk, StatKey};

/// The stat keys of the tree's paths at the last scan.
#[derive(Debug)]
pub(crate) struct ScanState {
    entries: HashMap<String, StatKey>,
    over_cap: bool,
    cap: usize,
}

impl ScanState {
    /// A first scan of `root`.
    pub(crate) fn new(root: &Path, rules: &mut Rules, cap: usize) -> ScanState {
        let (entries, over_cap) = scan(root, rules, cap);
        ScanState {
            entries,
            over_cap,
            cap,
        }
    }

    /// True when the tree has more files than the cap: scans tell nothing.
    pub(crate) fn over_cap(&self) -> bool {
        self.over_cap
    }

    /// Scans again and returns the paths whose stat key changed, appeared or vanished
    /// (unsorted), or None when the tree is over the cap.
    pub(crate) fn rescan(&mut self, root: &Path, rules: &mut Rules) -> Option<Vec<String>> {
        let (entries, over_cap) = scan(root, rules, self.cap);
        let previous = std::mem::replace(&mut self.entries, entries);
        self.over_cap = over_cap;
        if over_cap {
            return None;
        }
        let mut changed: Vec<String> = self
            .entries
            .iter()
            .filter(|(path, key)| previous.get(*path) != Some(key))
            .map(|(path, _)| path.clone())
            .collect();
        changed.extend(
            previous
                .into_keys()
                .filter(|path| !self.entries.contains_key(path)),
        );
        Some(changed)
    }
}

fn scan(root: &Path, rules: &mut Rules, cap: usize) -> (HashMap<String, StatKey>, bool) {
    let mut entries = HashMap::new();
    let mut over_cap = false;
    // Directories too: one created empty, removed or given another mode is a change.
    walk(root, "", rules, |rel, meta| {
        if entries.len() >= cap {
            over_cap = true;
            return false;
        }
        entries.insert(rel.to_owned(), StatKey::of(meta));
        true
    });
    (entries, over_cap)
}
