//! `initialize`: what pith really does (docs/acp.md has the table), and what the client
//! said it can show.

use agent_client_protocol::v1::schema::{
    AgentCapabilities, Implementation, InitializeRequest, InitializeResponse, McpCapabilities,
    PromptCapabilities, SessionCapabilities, SessionCloseCapabilities, SessionDeleteCapabilities,
    SessionForkCapabilities, SessionListCapabilities, SessionResumeCapabilities,
};

use crate::updates::ClientView;

/// `initialize`'s answer.
pub fn initialize(request: &InitializeRequest) -> InitializeResponse {
    let protocol = std::cmp::min(
        request.protocol_version,
        agent_client_protocol::schema::ProtocolVersion::V1,
    );
    InitializeResponse::new(protocol)
        .agent_capabilities(
            AgentCapabilities::new()
                .load_session(true)
                .mcp_capabilities(McpCapabilities::new().http(true).sse(false))
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new())
                        .delete(SessionDeleteCapabilities::new())
                        .fork(SessionForkCapabilities::new()),
                )
                .prompt_capabilities(
                    PromptCapabilities::new()
                        .image(true)
                        .audio(false)
                        .embedded_context(true),
                ),
        )
        .agent_info(Implementation::new("pith", env!("CARGO_PKG_VERSION")).title("pith".to_owned()))
}

/// What the client can show, from its capabilities.
pub fn client_view(request: &InitializeRequest) -> ClientView {
    let capabilities = &request.client_capabilities;
    let session = capabilities.session.as_ref();
    ClientView {
        compaction: session.is_some_and(|s| s.compaction.is_some()),
        notices: session.is_some_and(|s| s.notices.is_some()),
        subagents: capabilities.subagents.is_some(),
    }
}
