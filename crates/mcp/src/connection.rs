//! One live connection to a server: the rmcp client session, the child process behind a
//! stdio server, and what the server said that was not protocol (its stderr, lines on
//! stdout that are not JSON).
//!
//! Every connection reads the server through a line filter: lines that are JSON go on to
//! rmcp, others are counted and the first is kept, so a server that prints garbage is
//! named as such in the error the model and the user get (rmcp alone would drop them and
//! the call would just time out). A stdio server runs in its own process group with
//! stdin, stdout and stderr piped; dropping the connection ends the group.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use pith_tools::{isolate_process_group, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::config::{expand, ServerConfig, Transport};

/// Longest line accepted from a server (rmcp's own limit): a 16 MiB result.
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Lines of a server's stderr kept for error messages.
const STDERR_LINES: usize = 8;
/// Characters kept of one stderr or garbage line.
const LINE_CHARS: usize = 240;

/// Looks up environment variables (the process environment in the binary).
pub type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What a server said outside the protocol.
#[derive(Debug, Default)]
pub struct Diagnostics {
    stderr: Mutex<VecDeque<String>>,
    malformed: AtomicUsize,
    first_malformed: Mutex<Option<String>>,
    /// The server's stderr reached its end (the process closed it, usually by exiting).
    stderr_closed: AtomicBool,
    stderr_closed_notify: tokio::sync::Notify,
}

impl Diagnostics {
    fn mark_stderr_closed(&self) {
        self.stderr_closed.store(true, Ordering::Release);
        self.stderr_closed_notify.notify_waiters();
    }

    /// Waits until the server's stderr has been read to its end, at most `max`: a server
    /// that crashes usually says why as its last words, which may still be in the pipe
    /// when the crash is noticed. True when it was read to the end.
    pub async fn stderr_read_to_end(&self, max: std::time::Duration) -> bool {
        let notified = self.stderr_closed_notify.notified();
        if self.stderr_closed.load(Ordering::Acquire) {
            return true;
        }
        tokio::time::timeout(max, notified).await.is_ok()
            || self.stderr_closed.load(Ordering::Acquire)
    }

    fn push_stderr(&self, line: &str) {
        let mut tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(shorten(line));
    }

    fn note_malformed(&self, line: &str) {
        if self.malformed.fetch_add(1, Ordering::Relaxed) == 0 {
            *self
                .first_malformed
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(shorten(line));
        }
    }

    /// The last lines the server wrote to stderr.
    pub fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// Lines on stdout that were not JSON-RPC, and the first of them.
    pub fn malformed(&self) -> (usize, Option<String>) {
        (
            self.malformed.load(Ordering::Relaxed),
            self.first_malformed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }

    /// Sentences to append to an error: malformed output, then the stderr tail.
    pub fn explain(&self) -> String {
        let mut text = String::new();
        if let (count @ 1.., Some(first)) = self.malformed() {
            text.push_str(&format!(
                " The server wrote {count} line(s) that are not JSON-RPC, the first: `{first}`."
            ));
        }
        let tail = self.stderr_tail();
        if !tail.is_empty() {
            text.push_str(&format!(" Its stderr ends with: {}", tail.join(" | ")));
        }
        text
    }
}

fn shorten(line: &str) -> String {
    let line = line.trim_end();
    match line.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// A live client session with one server.
pub struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    child: Option<ChildGuard>,
    diagnostics: Arc<Diagnostics>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("closed", &self.is_closed())
            .field(
                "pid",
                &self.child.as_ref().map(|c| c.group.map(ProcessGroup::id)),
            )
            .finish()
    }
}

impl Connection {
    /// Initializes a client session over `reader` / `writer` (through the line filter).
    /// `child` is the process behind them, if any: it is ended when the connection is
    /// dropped.
    pub async fn over<R, W>(
        reader: R,
        writer: W,
        child: Option<ChildGuard>,
        diagnostics: Arc<Diagnostics>,
    ) -> Result<Self, String>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (filtered, filter_out) = tokio::io::duplex(64 * 1024);
        tokio::spawn(filter_lines(reader, filter_out, diagnostics.clone()));
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pith", env!("CARGO_PKG_VERSION")),
        );
        let service = info
            .serve((filtered, writer))
            .await
            .map_err(|e| format!("the MCP handshake failed: {e}.{}", diagnostics.explain()))?;
        Ok(Self {
            service,
            child,
            diagnostics,
        })
    }

    /// The rmcp session.
    pub fn service(&self) -> &RunningService<RoleClient, ClientConfig> {
        &self.service
    }

    /// What the server said outside the protocol.
    pub fn diagnostics(&self) -> &Arc<Diagnostics> {
        &self.diagnostics
    }

    /// True once the server is gone (process exited, connection closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// How the child process ended, when it has.
    pub fn exit_status(&self) -> Option<String> {
        self.child.as_ref().and_then(ChildGuard::exit_status)
    }

    /// For a stdio server that went away: waits (at most half a second) until its stderr
    /// has been read to the end, so its last words make it into the error.
    pub async fn settle_stderr(&self) {
        if self.child.is_some() {
            self.diagnostics
                .stderr_read_to_end(std::time::Duration::from_millis(500))
                .await;
        }
    }
}

/// Forwards JSON lines from `reader` to `out`; counts the rest. Ends (closing `out`) at
/// end of input or on a read error, so rmcp sees the server go away.
async fn filter_lines<R, W>(reader: R, mut out: W, diagnostics: Arc<Diagnostics>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = CappedLines::new(reader);
    while let Some(line) = lines.next().await {
        if line.len() > MAX_LINE_BYTES {
            diagnostics.note_malformed(&format!(
                "a line of more than {MAX_LINE_BYTES} bytes (dropped)"
            ));
            continue;
        }
        let text = trim_newline(line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
            diagnostics.note_malformed(&String::from_utf8_lossy(text));
            continue;
        }
        // JSON that is not a message rmcp can read (a tool list with a schema that is not
        // an object, say) is passed on for rmcp to answer, and named here: rmcp drops it,
        // so the request it answered would otherwise just time out.
        if let Err(error) = serde_json::from_slice::<ServerJsonRpcMessage>(text) {
            diagnostics.note_malformed(&format!("{error}: {}", String::from_utf8_lossy(text)));
        }
        if out.write_all(text).await.is_err() || out.write_all(b"\n").await.is_err() {
            break;
        }
    }
    let _ = out.shutdown().await;
}

fn trim_newline(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The lines of a reader, each kept to at most [`MAX_LINE_BYTES`] + 1 bytes (so a longer
/// one shows as longer than the limit).
struct CappedLines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> CappedLines<R> {
    fn new(reader: R) -> Self {
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
        }
    }

    /// The next line, with its newline; `None` at the end, or when reading failed.
    async fn next(&mut self) -> Option<&[u8]> {
        self.line.clear();
        match read_line_capped(&mut self.reader, &mut self.line).await {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(&self.line),
        }
    }
}

/// Reads one line into `line`, keeping at most [`MAX_LINE_BYTES`] + 1 bytes of it (the
/// rest of a longer line is read and dropped). Returns the bytes read, 0 at the end.
async fn read_line_capped<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match buffer.iter().position(|b| *b == b'\n') {
            Some(end) => (&buffer[..=end], true),
            None => (buffer, false),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = chunk.len();
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

/// A stdio server's process: ended with its whole process group when dropped.
#[derive(Debug)]
pub struct ChildGuard {
    child: Mutex<tokio::process::Child>,
    group: Option<ProcessGroup>,
}

impl ChildGuard {
    fn exit_status(&self) -> Option<String> {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            _ => None,
        }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let mut child = self.child.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(group), Ok(None)) = (self.group, child.try_wait()) {
            // The server and whatever it started (npx starts node, uvx starts python).
            group.terminate();
        }
        let _ = child.start_kill();
    }
}

/// Opens connections to a server: spawns its process or reaches its URL, and runs the
/// handshake. The hub calls it at start-up and once more after a crash.
#[async_trait]
pub trait Connect: Send + Sync {
    /// A new, initialized connection, or why there is none.
    async fn connect(&self) -> Result<Connection, String>;
}

/// Connects to a configured server (stdio or Streamable HTTP).
pub struct ConfiguredConnector {
    config: ServerConfig,
    env: EnvLookup,
    workspace: std::path::PathBuf,
    /// Environment variables whose names contain one of these are not passed to a stdio
    /// server unless its `env` sets them (same patterns as the bash tool).
    env_exclude: Vec<String>,
}

impl ConfiguredConnector {
    /// A connector for `config`; stdio servers start in `workspace` unless they have a
    /// `cwd`, and inherit the environment minus variables matching `env_exclude`.
    pub fn new(
        config: ServerConfig,
        env: EnvLookup,
        workspace: &Path,
        env_exclude: Vec<String>,
    ) -> Self {
        Self {
            config,
            env,
            workspace: workspace.to_path_buf(),
            env_exclude,
        }
    }

    async fn connect_stdio(&self) -> Result<Connection, String> {
        let Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } = &self.config.transport
        else {
            return Err("not a stdio server".into());
        };
        let lookup = |name: &str| (self.env)(name);
        let command = expand(command, &lookup)?;
        let args = args
            .iter()
            .map(|a| expand(a, &lookup))
            .collect::<Result<Vec<_>, _>>()?;
        let mut process = tokio::process::Command::new(&command);
        process
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        isolate_process_group(&mut process);
        let excluded = |name: &str| {
            let upper = name.to_ascii_uppercase();
            self.env_exclude
                .iter()
                .any(|p| upper.contains(&p.to_ascii_uppercase()))
        };
        for (name, _) in std::env::vars_os() {
            if excluded(&name.to_string_lossy()) {
                process.env_remove(&name);
            }
        }
        for (name, value) in env {
            process.env(name, expand(value, &lookup)?);
        }
        let dir = match cwd {
            Some(dir) => self
                .workspace
                .join(expand(&dir.to_string_lossy(), &lookup)?),
            None => self.workspace.clone(),
        };
        process.current_dir(&dir);
        let mut child = process.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot start `{command}`: no such program (is it installed and on PATH?)")
            }
            _ => format!("cannot start `{command}`: {e}"),
        })?;
        let diagnostics = Arc::new(Diagnostics::default());
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(format!("cannot start `{command}`: no pipes"));
        };
        let group = ProcessGroup::of(&child);
        let stderr_done = tokio::spawn(collect_stderr(stderr, diagnostics.clone()));
        let guard = ChildGuard {
            child: Mutex::new(child),
            group,
        };
        match Connection::over(stdout, stdin, None, diagnostics.clone()).await {
            Ok(mut connection) => {
                connection.child = Some(guard);
                Ok(connection)
            }
            Err(error) => {
                // A server that dies at start-up usually says why on stderr: wait a moment
                // for it to exit and for its last words.
                let mut status = None;
                for _ in 0..50 {
                    status = guard.exit_status();
                    if status.is_some() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                let _ =
                    tokio::time::timeout(std::time::Duration::from_millis(500), stderr_done).await;
                Err(match status {
                    Some(status) => format!(
                        "`{command}` exited during the MCP handshake ({status}).{}",
                        diagnostics.explain()
                    ),
                    None => error,
                })
            }
        }
    }

    async fn connect_http(&self) -> Result<Connection, String> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        use rmcp::transport::StreamableHttpClientTransport;
        let Transport::Http { url, headers } = &self.config.transport else {
            return Err("not an HTTP server".into());
        };
        let lookup = |name: &str| (self.env)(name);
        let url = expand(url, &lookup)?;
        let mut custom = std::collections::HashMap::new();
        for (name, value) in headers {
            let value = expand(value, &lookup).map_err(|e| format!("header {name}: {e}"))?;
            let name = http::HeaderName::try_from(name.as_str())
                .map_err(|e| format!("header name `{name}`: {e}"))?;
            let mut value =
                http::HeaderValue::try_from(value).map_err(|e| format!("header {name}: {e}"))?;
            value.set_sensitive(true);
            custom.insert(name, value);
        }
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(15))
            .user_agent(concat!("pith/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url.clone()).custom_headers(custom),
        );
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("pith", env!("CARGO_PKG_VERSION")),
        );
        let service = info
            .serve(transport)
            .await
            .map_err(|e| format!("cannot connect to {url}: {e}"))?;
        Ok(Connection {
            service,
            child: None,
            diagnostics: Arc::new(Diagnostics::default()),
        })
    }
}

#[async_trait]
impl Connect for ConfiguredConnector {
    async fn connect(&self) -> Result<Connection, String> {
        match &self.config.transport {
            Transport::Stdio { .. } => self.connect_stdio().await,
            Transport::Http { .. } => self.connect_http().await,
        }
    }
}

fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Fails only when another provider was installed first, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

async fn collect_stderr(stderr: tokio::process::ChildStderr, diagnostics: Arc<Diagnostics>) {
    let mut lines = CappedLines::new(stderr);
    while let Some(line) = lines.next().await {
        let text = String::from_utf8_lossy(trim_newline(line)).into_owned();
        if !text.trim().is_empty() {
            tracing::debug!(target: "pith_mcp::stderr", "{text}");
            diagnostics.push_stderr(&text);
        }
    }
    diagnostics.mark_stderr_closed();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn the_line_filter_passes_json_and_counts_the_rest() {
        let input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\nStarting server...\n\n{broken\r\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n[1,2]\n";
        let (mut read_side, write_side) = tokio::io::duplex(1024);
        let diagnostics = Arc::new(Diagnostics::default());
        filter_lines(input, write_side, diagnostics.clone()).await;
        let mut out = String::new();
        read_side.read_to_string(&mut out).await.unwrap();
        assert_eq!(
            out,
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n[1,2]\n",
            "JSON goes on (rmcp answers what it cannot read), the rest is dropped"
        );
        assert_eq!(
            diagnostics.malformed(),
            (3, Some("Starting server...".into()))
        );
        assert!(diagnostics
            .explain()
            .contains("3 line(s) that are not JSON-RPC"));
    }

    #[tokio::test]
    async fn the_end_of_stderr_is_awaited_and_bounded() {
        let diagnostics = Arc::new(Diagnostics::default());
        assert!(
            !diagnostics
                .stderr_read_to_end(std::time::Duration::from_millis(20))
                .await,
            "not closed yet"
        );
        let waiter = {
            let diagnostics = diagnostics.clone();
            tokio::spawn(async move {
                diagnostics
                    .stderr_read_to_end(std::time::Duration::from_secs(30))
                    .await
            })
        };
        tokio::task::yield_now().await;
        diagnostics.push_stderr("last words");
        diagnostics.mark_stderr_closed();
        assert!(waiter.await.unwrap(), "woken by the end of stderr");
        assert!(
            diagnostics
                .stderr_read_to_end(std::time::Duration::from_millis(1))
                .await
        );
        assert_eq!(diagnostics.stderr_tail(), vec!["last words"]);
    }

    #[test]
    fn stderr_keeps_a_short_tail() {
        let diagnostics = Diagnostics::default();
        for i in 0..20 {
            diagnostics.push_stderr(&format!("line {i}"));
        }
        diagnostics.push_stderr(&"x".repeat(1000));
        let tail = diagnostics.stderr_tail();
        assert_eq!(tail.len(), STDERR_LINES);
        assert_eq!(tail[0], "line 13");
        assert!(tail[STDERR_LINES - 1].chars().count() <= LINE_CHARS + 1);
    }
}
