//! The tracker's record of changed paths: a generation counter, and for each path the
//! generation of its last change, so "what changed since mark m" costs the number of
//! changes after m, never the size of the tree.

use std::collections::{BTreeMap, HashMap};

/// Changed paths by generation.
#[derive(Debug, Default)]
pub(crate) struct ChangeLog {
    generation: u64,
    by_path: HashMap<String, u64>,
    by_generation: BTreeMap<u64, String>,
    /// Changes up to this generation may be missing (a queue overflow, a lost watch, the
    /// switch to scanning): a question about an earlier mark has no answer.
    lost_at: u64,
}

impl ChangeLog {
    /// Records a change of `path` now.
    pub(crate) fn record(&mut self, path: &str) {
        self.generation += 1;
        let generation = self.generation;
        match self.by_path.get_mut(path) {
            Some(last) => {
                self.by_generation.remove(last);
                *last = generation;
            }
            None => {
                self.by_path.insert(path.to_owned(), generation);
            }
        }
        self.by_generation.insert(generation, path.to_owned());
    }

    /// Notes that changes may have been missed until now.
    pub(crate) fn lose(&mut self) {
        self.generation += 1;
        self.lost_at = self.generation;
    }

    /// The current generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The paths changed after `mark`, sorted, or None when changes after `mark` may
    /// have been missed.
    pub(crate) fn since(&self, mark: u64) -> Option<Vec<String>> {
        if mark < self.lost_at {
            return None;
        }
        let mut paths: Vec<String> = self
            .by_generation
            .range(mark + 1..)
            .map(|(_, path)| path.clone())
            .collect();
        paths.sort_unstable();
        Some(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_returns_each_path_once_and_losses_void_older_marks() {
        let mut log = ChangeLog::default();
        log.record("a");
        let mark = log.generation();
        log.record("b");
        log.record("a");
        log.record("b");
        assert_eq!(log.since(mark).unwrap(), ["a", "b"]);
        assert_eq!(log.since(0).unwrap(), ["a", "b"]);
        assert_eq!(log.since(log.generation()).unwrap(), Vec::<String>::new());
        log.lose();
        assert_eq!(log.since(mark), None);
        let after = log.generation();
        log.record("c");
        assert_eq!(log.since(after).unwrap(), ["c"]);
    }
}
