//! An in-process MCP test server (rmcp's `server` side) with hostile tools, and the
//! connectors that put it behind a pith-mcp hub.

#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pith_mcp::{Connect, Connection, Diagnostics};
use pith_mcp::{McpHub, ServerConfig};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, InitializeResult,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// Bytes of the `big` tool's result: 1 MiB.
pub const BIG_BYTES: usize = 1024 * 1024;

/// The hostile server: `echo`, `big` (1 MiB of log lines), `hang`, `crash` (closes the
/// connection mid-call), `fail` (an error result), `image`, `bad_schema` (an array
/// schema), plus `extra` filler tools.
#[derive(Clone)]
pub struct Hostile {
    /// Filler tools `tool_000`… to list besides the hostile ones.
    pub extra: usize,
    /// Cancelled by the `crash` tool: the connection is dropped.
    pub crash: CancellationToken,
    /// Calls received.
    pub calls: Arc<AtomicUsize>,
}

fn schema(value: Value) -> Arc<Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

impl Hostile {
    fn tools(&self) -> Vec<Tool> {
        let text = json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
        let none = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            Tool::new(
                "echo",
                "Echoes the text back. Use it to test.",
                schema(text),
            )
            .with_annotations(ToolAnnotations::new().read_only(true)),
            Tool::new(
                "big",
                "Returns one mebibyte of log lines.",
                schema(none.clone()),
            ),
            Tool::new("hang", "Never answers.", schema(none.clone())),
            Tool::new(
                "crash",
                "Closes the connection during the call.",
                schema(none.clone()),
            ),
            Tool::new("fail", "Reports an error result.", schema(none.clone())),
            Tool::new("image", "Returns a tiny PNG.", schema(none.clone())),
            Tool::new(
                "bad_schema",
                "Has an array schema.",
                schema(json!({"type": "array"})),
            ),
        ];
        for i in 0..self.extra {
            tools.push(Tool::new(
                format!("tool_{i:03}"),
                format!("Filler tool number {i}. It does nothing useful at all, but describes itself at some length so that its definition costs tokens like a real one."),
                schema(json!({"type": "object", "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "limit": {"type": "integer", "description": "How many results."}
                }})),
            ));
        }
        tools
    }
}

impl ServerHandler for Hostile {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let result = match request.name.as_ref() {
            "echo" => {
                let text = request
                    .arguments
                    .as_ref()
                    .and_then(|a| a.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            "big" => CallToolResult::success(vec![ContentBlock::text(big_text())]),
            "hang" => {
                std::future::pending::<()>().await;
                CallToolResult::success(vec![])
            }
            "crash" => {
                self.crash.cancel();
                std::future::pending::<()>().await;
                CallToolResult::success(vec![])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the city is unknown")]),
            "image" => CallToolResult::success(vec![ContentBlock::image(
                "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
                "image/png",
            )]),
            other if other.starts_with("tool_") => {
                CallToolResult::success(vec![ContentBlock::text(format!("{other} ran"))])
            }
            other => return Err(ErrorData::invalid_params(format!("no tool {other}"), None)),
        };
        Ok(result.into())
    }
}

/// One MiB of log lines, each different.
pub fn big_text() -> String {
    let mut text = String::with_capacity(BIG_BYTES + 100);
    let mut i = 0;
    while text.len() < BIG_BYTES {
        text.push_str(&format!(
            "2026-11-30T12:00:{:02}Z INFO worker-{} processed batch {i} in {} ms\n",
            i % 60,
            i % 7,
            i % 97
        ));
        i += 1;
    }
    text
}

/// Connects to a fresh [`Hostile`] server over an in-memory pipe. Each connection has
/// its own crash token; `connects` counts connections (a restart is the second).
pub struct InProcess {
    pub extra: usize,
    pub connects: Arc<AtomicUsize>,
    pub calls: Arc<AtomicUsize>,
}

impl InProcess {
    pub fn new(extra: usize) -> Self {
        Self {
            extra,
            connects: Arc::new(AtomicUsize::new(0)),
            calls: Arc::new(AtomicUsize::new(0)),
        }
    }
}

#[async_trait]
impl Connect for InProcess {
    async fn connect(&self) -> Result<Connection, String> {
        self.connects.fetch_add(1, Ordering::SeqCst);
        let (client_side, server_side) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server_side);
        let crash = CancellationToken::new();
        let handler = Hostile {
            extra: self.extra,
            crash: crash.clone(),
            calls: self.calls.clone(),
        };
        tokio::spawn(async move {
            let Ok(running) = handler.serve((server_read, server_write)).await else {
                return;
            };
            crash.cancelled().await;
            drop(running);
        });
        let (read, write) = tokio::io::split(client_side);
        Connection::over(read, write, None, Arc::new(Diagnostics::default())).await
    }
}

/// A server that answers the handshake and the tool list correctly, then writes garbage
/// instead of a `tools/call` result; with `bad_list`, its tool list is JSON that is not
/// a valid MCP message (a schema that is a string).
pub struct Garbage {
    pub bad_list: bool,
}

#[async_trait]
impl Connect for Garbage {
    async fn connect(&self) -> Result<Connection, String> {
        let (client_side, server_side) = tokio::io::duplex(1 << 16);
        let schema = if self.bad_list {
            json!("not a schema")
        } else {
            json!({"type": "object"})
        };
        tokio::spawn(async move {
            let (read, mut write) = tokio::io::split(server_side);
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let id = message.get("id").cloned();
                let reply = match message.get("method").and_then(Value::as_str) {
                    Some("initialize") => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "garbage", "version": "1"}
                    }})
                    .to_string(),
                    Some("tools/list") => json!({"jsonrpc": "2.0", "id": id, "result": {
                        "tools": [{"name": "ask", "description": "Asks.", "inputSchema": schema}]
                    }})
                    .to_string(),
                    Some("tools/call") => "this is not JSON-RPC {".to_owned(),
                    _ => continue,
                };
                if write
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        let (read, write) = tokio::io::split(client_side);
        Connection::over(read, write, None, Arc::new(Diagnostics::default())).await
    }
}

/// A hub of one server called `name` reached through `connector`, started.
pub async fn hub(
    name: &str,
    connector: impl Connect + 'static,
    tweak: impl FnOnce(&mut ServerConfig),
) -> McpHub {
    let mut config = ServerConfig::stdio(name, "unused", &[]);
    tweak(&mut config);
    let hub = McpHub::with_connectors(vec![(config, Box::new(connector))]);
    tokio::time::timeout(Duration::from_secs(30), hub.wait_started())
        .await
        .expect("start-up is bounded by its timeout");
    hub
}
