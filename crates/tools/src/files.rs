//! Where `read`, `write` and `edit` take and put a file's TEXT when a front-end offers
//! something other than the disk: an editor's buffers (ACP's `fs/read_text_file` and
//! `fs/write_text_file`), so that unsaved changes are what the agent reads and edits.
//!
//! Without one ([`crate::ToolEnv::files`] is `None`) the tools use the disk directly
//! (the streaming pager of `read`, the atomic replacement of [`crate::write`]). Only the
//! text goes through a [`TextFiles`]: path resolution, workspace confinement, the
//! permission questions, and `read`'s recognition of directories, images and binary files
//! stay on the disk.

use std::fs::Permissions;
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use async_trait::async_trait;
use pith_core::ToolError;
use tokio_util::sync::CancellationToken;

use crate::workspace::describe_io;

/// A source and sink of text files other than the disk (an editor's buffers).
#[async_trait]
pub trait TextFiles: Send + Sync + std::fmt::Debug {
    /// Whether [`TextFiles::read_text`] is to be used (else the disk is read).
    fn reads(&self) -> bool;

    /// Whether [`TextFiles::write_text`] is to be used (else the disk is written).
    fn writes(&self) -> bool;

    /// The whole text of `path` (absolute); `Ok(None)` when the file does not exist.
    async fn read_text(&self, path: &Path) -> io::Result<Option<String>>;

    /// Replaces the whole text of `path` (absolute), creating the file if needed.
    async fn write_text(&self, path: &Path, text: &str) -> io::Result<()>;
}

/// Reads `path`'s text from the disk for `edit` and `write`: `Ok(None)` when it does not
/// exist, an `InvalidData` error when it is not UTF-8 (a NUL byte is UTF-8: the tools
/// refuse binary text themselves).
pub fn read_disk_text(path: &Path) -> io::Result<Option<String>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not valid UTF-8"))
}

/// The text files of a session as the tools see them: the front-end's [`TextFiles`] for
/// the directions it offers, the disk for the others.
/// A request to the front-end ends early, as `Interrupted`, when the call is cancelled
/// (an editor that never answers cannot hold a turn).
#[derive(Debug, Clone, Copy)]
pub struct Files<'a> {
    through: Option<&'a dyn TextFiles>,
    cancel: &'a CancellationToken,
}

/// Whether `err` is a request [`Files`] ended because the call was cancelled.
pub fn is_cancelled(err: &io::Error) -> bool {
    err.kind() == io::ErrorKind::Interrupted
}

/// Runs `request` unless `cancel` fires first.
async fn unless_cancelled<T>(
    cancel: &CancellationToken,
    request: impl std::future::Future<Output = io::Result<T>>,
) -> io::Result<T> {
    tokio::select! {
        answer = request => answer,
        () = cancel.cancelled() => Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled")),
    }
}

impl<'a> Files<'a> {
    /// Over the front-end's `through` (`None`: the disk only), for a call cancelled by
    /// `cancel`.
    pub fn new(through: Option<&'a dyn TextFiles>, cancel: &'a CancellationToken) -> Self {
        Self { through, cancel }
    }

    /// The front-end's files when they are read instead of the disk.
    pub fn reader(&self) -> Option<&'a dyn TextFiles> {
        self.through.filter(|files| files.reads())
    }

    /// The text of `path`: `Ok(None)` when it does not exist.
    pub async fn read(&self, path: &Path) -> io::Result<Option<String>> {
        match self.reader() {
            Some(files) => unless_cancelled(self.cancel, files.read_text(path)).await,
            None => {
                let path = path.to_path_buf();
                tokio::task::spawn_blocking(move || read_disk_text(&path))
                    .await
                    .map_err(io::Error::other)?
            }
        }
    }

    /// Replaces the text of `path` (atomically on the disk).
    pub async fn write(&self, path: &Path, text: String) -> io::Result<()> {
        match self.through.filter(|files| files.writes()) {
            Some(files) => unless_cancelled(self.cancel, files.write_text(path, &text)).await,
            None => {
                let path = path.to_path_buf();
                tokio::task::spawn_blocking(move || write_atomically(&path, text.as_bytes()))
                    .await
                    .map_err(io::Error::other)?
            }
        }
    }

    /// Replaces the text of `path` for `write` and `edit`: a request the call's
    /// cancellation ended is `ToolError::Cancelled`; any other failure says that `shown`
    /// (the path as the model sees it) is unchanged.
    pub async fn replace(&self, path: &Path, text: String, shown: &str) -> Result<(), ToolError> {
        let written = self.write(path, text).await;
        if written.as_ref().is_err_and(is_cancelled) {
            return Err(ToolError::Cancelled);
        }
        written.map_err(|err| {
            ToolError::Failed(format!(
                "could not write `{shown}`: {}; the file is unchanged",
                describe_io(&err)
            ))
        })
    }
}

/// Replaces `path` with `bytes` atomically, creating missing parent directories.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no parent"))?;
    std::fs::create_dir_all(parent)?;
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions());
    // New files get 0666 minus the umask, like any editor would create them.
    let mut temp = tempfile::Builder::new()
        .prefix(".pith-write-")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(0o666))
        .tempfile_in(parent)?;
    temp.write_all(bytes)?;
    if let Some(permissions) = existing {
        temp.as_file().set_permissions(permissions)?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|err| err.error)?;
    if let Ok(dir) = std::fs::File::open(parent) {
        // Durability of the rename; failure here cannot undo the write, so it is ignored.
        let _ = dir.sync_all();
    }
    Ok(())
}
