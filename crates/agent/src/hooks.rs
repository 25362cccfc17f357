//! Which hooks a conversation runs (docs/hooks.md).
//!
//! Hooks come from `[hooks]` of the user's config file and, once trusted
//! ([`crate::trust`]), from the project's `.pith/config.toml` (user hooks first). The
//! REPL asks about untrusted project hooks on first use ([`trust_question`]); `pith run`
//! runs them when they are trusted already or `--trust-project` is given (which records
//! nothing). Trust is recorded for the project path and the file's content hash, so a
//! changed file asks again.

use std::path::Path;

use pith_hooks::{HookOrigin, HooksConfig};
use pith_providers::models::config::Config;

use crate::conversation::{ConversationError, Env};
use crate::trust::{ProjectFiles, TrustState};

/// The hooks of a conversation and what the user should be told about them.
#[derive(Debug, Default)]
pub struct ConfiguredHooks {
    /// The hooks that run.
    pub config: HooksConfig,
    /// Notes: untrusted project hooks that do not run.
    pub notices: Vec<String>,
}

/// Project hooks waiting for the user's trust (the REPL asks with it).
#[derive(Debug, Clone)]
pub struct HooksTrustQuestion {
    /// The file set (`.pith/config.toml`).
    pub files: ProjectFiles,
    /// The contents to record as trusted.
    pub fingerprint: String,
    /// It was trusted before with other contents.
    pub changed: bool,
    /// `Event [matcher]: command`, one per hook it would run.
    pub hooks: Vec<String>,
}

fn project_config(config: &Config) -> Result<HooksConfig, ConversationError> {
    let mut project = HooksConfig::default();
    project
        .add_table(&config.project_hooks, HookOrigin::Project)
        .map_err(|e| {
            ConversationError::Usage(format!("invalid configuration (.pith/config.toml): {e}"))
        })?;
    Ok(project)
}

fn trust_state(cwd: &Path, env: &Env) -> Result<TrustState, ConversationError> {
    crate::mcp::trust_store(env)?
        .state(&ProjectFiles::hooks(cwd))
        .map_err(|e| ConversationError::Failure(e.to_string()))
}

/// The hooks of the project at `cwd`: the user's, then the project's when they are
/// trusted or `trust_project` is set. A bad `[hooks]` table is a usage error; untrusted
/// project hooks are a notice.
pub fn configured_hooks(
    cwd: &Path,
    config: &Config,
    env: &Env,
    trust_project: bool,
) -> Result<ConfiguredHooks, ConversationError> {
    let mut result = ConfiguredHooks::default();
    result
        .config
        .add_table(&config.hooks, HookOrigin::User)
        .map_err(|e| ConversationError::Usage(format!("invalid configuration: {e}")))?;
    let project = project_config(config)?;
    if project.is_empty() {
        return Ok(result);
    }
    let trusted = match trust_state(cwd, env)? {
        TrustState::Trusted => true,
        TrustState::Untrusted { .. } if trust_project => true,
        TrustState::Absent => false,
        TrustState::Untrusted { changed, .. } => {
            result.notices.push(format!(
                "the hooks of .pith/config.toml {}: they do not run. Open the REPL here to \
                 review and trust them, or pass --trust-project to pith run.",
                if changed {
                    "changed since you trusted them"
                } else {
                    "are not trusted yet"
                }
            ));
            false
        }
    };
    if trusted {
        result
            .config
            .add_table(&config.project_hooks, HookOrigin::Project)
            .map_err(|e| {
                ConversationError::Usage(format!("invalid configuration (.pith/config.toml): {e}"))
            })?;
    }
    Ok(result)
}

/// The question to ask before the project's hooks may run, or `None` when it has none
/// or they are trusted already.
pub fn trust_question(
    cwd: &Path,
    env: &Env,
) -> Result<Option<HooksTrustQuestion>, ConversationError> {
    let config =
        Config::load(cwd, env.as_ref()).map_err(|e| ConversationError::Usage(e.to_string()))?;
    let project = project_config(&config)?;
    if project.is_empty() {
        return Ok(None);
    }
    match trust_state(cwd, env)? {
        TrustState::Absent | TrustState::Trusted => Ok(None),
        TrustState::Untrusted {
            changed,
            fingerprint,
        } => Ok(Some(HooksTrustQuestion {
            files: ProjectFiles::hooks(cwd),
            fingerprint,
            changed,
            hooks: project
                .all()
                .map(|hook| match &hook.matcher {
                    Some(matcher) => format!("{} [{matcher}]: {}", hook.event, hook.command),
                    None => format!("{}: {}", hook.event, hook.command),
                })
                .collect(),
        })),
    }
}

/// Records the user's trust in the hooks of `question`.
pub fn trust(question: &HooksTrustQuestion, env: &Env) -> Result<(), ConversationError> {
    crate::mcp::trust_store(env)?
        .trust(&question.files, &question.fingerprint)
        .map_err(|e| ConversationError::Failure(e.to_string()))
}
