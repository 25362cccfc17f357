//! Shared harness of the testkit suites: an [`AgentLoop`] wired to one of the four real
//! adapters and a scripted [`TestServer`], a small tool registry, event helpers, and a
//! protocol-neutral view of recorded request bodies. [`for_each_protocol!`] turns one
//! scenario `async fn(Protocol)` into one `#[tokio::test]` per wire protocol.

#![allow(dead_code)] // each test binary uses a different subset

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pith_core::InMemory;
use pith_core::{
    AutoCompaction, BpeCounter, ContextBudget, Encoding, LoopEvent, Message, RequestEstimator,
    Tool, ToolContext, ToolError, ToolOutput, ToolRegistry,
};
use pith_providers::wire::anthropic::Anthropic;
use pith_providers::wire::bedrock::{Bedrock, FixedCredentials};
use pith_providers::wire::gemini::Gemini;
use pith_providers::wire::openai_chat::OpenAiChat;
use pith_providers::wire::openai_responses::OpenAiResponses;
use pith_providers::RetryPolicy;
use pith_providers::Timeouts;
use pith_providers::{
    AgentLoop, LedgerOptions, LoopOptions, ProviderAdapter, TurnFailure, TurnSummary,
};
use pith_testkit::{Protocol, RecordedRequest, Script, TestServer, Turn};
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

/// The system prompt of every harness loop.
pub const SYSTEM: &str = "You are pith, a coding agent. Work in /repo.";
/// A context window whose auto threshold is 171 000 tokens (90 % of 200 000 − 10 000).
pub const WINDOW: u64 = 200_000;
/// Reported input tokens that cross [`WINDOW`]'s auto threshold.
pub const OVER_THRESHOLD: u64 = 180_000;
/// The API key the adapters send (recorded redacted by the testkit).
pub const API_KEY: &str = "sk-test-not-a-secret";
/// A summary in the shared format.
pub const SUMMARY: &str = "## Goal\nFix the parser.\n## Key Instructions\nKeep the public API.\n## Discoveries\nsrc/lib.rs holds the parser.";

/// The model id of harness loops: Bedrock's is a Claude id (so its requests carry cache
/// points and may think, as real Claude requests do); the other protocols' servers take
/// any name.
pub fn model_id(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Bedrock => "anthropic.claude-sonnet-4-5-20250929-v1:0",
        _ => "test-model",
    }
}

/// Fixed AWS credentials of the Bedrock harness (never the environment's).
pub const AWS_ACCESS_KEY: &str = "AKIDPITHTEST";

/// Generates `mod $scenario { openai_chat, openai_responses, anthropic, gemini, bedrock }`,
/// each a
/// `#[tokio::test]` running `$scenario(protocol)`, so every scenario is written once and a
/// failure names the protocol that broke.
#[macro_export]
macro_rules! for_each_protocol {
    ($($scenario:ident),+ $(,)?) => {
        $crate::tests_on_protocols!(
            [openai_chat => OpenAiChat, openai_responses => OpenAiResponses,
             anthropic => Anthropic, gemini => Gemini, bedrock => Bedrock]
            $($scenario),+
        );
    };
}

/// [`for_each_protocol`] for the protocols whose requests carry cache breakpoints:
/// `mod $scenario { anthropic, bedrock }` (Anthropic's `cache_control`, Bedrock's
/// `cachePoint`; the others cache without markers).
#[macro_export]
macro_rules! for_each_breakpoint_protocol {
    ($($scenario:ident),+ $(,)?) => {
        $crate::tests_on_protocols!([anthropic => Anthropic, bedrock => Bedrock] $($scenario),+);
    };
}

/// The macros' one body: `mod $scenario { $name… }`, each `$name` a `#[tokio::test]`
/// running `$scenario(Protocol::$protocol)`.
#[macro_export]
macro_rules! tests_on_protocols {
    (@one [$($name:ident => $protocol:ident),+ $(,)?] $scenario:ident) => {
        mod $scenario {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$scenario(pith_testkit::Protocol::$protocol).await
                }
            )+
        }
    };
    ($protocols:tt $($scenario:ident),+) => {$(
        $crate::tests_on_protocols!(@one $protocols $scenario);
    )+};
}

/// A read-only `read` tool that counts its runs and echoes the path it read (`words/N`
/// reads as N words).
pub struct ReadTool {
    /// How many times it ran.
    pub runs: AtomicUsize,
}

#[async_trait]
impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }
    fn description(&self) -> &str {
        "Read a file of the workspace"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn run(&self, arguments: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let path = arguments["path"].as_str().unwrap_or("?");
        // `words/N` stands for a file of N words (about N tokens): real growth of the
        // conversation, which the governor measures from content, not from reports.
        if let Some(words) = path.strip_prefix("words/").and_then(|n| n.parse().ok()) {
            return Ok(ToolOutput::ok("word ".repeat(words)));
        }
        Ok(ToolOutput::ok(format!("contents of {path}")))
    }
}

/// Options for tests: short retry delays and timeouts so faults resolve in milliseconds.
///
/// The session ledger is off, so these tests check the exact prompts and
/// replacements; `tests/ledger.rs` checks what the ledger adds.
///
/// These suites drive compaction with scripted usage ([`OVER_THRESHOLD`] for a request of
/// a few hundred tokens), so they believe every report: [`believing_every_report`]. The
/// governor's own suite (`tests/governor.rs`) keeps the default band.
pub fn fast_options() -> LoopOptions {
    LoopOptions {
        retry: RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(10),
            max_delay: Duration::from_secs(5),
        },
        timeouts: Timeouts {
            request: Duration::from_secs(5),
            idle: Duration::from_millis(500),
            ..Timeouts::default()
        },
        ledger: LedgerOptions::off(),
        usage_band: believing_every_report(),
        ..LoopOptions::default()
    }
}

/// A usage band that believes any report (`[context] usage_ratio_min = 0`,
/// `usage_ratio_max` huge): scripted usage stands for the conversation's size.
pub fn believing_every_report() -> pith_core::context::calibration::Band {
    pith_core::context::calibration::Band {
        min: 0.0,
        max: 1e12,
    }
}

/// The real adapter for `protocol`, pointed at `server`.
pub fn adapter(protocol: Protocol, server: &TestServer) -> Arc<dyn ProviderAdapter> {
    let base = server.base_url();
    match protocol {
        Protocol::OpenAiChat => Arc::new(OpenAiChat::new(&base, Some(API_KEY)).unwrap()),
        Protocol::OpenAiResponses => Arc::new(OpenAiResponses::new(&base, Some(API_KEY)).unwrap()),
        Protocol::Anthropic => Arc::new(Anthropic::new(&base, Some(API_KEY)).unwrap()),
        Protocol::Gemini => Arc::new(Gemini::new(&base, Some(API_KEY)).unwrap()),
        Protocol::Bedrock => Arc::new(
            Bedrock::new(
                &base,
                Some("us-east-1"),
                Arc::new(FixedCredentials::new(
                    AWS_ACCESS_KEY,
                    "test-secret-key",
                    None,
                )),
            )
            .unwrap(),
        ),
    }
}

/// One conversation through a real adapter against a scripted server.
pub struct Harness {
    /// The loop under test.
    pub agent: AgentLoop,
    /// The scripted server (shared so watcher tasks can wait on it).
    pub server: Arc<TestServer>,
    /// The only tool.
    pub tool: Arc<ReadTool>,
    /// The wire protocol.
    pub protocol: Protocol,
}

/// A harness with [`WINDOW`] and [`fast_options`].
pub fn harness(protocol: Protocol, turns: Vec<Turn>) -> Harness {
    harness_with(protocol, turns, WINDOW, fast_options())
}

/// A harness with an explicit window and options.
pub fn harness_with(
    protocol: Protocol,
    turns: Vec<Turn>,
    window: u64,
    options: LoopOptions,
) -> Harness {
    // A fixed 100 input tokens for turns that script none: these suites' usage
    // arithmetic counts on it.
    let script = Script::new(protocol, turns).with_usage_mode(pith_testkit::UsageMode::Fixed);
    let server = Arc::new(TestServer::start(script).expect("the testkit server starts"));
    let tool = Arc::new(ReadTool {
        runs: AtomicUsize::new(0),
    });
    let agent = AgentLoop::new(pith_providers::LoopSetup {
        adapter: adapter(protocol, &server),
        model: model_id(protocol).into(),
        budget: ContextBudget::for_window(window),
        system_prompt: SYSTEM.into(),
        tools: ToolRegistry::new(vec![tool.clone()]),
        estimator: RequestEstimator::new(Arc::new(BpeCounter::new(Encoding::O200kBase))),
        options,
    });
    Harness {
        agent,
        server,
        tool,
        protocol,
    }
}

/// The outcome of one turn with every event it sent.
pub struct TurnRun {
    /// What `run_turn` returned.
    pub outcome: Result<TurnSummary, TurnFailure>,
    /// Every event, in order.
    pub events: Vec<LoopEvent>,
}

impl Harness {
    /// Runs one user turn to completion (failing the test after 20 s: a hang is a bug) and
    /// collects its events.
    pub async fn turn(&mut self, user: &str) -> TurnRun {
        let (tx, mut rx) = unbounded_channel();
        let outcome = self.turn_with(user, &tx, &CancellationToken::new()).await;
        drop(tx);
        TurnRun {
            outcome,
            events: drain(&mut rx),
        }
    }

    /// Runs one user turn with the caller's channel and token, failing the test after 20 s.
    pub async fn turn_with(
        &mut self,
        user: &str,
        events: &UnboundedSender<LoopEvent>,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, TurnFailure> {
        tokio::time::timeout(
            Duration::from_secs(20),
            self.agent.run_turn(
                Message::user(user),
                &mut InMemory::new(events.clone()),
                cancel,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("{:?}: the turn hung for 20 s", self.protocol))
    }

    /// Every request the server received, as protocol-neutral views, each checked against
    /// its protocol's conversation rules ([`Wire::assert_well_formed`]).
    pub fn requests(&self) -> Vec<Wire> {
        let requests: Vec<Wire> = self
            .server
            .requests()
            .into_iter()
            .map(|r| Wire::new(self.protocol, r))
            .collect();
        for (index, request) in requests.iter().enumerate() {
            request.assert_well_formed(index);
        }
        requests
    }
}

/// Every event still queued.
pub fn drain(rx: &mut UnboundedReceiver<LoopEvent>) -> Vec<LoopEvent> {
    let mut events = Vec::new();
    while let Ok(event) = rx.try_recv() {
        events.push(event);
    }
    events
}

/// The automatic-compaction lifecycle as names: `started`, `applied`, `cancelled`, `failed`.
pub fn compaction_events(events: &[LoopEvent]) -> Vec<&'static str> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::AutoCompaction(AutoCompaction::Started { .. }) => Some("started"),
            LoopEvent::AutoCompaction(AutoCompaction::Applied { .. }) => Some("applied"),
            LoopEvent::AutoCompaction(AutoCompaction::Cancelled) => Some("cancelled"),
            LoopEvent::AutoCompaction(AutoCompaction::Failed { .. }) => Some("failed"),
            _ => None,
        })
        .collect()
}

/// The visible text (all `TextDelta`s joined).
pub fn visible_text(events: &[LoopEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The `Retrying` events as (attempt, delay_ms, reason).
pub fn retries(events: &[LoopEvent]) -> Vec<(u32, u64, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            LoopEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => Some((*attempt, *delay_ms, reason.clone())),
            _ => None,
        })
        .collect()
}

/// One tool output as the model sees it in a request.
#[derive(Debug, Clone, PartialEq)]
pub struct WireToolOutput {
    /// The call it answers.
    pub call_id: String,
    /// Its text.
    pub content: String,
    /// Anthropic's `is_error` (the OpenAI kinds have no such flag: `None`).
    pub is_error: Option<bool>,
}

/// A recorded request body read through its protocol: the system prompt, the tools and the
/// conversation (the part after the system prompt) wherever the protocol keeps them.
#[derive(Debug, Clone)]
pub struct Wire {
    /// The protocol that shaped `body`.
    pub protocol: Protocol,
    /// The recorded request.
    pub recorded: RecordedRequest,
}

impl Wire {
    /// Wraps a recorded request.
    pub fn new(protocol: Protocol, recorded: RecordedRequest) -> Self {
        Self { protocol, recorded }
    }

    /// The JSON body.
    pub fn body(&self) -> &Value {
        &self.recorded.body
    }

    /// Where the system prompt travels: Chat's leading `system` message, Responses'
    /// `instructions`, Anthropic's `system` blocks, Gemini's `systemInstruction`.
    pub fn system(&self) -> Value {
        match self.protocol {
            Protocol::OpenAiChat => {
                let first = &self.body()["messages"][0];
                assert_eq!(
                    first["role"], "system",
                    "chat requests start with the system message"
                );
                first.clone()
            }
            Protocol::OpenAiResponses => self.body()["instructions"].clone(),
            Protocol::Anthropic | Protocol::Bedrock => self.body()["system"].clone(),
            Protocol::Gemini => self.body()["systemInstruction"].clone(),
        }
    }

    /// The system prompt text.
    pub fn system_text(&self) -> String {
        let system = self.system();
        match self.protocol {
            Protocol::OpenAiChat => system["content"].as_str().unwrap_or_default().to_owned(),
            Protocol::OpenAiResponses => system.as_str().unwrap_or_default().to_owned(),
            Protocol::Anthropic | Protocol::Bedrock => {
                system[0]["text"].as_str().unwrap_or_default().to_owned()
            }
            Protocol::Gemini => system["parts"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The tool definitions, exactly as sent (Bedrock's `toolConfig.tools`).
    pub fn tools(&self) -> Value {
        match self.protocol {
            Protocol::Bedrock => self.body()["toolConfig"]["tools"].clone(),
            _ => self.body()["tools"].clone(),
        }
    }

    /// The conversation items after the system prompt: Chat `messages[1..]`, Responses
    /// `input`, Anthropic `messages`, Gemini `contents`.
    pub fn conversation(&self) -> Vec<Value> {
        match self.protocol {
            Protocol::OpenAiChat => self.body()["messages"]
                .as_array()
                .map(|m| m[1..].to_vec())
                .unwrap_or_default(),
            Protocol::OpenAiResponses => {
                self.body()["input"].as_array().cloned().unwrap_or_default()
            }
            Protocol::Anthropic | Protocol::Bedrock => self.body()["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            Protocol::Gemini => self.body()["contents"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        }
    }

    /// The conversation items that are user text, as their texts (in order).
    pub fn user_texts(&self) -> Vec<String> {
        let mut texts = Vec::new();
        for item in self.conversation() {
            if item["role"] != "user" {
                continue;
            }
            match self.protocol {
                Protocol::OpenAiChat => {
                    texts.push(item["content"].as_str().unwrap_or_default().to_owned())
                }
                Protocol::OpenAiResponses | Protocol::Anthropic => {
                    for block in item["content"].as_array().into_iter().flatten() {
                        if block["type"] == "input_text" || block["type"] == "text" {
                            texts.push(block["text"].as_str().unwrap_or_default().to_owned());
                        }
                    }
                }
                Protocol::Gemini => {
                    for part in item["parts"].as_array().into_iter().flatten() {
                        if let Some(text) = part["text"].as_str() {
                            texts.push(text.to_owned());
                        }
                    }
                }
                Protocol::Bedrock => {
                    for block in item["content"].as_array().into_iter().flatten() {
                        if let Some(text) = block["text"].as_str() {
                            texts.push(text.to_owned());
                        }
                    }
                }
            }
        }
        texts
    }

    /// The text of the last user text in the conversation.
    pub fn last_user_text(&self) -> String {
        self.user_texts().pop().unwrap_or_default()
    }

    /// True when this is an automatic compaction request (the auto prompt is the last user
    /// text).
    pub fn is_auto_compaction(&self) -> bool {
        self.last_user_text() == pith_core::summary::auto_prompt()
    }

    /// Every tool output in the conversation, in order.
    pub fn tool_outputs(&self) -> Vec<WireToolOutput> {
        let mut outputs = Vec::new();
        for item in self.conversation() {
            match self.protocol {
                Protocol::OpenAiChat if item["role"] == "tool" => outputs.push(WireToolOutput {
                    call_id: item["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                    content: item["content"].as_str().unwrap_or_default().to_owned(),
                    is_error: None,
                }),
                Protocol::OpenAiResponses if item["type"] == "function_call_output" => outputs
                    .push(WireToolOutput {
                        call_id: item["call_id"].as_str().unwrap_or_default().to_owned(),
                        content: item["output"].as_str().unwrap_or_default().to_owned(),
                        is_error: None,
                    }),
                Protocol::Bedrock => {
                    for block in item["content"].as_array().into_iter().flatten() {
                        if let Some(result) = block.get("toolResult") {
                            outputs.push(WireToolOutput {
                                call_id: result["toolUseId"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                                content: result["content"][0]["text"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                                is_error: Some(result["status"] == "error"),
                            });
                        }
                    }
                }
                Protocol::Anthropic => {
                    for block in item["content"].as_array().into_iter().flatten() {
                        if block["type"] == "tool_result" {
                            outputs.push(WireToolOutput {
                                call_id: block["tool_use_id"]
                                    .as_str()
                                    .unwrap_or_default()
                                    .to_owned(),
                                content: block["content"].as_str().unwrap_or_default().to_owned(),
                                is_error: block["is_error"].as_bool(),
                            });
                        }
                    }
                }
                Protocol::Gemini => {
                    for part in item["parts"].as_array().into_iter().flatten() {
                        let Some(response) = part.get("functionResponse") else {
                            continue;
                        };
                        let error = response["response"].get("error");
                        outputs.push(WireToolOutput {
                            call_id: response["id"].as_str().unwrap_or_default().to_owned(),
                            content: error
                                .unwrap_or(&response["response"]["output"])
                                .as_str()
                                .unwrap_or_default()
                                .to_owned(),
                            is_error: Some(error.is_some()),
                        });
                    }
                }
                _ => {}
            }
        }
        outputs
    }
}

impl Wire {
    /// Checks what the providers reject but the testkit does not: every tool call is
    /// answered exactly once, right after the message that made it, and no tool output
    /// answers an unknown call; Anthropic's and Gemini's roles alternate starting with
    /// `user`.
    /// `index` names the request in the failure message.
    #[allow(clippy::too_many_lines)] // test support: one check per protocol rule, in order
    pub fn assert_well_formed(&self, index: usize) {
        let context = format!("{:?} request {index}", self.protocol);
        let conversation = self.conversation();
        match self.protocol {
            Protocol::OpenAiChat => {
                let mut open: Vec<String> = Vec::new();
                for item in &conversation {
                    match item["role"].as_str() {
                        Some("tool") => {
                            let id = item["tool_call_id"].as_str().unwrap_or_default();
                            let position = open.iter().position(|o| o == id);
                            assert!(
                                position.is_some(),
                                "{context}: tool output for unknown call {id}"
                            );
                            open.remove(position.unwrap());
                        }
                        role => {
                            assert!(
                                open.is_empty(),
                                "{context}: calls {open:?} unanswered before a {role:?} message"
                            );
                            for call in item["tool_calls"].as_array().into_iter().flatten() {
                                open.push(call["id"].as_str().unwrap_or_default().to_owned());
                            }
                        }
                    }
                }
                assert!(
                    open.is_empty(),
                    "{context}: calls {open:?} unanswered at the end"
                );
            }
            Protocol::OpenAiResponses => {
                let mut open: Vec<String> = Vec::new();
                for item in &conversation {
                    let id = item["call_id"].as_str().unwrap_or_default().to_owned();
                    match item["type"].as_str() {
                        Some("function_call") => open.push(id),
                        Some("function_call_output") => {
                            let position = open.iter().position(|o| *o == id);
                            assert!(
                                position.is_some(),
                                "{context}: output for unknown call {id}"
                            );
                            open.remove(position.unwrap());
                        }
                        _ => assert!(
                            open.is_empty(),
                            "{context}: calls {open:?} unanswered before {item}"
                        ),
                    }
                }
                assert!(
                    open.is_empty(),
                    "{context}: calls {open:?} unanswered at the end"
                );
            }
            Protocol::Anthropic | Protocol::Bedrock => {
                let bedrock = self.protocol == Protocol::Bedrock;
                let result_of = |b: &Value| -> Option<String> {
                    let id = if bedrock {
                        b.pointer("/toolResult/toolUseId")
                    } else {
                        (b["type"] == "tool_result").then(|| &b["tool_use_id"])
                    };
                    id.and_then(Value::as_str).map(str::to_owned)
                };
                let call_of = |b: &Value| -> Option<String> {
                    let id = if bedrock {
                        b.pointer("/toolUse/toolUseId")
                    } else {
                        (b["type"] == "tool_use").then(|| &b["id"])
                    };
                    id.and_then(Value::as_str).map(str::to_owned)
                };
                let mut open: Vec<String> = Vec::new();
                for (position, message) in conversation.iter().enumerate() {
                    let expected = if position % 2 == 0 {
                        "user"
                    } else {
                        "assistant"
                    };
                    assert_eq!(
                        message["role"], expected,
                        "{context}: roles must alternate from user"
                    );
                    let blocks = message["content"].as_array().cloned().unwrap_or_default();
                    assert!(!blocks.is_empty(), "{context}: empty message {position}");
                    if expected == "user" {
                        let answered: Vec<String> = blocks.iter().filter_map(result_of).collect();
                        assert_eq!(
                            answered, open,
                            "{context}: message {position} must answer exactly the calls before it"
                        );
                        open.clear();
                    } else {
                        assert!(open.is_empty());
                        open = blocks.iter().filter_map(call_of).collect();
                    }
                }
                assert!(
                    open.is_empty(),
                    "{context}: calls {open:?} unanswered at the end"
                );
            }
            Protocol::Gemini => {
                let mut open: Vec<String> = Vec::new();
                for (position, content) in conversation.iter().enumerate() {
                    let expected = if position % 2 == 0 { "user" } else { "model" };
                    assert_eq!(
                        content["role"], expected,
                        "{context}: roles must alternate from user"
                    );
                    let parts = content["parts"].as_array().cloned().unwrap_or_default();
                    assert!(!parts.is_empty(), "{context}: empty content {position}");
                    let ids = |key: &str| -> Vec<String> {
                        parts
                            .iter()
                            .filter_map(|p| p.get(key))
                            .map(|call| call["id"].as_str().unwrap_or_default().to_owned())
                            .collect()
                    };
                    if expected == "user" {
                        assert_eq!(
                            ids("functionResponse"),
                            open,
                            "{context}: content {position} must answer exactly the calls before it"
                        );
                        open.clear();
                    } else {
                        assert!(open.is_empty());
                        open = ids("functionCall");
                    }
                }
                assert!(
                    open.is_empty(),
                    "{context}: calls {open:?} unanswered at the end"
                );
            }
        }
    }
}

/// `value` without cache markers (at any depth): Anthropic's `cache_control` keys and
/// Bedrock's `{"cachePoint": …}` blocks.
pub fn without_cache_control(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| key.as_str() != "cache_control")
                .map(|(key, v)| (key.clone(), without_cache_control(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|item| item.get("cachePoint").is_none())
                .map(without_cache_control)
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Compact JSON text (serde_json without `preserve_order` sorts keys, so the text is a
/// function of the value: equal text is byte-for-byte what the adapter serialised).
pub fn bytes(value: &Value) -> String {
    serde_json::to_string(value).unwrap()
}
