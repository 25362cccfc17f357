//! `pith mcp list`: glue between the command line and `pith_agent::list_mcp_servers`.

use anyhow::Result;
use pith_agent::ExitCode;
use pith_mcp::Status;

use crate::cli::{McpArgs, McpCommand};
use crate::exit::ExitError;

/// Runs `pith mcp …`.
pub fn run(args: McpArgs) -> Result<()> {
    let McpCommand::List {
        trust_project,
        json,
        cwd,
    } = args.command;
    let cwd = match cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| ExitError::usage(format!("cannot read the current directory: {e}")))?,
    };
    let env: pith_agent::Env = std::sync::Arc::new(|name: &str| std::env::var(name).ok());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ExitError::usage(format!("cannot start the async runtime: {e}")))?;
    let listed = runtime.block_on(pith_agent::list_mcp_servers(&cwd, &env, trust_project));
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    let (reports, notices) = listed.map_err(|error| ExitError {
        code: error.exit_code(),
        message: error.to_string(),
    })?;
    for notice in &notices {
        eprintln!("pith: {notice}");
    }
    if json {
        let rows: Vec<serde_json::Value> = reports
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "target": r.target,
                    "status": status_word(&r.status),
                    "error": match &r.status {
                        Status::Failed(reason) | Status::Crashed(reason) => Some(reason.clone()),
                        _ => None,
                    },
                    "tools": r.tools,
                    "definition_tokens": r.definition_tokens,
                    "startup_ms": r.startup_ms.map(|ms| ms as u64),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(rows));
    } else if reports.is_empty() {
        println!("No MCP servers configured (see docs/mcp.md).");
    } else {
        let width = reports
            .iter()
            .map(|r| r.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        println!(
            "{:<width$}  {:<8}  {:>5}  {:>6}  TARGET",
            "NAME", "STATUS", "TOOLS", "TOKENS"
        );
        for r in &reports {
            println!(
                "{:<width$}  {:<8}  {:>5}  {:>6}  {}",
                r.name,
                status_word(&r.status),
                r.tools,
                r.definition_tokens,
                r.target
            );
            if let Status::Failed(reason) | Status::Crashed(reason) = &r.status {
                println!("{:<width$}  {reason}", "");
            }
        }
    }
    if reports
        .iter()
        .any(|r| matches!(r.status, Status::Failed(_)))
    {
        return Err(ExitError {
            code: ExitCode::Failure,
            message: "some MCP servers failed to start".into(),
        }
        .into());
    }
    Ok(())
}

fn status_word(status: &Status) -> &'static str {
    match status {
        Status::Disabled => "disabled",
        Status::Starting => "starting",
        Status::Ready => "ready",
        Status::Crashed(_) => "crashed",
        Status::Failed(_) => "failed",
    }
}
