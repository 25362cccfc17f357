//! The servers of one conversation: started together in the background when the
//! conversation opens, waited for before the first request, and installed into each tool
//! registry the conversation builds (a new session or model gets the same connections).
//!
//! Installing decides deferral: the MCP tool definitions, counted with the loop's token
//! counter, are advertised when they fit in their budget (`[context] mcp_defer_percent`
//! of the input budget) and deferred behind [`crate::deferred::LoadTool`] otherwise.

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use pith_core::tokens::count_tools;
use pith_core::{TokenCounter, ToolDefinition, ToolRegistry};
use pith_tools::ToolEnv;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::connection::{ConfiguredConnector, Connect, EnvLookup};
use crate::deferred::LoadTool;
use crate::server::{McpServer, Status};
use crate::tool::{shorten, McpTool, ToolSpec, MAX_DESCRIPTION_CHARS};

/// One server as `pith mcp list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerReport {
    /// Its name.
    pub name: String,
    /// `command args…` or its URL.
    pub target: String,
    /// Where it stands.
    pub status: Status,
    /// Tools offered to the model (after `enabled_tools` / `disabled_tools` and schema
    /// checks).
    pub tools: usize,
    /// Tokens of their definitions.
    pub definition_tokens: usize,
    /// How long it took to start, in milliseconds.
    pub startup_ms: Option<u128>,
}

/// What [`McpHub::install`] put into a registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Installed {
    /// MCP tools installed.
    pub tools: usize,
    /// Tokens of their full definitions.
    pub definition_tokens: usize,
    /// True when they were deferred behind the loader tool.
    pub deferred: bool,
}

/// The MCP servers of a conversation.
pub struct McpHub {
    servers: Vec<Arc<McpServer>>,
    started: watch::Receiver<bool>,
    specs: OnceLock<Vec<(ToolSpec, usize)>>,
    notices: Mutex<Vec<String>>,
}

pith_core::debug_fields!(McpHub |this| {
    servers: this.servers.len(),
});

impl McpHub {
    /// Starts `configs` (enabled ones) in the background on the current Tokio runtime.
    /// `workspace` is where stdio servers run; `env` expands `${VAR}`; stdio servers do
    /// not inherit variables whose names contain one of `env_exclude`.
    pub fn start(
        configs: Vec<ServerConfig>,
        env: EnvLookup,
        workspace: &Path,
        env_exclude: Vec<String>,
    ) -> Self {
        let servers = configs
            .into_iter()
            .map(|config| {
                let connector = ConfiguredConnector::new(
                    config.clone(),
                    env.clone(),
                    workspace,
                    env_exclude.clone(),
                );
                (config, Box::new(connector) as Box<dyn Connect>)
            })
            .collect();
        Self::with_connectors(servers)
    }

    /// Starts servers reached through the given connectors (tests use in-process ones).
    pub fn with_connectors(servers: Vec<(ServerConfig, Box<dyn Connect>)>) -> Self {
        let servers: Vec<Arc<McpServer>> = servers
            .into_iter()
            .map(|(config, connector)| Arc::new(McpServer::new(config, connector)))
            .collect();
        let (done, started) = watch::channel(false);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let starting = servers.clone();
                handle.spawn(async move {
                    futures::future::join_all(starting.iter().map(|server| server.start())).await;
                    let _ = done.send(true);
                });
            }
            Err(_) => {
                // No runtime to start on: the servers stay `starting` and offer no tools.
                tracing::warn!(
                    count = servers.len(),
                    "MCP servers not started: no async runtime"
                );
                let _ = done.send(true);
            }
        }
        Self {
            servers,
            started,
            specs: OnceLock::new(),
            notices: Mutex::new(Vec::new()),
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The servers, sorted by name.
    pub fn servers(&self) -> &[Arc<McpServer>] {
        &self.servers
    }

    /// True once every server has started or failed.
    pub fn is_started(&self) -> bool {
        *self.started.borrow()
    }

    /// Waits until every server has started or failed (each within its own start-up
    /// timeout).
    pub async fn wait_started(&self) {
        let mut started = self.started.clone();
        let _ = started.wait_for(|done| *done).await;
    }

    /// Warnings for the user not shown yet: servers that failed to start, tools left out,
    /// then failed calls and restarts. Each is returned once. Call after
    /// [`McpHub::wait_started`].
    pub async fn take_notices(&self) -> Vec<String> {
        self.specs_once().await;
        let mut notices =
            std::mem::take(&mut *self.notices.lock().unwrap_or_else(PoisonError::into_inner));
        for server in &self.servers {
            notices.extend(server.take_warnings());
        }
        notices
    }

    /// The offered tools of every started server with their model names, sorted by name,
    /// and the index of their server. Fixed at the first call after start-up.
    async fn specs_once(&self) -> &[(ToolSpec, usize)] {
        if let Some(specs) = self.specs.get() {
            return specs;
        }
        let mut notices = Vec::new();
        let mut raw = Vec::new();
        for (index, server) in self.servers.iter().enumerate() {
            match server.status().await {
                Status::Failed(reason) => notices.push(format!(
                    "MCP server `{}` failed to start: {reason}. Its tools are not available.",
                    server.name()
                )),
                Status::Disabled | Status::Starting => continue,
                Status::Ready | Status::Crashed(_) => {}
            }
            for tool in server.tools() {
                if !server.config().offers(&tool.name) {
                    continue;
                }
                match crate::schema::normalize(&tool.input_schema) {
                    Ok(parameters) => raw.push((index, tool, parameters)),
                    Err(reason) => notices.push(format!(
                        "MCP server `{}`: tool `{}` left out: {reason}.",
                        server.name(),
                        tool.name
                    )),
                }
            }
        }
        let pairs: Vec<(String, String)> = raw
            .iter()
            .map(|(index, tool, _)| {
                (
                    self.servers[*index].name().to_owned(),
                    tool.name.to_string(),
                )
            })
            .collect();
        let names = crate::names::assign(&pairs);
        let mut specs: Vec<(ToolSpec, usize)> = raw
            .into_iter()
            .zip(names)
            .map(|((index, tool, parameters), name)| {
                let description = tool
                    .description
                    .as_deref()
                    .map(str::to_owned)
                    .or_else(|| tool.title.clone())
                    .unwrap_or_else(|| {
                        format!(
                            "Tool `{}` of MCP server `{}`.",
                            tool.name,
                            self.servers[index].name()
                        )
                    });
                let spec = ToolSpec {
                    name,
                    remote: tool.name.to_string(),
                    description: shorten(&description, MAX_DESCRIPTION_CHARS),
                    parameters,
                    read_only_hint: tool
                        .annotations
                        .as_ref()
                        .and_then(|a| a.read_only_hint)
                        .unwrap_or(false),
                };
                (spec, index)
            })
            .collect();
        specs.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        self.notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(notices);
        self.specs.get_or_init(|| specs)
    }

    /// The definitions of the offered tools, as they would be advertised.
    pub async fn definitions(&self) -> Vec<ToolDefinition> {
        self.specs_once()
            .await
            .iter()
            .map(|(spec, _)| definition(spec))
            .collect()
    }

    /// Installs the offered tools into `registry`, bound to `env` (permissions, capture):
    /// advertised when their definitions take at most `budget_tokens` (counted with
    /// `counter`), otherwise deferred behind the loader tool. Call once per registry,
    /// after [`McpHub::wait_started`].
    pub async fn install(
        &self,
        registry: &ToolRegistry,
        env: &Arc<ToolEnv>,
        budget_tokens: u64,
        counter: &dyn TokenCounter,
    ) -> Installed {
        let specs = self.specs_once().await;
        if specs.is_empty() {
            return Installed::default();
        }
        let definitions: Vec<ToolDefinition> = specs.iter().map(|(s, _)| definition(s)).collect();
        let definition_tokens = count_tools(counter, &definitions);
        let deferred = definition_tokens as u64 > budget_tokens;
        if deferred {
            let catalog: Vec<ToolSpec> = specs.iter().map(|(s, _)| s.clone()).collect();
            registry.register(Arc::new(LoadTool::new(&catalog, registry.loader())));
        }
        for (spec, index) in specs {
            let tool = Arc::new(McpTool::new(
                spec.clone(),
                self.servers[*index].clone(),
                env.clone(),
            ));
            if deferred {
                registry.defer(tool);
            } else {
                registry.register(tool);
            }
        }
        tracing::debug!(
            tools = specs.len(),
            definition_tokens,
            budget_tokens,
            deferred,
            "MCP tools installed"
        );
        Installed {
            tools: specs.len(),
            definition_tokens,
            deferred,
        }
    }

    /// Every server's status, tool count and definition tokens (counted with `counter`).
    /// Call after [`McpHub::wait_started`].
    pub async fn report(&self, counter: &dyn TokenCounter) -> Vec<ServerReport> {
        let specs = self.specs_once().await;
        let mut reports = Vec::new();
        for (index, server) in self.servers.iter().enumerate() {
            let definitions: Vec<ToolDefinition> = specs
                .iter()
                .filter(|(_, i)| *i == index)
                .map(|(s, _)| definition(s))
                .collect();
            reports.push(ServerReport {
                name: server.name().to_owned(),
                target: server.config().describe(),
                status: server.status().await,
                tools: definitions.len(),
                definition_tokens: count_tools(counter, &definitions),
                startup_ms: server.startup_time().map(|d| d.as_millis()),
            });
        }
        reports
    }

    /// Ends every connection (stdio servers' process groups).
    pub async fn shut_down(&self) {
        for server in &self.servers {
            server.shut_down().await;
        }
    }
}

fn definition(spec: &ToolSpec) -> ToolDefinition {
    ToolDefinition {
        name: spec.name.clone(),
        description: spec.description.clone(),
        parameters: spec.parameters.clone(),
    }
}
