//! The HTTP server: binds 127.0.0.1, runs on its own thread and tokio runtime (so it keeps
//! answering while a test blocks on a child process), hands each request the next scripted
//! turn, and records every request. Rejections (wrong path, non-JSON body, script exhausted)
//! are answered in the protocol's error format with a message starting `pith-testkit:`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::answer::{self, Answer, AnswerBody, RequestFacts};
use crate::cache::{CacheBill, PromptCache};
use crate::error::TestkitError;
use crate::protocol::{Endpoint, Protocol};
use crate::record::{recorded_header_value, RecordedRequest, RequestLog, StoredRequest};
use crate::script::{Script, UsageMode};
use crate::turn::{Fault, Turn, Usage};
use crate::wire::{ErrorKind, DEFAULT_MODEL};

/// A running scripted provider server. Dropping it stops the server (open streams, hung
/// requests included) and frees the port.
///
/// ```no_run
/// use pith_testkit::{Script, TestServer, Turn};
/// use serde_json::json;
///
/// let server = TestServer::start(Script::anthropic([
///     Turn::text("Let me look.").with_tool_call("read", json!({"path": "src/lib.rs"})),
///     Turn::text("Done."),
/// ]))?;
/// // point the client at server.base_url() (here http://127.0.0.1:PORT), run it, then:
/// let requests = server.wait_for_requests_blocking(2, std::time::Duration::from_secs(10))?;
/// assert_eq!(requests[1].path, "/v1/messages");
/// # Ok::<(), pith_testkit::TestkitError>(())
/// ```
pub struct TestServer {
    origin: String,
    port: u16,
    protocol: Protocol,
    state: Arc<ServerState>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Options for [`TestServer`]: port and record file.
#[derive(Debug, Clone)]
pub struct TestServerBuilder {
    script: Script,
    port: u16,
    record_path: Option<PathBuf>,
}

impl TestServerBuilder {
    /// Listen on `port` instead of a free port chosen by the OS (0, the default).
    pub fn port(mut self, port: u16) -> TestServerBuilder {
        self.port = port;
        self
    }

    /// Also append every request body to `path`, one JSON per line, flushed per request.
    pub fn record_to(mut self, path: impl Into<PathBuf>) -> TestServerBuilder {
        self.record_path = Some(path.into());
        self
    }

    /// Validates the script, binds the port and starts serving on a background thread.
    /// Returns once the port accepts connections.
    pub fn start(self) -> Result<TestServer, TestkitError> {
        self.script.validate()?;
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let io_error = |action: String| move |source| TestkitError::Io { action, source };
        let listener =
            std::net::TcpListener::bind(address).map_err(io_error(format!("bind {address}")))?;
        listener
            .set_nonblocking(true)
            .map_err(io_error("make the listener non-blocking".to_owned()))?;
        let port = listener
            .local_addr()
            .map_err(io_error("read the bound address".to_owned()))?
            .port();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io_error("start the server runtime".to_owned()))?;

        let responder_uses = self
            .script
            .responders
            .iter()
            .map(|_| AtomicUsize::new(0))
            .collect();
        let state = Arc::new(ServerState {
            protocol: self.script.protocol,
            tool_call_ids: self.script.tool_call_ids(),
            script: self.script,
            next_turn: AtomicUsize::new(0),
            responder_calls: AtomicUsize::new(0),
            responder_uses,
            log: RequestLog::new(self.record_path.as_deref())?,
            started: Instant::now(),
            caches: Mutex::new(Caches::default()),
        });
        let (shutdown, shutdown_requested) = oneshot::channel();
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name(format!("pith-testkit-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(listener) => accept_loop(listener, served, shutdown_requested).await,
                        Err(error) => eprintln!("pith-testkit: cannot listen: {error}"),
                    }
                });
            })
            .map_err(io_error("spawn the server thread".to_owned()))?;

        Ok(TestServer {
            origin: format!("http://127.0.0.1:{port}"),
            port,
            protocol: state.protocol,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }
}

impl TestServer {
    /// Starts a server for `script` on a free port of 127.0.0.1.
    pub fn start(script: Script) -> Result<TestServer, TestkitError> {
        TestServer::builder(script).start()
    }

    /// Options before starting: [`TestServerBuilder::port`], [`TestServerBuilder::record_to`].
    pub fn builder(script: Script) -> TestServerBuilder {
        TestServerBuilder {
            script,
            port: 0,
            record_path: None,
        }
    }

    /// `http://127.0.0.1:PORT`, no path.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The base URL the protocol's SDKs expect, so it can go straight into
    /// `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` / `GEMINI_BASE_URL` / `BEDROCK_BASE_URL`:
    /// `http://127.0.0.1:PORT/v1` for both OpenAI kinds (clients append `/chat/completions`
    /// or `/responses`), `http://127.0.0.1:PORT` for Anthropic (clients append
    /// `/v1/messages`), Gemini (clients append `/v1beta/models/…`) and Bedrock (clients
    /// append `/model/{modelId}/converse-stream`).
    pub fn base_url(&self) -> String {
        match self.protocol {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => format!("{}/v1", self.origin),
            Protocol::Anthropic | Protocol::Gemini | Protocol::Bedrock => self.origin.clone(),
        }
    }

    /// The full URL of the one endpoint the script answers, e.g.
    /// `http://127.0.0.1:PORT/v1/chat/completions`; for Gemini the streaming URL of the
    /// model `testkit-model`, with its `?alt=sse`; for Bedrock the path's pattern, with a
    /// literal `{modelId}` (any model id is answered).
    pub fn endpoint_url(&self) -> String {
        let query = match self.protocol {
            Protocol::Gemini => "?alt=sse",
            _ => "",
        };
        format!("{}{}{query}", self.origin, self.protocol.endpoint_path())
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The protocol the script speaks.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Every request received so far (rejected ones included), in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.log.snapshot()
    }

    /// How many requests were received so far (rejected ones included).
    pub fn request_count(&self) -> usize {
        self.state.log.len()
    }

    /// How many scripted turns have been used to answer requests so far.
    pub fn turns_served(&self) -> usize {
        self.state
            .next_turn
            .load(Ordering::SeqCst)
            .min(self.state.script.turns.len())
    }

    /// Waits (asynchronously) until at least `count` requests arrived, then returns them
    /// all; fails with [`TestkitError::WaitTimedOut`] after `timeout`.
    pub async fn wait_for_requests(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, TestkitError> {
        self.state.log.wait_for(count, timeout).await
    }

    /// Like [`TestServer::wait_for_requests`], blocking the calling thread (for synchronous
    /// tests that drive a child process).
    pub fn wait_for_requests_blocking(
        &self,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<RecordedRequest>, TestkitError> {
        self.state.log.wait_for_blocking(count, timeout)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // The receiver is gone only when the server already stopped: nothing to do.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            // A panicked server thread has nothing left to clean up.
            let _ = thread.join();
        }
    }
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("TestServer")
            .field("origin", &self.origin)
            .field("protocol", &self.protocol)
            .field("requests", &self.request_count())
            .finish()
    }
}

/// What every connection task shares.
struct ServerState {
    protocol: Protocol,
    script: Script,
    tool_call_ids: Vec<Vec<String>>,
    next_turn: AtomicUsize,
    /// Tool calls answered by responders so far (their generated ids count these).
    responder_calls: AtomicUsize,
    /// Requests each responder matched so far.
    responder_uses: Vec<AtomicUsize>,
    log: RequestLog,
    /// The server clock's origin (real monotonic time).
    started: Instant,
    /// The prompt caches of [`UsageMode::Cached`], and the pauses scripted so far.
    caches: Mutex<Caches>,
}

/// The provider's prompt caches, one per client, and the clock they age by.
#[derive(Default)]
struct Caches {
    /// Seconds the scripted pauses ([`Turn::pause_s`]) added to the real clock.
    paused_s: f64,
    /// One cache per model (and OpenAI `prompt_cache_key`).
    by_client: HashMap<String, PromptCache>,
}

impl ServerState {
    /// Advances the clock by the pause of `turn`, which answers this request, and, under
    /// [`UsageMode::Cached`], bills the request with its client's prompt cache.
    fn bill(&self, turn: &Turn, whole: Option<&Value>, facts: &RequestFacts) -> Option<CacheBill> {
        let billed =
            self.script.usage_mode == UsageMode::Cached && processes_prompt(turn, facts.streaming);
        // Counted before the lock: the segments of a long history take a while.
        let body = whole.filter(|_| billed);
        let prompt = body.map(|body| crate::segments::prompt(self.protocol, body));
        let mut caches = self
            .caches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        caches.paused_s += turn.pause_s as f64;
        let (body, prompt) = (body?, prompt?);
        let now = self.started.elapsed().as_secs_f64() + caches.paused_s;
        let client = crate::segments::client_key(self.protocol, body, &facts.model);
        let protocol = self.protocol;
        let cache = caches
            .by_client
            .entry(client)
            .or_insert_with(|| PromptCache::new(crate::segments::rules(protocol)));
        Some(cache.request_with_ttls(now, &prompt.segments, &prompt.ttls))
    }
}

/// Whether the provider reads the prompt of a request answered by `turn` (and so bills
/// and caches it): not when it answers with an HTTP error or a hostile fault.
fn processes_prompt(turn: &Turn, streaming: bool) -> bool {
    match turn.fault {
        None | Some(Fault::DropMidStream | Fault::MalformedSse) => true,
        Some(Fault::StreamError) => streaming,
        Some(_) => false,
    }
}

/// Accepts connections until shutdown; each connection is served on its own task.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<ServerState>,
    mut shutdown_requested: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut shutdown_requested => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    // Small SSE chunks must leave at once, not wait for Nagle.
                    let _ = stream.set_nodelay(true);
                    let state = state.clone();
                    tokio::spawn(async move {
                        let service = service_fn(move |request| {
                            serve_request(state.clone(), request)
                        });
                        // A client hanging up mid-answer is an expected outcome, not an error.
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Err(error) => {
                    // E.g. too many open files: back off briefly instead of spinning.
                    eprintln!("pith-testkit: accept failed: {error}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            }
        }
    }
}

/// Records one request and answers it.
async fn serve_request(
    state: Arc<ServerState>,
    request: Request<Incoming>,
) -> Result<Response<AnswerBody>, Infallible> {
    let (parts, body) = request.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let kind = rejection(
                StatusCode::BAD_REQUEST,
                format!("could not read the request body: {error}"),
            );
            return Ok(respond(answer::error(state.protocol, &kind, None)).await);
        }
    };
    let headers = parts
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                recorded_header_value(name.as_str(), value.as_bytes()),
            )
        })
        .collect();
    let facts = serde_json::from_slice::<WireFacts>(&bytes);
    // Only scripts that check what comes back, match responders or count usage pay for
    // reading the whole body.
    let whole = match &facts {
        Ok(_) if state.script.checks_requests() || state.script.reads_bodies() => {
            serde_json::from_slice::<Value>(&bytes).ok()
        }
        _ => None,
    };
    let refused = match (&whole, state.script.checks_requests()) {
        (Some(body), true) => crate::checks::check(&state.script, &state.tool_call_ids, body).err(),
        _ => None,
    };
    let (answer, bill) = match refused {
        Some(kind) if state.protocol.endpoint(parts.uri.path()).is_some() => {
            (answer::error(state.protocol, &kind, None), None)
        }
        _ => choose_answer(
            &state,
            &parts.method,
            (parts.uri.path(), parts.uri.query().unwrap_or_default()),
            facts,
            whole.as_ref(),
        ),
    };
    // Recorded once billed, before answering: a test that has its answer finds the bill.
    state.log.append(
        StoredRequest::new(
            parts.method.to_string(),
            parts.uri.path().to_owned(),
            parts.uri.query().unwrap_or_default().to_owned(),
            headers,
            bytes,
        )
        .with_cache(bill),
    );
    Ok(respond(answer).await)
}

/// The response for `answer`; for a hang without headers, never returns.
async fn respond(answer: Answer) -> Response<AnswerBody> {
    match answer::into_response(answer) {
        Some(response) => response,
        None => std::future::pending().await,
    }
}

fn rejection(status: StatusCode, message: String) -> ErrorKind {
    ErrorKind::Testkit {
        status,
        message: format!("pith-testkit: {message}"),
    }
}

/// Routes a request: a rejection, a responder's turn, or the next scripted turn; with
/// the prompt cache's bill when the usage mode keeps one.
fn choose_answer(
    state: &ServerState,
    method: &Method,
    (path, query): (&str, &str),
    body: Result<WireFacts, serde_json::Error>,
    whole: Option<&Value>,
) -> (Answer, Option<CacheBill>) {
    let protocol = state.protocol;
    let expected_path = protocol.endpoint_path();
    let endpoint = match protocol.endpoint(path) {
        Some(endpoint) if method == Method::POST => endpoint,
        _ => {
            let kind = rejection(
                StatusCode::NOT_FOUND,
                format!(
                    "this script speaks {} and answers only POST {expected_path}, not {method} \
                     {path}",
                    protocol.name()
                ),
            );
            return (answer::error(protocol, &kind, None), None);
        }
    };
    // Without `alt=sse` Gemini streams one JSON array, which the testkit does not speak.
    if protocol == Protocol::Gemini
        && endpoint.streaming == Some(true)
        && !query.split('&').any(|pair| pair == "alt=sse")
    {
        let kind = rejection(
            StatusCode::BAD_REQUEST,
            format!("{path} needs the query alt=sse (server-sent events), not {query:?}"),
        );
        return (answer::error(protocol, &kind, None), None);
    }
    // Google's keys travel in a header; one in the URL would end up in logs.
    if query.split('&').any(|pair| pair.starts_with("key=")) {
        let kind = rejection(
            StatusCode::BAD_REQUEST,
            "the API key is in the URL query (key=…): send it in the x-goog-api-key header"
                .to_owned(),
        );
        return (answer::error(protocol, &kind, None), None);
    }
    let body = match body {
        Ok(body) => body,
        Err(error) => {
            let kind = rejection(
                StatusCode::BAD_REQUEST,
                format!("the request body is not JSON: {error}"),
            );
            return (answer::error(protocol, &kind, None), None);
        }
    };
    let responder = whole.and_then(|whole| {
        let last = crate::count::last_message(whole)?.to_string();
        state
            .script
            .responders
            .iter()
            .zip(&state.responder_uses)
            .find(|(r, uses)| {
                last.contains(&r.when_last_message_contains)
                    && r.times
                        .is_none_or(|times| uses.fetch_add(1, Ordering::SeqCst) < times as usize)
            })
            .map(|(r, _)| r)
    });
    if let Some(responder) = responder {
        let prefix = protocol.tool_call_id_prefix();
        let ids: Vec<String> = responder
            .turn
            .tool_calls
            .iter()
            .map(|call| {
                let n = state.responder_calls.fetch_add(1, Ordering::SeqCst) + 1;
                call.id.clone().unwrap_or_else(|| format!("{prefix}r{n}"))
            })
            .collect();
        let number = state.script.turns.len() + 1;
        let facts = request_facts(state, endpoint, &body);
        let bill = state.bill(&responder.turn, whole, &facts);
        let turn = with_usage_mode(&responder.turn, state.script.usage_mode, whole, bill);
        return (
            answer::for_turn(protocol, &turn, number, &ids, &facts),
            bill,
        );
    }
    let index = state.next_turn.fetch_add(1, Ordering::SeqCst);
    let (Some(turn), Some(tool_call_ids)) = (
        state.script.turns.get(index),
        state.tool_call_ids.get(index),
    ) else {
        let kind = rejection(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "script exhausted: this request needs turn {} but the script has only {} \
                 turn(s)",
                index + 1,
                state.script.turns.len()
            ),
        );
        return (answer::error(protocol, &kind, None), None);
    };
    let facts = request_facts(state, endpoint, &body);
    let bill = state.bill(turn, whole, &facts);
    let turn = with_usage_mode(turn, state.script.usage_mode, whole, bill);
    let answer = answer::for_turn(protocol, &turn, index + 1, tool_call_ids, &facts);
    (answer, bill)
}

/// `turn` with the usage the script's [`UsageMode`] reports for this request (a turn's
/// own `usage` wins); `bill` is the prompt cache's, under [`UsageMode::Cached`].
fn with_usage_mode(
    turn: &Turn,
    mode: UsageMode,
    whole: Option<&Value>,
    bill: Option<CacheBill>,
) -> Turn {
    let mut turn = turn.clone();
    if turn.usage.is_some() {
        return turn;
    }
    let output = turn.output_tokens();
    match (mode, bill) {
        (UsageMode::Fixed, _) => {}
        (UsageMode::Cached, Some(bill)) => {
            turn.usage = Some(Usage {
                cached_input_tokens: Some(bill.cache_read_tokens),
                cache_write_tokens: Some(bill.cache_write_tokens),
                ..Usage::new(bill.input_tokens, output)
            });
        }
        // A request the cache did not bill (an error answer) reports what Honest does.
        (UsageMode::Honest | UsageMode::Cached, _) => {
            let counted = whole.map_or(Usage::DEFAULT_INPUT_TOKENS, crate::count::request_tokens);
            turn.usage = Some(Usage::new(counted, output));
        }
        (UsageMode::Constant(input), _) => turn.usage = Some(Usage::new(input, output)),
        (UsageMode::Counted { bias_percent }, _) => {
            let counted = whole.map_or(0, crate::count::request_tokens);
            let scaled = (counted as i128 * (100 + i128::from(bias_percent)) / 100).max(0);
            turn.usage = Some(Usage::new(u64::try_from(scaled).unwrap_or(0), output));
        }
        (UsageMode::None, _) => turn.no_usage = true,
    }
    turn
}

/// What the request asked for, as far as rendering the answer is concerned.
fn request_facts(state: &ServerState, endpoint: Endpoint, body: &WireFacts) -> RequestFacts {
    RequestFacts {
        model: match (endpoint.model, body.model.clone()) {
            (Some(model), _) | (None, Some(Value::String(model))) => model,
            _ => DEFAULT_MODEL.to_owned(),
        },
        streaming: endpoint
            .streaming
            .unwrap_or(body.stream == Some(Value::Bool(true))),
        include_usage: body
            .stream_options
            .as_ref()
            .and_then(|options| options.get("include_usage"))
            .and_then(Value::as_bool)
            == Some(true),
        encrypted_reasoning: body
            .include
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|include| include.iter().any(|v| v == "reasoning.encrypted_content")),
        omit_call_ids: state.script.omit_call_ids,
        output_cap: match state.script.max_tokens_field.as_deref() {
            Some("max_tokens") => body.max_tokens.as_ref().and_then(Value::as_u64),
            Some("max_completion_tokens") => {
                body.max_completion_tokens.as_ref().and_then(Value::as_u64)
            }
            _ => None,
        },
    }
}

/// The few fields of a request body the answer depends on; everything else is skipped
/// without being built (the body is any JSON value; a non-object has none of them).
#[derive(Debug, Default)]
struct WireFacts {
    model: Option<Value>,
    stream: Option<Value>,
    stream_options: Option<Value>,
    include: Option<Value>,
    max_tokens: Option<Value>,
    max_completion_tokens: Option<Value>,
}

impl<'de> serde::Deserialize<'de> for WireFacts {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = WireFacts;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<WireFacts, A::Error> {
                let mut facts = WireFacts::default();
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match key.as_ref() {
                        "model" => facts.model = Some(map.next_value()?),
                        "stream" => facts.stream = Some(map.next_value()?),
                        "stream_options" => facts.stream_options = Some(map.next_value()?),
                        "include" => facts.include = Some(map.next_value()?),
                        "max_tokens" => facts.max_tokens = Some(map.next_value()?),
                        "max_completion_tokens" => {
                            facts.max_completion_tokens = Some(map.next_value()?)
                        }
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(facts)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<WireFacts, A::Error> {
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(WireFacts::default())
            }
            fn visit_bool<E>(self, _: bool) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
            fn visit_i64<E>(self, _: i64) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
            fn visit_u64<E>(self, _: u64) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
            fn visit_f64<E>(self, _: f64) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
            fn visit_str<E>(self, _: &str) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
            fn visit_unit<E>(self) -> Result<WireFacts, E> {
                Ok(WireFacts::default())
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}
