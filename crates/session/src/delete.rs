//! Deleting a session (`session/delete` of `pith acp`): the session and the subagent
//! sessions it started, removed from disk under their writer locks, so a session another
//! process has open is refused whole.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Result, SessionError};
use crate::lock::WriterLock;
use crate::paths::LOCK_FILE;
use crate::store::{sync_dir, SessionStore};

impl SessionStore {
    /// Deletes the session `id` (exactly, not a prefix) and the subagent sessions it
    /// started, from disk: the transcripts, their out-of-line payloads and spill files.
    /// `Ok(false)` when no such session exists. A session another process holds open is
    /// [`SessionError::InUse`] and nothing is deleted. The checkpoint store's copies are
    /// left to its own collection (copies no session names are evicted first).
    pub fn delete(&self, id: &str) -> Result<bool> {
        let dirs = self.session_dirs(None)?;
        let Some(dir) = dirs
            .iter()
            .find(|dir| dir.file_name().is_some_and(|name| name == id))
        else {
            return Ok(false);
        };
        let project = dir.parent().map(Path::to_path_buf);
        let children: Vec<PathBuf> = dirs
            .iter()
            .filter(|d| d.parent().map(Path::to_path_buf) == project)
            .filter(|d| crate::listing::summarize(d).parent_session.as_deref() == Some(id))
            .cloned()
            .collect();
        // Hold the lock of each while deleting: a session in use is refused, whole.
        let mut locks = Vec::new();
        for target in std::iter::once(dir).chain(&children) {
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            locks.push(WriterLock::acquire(&target.join(LOCK_FILE), &name)?);
        }
        for target in children.iter().chain(std::iter::once(dir)) {
            fs::remove_dir_all(target)
                .map_err(|e| SessionError::io("cannot delete the session", target, e))?;
        }
        drop(locks);
        if let Some(project) = project {
            sync_dir(&project)?;
        }
        Ok(true)
    }
}
