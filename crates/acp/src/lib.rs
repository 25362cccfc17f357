//! pith-acp: `pith acp`, pith in the editor through the Agent Client Protocol (JSON-RPC
//! over stdio). A front-end over `pith_agent::Conversation` like the REPL and `pith run`;
//! it owns no engine logic. docs/acp.md describes what is supported.

#![forbid(unsafe_code)]

mod approver;
mod call;
mod commands;
mod config_options;
mod editor;
mod ext;
mod files;
mod handlers;
mod initialize;
mod lifecycle;
mod lines;
mod mcp_servers;
mod modes;
mod open;
mod plan;
mod prompt;
mod replay;
mod running;
mod server;
mod session;
mod sessions;
mod sink;
mod slash;
mod state;
mod stdio;
mod terminal;
mod tool_calls;
mod updates;

pub use approver::{
    answer as permission_answer, question as permission_question, ALLOW_ALWAYS, ALLOW_ONCE, REJECT,
};
pub use replay::replay;
pub use running::RunningCalls;
pub use server::{serve, AgentOptions};
pub use session::stop_reason;
pub use sink::{CompactionSlot, SessionSink};
pub use stdio::{take as take_stdio, ProtocolStdio};
pub use updates::{ClientView, EventMapper, ManualEnd, ModelFigures};

/// Why `pith acp` could not serve.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The protocol's descriptors or the runtime could not be set up.
    #[error("{0}")]
    Setup(String),
    /// The connection failed.
    #[error("the ACP connection failed: {0}")]
    Connection(String),
}

/// Serves the editor on the process's stdin and stdout until it closes them (see
/// [`stdio`] for how stdout is kept for the protocol alone).
pub fn run(options: AgentOptions) -> Result<(), AcpError> {
    let stdio = stdio::take()
        .map_err(|e| AcpError::Setup(format!("cannot take stdin/stdout for the protocol: {e}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| AcpError::Setup(format!("cannot start the async runtime: {e}")))?;
    let result = runtime.block_on(async move {
        use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
        let input = tokio::fs::File::from_std(stdio.input).compat();
        let output = tokio::fs::File::from_std(stdio.output).compat_write();
        tracing::info!("pith acp: serving on stdio");
        let transport = agent_client_protocol::Lines::new(
            lines::outgoing(output),
            lines::incoming(futures::io::BufReader::new(input)),
        );
        serve(transport, options).await
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    result.map_err(|e| AcpError::Connection(e.to_string()))
}
