//! Path resolution and workspace confinement: the one place that decides what a path
//! argument from the model means and whether a tool may touch it.
//!
//! Rules (documented for users in `docs/tools.md`):
//! - Relative paths are relative to the workspace root; `.` and `..` are resolved
//!   lexically first, then every symlink of the existing part of the path is resolved.
//! - **Writes and edits** must land inside the workspace root after that resolution:
//!   `..` escapes, absolute paths elsewhere and symlinks (anywhere on the path) whose
//!   target lies outside are refused. A symlink *inside* the workspace pointing to another
//!   file inside it is written through (the link stays a link).
//! - **Reads** (read, grep, glob, ls) resolve the same way and are classified as inside
//!   the workspace, inside the session's spill directory, or outside both. Whether an
//!   outside read is allowed is the permission policy's decision
//!   ([`crate::permission`]), not this module's; spill files are always readable.
//! - A path starting with `$PITH_SPILL_DIR` (or `${PITH_SPILL_DIR}`) starts in the
//!   session's spill directory: spill markers name files that way, because the absolute
//!   path (data dir, project slug, session uuid) costs the model ~45 more tokens in every
//!   squashed result. The bash tool exports the same variable, so both work.
//!
//! The check and the later file operation are not atomic (a concurrent process could swap
//! a directory for a symlink in between); the confinement protects against model mistakes
//! and hostile paths in arguments, not against a hostile local process.

use std::io;
use std::path::{Component, Path, PathBuf};

use pith_core::ToolError;

/// The variable that names the session's spill directory in spill markers, in path
/// arguments and in the bash tool's environment.
pub const SPILL_DIR_VAR: &str = "PITH_SPILL_DIR";

/// Where a resolved path lies relative to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathScope {
    /// Inside the workspace root.
    Workspace,
    /// Inside the session's spill directory (always readable).
    Spill,
    /// Anywhere else.
    Outside,
}

/// A path argument resolved for reading: canonical (symlinks resolved) and classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadTarget {
    /// Canonical absolute path.
    pub path: PathBuf,
    /// Where it lies.
    pub scope: PathScope,
}

/// The workspace root and the session's spill directory, both absolute.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    spill_dir: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root` (must be an existing directory) whose session spills
    /// into `spill_dir` (created on first spill if missing).
    pub fn new(root: &Path, spill_dir: &Path) -> io::Result<Self> {
        let root = std::fs::canonicalize(root)?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root {} is not a directory", root.display()),
            ));
        }
        let spill_dir = if spill_dir.is_absolute() {
            normalize(spill_dir)
        } else {
            normalize(&std::env::current_dir()?.join(spill_dir))
        };
        Ok(Self { root, spill_dir })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The session's spill directory (absolute, may not exist yet).
    pub fn spill_dir(&self) -> &Path {
        &self.spill_dir
    }

    /// `raw` made absolute against the root and lexically normalised (no symlink
    /// resolution yet).
    fn absolute(&self, raw: &str) -> Result<PathBuf, ToolError> {
        if raw.is_empty() {
            return Err(ToolError::InvalidArguments(
                "`path` must not be empty".into(),
            ));
        }
        if raw.contains('\0') {
            return Err(ToolError::InvalidArguments(
                "`path` must not contain NUL bytes".into(),
            ));
        }
        if let Some(rest) = strip_spill_var(raw) {
            return Ok(normalize(&self.spill_dir.join(rest)));
        }
        Ok(normalize(&self.root.join(raw)))
    }

    /// Resolves an existing path for reading and says where it lies.
    pub fn resolve_read(&self, raw: &str) -> Result<ReadTarget, ToolError> {
        let absolute = self.absolute(raw)?;
        let path = std::fs::canonicalize(&absolute).map_err(|err| {
            ToolError::Failed(format!("cannot access `{raw}`: {}", describe_io(&err)))
        })?;
        let scope = if path.starts_with(&self.root) {
            PathScope::Workspace
        } else if path.starts_with(self.canonical_spill_dir()) {
            PathScope::Spill
        } else {
            PathScope::Outside
        };
        Ok(ReadTarget { path, scope })
    }

    /// Resolves a path for writing (the file itself may not exist yet) and refuses any
    /// path whose resolution leaves the workspace root.
    pub fn resolve_write(&self, raw: &str) -> Result<PathBuf, ToolError> {
        let absolute = self.absolute(raw)?;
        // Resolve the longest existing prefix (following every symlink in it), then
        // append the components that do not exist yet: they cannot be symlinks.
        let mut existing = absolute.as_path();
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        let resolved = loop {
            match std::fs::canonicalize(existing) {
                Ok(canonical) => break canonical,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    if std::fs::symlink_metadata(existing).is_ok() {
                        return Err(ToolError::Denied(format!(
                            "`{raw}` goes through the dangling symlink {}; refusing to write \
                             through it",
                            existing.display()
                        )));
                    }
                    match (existing.file_name(), existing.parent()) {
                        (Some(name), Some(parent)) => {
                            missing.push(name);
                            existing = parent;
                        }
                        _ => {
                            return Err(ToolError::Failed(format!(
                                "cannot resolve `{raw}`: no existing parent directory"
                            )))
                        }
                    }
                }
                Err(err) => {
                    return Err(ToolError::Failed(format!(
                        "cannot resolve `{raw}`: {}",
                        describe_io(&err)
                    )))
                }
            }
        };
        let mut target = resolved;
        for name in missing.into_iter().rev() {
            target.push(name);
        }
        if !target.starts_with(&self.root) || target == self.root {
            return Err(ToolError::Denied(format!(
                "`{raw}` resolves to {}, outside the workspace {}; writes and edits are \
                 confined to the workspace",
                target.display(),
                self.root.display()
            )));
        }
        Ok(target)
    }

    /// How to show `path` to the model: relative to the root when inside it.
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }

    fn canonical_spill_dir(&self) -> PathBuf {
        std::fs::canonicalize(&self.spill_dir).unwrap_or_else(|_| self.spill_dir.clone())
    }
}

/// The rest of `raw` after a leading `$PITH_SPILL_DIR` or `${PITH_SPILL_DIR}` (and its
/// `/`), when it has one. `$PITH_SPILL_DIRS/x` is not a match.
fn strip_spill_var(raw: &str) -> Option<&str> {
    let rest = raw.strip_prefix('$').and_then(|r| {
        r.strip_prefix(SPILL_DIR_VAR).or_else(|| {
            r.strip_prefix('{')?
                .strip_prefix(SPILL_DIR_VAR)?
                .strip_prefix('}')
        })
    })?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// Lexical normalisation of an absolute path: drops `.`, applies `..` (never above `/`).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(prefix) => out.push(prefix.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// A short human description of an I/O error (without the OS error number noise).
pub fn describe_io(err: &io::Error) -> String {
    match err.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => err.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        std::fs::write(dir.path().join("outside/secret.txt"), "secret").unwrap();
        std::fs::write(dir.path().join("root/a.txt"), "a").unwrap();
        let ws = Workspace::new(&dir.path().join("root"), &dir.path().join("spill")).unwrap();
        (dir, ws)
    }

    #[test]
    fn spill_variable_resolves_to_the_spill_dir_and_stays_confined() {
        let (dir, ws) = setup();
        std::fs::create_dir(dir.path().join("spill")).unwrap();
        std::fs::write(dir.path().join("spill/3.txt"), "raw").unwrap();
        for raw in ["$PITH_SPILL_DIR/3.txt", "${PITH_SPILL_DIR}/3.txt"] {
            let target = ws.resolve_read(raw).unwrap();
            assert_eq!(target.scope, PathScope::Spill, "{raw}");
            assert_eq!(std::fs::read_to_string(&target.path).unwrap(), "raw");
        }
        // Escaping the spill dir through the variable is just an outside path.
        let target = ws
            .resolve_read("$PITH_SPILL_DIR/../outside/secret.txt")
            .unwrap();
        assert_eq!(target.scope, PathScope::Outside);
        assert!(ws.resolve_write("$PITH_SPILL_DIR/new.txt").is_err());
        // A longer variable name is not the spill dir: a (missing) workspace path.
        assert!(ws.resolve_read("$PITH_SPILL_DIRS/3.txt").is_err());
    }

    #[test]
    fn dot_dot_escape_is_refused_for_writes() {
        let (_dir, ws) = setup();
        let err = ws.resolve_write("../outside/new.txt").unwrap_err();
        assert!(
            matches!(err, ToolError::Denied(ref m) if m.contains("outside the workspace")),
            "{err}"
        );
        let err = ws.resolve_write("sub/../../outside/x").unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err}");
    }

    #[test]
    fn absolute_path_outside_is_refused_and_inside_is_allowed() {
        let (dir, ws) = setup();
        let outside = dir.path().join("outside/secret.txt");
        assert!(ws.resolve_write(outside.to_str().unwrap()).is_err());
        let inside = ws.root().join("new/deep/file.txt");
        assert_eq!(ws.resolve_write(inside.to_str().unwrap()).unwrap(), inside);
    }

    #[test]
    fn symlinked_directory_leading_outside_is_refused() {
        let (dir, ws) = setup();
        symlink(dir.path().join("outside"), ws.root().join("escape")).unwrap();
        let err = ws.resolve_write("escape/secret.txt").unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err}");
        let err = ws.resolve_write("escape/new.txt").unwrap_err();
        assert!(matches!(err, ToolError::Denied(_)), "{err}");
    }

    #[test]
    fn symlinked_file_leading_outside_is_refused_but_inside_link_is_followed() {
        let (dir, ws) = setup();
        symlink(dir.path().join("outside/secret.txt"), ws.root().join("s")).unwrap();
        assert!(matches!(
            ws.resolve_write("s").unwrap_err(),
            ToolError::Denied(_)
        ));
        symlink(ws.root().join("a.txt"), ws.root().join("alias")).unwrap();
        assert_eq!(ws.resolve_write("alias").unwrap(), ws.root().join("a.txt"));
    }

    #[test]
    fn dangling_symlink_is_refused_for_writes() {
        let (dir, ws) = setup();
        symlink(
            dir.path().join("outside/nothing"),
            ws.root().join("dangling"),
        )
        .unwrap();
        assert!(matches!(
            ws.resolve_write("dangling").unwrap_err(),
            ToolError::Denied(_)
        ));
        assert!(ws.resolve_write("dangling/below").is_err());
    }

    #[test]
    fn reads_are_classified_by_where_they_resolve() {
        let (dir, ws) = setup();
        assert_eq!(
            ws.resolve_read("a.txt").unwrap().scope,
            PathScope::Workspace
        );
        assert_eq!(
            ws.resolve_read("../outside/secret.txt").unwrap().scope,
            PathScope::Outside
        );
        std::fs::create_dir(dir.path().join("spill")).unwrap();
        std::fs::write(dir.path().join("spill/x.txt"), "x").unwrap();
        let spill = dir.path().join("spill/x.txt");
        assert_eq!(
            ws.resolve_read(spill.to_str().unwrap()).unwrap().scope,
            PathScope::Spill
        );
        symlink(
            dir.path().join("outside/secret.txt"),
            ws.root().join("link"),
        )
        .unwrap();
        assert_eq!(
            ws.resolve_read("link").unwrap().scope,
            PathScope::Outside,
            "a symlink is judged by its target"
        );
    }

    #[test]
    fn hostile_path_strings_are_clear_errors() {
        let (_dir, ws) = setup();
        assert!(matches!(
            ws.resolve_read("").unwrap_err(),
            ToolError::InvalidArguments(_)
        ));
        assert!(matches!(
            ws.resolve_write("a\0b").unwrap_err(),
            ToolError::InvalidArguments(_)
        ));
        assert!(ws.resolve_read("missing.txt").is_err());
        assert!(
            ws.resolve_write(".").is_err(),
            "the root itself is not a file"
        );
    }
}
