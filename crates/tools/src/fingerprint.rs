//! The fingerprint of a file on disk, as the session ledger compares it: the content's
//! length and hash (`pith_core::effect::fingerprint`) for files up to 8 MiB, and the length
//! and modification time for larger ones (hashing them on every read would cost more than
//! the answer is worth).

use std::path::Path;

/// Files up to this size are fingerprinted by content.
pub const CONTENT_FINGERPRINT_MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The fingerprint of the file at `path` now; `None` when it cannot be read (missing, a
/// directory, unreadable).
pub fn of_file(path: &Path) -> Option<String> {
    let metadata = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    if metadata.len() <= CONTENT_FINGERPRINT_MAX_BYTES {
        let content = std::fs::read(path).ok()?;
        return Some(pith_core::effect::fingerprint(&content));
    }
    let modified = metadata
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(format!("{}:mtime:{modified}", metadata.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_follows_the_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "one").unwrap();
        let first = of_file(&path).unwrap();
        assert_eq!(first, pith_core::effect::fingerprint(b"one"));
        std::fs::write(&path, "two").unwrap();
        assert_ne!(of_file(&path).unwrap(), first);
        assert_eq!(of_file(&dir.path().join("missing")), None);
        assert_eq!(of_file(dir.path()), None, "a directory has none");
    }
}
