//! Which hooks a conversation runs (docs/hooks.md).
//!
//! Hooks come from `[hooks]` of the user's config file and, once trusted
//! ([`crate::trust`]), from the project's `.pith/config.toml` (user hooks first). The
//! REPL asks about untrusted project hooks on first use ([`trust_question`]); `pith run`
//! runs them when they are trusted already or `--trust-project` is given (which records
//! nothing). Trust is recorded for the project path and the file's content hash, so a
//! changed file asks again.

use pith_hooks::{HookOrigin, HooksConfig};

use crate::config::Config;
use crate::env::Env;
use crate::error::ConversationError;
use crate::trust::{ProjectFiles, TrustQuestion};
use crate::workspace::Workspace;

/// The hooks of a conversation and what the user should be told about them.
#[derive(Debug, Default)]
pub struct ConfiguredHooks {
    /// The hooks that run.
    pub config: HooksConfig,
    /// Notes: untrusted project hooks that do not run.
    pub notices: Vec<String>,
}

/// The project's hooks alone.
fn project_config(config: &Config) -> Result<HooksConfig, ConversationError> {
    let mut project = HooksConfig::default();
    add_project_hooks(&mut project, config)?;
    Ok(project)
}

/// Adds the hooks of the project's `.pith/config.toml` to `hooks`.
fn add_project_hooks(hooks: &mut HooksConfig, config: &Config) -> Result<(), ConversationError> {
    hooks
        .add_table(&config.project_hooks, HookOrigin::Project)
        .map_err(|e| {
            ConversationError::Usage(format!("invalid configuration (.pith/config.toml): {e}"))
        })
}

/// The hooks of the workspace: the user's, then the project's when they are trusted or
/// `trust_project` is set. A bad `[hooks]` table is a usage error; untrusted project
/// hooks are a notice.
pub fn configured_hooks(
    workspace: &Workspace,
    env: &Env,
    trust_project: bool,
) -> Result<ConfiguredHooks, ConversationError> {
    let config = workspace.config();
    let mut result = ConfiguredHooks::default();
    result
        .config
        .add_table(&config.hooks, HookOrigin::User)
        .map_err(|e| ConversationError::Usage(format!("invalid configuration: {e}")))?;
    let project = project_config(config)?;
    if project.is_empty() {
        return Ok(result);
    }
    let (trusted, notice) = crate::trust::admit(
        &ProjectFiles::hooks(workspace.cwd()),
        env,
        trust_project,
        DISTRUSTED,
    )?;
    result.notices.extend(notice);
    if trusted {
        add_project_hooks(&mut result.config, config)?;
    }
    Ok(result)
}

/// What the user is told about project hooks that do not run for want of trust.
const DISTRUSTED: crate::trust::Distrusted = crate::trust::Distrusted {
    subject: "the hooks of .pith/config.toml",
    plural: true,
    consequence: "they do not run",
};

/// The question to ask before the project's hooks may run (a line `Event [matcher]:
/// command` per hook it would run), or `None` when it has none or they are trusted
/// already.
pub fn trust_question(
    workspace: &Workspace,
    env: &Env,
) -> Result<Option<TrustQuestion>, ConversationError> {
    let project = project_config(workspace.config())?;
    if project.is_empty() {
        return Ok(None);
    }
    crate::trust::question(ProjectFiles::hooks(workspace.cwd()), env, || {
        project
            .all()
            .map(|hook| match &hook.matcher {
                Some(matcher) => format!("{} [{matcher}]: {}", hook.event, hook.command),
                None => format!("{}: {}", hook.event, hook.command),
            })
            .collect()
    })
}
