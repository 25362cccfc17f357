//! The workspaces the bash-turn rows run in, each a committed git repository under the
//! temp directory (removed when dropped): a tiny one, a generated 60,000-file one, and a
//! copy of this repository's working tree. Also the size of a checkpoint store on disk.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Directories of the generated tree (× [`GENERATED_FILES_PER_DIR`] = 60,000 files).
pub const GENERATED_DIRS: usize = 3_000;
/// Files per directory of the generated tree.
pub const GENERATED_FILES_PER_DIR: usize = 20;
/// Directories of the larger generated tree (× [`GENERATED_FILES_PER_DIR`] = 100,000
/// files): the size the first-snapshot targets are set at.
pub const LARGER_DIRS: usize = 5_000;

/// A workspace: a committed git repository in a temp directory.
pub struct Tree {
    /// How the report names it.
    pub label: String,
    /// Files in the working tree (outside `.git`).
    pub files: usize,
    /// Their total size, bytes.
    pub bytes: u64,
    dir: tempfile::TempDir,
}

impl Tree {
    /// The working tree's root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A git repository of two small files.
pub fn tiny() -> Result<Tree> {
    let dir = temp_dir("pith-bench-tiny-")?;
    fs::write(
        dir.path().join("README.md"),
        "# tiny\n\nA tiny repository.\n",
    )?;
    fs::write(dir.path().join("notes.txt"), "remember the milk\n")?;
    finish("a tiny git repository", dir)
}

/// A git repository of `dirs` × `files_per_dir` source files of a few hundred bytes
/// (`pkgN/modM/fileK.rs`, the shape of the crate's criterion bench), plus `.gitignore`.
pub fn generated(dirs: usize, files_per_dir: usize) -> Result<Tree> {
    let dir = temp_dir("pith-bench-large-")?;
    write_generated(dir.path(), dirs, files_per_dir)?;
    let label = format!(
        "a generated git repository of {} files",
        group_thousands(dirs * files_per_dir)
    );
    finish(&label, dir)
}

/// The files of [`generated`] in a directory that is not in a git repository (no
/// `.git`, nothing committed): every file is copied into the store at the first snapshot.
pub fn generated_outside_git(dirs: usize, files_per_dir: usize) -> Result<Tree> {
    let dir = temp_dir("pith-bench-nogit-")?;
    write_generated(dir.path(), dirs, files_per_dir)?;
    let (files, bytes) = count_files(dir.path(), &[])?;
    Ok(Tree {
        label: format!(
            "{} small files outside git",
            group_thousands(dirs * files_per_dir)
        ),
        files,
        bytes,
        dir,
    })
}

fn write_generated(root: &Path, dirs: usize, files_per_dir: usize) -> Result<()> {
    for d in 0..dirs {
        let sub = root.join(format!("pkg{}/mod{d}", d / 100));
        fs::create_dir_all(&sub).with_context(|| format!("creating {}", sub.display()))?;
        for f in 0..files_per_dir {
            let body = format!(
                "// file {d}/{f}\n{}\n",
                "let x = 1; ".repeat(20 + (d + f) % 20)
            );
            fs::write(sub.join(format!("file{f}.rs")), body)?;
        }
    }
    fs::write(root.join(".gitignore"), "target/\n")?;
    Ok(())
}

/// A copy of the working tree of the repository at `root`: its tracked files and the
/// untracked ones git does not ignore (so no `target/`, no `.cache/`), committed afresh.
pub fn this_repository(root: &Path) -> Result<Tree> {
    let listed = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .context("running git ls-files")?;
    if !listed.status.success() {
        bail!(
            "git ls-files in {} failed: {}",
            root.display(),
            String::from_utf8_lossy(&listed.stderr)
        );
    }
    let dir = temp_dir("pith-bench-repo-")?;
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let relative = Path::new(std::str::from_utf8(name).context("a file name is not UTF-8")?);
        let from = root.join(relative);
        let Ok(meta) = from.symlink_metadata() else {
            continue; // deleted in the working tree
        };
        let to = dir.path().join(relative);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent)?;
        }
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&from)?, &to)?;
        } else if meta.is_file() {
            fs::copy(&from, &to).with_context(|| format!("copying {}", from.display()))?;
        }
    }
    finish("this repository (a copy of its working tree)", dir)
}

fn temp_dir(prefix: &str) -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .context("creating a temp dir")
}

/// Commits everything in `dir` to a new git repository and counts its files.
fn finish(label: &str, dir: tempfile::TempDir) -> Result<Tree> {
    let path = dir.path();
    git(path, &["init", "--quiet", "--initial-branch=main"])?;
    git(path, &["add", "--all"])?;
    git(
        path,
        &[
            "-c",
            "user.name=pith bench",
            "-c",
            "user.email=bench@pith.invalid",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "--quiet",
            "--no-verify",
            "-m",
            "bench tree",
        ],
    )?;
    let (files, bytes) = count_files(path, &[".git"])?;
    Ok(Tree {
        label: label.to_owned(),
        files,
        bytes,
        dir,
    })
}

fn git(dir: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running git {}", args.join(" ")))?;
    if !status.success() {
        bail!(
            "git {} in {} failed ({status})",
            args.join(" "),
            dir.display()
        );
    }
    Ok(())
}

/// Regular files under `dir` (not following symlinks, skipping directories named in
/// `skip`) and their total size.
fn count_files(dir: &Path, skip: &[&str]) -> Result<(usize, u64)> {
    let mut files = 0;
    let mut bytes = 0;
    walk(dir, skip, |meta| {
        if meta.is_file() {
            files += 1;
            bytes += meta.len();
        }
    })?;
    Ok((files, bytes))
}

/// Calls `visit` with the metadata of every entry under `dir` that is no directory (not
/// following symlinks, not descending into directories named in `skip`).
fn walk(dir: &Path, skip: &[&str], mut visit: impl FnMut(&fs::Metadata)) -> Result<()> {
    let mut pending: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in
            fs::read_dir(&current).with_context(|| format!("reading {}", current.display()))?
        {
            let entry = entry?;
            let meta = entry.metadata()?;
            if !meta.is_dir() {
                visit(&meta);
            } else if !skip.iter().any(|s| entry.file_name() == *s) {
                pending.push(entry.path());
            }
        }
    }
    Ok(())
}

/// What a checkpoint store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreUsage {
    /// Files (blobs, the stat index).
    pub files: u64,
    /// Their total length, bytes.
    pub bytes: u64,
    /// The blocks they take on disk, bytes.
    pub disk_bytes: u64,
}

/// The usage of everything under `dir` (zero when it does not exist).
pub fn store_usage(dir: &Path) -> Result<StoreUsage> {
    let mut usage = StoreUsage::default();
    if !dir.exists() {
        return Ok(usage);
    }
    walk(dir, &[], |meta| {
        usage.files += 1;
        usage.bytes += meta.len();
        usage.disk_bytes += meta.blocks() * 512;
    })?;
    Ok(usage)
}

/// `60000` → `60,000`.
pub fn group_thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(999), "999");
        assert_eq!(group_thousands(60_000), "60,000");
        assert_eq!(group_thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn a_generated_tree_is_committed_and_counted_without_git_s_files() {
        let tree = generated(3, 4).unwrap();
        assert_eq!(tree.files, 3 * 4 + 1, "the files and .gitignore");
        assert!(tree.path().join("pkg0/mod2/file3.rs").is_file());
        let clean = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(tree.path())
            .output()
            .unwrap();
        assert!(clean.status.success());
        assert!(clean.stdout.is_empty(), "everything is committed");
    }

    #[test]
    fn store_usage_counts_files_bytes_and_blocks() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            store_usage(&dir.path().join("missing")).unwrap(),
            StoreUsage::default()
        );
        fs::create_dir_all(dir.path().join("blobs/ab")).unwrap();
        fs::write(dir.path().join("blobs/ab/cd"), vec![7u8; 5000]).unwrap();
        fs::write(dir.path().join("index.json"), "{}").unwrap();
        let usage = store_usage(dir.path()).unwrap();
        assert_eq!((usage.files, usage.bytes), (2, 5002));
        assert!(usage.disk_bytes >= 4096, "{usage:?}");
    }
}
