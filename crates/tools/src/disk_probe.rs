//! The session ledger's view of the disk ([`FileProbe`]): fingerprints to tell which
//! files changed since the model last saw them, and the content of the files re-attached
//! after a compaction, shown exactly as the `read` tool shows them.
//!
//! Paths are resolved like the tools resolve them ([`Workspace::resolve_read`]). Only
//! files inside the workspace are re-attached: a compaction must not put a file outside it
//! back in front of the model without a `read` call the permission policy saw.

use pith_core::context::ledger::FileProbe;

use crate::config::Limits;
use crate::workspace::{PathScope, Workspace};

/// Lines asked of a re-attached file; `max_bytes` is what really bounds it.
const SHOW_MAX_LINES: u64 = 100_000;

/// The workspace's files as the session ledger sees them.
#[derive(Debug, Clone)]
pub struct DiskProbe {
    workspace: Workspace,
    limits: Limits,
}

impl DiskProbe {
    /// A probe of `workspace`, showing files with `limits` (line lengths, page size).
    pub fn new(workspace: Workspace, limits: Limits) -> Self {
        Self { workspace, limits }
    }
}

impl FileProbe for DiskProbe {
    fn fingerprint(&self, path: &str) -> Option<String> {
        let target = self.workspace.resolve_read(path).ok()?;
        crate::fingerprint::of_file(&target.path)
    }

    fn show(&self, path: &str, offset: u64, max_bytes: usize) -> Option<String> {
        let target = self.workspace.resolve_read(path).ok()?;
        if target.scope != PathScope::Workspace {
            return None;
        }
        let limits = Limits {
            read_max_page_bytes: max_bytes,
            ..self.limits.clone()
        };
        let shown = self.workspace.display(&target.path);
        crate::read::read_lines(&target.path, &shown, offset.max(1), SHOW_MAX_LINES, &limits)
            .ok()
            .map(|page| page.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(root: &std::path::Path, spill: &std::path::Path) -> DiskProbe {
        DiskProbe::new(Workspace::new(root, spill).unwrap(), Limits::default())
    }

    #[test]
    fn fingerprints_follow_the_file_and_missing_files_have_none() {
        let root = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.rs"), "one\n").unwrap();
        let probe = probe(root.path(), spill.path());
        let first = probe.fingerprint("a.rs").unwrap();
        std::fs::write(root.path().join("a.rs"), "two\n").unwrap();
        assert_ne!(probe.fingerprint("a.rs").unwrap(), first);
        assert_eq!(probe.fingerprint("gone.rs"), None);
        let absolute = root.path().join("a.rs").display().to_string();
        assert_eq!(probe.fingerprint(&absolute), probe.fingerprint("a.rs"));
    }

    #[test]
    fn shows_workspace_text_files_as_read_does_within_max_bytes() {
        let root = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        let text: String = (1..=500).map(|i| format!("line {i}\n")).collect();
        std::fs::write(root.path().join("long.txt"), &text).unwrap();
        std::fs::write(root.path().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
        let probe = probe(root.path(), spill.path());
        let whole = probe.show("long.txt", 1, 1 << 20).unwrap();
        assert!(whole.contains("     1\tline 1\n") && whole.contains("   500\tline 500"));
        let from = probe.show("long.txt", 100, 1 << 20).unwrap();
        assert!(from.starts_with("   100\tline 100\n"), "{from}");
        let small = probe.show("long.txt", 1, 300).unwrap();
        assert!(small.len() < 600, "bounded: {} bytes", small.len());
        assert!(!small.contains("line 500"));
        assert_eq!(
            probe.show("blob.bin", 1, 1000),
            None,
            "binary files are not shown"
        );
        assert_eq!(probe.show("gone.txt", 1, 1000), None);
    }

    #[test]
    fn files_outside_the_workspace_are_fingerprinted_but_never_shown() {
        let root = tempfile::tempdir().unwrap();
        let spill = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "token\n").unwrap();
        let probe = probe(root.path(), spill.path());
        let path = secret.display().to_string();
        assert!(probe.fingerprint(&path).is_some());
        assert_eq!(probe.show(&path, 1, 1000), None);
        assert_eq!(probe.show("../secret.txt", 1, 1000), None);
    }
}
