//! Which agents a conversation offers: the built-in `explore`, then the user's
//! `~/.config/pith/agents/*.md` (`$XDG_CONFIG_HOME/pith/agents/`), then the project's
//! `.pith/agents/*.md` once trusted like the project's hooks ([`crate::trust`]). A later
//! definition of the same name replaces an earlier one (the project's wins). A file that
//! does not parse is left out with a notice naming it.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::env::Env;
use crate::error::ConversationError;
use crate::subagents::definition::{AgentDefinition, AgentOrigin};
use crate::trust::{ProjectFiles, TrustQuestion};

/// The agents of a conversation, in the order the model sees them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Agents {
    list: Vec<AgentDefinition>,
}

/// The agents and what the user should be told about them.
#[derive(Debug, Default)]
pub struct ConfiguredAgents {
    /// The agents offered.
    pub agents: Agents,
    /// Files left out and why; untrusted project agents.
    pub notices: Vec<String>,
}

impl Agents {
    /// The given definitions, later ones replacing earlier ones of the same name.
    pub fn new(definitions: impl IntoIterator<Item = AgentDefinition>) -> Self {
        let mut agents = Self::default();
        for definition in definitions {
            agents.add(definition);
        }
        agents
    }

    fn add(&mut self, definition: AgentDefinition) {
        match self.list.iter_mut().find(|a| a.name == definition.name) {
            Some(slot) => *slot = definition,
            None => self.list.push(definition),
        }
    }

    /// The agent called `name`.
    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.list.iter().find(|a| a.name == name)
    }

    /// Every agent, in order.
    pub fn all(&self) -> &[AgentDefinition] {
        &self.list
    }

    /// Their names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.list.iter().map(|a| a.name.as_str()).collect()
    }
}

/// The user's agent directory: next to the user's config file.
pub fn user_dir(env: &Env) -> Option<PathBuf> {
    Config::user_path(env.as_ref()).and_then(|config| config.parent().map(|d| d.join("agents")))
}

/// The project's agent directory.
pub fn project_dir(cwd: &Path) -> PathBuf {
    cwd.join(".pith").join("agents")
}

/// The agents of the project at `cwd` (see the module docs). `trust_project` uses the
/// project's agents even when they are not trusted (`pith run --trust-project`).
pub fn configured_agents(
    cwd: &Path,
    env: &Env,
    trust_project: bool,
) -> Result<ConfiguredAgents, ConversationError> {
    let mut result = ConfiguredAgents::default();
    result.agents.add(AgentDefinition::explore());
    if let Some(dir) = user_dir(env) {
        load_dir(&dir, AgentOrigin::User, &mut result);
    }
    let files = ProjectFiles::agents(cwd);
    if files.files.is_empty() {
        return Ok(result);
    }
    let (trusted, notice) = crate::trust::admit(&files, env, trust_project, DISTRUSTED)?;
    result.notices.extend(notice);
    if trusted {
        load_dir(&project_dir(cwd), AgentOrigin::Project, &mut result);
    }
    Ok(result)
}

/// The question to ask before the project's agents are offered (a line `name:
/// description` per agent, then what could not be read), or `None` when it has none or
/// they are trusted already.
pub fn trust_question(cwd: &Path, env: &Env) -> Result<Option<TrustQuestion>, ConversationError> {
    let files = ProjectFiles::agents(cwd);
    if files.files.is_empty() {
        return Ok(None);
    }
    crate::trust::question(files, env, || {
        let mut loaded = ConfiguredAgents::default();
        load_dir(&project_dir(cwd), AgentOrigin::Project, &mut loaded);
        let mut agents: Vec<String> = loaded
            .agents
            .all()
            .iter()
            .map(|a| format!("{}: {}", a.name, a.description))
            .collect();
        agents.extend(loaded.notices);
        agents
    })
}

/// What the user is told about project agents not offered for want of trust.
const DISTRUSTED: crate::trust::Distrusted = crate::trust::Distrusted {
    subject: "the agents of .pith/agents",
    plural: true,
    consequence: "they are not offered",
};

/// Adds the `*.md` definitions of `dir` (in name order) to `result`; a missing directory
/// adds nothing.
fn load_dir(dir: &Path, origin: fn(PathBuf) -> AgentOrigin, result: &mut ConfiguredAgents) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        match AgentDefinition::load(&path, origin(path.clone())) {
            Ok(definition) => {
                if !definition.unknown_tools.is_empty() {
                    result.notices.push(format!(
                        "agent `{}` ({}): pith has no tool {}; left out",
                        definition.name,
                        path.display(),
                        definition
                            .unknown_tools
                            .iter()
                            .map(|t| format!("`{t}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                result.agents.add(definition);
            }
            Err(error) => result.notices.push(format!(
                "agent file {} is left out: {error}",
                path.display()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn env_for(home: &Path, data: &Path) -> Env {
        let home = home.to_path_buf();
        let data = data.to_path_buf();
        Arc::new(move |name: &str| match name {
            "XDG_CONFIG_HOME" => Some(home.display().to_string()),
            "PITH_HOME" => Some(data.display().to_string()),
            _ => None,
        })
    }

    fn write(dir: &Path, file: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(file), text).unwrap();
    }

    #[test]
    fn project_agents_need_trust_and_then_replace_the_users() {
        let config = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let env = env_for(config.path(), data.path());
        let user = config.path().join("pith").join("agents");
        write(
            &user,
            "rev.md",
            "---\nname: rev\ndescription: user's\n---\nU",
        );
        write(&user, "broken.md", "no front matter");
        let agents_dir = project_dir(project.path());
        write(
            &agents_dir,
            "rev.md",
            "---\nname: rev\ndescription: project's\n---\nP",
        );

        let untrusted = configured_agents(project.path(), &env, false).unwrap();
        assert_eq!(untrusted.agents.names(), ["explore", "rev"]);
        assert_eq!(untrusted.agents.get("rev").unwrap().description, "user's");
        assert!(untrusted.notices.iter().any(|n| n.contains("broken.md")));
        assert!(untrusted.notices.iter().any(|n| n.contains("not trusted")));

        let question = trust_question(project.path(), &env).unwrap().unwrap();
        assert_eq!(question.lines, ["rev: project's"]);
        question.trust(&env).unwrap();
        let trusted = configured_agents(project.path(), &env, false).unwrap();
        assert_eq!(trusted.agents.get("rev").unwrap().description, "project's");
        assert!(trust_question(project.path(), &env).unwrap().is_none());

        write(
            &agents_dir,
            "new.md",
            "---\nname: new\ndescription: added\n---\nN",
        );
        let changed = configured_agents(project.path(), &env, false).unwrap();
        assert_eq!(
            changed.agents.get("rev").unwrap().description,
            "user's",
            "a new file asks again"
        );
        let forced = configured_agents(project.path(), &env, true).unwrap();
        assert_eq!(forced.agents.names(), ["explore", "rev", "new"]);
    }
}
