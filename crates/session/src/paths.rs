//! Where sessions live on disk: the sessions root and the per-project directory name.
//!
//! Root: `$PITH_HOME/sessions` if `PITH_HOME` is set, else
//! `$XDG_DATA_HOME/pith/sessions` (when absolute), else `~/.local/share/pith/sessions`.
//! Each project (canonical working directory) gets a slug: its last path component made
//! file-name safe, plus a short hash of the whole path so two `api/` folders never share
//! a directory.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::error::{Result, SessionError};

/// File name of the transcript inside a session directory.
pub const TRANSCRIPT_FILE: &str = "transcript.jsonl";
/// File name of the writer lock inside a session directory.
pub const LOCK_FILE: &str = "lock";
/// Directory holding raw tool outputs inside a session directory.
pub const SPILL_DIR: &str = "spill";

/// pith's data directory from explicit variable values (testable without touching the
/// process environment): `$PITH_HOME`, else `$XDG_DATA_HOME/pith` (when absolute), else
/// `~/.local/share/pith`. Sessions live in its `sessions/`, logs in its `logs/`.
pub fn data_dir_from(
    pith_home: Option<&OsStr>,
    xdg_data_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf> {
    if let Some(pith_home) = pith_home.filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(pith_home));
    }
    if let Some(xdg) = xdg_data_home.map(Path::new).filter(|p| p.is_absolute()) {
        return Ok(xdg.join("pith"));
    }
    match home.filter(|v| !v.is_empty()) {
        Some(home) => Ok(PathBuf::from(home)
            .join(".local")
            .join("share")
            .join("pith")),
        None => Err(SessionError::NoDataDir),
    }
}

/// pith's data directory from the process environment (see [`data_dir_from`]).
pub fn data_dir() -> Result<PathBuf> {
    data_dir_from(
        std::env::var_os("PITH_HOME").as_deref(),
        std::env::var_os("XDG_DATA_HOME").as_deref(),
        std::env::var_os("HOME").as_deref(),
    )
}

/// The sessions root from explicit variable values: `sessions/` of [`data_dir_from`].
pub fn sessions_root_from(
    pith_home: Option<&OsStr>,
    xdg_data_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Result<PathBuf> {
    Ok(data_dir_from(pith_home, xdg_data_home, home)?.join("sessions"))
}

/// The sessions root from the process environment.
pub fn sessions_root() -> Result<PathBuf> {
    Ok(data_dir()?.join("sessions"))
}

/// The directory name for a project: `<readable name>-<8 hex digits of the path hash>`.
/// `cwd` should be canonical; the same path always gives the same slug.
pub fn project_slug(cwd: &Path) -> String {
    let readable: String = cwd
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_else(|| "root".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let readable = readable.trim_start_matches('.');
    let readable = if readable.is_empty() {
        "root"
    } else {
        readable
    };
    let hash = fnv1a64(cwd.as_os_str().as_encoded_bytes());
    format!("{readable}-{:08x}", hash >> 32)
}

/// FNV-1a, 64 bit: stable across Rust versions and platforms (unlike `DefaultHasher`),
/// which matters because the slug names directories that must be found again.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pith_home_wins_over_xdg_and_home() {
        let root = sessions_root_from(
            Some(OsStr::new("/ph")),
            Some(OsStr::new("/xdg")),
            Some(OsStr::new("/home/u")),
        )
        .unwrap();
        assert_eq!(root, PathBuf::from("/ph/sessions"));
    }

    #[test]
    fn xdg_data_home_is_used_only_when_absolute() {
        let root =
            sessions_root_from(None, Some(OsStr::new("/xdg")), Some(OsStr::new("/h"))).unwrap();
        assert_eq!(root, PathBuf::from("/xdg/pith/sessions"));
        let root =
            sessions_root_from(None, Some(OsStr::new("rel")), Some(OsStr::new("/h"))).unwrap();
        assert_eq!(root, PathBuf::from("/h/.local/share/pith/sessions"));
    }

    #[test]
    fn no_variables_is_a_clear_error() {
        let err = sessions_root_from(None, None, None).unwrap_err();
        assert!(err.to_string().contains("PITH_HOME"), "{err}");
    }

    #[test]
    fn slugs_are_readable_stable_and_distinguish_same_named_folders() {
        let a = project_slug(Path::new("/work/a/api"));
        let b = project_slug(Path::new("/work/b/api"));
        assert!(a.starts_with("api-") && b.starts_with("api-"), "{a} {b}");
        assert_ne!(a, b, "same-named folders must not share sessions");
        assert_eq!(a, project_slug(Path::new("/work/a/api")));
        assert_eq!(project_slug(Path::new("/")).len(), "root-".len() + 8);
        let odd = project_slug(Path::new("/x/my project:ü"));
        assert!(
            odd.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)),
            "{odd}"
        );
        assert!(!project_slug(Path::new("/x/..hidden")).starts_with('.'));
    }
}
