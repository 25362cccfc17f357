//! Pre-images from git: in a git repository, a tracked file whose stat matches git's
//! index holds exactly the blob the index names, and that blob is already in git's object
//! store. The first snapshot records such a file by its blob id instead of copying it;
//! its bytes are copied into pith's store only when a change of the file is found (the
//! `before` of that change). Read-only: nothing is ever written under `.git`.
//!
//! Trusted only where the index is exact: an entry at stage 0, not marked assume-valid,
//! skip-worktree or intent-to-add, of a regular file whose size, mtime, ctime and inode
//! match lstat, modified before the index was written (a file changed in the index's own
//! second is "racily clean" and read instead, as git does). A repository with checkout
//! filters (`.gitattributes`, `core.autocrlf`, an attributes file) is not used at all: its
//! blobs may differ from the files.

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use gix::bstr::ByteSlice;

/// A git blob's id.
pub(crate) type BlobId = gix::ObjectId;

/// git's index of the repository that holds the workspace, for the first snapshot.
pub(crate) struct GitIndex {
    objects: GitObjects,
    index: gix::index::File,
    /// The workspace's path inside the repository's work tree (`""` at its top), with a
    /// trailing `/` when not empty.
    prefix: String,
    /// When the index was written (seconds, nanoseconds): files modified at or after it
    /// are not trusted.
    written: (i64, u32),
    /// The directory of the last lookup (repository-relative, with its trailing `/`) and
    /// the range of the index's entries below it: a walk looks up a directory's files one
    /// after another, each then a search among its neighbours, not the whole index.
    last_dir: (Vec<u8>, std::ops::Range<usize>),
}

/// git's object store, to read a recorded blob back when its file changes.
#[derive(Clone)]
pub(crate) struct GitObjects {
    repo: gix::ThreadSafeRepository,
}

pith_core::debug_fields!(GitObjects |this| {
    git_dir: this.repo.git_dir(),
});

impl GitIndex {
    /// git's index for the workspace `root`, or None when `root` is not in a git work
    /// tree, the index cannot be read, or the repository has checkout filters.
    pub(crate) fn open(root: &Path) -> Option<GitIndex> {
        let repo = gix::discover(root).ok()?;
        let workdir = repo.workdir()?.canonicalize().ok()?;
        let root = root.canonicalize().ok()?;
        let inside = root.strip_prefix(&workdir).ok()?.to_str()?.to_owned();
        let prefix = if inside.is_empty() {
            inside
        } else {
            format!("{inside}/")
        };
        if has_filters(&repo) {
            tracing::debug!("checkpoints: git checkout filters in use; copying files instead");
            return None;
        }
        let index = repo.open_index().ok()?;
        if index
            .entries()
            .iter()
            .any(|entry| entry.path(&index).ends_with(b".gitattributes"))
        {
            tracing::debug!("checkpoints: the repository has .gitattributes; copying files");
            return None;
        }
        let stamp = index.timestamp();
        let written = (stamp.unix_seconds(), stamp.nanoseconds());
        Some(GitIndex {
            objects: GitObjects {
                repo: repo.into_sync(),
            },
            index,
            prefix,
            written,
            last_dir: (b"\0".to_vec(), 0..0),
        })
    }

    /// The blob id of the workspace file `rel` (lstat `meta`), when git's index vouches
    /// for its content.
    pub(crate) fn clean_blob(&mut self, rel: &str, meta: &Metadata) -> Option<BlobId> {
        if !meta.is_file() {
            return None;
        }
        let joined;
        let path = if self.prefix.is_empty() {
            rel.as_bytes()
        } else {
            joined = format!("{}{rel}", self.prefix);
            joined.as_bytes()
        };
        let written = self.written;
        let entry = self.entry(path)?;
        let flags = gix::index::entry::Flags::ASSUME_VALID
            | gix::index::entry::Flags::SKIP_WORKTREE
            | gix::index::entry::Flags::INTENT_TO_ADD;
        if entry.stage_raw() != 0 || entry.flags.intersects(flags) {
            return None;
        }
        if !entry.mode.contains(gix::index::entry::Mode::FILE) {
            return None;
        }
        let stat = &entry.stat;
        // As git does (core.trustctime): size, mtime and ctime, to the nanosecond, and the
        // inode when the index has it.
        let matches = u64::from(stat.size) == meta.size()
            && i64::from(stat.mtime.secs) == meta.mtime()
            && i64::from(stat.mtime.nsecs) == meta.mtime_nsec()
            && i64::from(stat.ctime.secs) == meta.ctime()
            && i64::from(stat.ctime.nsecs) == meta.ctime_nsec()
            && (stat.ino == 0 || u64::from(stat.ino) == meta.ino() & u64::from(u32::MAX));
        let before_index = (meta.mtime(), meta.mtime_nsec() as u32) < written;
        (matches && before_index).then_some(entry.id)
    }

    /// The entry of `path` (repository-relative), searched among the entries of its
    /// directory. A path in conflict (stages 1–3) is found at one of its stages, which the
    /// caller refuses.
    fn entry(&mut self, path: &[u8]) -> Option<&gix::index::Entry> {
        let dir_len = path
            .iter()
            .rposition(|b| *b == b'/')
            .map_or(0, |slash| slash + 1);
        let (dir, name) = path.split_at(dir_len);
        // The entries below `dir` share its bytes: their names below it sort as they do.
        if self.last_dir.0 != dir {
            let range = self
                .index
                .prefixed_entries_range(dir.as_bstr())
                .unwrap_or(0..0);
            self.last_dir = (dir.to_vec(), range);
        }
        let entries = self.index.entries().get(self.last_dir.1.clone())?;
        let at = entries
            .binary_search_by(|entry| {
                let full: &[u8] = entry.path(&self.index);
                full.get(dir_len..).unwrap_or_default().cmp(name)
            })
            .ok()?;
        entries.get(at)
    }

    /// How many entries the index has.
    pub(crate) fn len(&self) -> usize {
        self.index.entries().len()
    }

    /// The object store, kept after the snapshot (the index itself is dropped).
    pub(crate) fn objects(&self) -> GitObjects {
        self.objects.clone()
    }
}

impl GitObjects {
    /// The bytes of blob `id`, or None when git no longer has it.
    pub(crate) fn read(&self, id: BlobId) -> Option<Vec<u8>> {
        let repo = self.repo.to_thread_local();
        let object = repo.find_object(id).ok()?;
        if object.kind != gix::object::Kind::Blob {
            return None;
        }
        Some(object.detach().data)
    }
}

/// True when checkouts may transform blobs: line-ending conversion, or an attributes file
/// outside the index (a `.gitattributes` in the index is checked by the caller).
fn has_filters(repo: &gix::Repository) -> bool {
    let config = repo.config_snapshot();
    let autocrlf = config
        .string("core.autocrlf")
        .is_some_and(|value| !value.eq_ignore_ascii_case(b"false"));
    let attributes_file = config.string("core.attributesFile").is_some();
    let info_attributes = repo.git_dir().join("info").join("attributes").exists();
    autocrlf || attributes_file || info_attributes
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(root: &Path, args: &[&str]) {
        let status = Command::new("git")
            .args(args)
            .current_dir(root)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    /// A file as committed is vouched for, and its blob reads back; a modified file, an
    /// untracked one and a file touched after the index was written are not.
    #[test]
    fn the_index_vouches_only_for_files_as_git_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(root.join("b.txt"), "b\n").unwrap();
        std::fs::create_dir(root.join("src2")).unwrap();
        std::fs::write(root.join("src2/c.rs"), "fn c() {}\n").unwrap();
        // The index must be written after the files' mtimes (racy git).
        std::thread::sleep(std::time::Duration::from_millis(20));
        git(root, &["add", "."]);
        git(root, &["commit", "-q", "-m", "one"]);
        std::fs::write(root.join("b.txt"), "changed\n").unwrap();
        std::fs::write(root.join("new.txt"), "new\n").unwrap();
        let mut index = GitIndex::open(root).expect("a git work tree");
        assert_eq!(index.len(), 3);
        let meta = |rel: &str| std::fs::symlink_metadata(root.join(rel)).unwrap();
        let id = index.clean_blob("src/a.rs", &meta("src/a.rs")).unwrap();
        assert_eq!(index.objects().read(id).unwrap(), b"fn a() {}\n");
        assert_eq!(index.clean_blob("b.txt", &meta("b.txt")), None);
        assert_eq!(index.clean_blob("new.txt", &meta("new.txt")), None);
        assert_eq!(index.clean_blob("src", &meta("src")), None);
        // Lookups moving between directories find each file among its directory's.
        assert!(index.clean_blob("src/a.rs", &meta("src/a.rs")).is_some());
        assert!(index.clean_blob("src2/c.rs", &meta("src2/c.rs")).is_some());
        assert!(index.clean_blob("src/a.rs", &meta("src/a.rs")).is_some());
        assert_eq!(index.clean_blob("src/b.txt", &meta("b.txt")), None);
        // A workspace below the work tree's top finds its files under its prefix.
        let mut below = GitIndex::open(&root.join("src")).unwrap();
        assert!(below.clean_blob("a.rs", &meta("src/a.rs")).is_some());
    }

    #[test]
    fn outside_git_or_with_filters_there_is_no_index() {
        let dir = tempfile::tempdir().unwrap();
        assert!(GitIndex::open(dir.path()).is_none());
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join(".gitattributes"), "*.txt eol=crlf\n").unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        git(root, &["add", "."]);
        assert!(GitIndex::open(root).is_none(), "checkout filters");
    }
}
