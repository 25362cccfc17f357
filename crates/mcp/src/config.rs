//! What an MCP server is, as configured: `[mcp_servers.NAME]` tables of pith's config
//! files (Codex's layout) and a project's `.mcp.json` (Claude Code's format).
//!
//! Parsing only: nothing here starts a process or reads the environment. String values
//! may hold `${VAR}` or `${VAR:-default}`, expanded when the server starts
//! ([`expand`]), so a header or an env entry can carry a secret without writing it into
//! a file. See docs/mcp.md for every key.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use pith_tools::AutoApprove;
use serde::Deserialize;

/// Default of `startup_timeout_s`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default of `tool_timeout_s`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a server's configuration came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `[mcp_servers.NAME]` in a pith config file.
    Config,
    /// The project's `.mcp.json` (used only once the user trusts it).
    ProjectFile,
}

/// How pith reaches a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin / stdout.
    Stdio {
        /// The program (a path, or a name looked up in `PATH`).
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables added to its environment (values may hold `${VAR}`).
        env: BTreeMap<String, String>,
        /// Its working directory; the workspace when unset.
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint (may hold `${VAR}`).
        url: String,
        /// Headers sent with every request; values may hold `${VAR}`.
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The name it is configured under (the `SERVER` of `mcp__SERVER__TOOL`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// `enabled = false` keeps it configured but never started.
    pub enabled: bool,
    /// How long start-up (spawn or connect, handshake, tool list) may take.
    pub startup_timeout: Duration,
    /// How long one tool call may take.
    pub tool_timeout: Duration,
    /// Only these tools (server names), when set.
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools (server names).
    pub disabled_tools: Vec<String>,
    /// What runs without asking in `auto-edit` / `full`; `None` follows the mode.
    pub auto_approve: Option<AutoApprove>,
    /// Where it was configured.
    pub origin: Origin,
}

impl ServerConfig {
    /// A stdio server with the defaults (tests, examples).
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: &[&str]) -> Self {
        Self::with_transport(
            name,
            Transport::Stdio {
                command: command.into(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// A server reached through `transport`, with the defaults.
    pub fn with_transport(name: impl Into<String>, transport: Transport) -> Self {
        Self {
            name: name.into(),
            transport,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            auto_approve: None,
            origin: Origin::Config,
        }
    }

    /// True when the server's tool `tool` is offered to the model.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|only| only.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// `command args…` or the URL, for listings and questions.
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => {
                let mut text = command.clone();
                for arg in args {
                    text.push(' ');
                    text.push_str(arg);
                }
                text
            }
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// A configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ConfigError {
    /// `[mcp_servers.NAME]` or `.mcp.json`.
    pub place: String,
    /// What is wrong.
    pub message: String,
}

/// One `[mcp_servers.NAME]` table, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlServer {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    /// Static headers.
    #[serde(default)]
    http_headers: BTreeMap<String, String>,
    /// Header name → the environment variable holding its value.
    #[serde(default)]
    env_http_headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token (`Authorization: Bearer …`).
    bearer_token_env_var: Option<String>,
    #[serde(default = "yes")]
    enabled: bool,
    startup_timeout_s: Option<f64>,
    tool_timeout_s: Option<f64>,
    enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    disabled_tools: Vec<String>,
    auto_approve: Option<AutoApprove>,
}

fn yes() -> bool {
    true
}

/// The servers of a config file's `[mcp_servers]` section, sorted by name.
pub fn from_toml(section: &toml::Table) -> Result<Vec<ServerConfig>, ConfigError> {
    let mut servers = Vec::new();
    for (name, value) in section {
        let place = format!("[mcp_servers.{name}]");
        let error = |message: String| ConfigError {
            place: place.clone(),
            message,
        };
        let raw: TomlServer = value
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| error(e.message().to_owned()))?;
        let transport = match (raw.command, raw.url) {
            (Some(command), None) => {
                if !raw.http_headers.is_empty()
                    || !raw.env_http_headers.is_empty()
                    || raw.bearer_token_env_var.is_some()
                {
                    return Err(error(
                        "headers are for `url` servers, not `command` ones".into(),
                    ));
                }
                Transport::Stdio {
                    command,
                    args: raw.args,
                    env: raw.env,
                    cwd: raw.cwd,
                }
            }
            (None, Some(url)) => {
                if !raw.args.is_empty() || !raw.env.is_empty() || raw.cwd.is_some() {
                    return Err(error(
                        "`args`, `env` and `cwd` are for `command` servers, not `url` ones".into(),
                    ));
                }
                let mut headers = raw.http_headers;
                for (header, var) in raw.env_http_headers {
                    headers.insert(header, format!("${{{var}}}"));
                }
                if let Some(var) = raw.bearer_token_env_var {
                    headers.insert("Authorization".into(), format!("Bearer ${{{var}}}"));
                }
                Transport::Http { url, headers }
            }
            (Some(_), Some(_)) => return Err(error("give `command` or `url`, not both".into())),
            (None, None) => {
                return Err(error(
                    "give `command` (a stdio server) or `url` (a Streamable HTTP server)".into(),
                ))
            }
        };
        servers.push(ServerConfig {
            name: name.clone(),
            transport,
            enabled: raw.enabled,
            startup_timeout: seconds(raw.startup_timeout_s, DEFAULT_STARTUP_TIMEOUT)
                .map_err(|m| error(format!("startup_timeout_s {m}")))?,
            tool_timeout: seconds(raw.tool_timeout_s, DEFAULT_TOOL_TIMEOUT)
                .map_err(|m| error(format!("tool_timeout_s {m}")))?,
            enabled_tools: raw.enabled_tools,
            disabled_tools: raw.disabled_tools,
            auto_approve: raw.auto_approve,
            origin: Origin::Config,
        });
    }
    Ok(servers)
}

fn seconds(value: Option<f64>, default: Duration) -> Result<Duration, String> {
    match value {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 && s <= 86_400.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(format!("must be a number of seconds above 0, got {s}")),
    }
}

/// A `.mcp.json` server entry (Claude Code's format; unknown fields are ignored, since
/// the file is shared with other tools).
#[derive(Debug, Deserialize)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
struct JsonFile {
    #[serde(rename = "mcpServers", default)]
    mcp_servers: BTreeMap<String, serde_json::Value>,
}

/// The servers of a `.mcp.json` file, sorted by name, and a note for each entry that
/// cannot be used (it is skipped; the others still work).
pub fn from_mcp_json(text: &str) -> Result<(Vec<ServerConfig>, Vec<String>), ConfigError> {
    let file: JsonFile = serde_json::from_str(text).map_err(|e| ConfigError {
        place: ".mcp.json".into(),
        message: e.to_string(),
    })?;
    let mut servers = Vec::new();
    let mut skipped = Vec::new();
    for (name, value) in file.mcp_servers {
        let entry: JsonServer = match serde_json::from_value(value) {
            Ok(entry) => entry,
            Err(e) => {
                skipped.push(format!(".mcp.json server `{name}` skipped: {e}"));
                continue;
            }
        };
        let transport = match (entry.kind.as_deref(), entry.command, entry.url) {
            (None | Some("stdio"), Some(command), _) => Transport::Stdio {
                command,
                args: entry.args,
                env: entry.env,
                cwd: entry.cwd,
            },
            (None | Some("http") | Some("streamable-http"), None, Some(url)) => Transport::Http {
                url,
                headers: entry.headers,
            },
            (Some("sse"), _, _) => {
                skipped.push(format!(
                    ".mcp.json server `{name}` skipped: the legacy SSE transport is not \
                     supported; use its Streamable HTTP endpoint (\"type\": \"http\")"
                ));
                continue;
            }
            (kind, _, _) => {
                skipped.push(format!(
                    ".mcp.json server `{name}` skipped: {}",
                    match kind {
                        Some(kind) => format!("unknown type `{kind}`"),
                        None => "give `command` or `url`".to_owned(),
                    }
                ));
                continue;
            }
        };
        let mut server = ServerConfig::with_transport(name, transport);
        server.origin = Origin::ProjectFile;
        servers.push(server);
    }
    Ok((servers, skipped))
}

/// Expands `${VAR}` and `${VAR:-default}` in `text` with `lookup`. A variable that is
/// unset (and has no default) is an error naming it; `$` not followed by `{` is literal.
pub fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("unclosed `${{` in `{text}`"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(format!("`${{{inner}}}` is not a variable reference"));
        }
        match (lookup(name).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the environment variable {name} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn toml_servers_take_codex_keys_with_documented_defaults() {
        let servers = from_toml(&toml(
            r#"
            [time]
            command = "mcp-server-time"
            args = ["--local-timezone", "UTC"]
            env = { TZ = "UTC" }
            tool_timeout_s = 5
            disabled_tools = ["convert_time"]
            auto_approve = "all"

            [remote]
            url = "https://mcp.example/mcp"
            bearer_token_env_var = "REMOTE_TOKEN"
            env_http_headers = { "X-Team" = "TEAM_ID" }
            enabled = false
            "#,
        ))
        .unwrap();
        assert_eq!(servers.len(), 2);
        let remote = &servers[0];
        assert_eq!(remote.name, "remote");
        assert!(!remote.enabled);
        let Transport::Http { headers, .. } = &remote.transport else {
            panic!("{remote:?}")
        };
        assert_eq!(headers["Authorization"], "Bearer ${REMOTE_TOKEN}");
        assert_eq!(headers["X-Team"], "${TEAM_ID}");
        let time = &servers[1];
        assert_eq!(time.describe(), "mcp-server-time --local-timezone UTC");
        assert_eq!(time.tool_timeout, Duration::from_secs(5));
        assert_eq!(time.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert!(time.offers("get_current_time"));
        assert!(!time.offers("convert_time"));
        assert_eq!(time.auto_approve, Some(AutoApprove::All));
    }

    #[test]
    fn toml_mistakes_name_the_server() {
        let typo = from_toml(&toml("[s]\ncommand = \"x\"\ntool_timeout = 3\n")).unwrap_err();
        assert_eq!(typo.place, "[mcp_servers.s]");
        assert!(typo.message.contains("tool_timeout"), "{typo}");
        let both = from_toml(&toml("[s]\ncommand = \"x\"\nurl = \"http://h\"\n")).unwrap_err();
        assert!(both.message.contains("not both"), "{both}");
        let none = from_toml(&toml("[s]\nargs = []\n")).unwrap_err();
        assert!(none.message.contains("give `command`"), "{none}");
        let zero = from_toml(&toml("[s]\ncommand = \"x\"\nstartup_timeout_s = 0\n")).unwrap_err();
        assert!(zero.message.contains("startup_timeout_s"), "{zero}");
        let only = from_toml(&toml("[s]\ncommand = \"x\"\nenabled_tools = [\"a\"]\n")).unwrap();
        assert!(only[0].offers("a") && !only[0].offers("b"));
    }

    #[test]
    fn mcp_json_reads_claude_code_entries_and_skips_the_unusable() {
        let (servers, skipped) = from_mcp_json(
            r#"{"mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server-files"], "env": {"A": "${A:-1}"}},
                "api": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
                "old": {"type": "sse", "url": "https://h/sse"},
                "odd": {"type": "ws"},
                "bad": {"command": 3}
            }}"#,
        )
        .unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["api", "files"]);
        assert!(servers.iter().all(|s| s.origin == Origin::ProjectFile));
        assert_eq!(skipped.len(), 3, "{skipped:?}");
        assert!(skipped.iter().any(|s| s.contains("SSE")));
        assert!(from_mcp_json("{not json").is_err());
    }

    #[test]
    fn expansion_takes_variables_defaults_and_names_what_is_missing() {
        let lookup = |name: &str| (name == "HOME").then(|| "/home/u".to_owned());
        assert_eq!(expand("${HOME}/x", &lookup).unwrap(), "/home/u/x");
        assert_eq!(expand("a ${NOPE:-b} c", &lookup).unwrap(), "a b c");
        assert_eq!(expand("cost $5", &lookup).unwrap(), "cost $5");
        assert!(expand("${NOPE}", &lookup).unwrap_err().contains("NOPE"));
        assert!(expand("${HOME", &lookup).is_err());
        assert!(expand("${a b}", &lookup).is_err());
    }
}
