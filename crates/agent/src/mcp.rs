//! Which MCP servers a conversation gets, and how they plug into it.
//!
//! Servers come from `[mcp_servers.NAME]` of the config files and, once trusted
//! ([`crate::trust`]), from the project's `.mcp.json`; a name in both is the config
//! file's. [`Conversation::open`](crate::Conversation::open) starts them in the
//! background ([`pith_mcp::McpHub`]); the first turn waits for them, reports failures as
//! notices and installs their tools into the loop's registry (advertised, or deferred
//! behind a loader when they exceed `[context] mcp_defer_percent` of the input budget).
//! A new session or model reuses the same connections. A front-end may add servers of
//! its own ([`add_extra`]).

use std::path::Path;
use std::sync::Arc;

use pith_mcp::{McpHub, ServerConfig, ServerReport};

use crate::env::Env;
use crate::error::ConversationError;
use crate::trust::{ProjectFiles, TrustQuestion};
use crate::workspace::Workspace;

/// The servers a conversation in a project gets, and what the user should be told.
#[derive(Debug, Default)]
pub struct McpServers {
    /// The servers, config files' first, each list sorted by name.
    pub servers: Vec<ServerConfig>,
    /// Notes: an untrusted `.mcp.json`, skipped entries.
    pub notices: Vec<String>,
}

/// The question to ask before the project's `.mcp.json` may start anything (a line
/// `name: command args…` or `name: url` per server it would start), or `None` when there
/// is no such file or it is trusted already.
pub fn trust_question(cwd: &Path, env: &Env) -> Result<Option<TrustQuestion>, ConversationError> {
    crate::trust::question(ProjectFiles::mcp(cwd), env, || match read_mcp_json(cwd) {
        Ok((servers, _)) => servers
            .iter()
            .map(|s| format!("{}: {}", s.name, s.describe()))
            .collect(),
        Err(error) => vec![format!("(unreadable: {error})")],
    })
}

fn read_mcp_json(cwd: &Path) -> Result<(Vec<ServerConfig>, Vec<String>), String> {
    let text = std::fs::read_to_string(cwd.join(".mcp.json")).map_err(|e| e.to_string())?;
    pith_mcp::from_mcp_json(&text).map_err(|e| e.to_string())
}

/// The servers of the workspace: `[mcp_servers]` of its configuration, then the
/// project's `.mcp.json` when it is trusted or `trust_project` is set (`pith run
/// --trust-project`, which records nothing). A bad `[mcp_servers]` table is an error; a
/// bad or untrusted `.mcp.json` is a notice.
pub fn configured_servers(
    workspace: &Workspace,
    env: &Env,
    trust_project: bool,
) -> Result<McpServers, ConversationError> {
    let cwd = workspace.cwd();
    let mut result = McpServers {
        servers: pith_mcp::from_toml(&workspace.config().mcp_servers)
            .map_err(|e| ConversationError::Usage(format!("invalid configuration: {e}")))?,
        notices: Vec::new(),
    };
    let (use_file, notice) =
        crate::trust::admit(&ProjectFiles::mcp(cwd), env, trust_project, DISTRUSTED)?;
    result.notices.extend(notice);
    if use_file {
        match read_mcp_json(cwd) {
            Ok((servers, skipped)) => {
                result.notices.extend(skipped);
                for server in servers {
                    if result.servers.iter().any(|s| s.name == server.name) {
                        result.notices.push(format!(
                            "MCP server `{}` of .mcp.json is also in your config; the config's is used",
                            server.name
                        ));
                    } else {
                        result.servers.push(server);
                    }
                }
            }
            Err(error) => result
                .notices
                .push(format!(".mcp.json cannot be used: {error}")),
        }
    }
    Ok(result)
}

/// Adds the servers a front-end passes ([`crate::Overrides::extra_mcp_servers`], an
/// editor's over ACP) after the configured ones. They are trusted like the user's
/// configuration, since the user set them up in the front-end; one named like a
/// configured server replaces it, with a notice.
pub fn add_extra(servers: &mut McpServers, extra: &[ServerConfig]) {
    for server in extra {
        if let Some(at) = servers.servers.iter().position(|s| s.name == server.name) {
            servers.notices.push(format!(
                "MCP server `{}` given by the client replaces the configured one",
                server.name
            ));
            servers.servers.remove(at);
        }
        servers.servers.push(server.clone());
    }
}

/// What the user is told about a `.mcp.json` not used for want of trust.
const DISTRUSTED: crate::trust::Distrusted = crate::trust::Distrusted {
    subject: ".mcp.json",
    plural: false,
    consequence: "its MCP servers were not started",
};

/// Starts `servers` in the background (on the current Tokio runtime); `None` when there
/// are none.
pub fn start(servers: Vec<ServerConfig>, env: &Env, cwd: &Path) -> Option<Arc<McpHub>> {
    if servers.is_empty() {
        return None;
    }
    let lookup = env.clone();
    Some(Arc::new(McpHub::start(
        servers,
        Arc::new(move |name: &str| lookup(name)),
        cwd,
        pith_tools::DEFAULT_BASH_ENV_EXCLUDE
            .map(String::from)
            .to_vec(),
    )))
}

/// `pith mcp list`: starts the project's servers, waits for them and reports each one
/// (status, tools, definition tokens), with the notices.
pub async fn list(
    cwd: &Path,
    env: &Env,
    trust_project: bool,
) -> Result<(Vec<ServerReport>, Vec<String>), ConversationError> {
    let workspace = Workspace::open(cwd, env.as_ref())?;
    let McpServers {
        servers,
        mut notices,
    } = configured_servers(&workspace, env, trust_project)?;
    let Some(hub) = start(servers, env, workspace.cwd()) else {
        return Ok((Vec::new(), notices));
    };
    hub.wait_started().await;
    notices.extend(hub.take_notices().await);
    let counter = pith_core::BpeCounter::new(pith_core::Encoding::O200kBase);
    let reports = hub.report(&counter).await;
    hub.shut_down().await;
    Ok((reports, notices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_mcp::Transport;

    fn stdio(name: &str, command: &str) -> ServerConfig {
        ServerConfig::with_transport(
            name.to_owned(),
            Transport::Stdio {
                command: command.to_owned(),
                args: Vec::new(),
                env: Default::default(),
                cwd: None,
            },
        )
    }

    #[test]
    fn extra_servers_follow_the_configured_ones_and_replace_a_namesake_with_a_notice() {
        let mut servers = McpServers {
            servers: vec![stdio("docs", "configured-docs"), stdio("git", "git-server")],
            notices: Vec::new(),
        };
        add_extra(
            &mut servers,
            &[stdio("docs", "editor-docs"), stdio("time", "time-server")],
        );
        let described: Vec<(String, String)> = servers
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.describe()))
            .collect();
        assert_eq!(
            described,
            [
                ("git".to_owned(), "git-server".to_owned()),
                ("docs".to_owned(), "editor-docs".to_owned()),
                ("time".to_owned(), "time-server".to_owned()),
            ]
        );
        assert_eq!(servers.notices.len(), 1);
        assert!(
            servers.notices[0].contains("`docs`"),
            "{:?}",
            servers.notices
        );
    }
}
