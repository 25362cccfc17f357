//! Trust in a project's own files that make pith run programs or change what it offers:
//! `.mcp.json`, the hooks of `.pith/config.toml` and the agents of `.pith/agents`. A
//! checked-out repository must not start processes just because pith was opened in it,
//! so such a [`ProjectFiles`] set is used only once the user trusted it; the REPL asks
//! with a [`TrustQuestion`].
//!
//! Trust is recorded per project directory, kind of file set and SHA-256 of the files'
//! contents in `trust.json` under pith's data directory (`$PITH_HOME`), so a changed file
//! asks again. The REPL asks on first use; `pith run` uses the set when it is already
//! trusted or when `--trust-project` is given (which records nothing).

use std::path::{Path, PathBuf};

use pith_session::SessionStore;
use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::error::ConversationError;

/// A set of files of one project that needs trust before pith acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectFiles {
    /// The project directory (canonical).
    pub project: PathBuf,
    /// What the files are for (`mcp`, `hooks`, `agents`): trust in one kind is not trust
    /// in another.
    pub kind: String,
    /// The files, relative to the project, in a fixed order.
    pub files: Vec<PathBuf>,
}

impl ProjectFiles {
    /// The project's `.mcp.json`.
    pub fn mcp(project: &Path) -> Self {
        Self {
            project: project.to_path_buf(),
            kind: "mcp".into(),
            files: vec![PathBuf::from(".mcp.json")],
        }
    }

    /// The project's `.pith/config.toml`, for the hooks it configures (trusted as a whole
    /// file: any change to it asks again).
    pub fn hooks(project: &Path) -> Self {
        Self {
            project: project.to_path_buf(),
            kind: "hooks".into(),
            files: vec![PathBuf::from(".pith").join("config.toml")],
        }
    }

    /// The project's agent definitions, `.pith/agents/*.md` as they are now (in name
    /// order): adding, changing or removing one asks again.
    pub fn agents(project: &Path) -> Self {
        let dir = PathBuf::from(".pith").join("agents");
        let mut files: Vec<PathBuf> = std::fs::read_dir(project.join(&dir))
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|entry| entry.file_name())
                    .filter(|name| Path::new(name).extension().is_some_and(|e| e == "md"))
                    .map(|name| dir.join(name))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        Self {
            project: project.to_path_buf(),
            kind: "agents".into(),
            files,
        }
    }

    /// SHA-256 over each file's path and contents (a missing file counts as missing), or
    /// `None` when none of the files exists.
    pub fn fingerprint(&self) -> std::io::Result<Option<String>> {
        use sha2::Digest as _;
        let mut context = sha2::Sha256::new();
        let mut any = false;
        for file in &self.files {
            context.update(file.to_string_lossy().as_bytes());
            context.update([0]);
            match std::fs::read(self.project.join(file)) {
                Ok(bytes) => {
                    any = true;
                    context.update(b"present\0");
                    context.update((bytes.len() as u64).to_le_bytes());
                    context.update(&bytes);
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    context.update(b"missing\0");
                }
                Err(error) => return Err(error),
            }
        }
        Ok(any.then(|| hex(context.finalize().as_slice())))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a [`ProjectFiles`] set stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// None of the files exists: nothing to trust.
    Absent,
    /// Trusted with these contents.
    Trusted,
    /// Never trusted (`changed: false`) or trusted with other contents (`changed: true`).
    Untrusted {
        /// The files changed since the user trusted them.
        changed: bool,
        /// The fingerprint to record when the user trusts them now.
        fingerprint: String,
    },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TrustFile {
    version: u32,
    entries: Vec<TrustEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct TrustEntry {
    project: PathBuf,
    kind: String,
    sha256: String,
}

/// The trust store: `trust.json` in pith's data directory.
#[derive(Debug, Clone)]
pub struct TrustStore {
    path: PathBuf,
}

/// The trust store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("trust store {path}: {message}")]
pub struct TrustError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    pub message: String,
}

impl TrustStore {
    /// The store in `data_dir` (`$PITH_HOME`).
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join("trust.json"),
        }
    }

    fn error(&self, message: impl std::fmt::Display) -> TrustError {
        TrustError {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    fn load(&self) -> Result<TrustFile, TrustError> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| self.error(e)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(TrustFile {
                version: 1,
                entries: Vec::new(),
            }),
            Err(error) => Err(self.error(error)),
        }
    }

    /// Where `files` stand.
    pub fn state(&self, files: &ProjectFiles) -> Result<TrustState, TrustError> {
        let Some(fingerprint) = files.fingerprint().map_err(|e| self.error(e))? else {
            return Ok(TrustState::Absent);
        };
        let recorded = self.load()?;
        let mut changed = false;
        for entry in &recorded.entries {
            if entry.project == files.project && entry.kind == files.kind {
                if entry.sha256 == fingerprint {
                    return Ok(TrustState::Trusted);
                }
                changed = true;
            }
        }
        Ok(TrustState::Untrusted {
            changed,
            fingerprint,
        })
    }

    /// Records that the user trusts `files` with the contents of `fingerprint` (replacing
    /// an earlier record for the same project and kind). Written atomically, `0600`.
    pub fn trust(&self, files: &ProjectFiles, fingerprint: &str) -> Result<(), TrustError> {
        let mut recorded = self.load()?;
        recorded.version = 1;
        recorded
            .entries
            .retain(|e| !(e.project == files.project && e.kind == files.kind));
        recorded.entries.push(TrustEntry {
            project: files.project.clone(),
            kind: files.kind.clone(),
            sha256: fingerprint.to_owned(),
        });
        let dir = self.path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| self.error(e))?;
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| self.error(e))?;
        serde_json::to_writer_pretty(&mut temp, &recorded).map_err(|e| self.error(e))?;
        temp.as_file().sync_all().map_err(|e| self.error(e))?;
        temp.persist(&self.path).map_err(|e| self.error(e.error))?;
        Ok(())
    }
}

impl TrustStore {
    /// The user's store, in pith's data directory as `env` names it (`$PITH_HOME`).
    pub fn of_user(env: &Env) -> Result<Self, ConversationError> {
        let store = SessionStore::from_lookup(env.as_ref()).map_err(ConversationError::usage)?;
        let data_dir = store.root().parent().unwrap_or(store.root());
        Ok(Self::in_data_dir(data_dir))
    }
}

/// How the user is told that a project's file set is not used for want of trust.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Distrusted {
    /// The files, as the sentence names them (`.mcp.json`, `the hooks of …`).
    pub(crate) subject: &'static str,
    /// The subject is plural (`they`, `them`) rather than singular (`it`).
    pub(crate) plural: bool,
    /// What happens instead (`its MCP servers were not started`).
    pub(crate) consequence: &'static str,
}

impl Distrusted {
    /// The notice, for files never trusted or `changed` since they were.
    fn notice(&self, changed: bool) -> String {
        let (them, not_yet) = if self.plural {
            ("them", "are not trusted yet")
        } else {
            ("it", "is not trusted yet")
        };
        let state = if changed {
            format!("changed since you trusted {them}")
        } else {
            not_yet.to_owned()
        };
        format!(
            "{} {state}: {}. Open the REPL here to review and trust {them}, or pass \
             --trust-project to pith run.",
            self.subject, self.consequence
        )
    }
}

/// Whether a conversation uses `files`: when they are trusted, or when `trust_project`
/// is set (`pith run --trust-project`, which records nothing). Files that are not used
/// for want of trust come with the notice `told` words.
pub(crate) fn admit(
    files: &ProjectFiles,
    env: &Env,
    trust_project: bool,
    told: Distrusted,
) -> Result<(bool, Option<String>), ConversationError> {
    Ok(match state(files, env)? {
        TrustState::Absent => (false, None),
        TrustState::Trusted => (true, None),
        TrustState::Untrusted { .. } if trust_project => (true, None),
        TrustState::Untrusted { changed, .. } => (false, Some(told.notice(changed))),
    })
}

/// Where `files` stand in the user's store.
pub(crate) fn state(files: &ProjectFiles, env: &Env) -> Result<TrustState, ConversationError> {
    TrustStore::of_user(env)?
        .state(files)
        .map_err(ConversationError::failure)
}

/// Project files waiting for the user's trust, with what trusting them allows (the REPL
/// asks with it: hooks that would run, agents that would be offered, MCP servers that
/// would start).
#[derive(Debug, Clone)]
pub struct TrustQuestion {
    /// The file set.
    pub files: ProjectFiles,
    /// The contents to record as trusted.
    pub fingerprint: String,
    /// The files were trusted before with other contents.
    pub changed: bool,
    /// What trusting them allows, one line each (`Event [matcher]: command`, `name:
    /// description`, `name: command args…`).
    pub lines: Vec<String>,
}

impl TrustQuestion {
    /// Records in the user's store that the user trusts the files as they were when
    /// asked (a later change asks again).
    pub fn trust(&self, env: &Env) -> Result<(), ConversationError> {
        TrustStore::of_user(env)?
            .trust(&self.files, &self.fingerprint)
            .map_err(ConversationError::failure)
    }
}

/// The question to ask before `files` are used, listing what `lines` says trusting them
/// allows, or `None` when none of them exists or they are trusted already.
pub(crate) fn question(
    files: ProjectFiles,
    env: &Env,
    lines: impl FnOnce() -> Vec<String>,
) -> Result<Option<TrustQuestion>, ConversationError> {
    Ok(match state(&files, env)? {
        TrustState::Absent | TrustState::Trusted => None,
        TrustState::Untrusted {
            changed,
            fingerprint,
        } => Some(TrustQuestion {
            files,
            fingerprint,
            changed,
            lines: lines(),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_is_per_project_kind_and_content() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let store = TrustStore::in_data_dir(home.path());
        let files = ProjectFiles::mcp(project.path());
        assert_eq!(store.state(&files).unwrap(), TrustState::Absent);

        std::fs::write(project.path().join(".mcp.json"), r#"{"mcpServers": {}}"#).unwrap();
        let TrustState::Untrusted {
            changed: false,
            fingerprint,
        } = store.state(&files).unwrap()
        else {
            panic!("a new file is untrusted");
        };
        store.trust(&files, &fingerprint).unwrap();
        assert_eq!(store.state(&files).unwrap(), TrustState::Trusted);

        let hooks = ProjectFiles {
            kind: "hooks".into(),
            ..files.clone()
        };
        assert!(
            matches!(
                store.state(&hooks).unwrap(),
                TrustState::Untrusted { changed: false, .. }
            ),
            "trust in one kind is not trust in another"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::copy(
            project.path().join(".mcp.json"),
            elsewhere.path().join(".mcp.json"),
        )
        .unwrap();
        assert!(matches!(
            store.state(&ProjectFiles::mcp(elsewhere.path())).unwrap(),
            TrustState::Untrusted { .. }
        ));

        std::fs::write(
            project.path().join(".mcp.json"),
            r#"{"mcpServers": {"x": {"command": "curl"}}}"#,
        )
        .unwrap();
        assert!(
            matches!(
                store.state(&files).unwrap(),
                TrustState::Untrusted { changed: true, .. }
            ),
            "a changed file asks again"
        );
    }

    #[test]
    fn a_corrupt_store_is_an_error_not_trust() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        std::fs::write(project.path().join(".mcp.json"), "{}").unwrap();
        std::fs::write(home.path().join("trust.json"), "garbage").unwrap();
        let store = TrustStore::in_data_dir(home.path());
        assert!(store.state(&ProjectFiles::mcp(project.path())).is_err());
    }
}
