//! The MCP servers an editor passes in `session/new` (and `session/load`, `session/fork`),
//! as pith's own server configuration: stdio and Streamable HTTP, like `[mcp_servers]`
//! in config.toml. The editor's entry wins over a configured server of the same name.
//! Legacy SSE servers are refused (`mcpCapabilities.sse` is false), as pith-mcp does not
//! speak that transport.
//! The conversation gets them as `Overrides::extra_mcp_servers`: trusted like the
//! user's own configuration, since the user set them up in the editor.

use std::collections::BTreeMap;

use agent_client_protocol::v1::schema::McpServer;
use pith_mcp::{ServerConfig, Transport};

/// pith's configuration of the editor's servers, and a notice per server left out.
pub fn from_client(servers: &[McpServer]) -> (Vec<ServerConfig>, Vec<String>) {
    let mut configs = Vec::new();
    let mut notices = Vec::new();
    for server in servers {
        match server {
            McpServer::Stdio(stdio) => configs.push(ServerConfig::with_transport(
                stdio.name.clone(),
                Transport::Stdio {
                    command: stdio.command.display().to_string(),
                    args: stdio.args.clone(),
                    env: stdio
                        .env
                        .iter()
                        .map(|v| (v.name.clone(), v.value.clone()))
                        .collect::<BTreeMap<_, _>>(),
                    cwd: None,
                },
            )),
            McpServer::Http(http) => configs.push(ServerConfig::with_transport(
                http.name.clone(),
                Transport::Http {
                    url: http.url.clone(),
                    headers: http
                        .headers
                        .iter()
                        .map(|h| (h.name.clone(), h.value.clone()))
                        .collect(),
                },
            )),
            McpServer::Sse(sse) => notices.push(format!(
                "MCP server `{}`: the SSE transport is not supported (use Streamable HTTP); it was not started",
                sse.name
            )),
            _ => notices.push(
                "an MCP server of an unknown transport was not started".to_owned(),
            ),
        }
    }
    (configs, notices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, HttpHeader, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn stdio_and_http_servers_map_and_sse_is_refused_in_words() {
        let (configs, notices) = from_client(&[
            McpServer::Stdio(
                McpServerStdio::new("time", "/usr/bin/time-server")
                    .args(vec!["--utc".into()])
                    .env(vec![EnvVariable::new("TZ", "UTC")]),
            ),
            McpServer::Http(
                McpServerHttp::new("docs", "https://docs.example/mcp")
                    .headers(vec![HttpHeader::new("Authorization", "Bearer x")]),
            ),
            McpServer::Sse(McpServerSse::new("old", "https://old.example/sse")),
        ]);
        assert_eq!(configs.len(), 2);
        assert_eq!(
            configs[0].transport,
            Transport::Stdio {
                command: "/usr/bin/time-server".into(),
                args: vec!["--utc".into()],
                env: BTreeMap::from([("TZ".into(), "UTC".into())]),
                cwd: None,
            }
        );
        assert_eq!(configs[1].describe(), "https://docs.example/mcp");
        assert_eq!(notices.len(), 1);
        assert!(notices[0].contains("`old`"), "{notices:?}");
    }
}
