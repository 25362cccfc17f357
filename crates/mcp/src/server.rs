//! One configured server over the life of a conversation: started once (within its
//! start-up timeout), its tool list kept, every call bounded by its tool timeout, and a
//! crash answered by one restart on the next call.
//!
//! Every failure is a [`CallError`] or a [`Status::Failed`] with a sentence a user and a
//! model can act on; nothing here panics or hangs past a timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject, Tool as RemoteTool};
use rmcp::service::ServiceError;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::connection::{Connect, Connection};

/// Where a server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// Configured with `enabled = false`.
    Disabled,
    /// Not started yet, or starting.
    Starting,
    /// Connected; its tools are offered.
    Ready,
    /// It crashed and will be restarted on its next call.
    Crashed(String),
    /// It could not be started (or crashed again after its one restart).
    Failed(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Disabled => f.write_str("disabled"),
            Self::Starting => f.write_str("starting"),
            Self::Ready => f.write_str("ready"),
            Self::Crashed(reason) => write!(f, "crashed: {reason}"),
            Self::Failed(reason) => write!(f, "failed: {reason}"),
        }
    }
}

/// Why a call produced no result. The text is what the model reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// The server is not available (failed to start, disabled, crashed twice).
    #[error("MCP server `{server}` is not available: {reason}")]
    Unavailable {
        /// Server name.
        server: String,
        /// Why.
        reason: String,
    },
    /// The server went away during the call.
    #[error("MCP server `{server}` crashed during the call{detail}. It will be restarted on the next call; the call may or may not have taken effect.")]
    Crashed {
        /// Server name.
        server: String,
        /// Exit status and stderr.
        detail: String,
    },
    /// No answer within the tool timeout.
    #[error("MCP server `{server}` did not answer within {seconds} s (tool_timeout_s); the call was abandoned.{detail}")]
    Timeout {
        /// Server name.
        server: String,
        /// The timeout, in seconds (`60`, `0.3`).
        seconds: String,
        /// What the server said outside the protocol.
        detail: String,
    },
    /// The server answered with a protocol error.
    #[error("MCP server `{server}` refused the call: {message}")]
    Protocol {
        /// Server name.
        server: String,
        /// Its error.
        message: String,
    },
    /// The turn was cancelled.
    #[error("cancelled")]
    Cancelled,
}

struct State {
    status: Status,
    connection: Option<Arc<Connection>>,
    restarted: bool,
}

/// A configured server and its connection.
pub struct McpServer {
    config: ServerConfig,
    connector: Box<dyn Connect>,
    state: Mutex<State>,
    /// The tools as listed at the first successful start (kept across a restart, so the
    /// definitions the model has seen never change).
    tools: std::sync::Mutex<Option<Vec<RemoteTool>>>,
    startup: std::sync::Mutex<Option<Duration>>,
    /// Warnings for the user since they were last taken (a call's failure, a restart).
    warnings: std::sync::Mutex<Vec<String>>,
}

pith_core::debug_fields!(McpServer |this| {
    name: this.config.name,
});

impl McpServer {
    /// A server that connects through `connector`; nothing starts yet.
    pub fn new(config: ServerConfig, connector: Box<dyn Connect>) -> Self {
        let status = if config.enabled {
            Status::Starting
        } else {
            Status::Disabled
        };
        Self {
            config,
            connector,
            state: Mutex::new(State {
                status,
                connection: None,
                restarted: false,
            }),
            tools: std::sync::Mutex::new(None),
            startup: std::sync::Mutex::new(None),
            warnings: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn warn(&self, text: String) {
        self.warnings
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(text);
    }

    /// Warnings for the user since the last call: failed calls, restarts. The model got
    /// each failure as its tool error already.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(
            &mut *self
                .warnings
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Where it stands now.
    pub async fn status(&self) -> Status {
        let state = self.state.lock().await;
        match (&state.status, &state.connection) {
            (Status::Ready, Some(connection)) if connection.is_closed() => {
                Status::Crashed(describe_exit(connection))
            }
            (status, _) => status.clone(),
        }
    }

    /// The tools it listed at start-up (empty before, or when it never started).
    pub fn tools(&self) -> Vec<RemoteTool> {
        self.tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .unwrap_or_default()
    }

    /// How long its first successful start took.
    pub fn startup_time(&self) -> Option<Duration> {
        *self
            .startup
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts it, once: connects and lists its tools within `startup_timeout`. Returns
    /// the status reached.
    pub async fn start(&self) -> Status {
        let mut state = self.state.lock().await;
        if state.status != Status::Starting {
            return state.status.clone();
        }
        let started = Instant::now();
        match self.connect_and_list().await {
            Ok((connection, tools)) => {
                *self
                    .tools
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(tools);
                *self
                    .startup
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(started.elapsed());
                state.connection = Some(Arc::new(connection));
                state.status = Status::Ready;
            }
            Err(reason) => {
                tracing::warn!(server = %self.config.name, %reason, "MCP server failed to start");
                state.status = Status::Failed(reason);
            }
        }
        state.status.clone()
    }

    async fn connect_and_list(&self) -> Result<(Connection, Vec<RemoteTool>), String> {
        let timeout = self.config.startup_timeout;
        let deadline = Instant::now() + timeout;
        let late = || {
            format!(
                "it did not start within {} s (startup_timeout_s)",
                seconds(timeout)
            )
        };
        let connection = match tokio::time::timeout(timeout, self.connector.connect()).await {
            Ok(connection) => connection?,
            Err(_) => return Err(late()),
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let listing = connection.service().peer().list_all_tools();
        match tokio::time::timeout(remaining, listing).await {
            Ok(Ok(tools)) => Ok((connection, tools)),
            Ok(Err(ServiceError::UnexpectedResponse)) => Err(format!(
                "its answer to tools/list is not a valid MCP tool list.{}",
                connection.diagnostics().explain()
            )),
            Ok(Err(error)) => Err(format!(
                "listing its tools failed: {}.{}",
                error.to_string().trim_end_matches('.'),
                connection.diagnostics().explain()
            )),
            Err(_) => Err(format!(
                "{}: it did not list its tools.{}",
                late(),
                connection.diagnostics().explain()
            )),
        }
    }

    /// A live connection: the current one, or after a crash a new one (once per session).
    async fn connection(&self) -> Result<Arc<Connection>, CallError> {
        let mut state = self.state.lock().await;
        let unavailable = |reason: String| CallError::Unavailable {
            server: self.config.name.clone(),
            reason,
        };
        match (&state.status, &state.connection) {
            (Status::Ready, Some(connection)) if !connection.is_closed() => Ok(connection.clone()),
            (Status::Ready | Status::Crashed(_), Some(connection)) => {
                let exit = describe_exit(connection);
                if state.restarted {
                    state.status = Status::Failed(format!(
                        "it crashed again after a restart ({exit}); not restarted again in this session"
                    ));
                    state.connection = None;
                    self.warn(format!(
                        "MCP server `{}` crashed again after its restart; its tools are unavailable for the rest of the session.",
                        self.config.name
                    ));
                    return Err(unavailable(state.status.to_string()));
                }
                tracing::warn!(server = %self.config.name, %exit, "restarting crashed MCP server");
                state.restarted = true;
                state.connection = None;
                match self.connect_and_list().await {
                    Ok((connection, _tools)) => {
                        let connection = Arc::new(connection);
                        state.connection = Some(connection.clone());
                        state.status = Status::Ready;
                        self.warn(format!(
                            "MCP server `{}` was restarted after a crash ({exit}).",
                            self.config.name
                        ));
                        Ok(connection)
                    }
                    Err(reason) => {
                        state.status = Status::Failed(format!(
                            "it crashed ({exit}) and its restart failed: {reason}"
                        ));
                        self.warn(format!(
                            "MCP server `{}`: {}",
                            self.config.name, state.status
                        ));
                        Err(unavailable(state.status.to_string()))
                    }
                }
            }
            (Status::Disabled, _) => Err(unavailable("it is disabled in the configuration".into())),
            (Status::Starting, _) => Err(unavailable("it has not started".into())),
            (status, _) => Err(unavailable(status.to_string())),
        }
    }

    /// Calls its tool `tool` (the server's own name) with `arguments`, within the tool
    /// timeout. `cancel` abandons the call. A crash, a timeout or a protocol error is
    /// also kept as a warning for the user ([`McpServer::take_warnings`]).
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let outcome = self.call_once(tool, arguments, cancel).await;
        if let Err(
            error @ (CallError::Crashed { .. }
            | CallError::Timeout { .. }
            | CallError::Protocol { .. }),
        ) = &outcome
        {
            self.warn(format!("{error} (tool `{tool}`)"));
        }
        outcome
    }

    async fn call_once(
        &self,
        tool: &str,
        arguments: JsonObject,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let connection = tokio::select! {
            connection = self.connection() => connection?,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let timeout = self.config.tool_timeout;
        let call = connection.service().peer().call_tool(params);
        let outcome = tokio::select! {
            outcome = tokio::time::timeout(timeout, call) => outcome,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        let server = self.config.name.clone();
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Err(_) => Err(CallError::Timeout {
                server,
                seconds: seconds(timeout),
                detail: connection.diagnostics().explain(),
            }),
            Ok(Err(ServiceError::McpError(error))) => Err(CallError::Protocol {
                server,
                message: error.message.to_string(),
            }),
            Ok(Err(error)) => {
                // Give the connection a moment to notice the process is gone.
                for _ in 0..20 {
                    if connection.is_closed() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                if connection.is_closed() {
                    connection.settle_stderr().await;
                    let mut state = self.state.lock().await;
                    if state.status == Status::Ready {
                        state.status = Status::Crashed(describe_exit(&connection));
                    }
                    Err(CallError::Crashed {
                        server,
                        detail: format!(
                            " ({}).{}",
                            describe_exit(&connection),
                            connection.diagnostics().explain()
                        ),
                    })
                } else {
                    Err(CallError::Protocol {
                        server,
                        message: format!("{error}.{}", connection.diagnostics().explain()),
                    })
                }
            }
        }
    }

    /// Closes the connection (ends a stdio server's process group).
    pub async fn shut_down(&self) {
        let mut state = self.state.lock().await;
        state.connection = None;
    }
}

/// `60`, `0.5`: a duration as configured.
fn seconds(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        duration.as_secs().to_string()
    } else {
        format!("{:.1}", duration.as_secs_f64())
    }
}

fn describe_exit(connection: &Connection) -> String {
    match connection.exit_status() {
        Some(status) => format!("the process ended: {status}"),
        None => "the connection closed".to_owned(),
    }
}
