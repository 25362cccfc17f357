//! What a workspace path holds on disk, as a [`FileState`]: lstat (never following a
//! symlink), then the bytes of a regular file within the per-file cap, stored or only
//! hashed; a directory's mode.

use std::fs::{self, Metadata};
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::Path;

use pith_core::FileState;

use pith_core::human_bytes;

use crate::store::{hash_bytes, Store};
use crate::walk::StatKey;

/// A path's state, with the stat key it was read under and the bytes it added to the
/// store.
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    pub state: FileState,
    pub stat: Option<StatKey>,
    pub added_bytes: u64,
}

/// Where a regular file's bytes go.
#[derive(Clone, Copy)]
pub(crate) enum Keep<'a> {
    /// Into the store.
    Store(&'a Store),
    /// Nowhere: only hashed (a rewind's look at the current state).
    HashOnly { max_file_bytes: u64 },
}

impl Keep<'_> {
    fn max_file_bytes(&self) -> u64 {
        match self {
            Keep::Store(store) => store.config().max_file_bytes,
            Keep::HashOnly { max_file_bytes } => *max_file_bytes,
        }
    }
}

/// Reads the state of `path` now.
pub(crate) fn capture(keep: Keep<'_>, path: &Path) -> crate::Result<Captured> {
    match fs::symlink_metadata(path) {
        Ok(meta) => capture_with(keep, path, &meta),
        Err(error) if is_absent(&error) => Ok(Captured {
            state: FileState::Absent,
            stat: None,
            added_bytes: 0,
        }),
        Err(error) => Ok(omitted(0, format!("cannot be read: {error}"))),
    }
}

/// Reads the state of `path`, whose lstat is `meta`.
pub(crate) fn capture_with(
    keep: Keep<'_>,
    path: &Path,
    meta: &Metadata,
) -> crate::Result<Captured> {
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        return Ok(match fs::read_link(path) {
            Ok(target) => match target.to_str() {
                Some(target) => Captured {
                    state: FileState::Symlink {
                        target: target.to_owned(),
                    },
                    stat: Some(StatKey::of(meta)),
                    added_bytes: 0,
                },
                None => omitted(0, "a symlink whose target is not UTF-8".into()),
            },
            Err(error) if is_absent(&error) => absent(),
            Err(error) => omitted(0, format!("cannot be read: {error}")),
        });
    }
    if file_type.is_dir() {
        // A directory's state is its mode; its entries are states of their own.
        return Ok(Captured {
            state: FileState::Dir {
                mode: meta.permissions().mode() & 0o7777,
            },
            stat: Some(StatKey::of(meta)),
            added_bytes: 0,
        });
    }
    if !file_type.is_file() {
        let what = if file_type.is_fifo() {
            "a named pipe"
        } else if file_type.is_socket() {
            "a socket"
        } else {
            "a device"
        };
        return Ok(omitted(0, format!("{what}, not a regular file")));
    }
    let cap = keep.max_file_bytes();
    if meta.len() > cap {
        return Ok(omitted(meta.len(), over_cap(cap)));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    let read = fs::File::open(path)
        .and_then(|file| file.take(cap.saturating_add(1)).read_to_end(&mut bytes));
    match read {
        Ok(_) if bytes.len() as u64 > cap => return Ok(omitted(bytes.len() as u64, over_cap(cap))),
        Ok(_) => {}
        Err(error) if is_absent(&error) => return Ok(absent()),
        Err(error) => return Ok(omitted(meta.len(), format!("cannot be read: {error}"))),
    }
    let (hash, added_bytes) = match keep {
        Keep::Store(store) => {
            let stored = store.put(&bytes)?;
            (stored.hash, stored.added_bytes)
        }
        Keep::HashOnly { .. } => (hash_bytes(&bytes), 0),
    };
    Ok(Captured {
        state: FileState::File {
            hash,
            size: bytes.len() as u64,
            mode: meta.permissions().mode() & 0o7777,
        },
        stat: Some(StatKey::of(meta)),
        added_bytes,
    })
}

fn over_cap(cap: u64) -> String {
    format!("over the per-file cap of {}", human_bytes(cap))
}

fn absent() -> Captured {
    Captured {
        state: FileState::Absent,
        stat: None,
        added_bytes: 0,
    }
}

fn omitted(size: u64, reason: String) -> Captured {
    Captured {
        state: FileState::Omitted { size, reason },
        stat: None,
        added_bytes: 0,
    }
}

/// Not there: missing, or a parent is not a directory.
pub(crate) fn is_absent(error: &std::io::Error) -> bool {
    matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreConfig;

    #[test]
    fn states_of_each_kind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("store"),
            StoreConfig {
                max_file_bytes: 4,
                ..StoreConfig::default()
            },
        )
        .unwrap();
        let root = dir.path();
        fs::write(root.join("small"), "abc").unwrap();
        fs::set_permissions(root.join("small"), fs::Permissions::from_mode(0o751)).unwrap();
        fs::write(root.join("big"), "abcde").unwrap();
        std::os::unix::fs::symlink("small", root.join("link")).unwrap();
        let keep = Keep::Store(&store);
        let small = capture(keep, &root.join("small")).unwrap();
        assert_eq!(
            small.state,
            FileState::File {
                hash: hash_bytes(b"abc"),
                size: 3,
                mode: 0o751
            }
        );
        assert_eq!(small.added_bytes, 3);
        assert_eq!(store.get(&hash_bytes(b"abc")).unwrap().unwrap(), b"abc");
        assert_eq!(
            capture(keep, &root.join("big")).unwrap().state,
            FileState::Omitted {
                size: 5,
                reason: "over the per-file cap of 4 B".into()
            }
        );
        assert_eq!(
            capture(keep, &root.join("link")).unwrap().state,
            FileState::Symlink {
                target: "small".into()
            }
        );
        assert_eq!(
            capture(keep, &root.join("nope")).unwrap().state,
            FileState::Absent
        );
        assert_eq!(
            capture(keep, &root.join("small/x")).unwrap().state,
            FileState::Absent
        );
        fs::create_dir(root.join("private")).unwrap();
        fs::set_permissions(root.join("private"), fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(
            capture(keep, &root.join("private")).unwrap().state,
            FileState::Dir { mode: 0o700 }
        );
        let hashed = capture(Keep::HashOnly { max_file_bytes: 10 }, &root.join("big")).unwrap();
        assert!(matches!(hashed.state, FileState::File { size: 5, .. }));
        assert_eq!(
            store.get(&hash_bytes(b"abcde")).unwrap(),
            None,
            "hash only stores nothing"
        );
    }
}
