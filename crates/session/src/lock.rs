//! The one-writer-per-session lock.
//!
//! An OS advisory lock (`flock`, exclusive, non-blocking) on the session's `lock` file:
//! the kernel releases it when the holder exits for any reason, SIGKILL included, so a
//! crashed writer never leaves a stale lock. The file's content is the holder's pid, used
//! only for the error message a second writer gets: `session <id> is in use by pid N`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use crate::error::{Result, SessionError};

/// A held writer lock; released when dropped (the file descriptor is closed).
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

impl WriterLock {
    /// Takes the lock at `path` for session `id`, or reports who holds it.
    pub fn acquire(path: &Path, id: &str) -> Result<Self> {
        // Never truncate on open: the file may hold the current holder's pid.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(|e| SessionError::io("cannot open the session lock", path, e))?;
        if !try_lock_exclusive(&file).map_err(|e| SessionError::io("cannot lock", path, e))? {
            let mut content = String::new();
            let pid = file
                .read_to_string(&mut content)
                .ok()
                .and_then(|_| content.trim().parse::<u32>().ok());
            return Err(SessionError::InUse {
                id: id.to_owned(),
                pid,
            });
        }
        let pid = std::process::id().to_string();
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(pid.as_bytes()))
            .map_err(|e| SessionError::io("cannot write the pid into", path, e))?;
        Ok(Self { _file: file })
    }
}

/// `flock(LOCK_EX | LOCK_NB)`: Ok(false) when another open file description holds it.
fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    loop {
        // SAFETY: `flock` only reads the descriptor number, which `file` keeps open for
        // the duration of the call.
        #[allow(unsafe_code)]
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(true);
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_writer_is_told_the_holders_pid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let _held = WriterLock::acquire(&path, "s1").unwrap();
        let err = WriterLock::acquire(&path, "s1").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("session s1 is in use by pid {}", std::process::id())
        );
    }

    #[test]
    fn the_lock_is_free_again_after_the_holder_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        drop(WriterLock::acquire(&path, "s1").unwrap());
        WriterLock::acquire(&path, "s1").expect("a released lock must be acquirable");
    }

    #[test]
    fn the_lock_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let _held = WriterLock::acquire(&path, "s1").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}
