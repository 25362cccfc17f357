//! The script: which protocol the server speaks and what each incoming request is answered
//! with. Owns the JSON format (serde), the Rust builders, validation, and the deterministic
//! tool-call ids, so the binary and in-process tests read one definition.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::TestkitError;

/// Which provider wire protocol the server speaks, and so which endpoint it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// OpenAI Chat Completions: `POST /v1/chat/completions`.
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    /// OpenAI Responses: `POST /v1/responses`.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
    /// Anthropic Messages: `POST /v1/messages`.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Google Gemini: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` (and
    /// `:generateContent`), the model named in the path.
    #[serde(rename = "gemini")]
    Gemini,
    /// AWS Bedrock Converse: `POST /model/{modelId}/converse-stream` (binary event
    /// stream; `/model/{modelId}/converse` for a JSON answer), any model id.
    #[serde(rename = "bedrock")]
    Bedrock,
}

/// The path prefix of Gemini's model endpoints.
const GEMINI_MODELS_PATH: &str = "/v1beta/models/";

/// What a request path asks of the protocol's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    /// The model named in the path (Gemini, Bedrock), else `None` (it is in the body).
    pub model: Option<String>,
    /// The path itself says whether the answer is streamed (Gemini's
    /// `:streamGenerateContent`, Bedrock's `/converse-stream`); `None`: the body's
    /// `stream` says.
    pub streaming: Option<bool>,
}

impl Protocol {
    /// The request path this protocol answers (`/v1/chat/completions`, `/v1/responses`,
    /// `/v1/messages`); for Gemini, whose path names the model, the streaming path of
    /// the model `testkit-model` (any model's is answered, see [`Protocol::endpoint`]).
    pub fn endpoint_path(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "/v1/chat/completions",
            Protocol::OpenAiResponses => "/v1/responses",
            Protocol::Anthropic => "/v1/messages",
            Protocol::Gemini => "/v1beta/models/testkit-model:streamGenerateContent",
            Protocol::Bedrock => "/model/{modelId}/converse-stream",
        }
    }

    /// Whether `path` is this protocol's endpoint, and what it says (Gemini and Bedrock:
    /// the model and whether the answer streams). The others answer
    /// [`Protocol::endpoint_path`] exactly.
    pub(crate) fn endpoint(self, path: &str) -> Option<Endpoint> {
        match self {
            Protocol::Gemini => {
                let rest = path.strip_prefix(GEMINI_MODELS_PATH)?;
                let (model, method) = rest.rsplit_once(':')?;
                let streaming = match method {
                    "streamGenerateContent" => true,
                    "generateContent" => false,
                    _ => return None,
                };
                (!model.is_empty() && !model.contains('/')).then(|| Endpoint {
                    model: Some(model.to_owned()),
                    streaming: Some(streaming),
                })
            }
            Protocol::Bedrock => {
                let (model, streaming) = crate::wire::bedrock::model_of_path(path)?;
                Some(Endpoint {
                    model: Some(model),
                    streaming: Some(streaming),
                })
            }
            _ => (path == self.endpoint_path()).then_some(Endpoint {
                model: None,
                streaming: None,
            }),
        }
    }

    /// The script spelling: `openai-chat`, `openai-responses` or `anthropic`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::OpenAiChat => "openai-chat",
            Protocol::OpenAiResponses => "openai-responses",
            Protocol::Anthropic => "anthropic",
            Protocol::Gemini => "gemini",
            Protocol::Bedrock => "bedrock",
        }
    }

    /// Prefix of generated tool-call ids: `call_` for both OpenAI kinds, `toolu_` for
    /// Anthropic, `fc_` for Gemini (sent as `functionCall.id`).
    pub fn tool_call_id_prefix(self) -> &'static str {
        match self {
            Protocol::OpenAiChat | Protocol::OpenAiResponses => "call_",
            Protocol::Anthropic => "toolu_",
            Protocol::Gemini => "fc_",
            Protocol::Bedrock => "tooluse_",
        }
    }
}

/// A failure the server plays instead of (or in the middle of) a normal answer. A fault
/// turn consumes its slot like any other turn, so a retried request gets the next turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// HTTP 429 with the provider's rate-limit error body, and `retry-after` when
    /// `retry_after_s` is set.
    #[serde(rename = "http_429")]
    Http429,
    /// HTTP 500 with the provider's server-error body.
    #[serde(rename = "http_500")]
    Http500,
    /// Anthropic: HTTP 529 `overloaded_error`; OpenAI kinds: HTTP 503 with a server-error
    /// body.
    Overloaded,
    /// A 200 answer whose connection is closed abruptly after about half of its chunks.
    DropMidStream,
    /// A 200 answer with one corrupt (truncated JSON) `data:` line in the middle; the rest of
    /// the stream follows intact. A non-streaming request gets a truncated JSON body.
    MalformedSse,
    /// HTTP 400 with the provider's real context-length error body.
    ContextLength,
    /// A 200 stream that stops after about half of its events with the provider's in-stream
    /// error event (Anthropic `event: error` / `overloaded_error`, Responses `event: error`,
    /// Chat `data: {"error": …}`), then ends without its normal final event. A
    /// non-streaming request gets `http_500`'s answer.
    StreamError,
    /// Never finishes: a streaming request gets the 200 headers and then silence, a
    /// non-streaming one gets nothing at all, until the client gives up.
    Hang,
    /// Hostile: a 200 stream of ever different text deltas that never ends.
    EndlessText,
    /// Hostile: a 200 stream of the same line, over and over, that never ends.
    RepeatedLine,
    /// Hostile: one text-delta event of `size_mb` MB.
    HugeEvent,
    /// Hostile: one tool call whose arguments stream `size_mb` MB.
    HugeToolArguments,
    /// Hostile: `count` tool calls in one answer (default 10,000).
    ManyToolCalls,
    /// Hostile: a 200 stream of content-free events every 50 ms, forever.
    HeartbeatsOnly,
    /// Hostile: HTTP 500 with a `size_mb` MB body.
    HugeErrorBody,
    /// Hostile: HTTP 307 to `redirect_to`.
    Redirect,
    /// OpenRouter's wrapper of an upstream failure: HTTP 502 with
    /// `{"error": {"code": 502, "message": "Provider returned error", "metadata":
    /// {"provider_name", "raw"}}}` (Chat Completions only).
    ProviderReturnedError,
}

/// Token usage a turn reports. `input_tokens` counts the whole prompt including its cached
/// part (OpenAI's meaning); for Anthropic the server reports `input_tokens - cached` as
/// `input_tokens` and `cached` as `cache_read_input_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// The part of `output_tokens` spent reasoning (Chat
    /// `completion_tokens_details.reasoning_tokens`, Responses
    /// `output_tokens_details.reasoning_tokens`; Anthropic reports none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// What the request cost in US dollars, reported in the usage as OpenRouter does
    /// (`usage.cost`, Chat Completions only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl Usage {
    /// Input tokens reported by [`UsageMode::Fixed`] for a turn that gives no `usage`.
    pub const DEFAULT_INPUT_TOKENS: u64 = 100;

    /// Usage with the given input and output tokens and nothing cached.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            cached_input_tokens: None,
            reasoning_tokens: None,
            cost: None,
        }
    }

    /// The cached part of the input, 0 when unset (never more than `input_tokens`).
    pub fn cached(&self) -> u64 {
        self.cached_input_tokens.unwrap_or(0).min(self.input_tokens)
    }
}

/// One tool call the model makes in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments. An object (or any JSON value) is serialised compactly and streamed in
    /// fragments; a JSON *string* is sent verbatim as the raw argument text, which lets a
    /// script send invalid JSON arguments.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// Tool-call id. When absent the server generates `call_K` (OpenAI kinds) or `toolu_K`
    /// (Anthropic), K being the call's 1-based position among all tool calls of the script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl ToolCall {
    /// A call to `name` with `arguments` and a generated id.
    pub fn new(name: impl Into<String>, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
            id: None,
        }
    }

    /// The same call with an explicit id.
    pub fn with_id(mut self, id: impl Into<String>) -> ToolCall {
        self.id = Some(id.into());
        self
    }

    /// The argument text as sent on the wire.
    pub fn arguments_text(&self) -> String {
        match &self.arguments {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        }
    }
}

/// What the server answers to one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Assistant text (may be empty).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub text: String,
    /// Tool calls, after the text.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Reported usage; when absent, [`Usage::DEFAULT_INPUT_TOKENS`] input tokens and about one
    /// output token per four characters of output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Pause between two streamed chunks, in milliseconds (0: no pause).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_delay_ms: u64,
    /// A failure to play instead of a normal answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// Seconds sent in the `retry-after` header of an HTTP fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_s: Option<u64>,
    /// Reasoning text streamed before the answer (Chat: `reasoning_content` deltas;
    /// Responses: a reasoning item with a summary; Anthropic: a thinking block; Gemini:
    /// thought parts, and a thought signature the client must send back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Anthropic: a `redacted_thinking` block (opaque `data`) before the answer, as the
    /// API sends when its safety systems encrypted the reasoning.
    #[serde(default, skip_serializing_if = "is_false")]
    pub redacted_thinking: bool,
    /// Size in MB of a hostile fault's payload (`huge_event`, `huge_tool_arguments`,
    /// `huge_error_body`; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_mb: Option<u64>,
    /// How many tool calls `many_tool_calls` sends (default 10,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Where `redirect` points (an absolute URL or a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_to: Option<String>,
    /// The answer carries no usage at all (Chat: no usage chunk even when asked;
    /// Anthropic, Responses, Gemini, Bedrock: the usage fields left out).
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_usage: bool,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

fn is_honest(mode: &UsageMode) -> bool {
    *mode == UsageMode::Honest
}

fn is_false(value: &bool) -> bool {
    !*value
}

impl Turn {
    /// A turn that answers with `text`.
    pub fn text(text: impl Into<String>) -> Turn {
        Turn {
            text: text.into(),
            ..Turn::default()
        }
    }

    /// A turn that only calls one tool (no text).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Turn {
        Turn::default().with_tool_call(name, arguments)
    }

    /// A turn that plays `fault`.
    pub fn fault(fault: Fault) -> Turn {
        Turn {
            fault: Some(fault),
            ..Turn::default()
        }
    }

    /// Adds a tool call with a generated id.
    pub fn with_tool_call(self, name: impl Into<String>, arguments: Value) -> Turn {
        self.with_call(ToolCall::new(name, arguments))
    }

    /// Adds a fully specified tool call (e.g. with an explicit id).
    pub fn with_call(mut self, call: ToolCall) -> Turn {
        self.tool_calls.push(call);
        self
    }

    /// Reports this usage (nothing cached).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Turn {
        let cached = self.usage.and_then(|usage| usage.cached_input_tokens);
        self.usage = Some(Usage {
            cached_input_tokens: cached,
            ..Usage::new(input_tokens, output_tokens)
        });
        self
    }

    /// Reports `cached` of the input tokens as served from the prompt cache.
    pub fn with_cached_input(mut self, cached: u64) -> Turn {
        let mut usage = self.effective_usage();
        usage.cached_input_tokens = Some(cached);
        self.usage = Some(usage);
        self
    }

    /// Pauses `ms` milliseconds between streamed chunks.
    pub fn with_chunk_delay_ms(mut self, ms: u64) -> Turn {
        self.chunk_delay_ms = ms;
        self
    }

    /// Plays `fault` (keeping any text/tool calls, which `drop_mid_stream` and
    /// `malformed_sse` stream).
    pub fn with_fault(mut self, fault: Fault) -> Turn {
        self.fault = Some(fault);
        self
    }

    /// Sends `retry-after: seconds` with an HTTP fault.
    pub fn with_retry_after_s(mut self, seconds: u64) -> Turn {
        self.retry_after_s = Some(seconds);
        self
    }

    /// Sets the payload size of a hostile fault, in MB.
    pub fn with_size_mb(mut self, size_mb: u64) -> Turn {
        self.size_mb = Some(size_mb);
        self
    }

    /// Sets the count of a hostile fault (`many_tool_calls`).
    pub fn with_count(mut self, count: u64) -> Turn {
        self.count = Some(count);
        self
    }

    /// Sets the target of a `redirect`.
    pub fn with_redirect_to(mut self, target: impl Into<String>) -> Turn {
        self.redirect_to = Some(target.into());
        self
    }

    /// Streams `reasoning` before the answer.
    pub fn with_reasoning(mut self, reasoning: impl Into<String>) -> Turn {
        self.reasoning = Some(reasoning.into());
        self
    }

    /// Anthropic: sends a `redacted_thinking` block before the answer.
    pub fn with_redacted_thinking(mut self) -> Turn {
        self.redacted_thinking = true;
        self
    }

    /// Reports `tokens` of the output as reasoning tokens.
    pub fn with_reasoning_tokens(mut self, tokens: u64) -> Turn {
        let mut usage = self.effective_usage();
        usage.reasoning_tokens = Some(tokens);
        self.usage = Some(usage);
        self
    }

    /// Reports the request's cost in US dollars in the usage (OpenRouter).
    pub fn with_cost(mut self, dollars: f64) -> Turn {
        let mut usage = self.effective_usage();
        usage.cost = Some(dollars);
        self.usage = Some(usage);
        self
    }

    /// The usage the server reports for this turn (the scripted one or the default).
    pub fn effective_usage(&self) -> Usage {
        self.usage
            .unwrap_or_else(|| Usage::new(Usage::DEFAULT_INPUT_TOKENS, self.output_tokens()))
    }

    /// About one token per four characters of what the turn outputs (at least 1).
    pub(crate) fn output_tokens(&self) -> u64 {
        let output_chars = self.text.chars().count()
            + self.reasoning.as_deref().map_or(0, |r| r.chars().count())
            + self
                .tool_calls
                .iter()
                .map(|call| call.name.len() + call.arguments_text().chars().count())
                .sum::<usize>();
        (output_chars as u64).div_ceil(4).max(1)
    }
}

/// How the server reports usage for a turn whose script gives none, so one script can
/// stand in for servers that report usage honestly, wrongly, or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum UsageMode {
    /// The request's tokens as pith's tokenizer counts the wire body
    /// ([`crate::request_tokens`]) and about one output token per four characters of
    /// output: an honest server (the default).
    #[default]
    Honest,
    /// [`Usage::DEFAULT_INPUT_TOKENS`] input tokens whatever the request holds, and about
    /// one output token per four characters of output.
    Fixed,
    /// Every request is reported as this many input tokens, whatever it holds: a server
    /// (or proxy) that over- or under-reports.
    Constant(u64),
    /// The request's tokens as pith's tokenizer counts the wire body
    /// ([`crate::request_tokens`]), scaled by `1 + bias_percent / 100`: an honest server
    /// whose tokenizer counts differently (Claude's counts 10–30% more than o200k).
    Counted {
        /// Percent added to (or, negative, taken from) the count.
        bias_percent: i32,
    },
    /// No usage at all in the answer, as some OpenAI-compatible servers do.
    None,
}

/// A rule that answers every request whose last message contains a string with the same
/// turn, without using a scripted turn: how a script answers requests whose place in the
/// sequence is not known in advance, such as a client's compaction (summary) requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Responder {
    /// Matched against the request's last message (Chat / Anthropic / Bedrock
    /// `messages`, Responses `input`, Gemini `contents`), as its JSON text.
    pub when_last_message_contains: String,
    /// The answer. Its tool calls get ids `{prefix}rN` (N counts the calls every
    /// responder answered, from 1) unless they set their own.
    pub turn: Turn,
    /// Answers at most this many requests (unset: every matching one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

/// A whole script: the protocol and the turns answering requests 1, 2, 3… in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The wire protocol spoken.
    pub protocol: Protocol,
    /// One turn per incoming request, in order.
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// Rules checked before the next scripted turn is used, first match wins.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responders: Vec<Responder>,
    /// How usage is reported for turns that script none.
    #[serde(default, skip_serializing_if = "is_honest")]
    pub usage_mode: UsageMode,
    /// Chat Completions: the one output-cap field the server accepts
    /// (`max_tokens` or `max_completion_tokens`). A request with the other one is
    /// rejected the way OpenAI rejects `max_tokens` for its reasoning models, and the cap
    /// is honoured (the answer is cut, `finish_reason: "length"`). Unset: both accepted,
    /// neither honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<String>,
    /// Gemini: `functionCall` parts carry no `id`, as the public Gemini API sends them
    /// (the client pairs calls and responses by order). Default: ids are sent.
    #[serde(default, skip_serializing_if = "is_false")]
    pub omit_call_ids: bool,
}

impl Script {
    /// A script for `protocol` with `turns`.
    pub fn new(protocol: Protocol, turns: impl IntoIterator<Item = Turn>) -> Script {
        Script {
            protocol,
            turns: turns.into_iter().collect(),
            responders: Vec::new(),
            usage_mode: UsageMode::Honest,
            max_tokens_field: None,
            omit_call_ids: false,
        }
    }

    /// Answers every request whose last message contains `marker` with `turn` (see
    /// [`Responder`]).
    pub fn responding(mut self, marker: impl Into<String>, turn: Turn) -> Script {
        self.responders.push(Responder {
            when_last_message_contains: marker.into(),
            turn,
            times: None,
        });
        self
    }

    /// Answers the first `times` requests whose last message contains `marker` with
    /// `turn` (see [`Responder`]).
    pub fn responding_times(mut self, marker: impl Into<String>, turn: Turn, times: u32) -> Script {
        self.responders.push(Responder {
            when_last_message_contains: marker.into(),
            turn,
            times: Some(times),
        });
        self
    }

    /// Reports usage this way for turns that script none (see [`UsageMode`]).
    pub fn with_usage_mode(mut self, mode: UsageMode) -> Script {
        self.usage_mode = mode;
        self
    }

    /// True when answering needs the whole request body: a responder matches on it, or
    /// the usage is counted from it.
    pub(crate) fn reads_bodies(&self) -> bool {
        !self.responders.is_empty()
            || matches!(
                self.usage_mode,
                UsageMode::Counted { .. } | UsageMode::Honest
            )
    }

    /// Gemini: send `functionCall` parts without their `id`.
    pub fn without_call_ids(mut self) -> Script {
        self.omit_call_ids = true;
        self
    }

    /// Chat Completions: accept and honour only `field` as the output cap.
    pub fn accepting_only(mut self, field: impl Into<String>) -> Script {
        self.max_tokens_field = Some(field.into());
        self
    }

    /// True when the server must read whole request bodies to check what the client
    /// sends back (reasoning to return, an output-cap field to enforce; for Gemini
    /// always: any thought signature sent must be one the server issued).
    pub fn checks_requests(&self) -> bool {
        self.max_tokens_field.is_some()
            || self.protocol == Protocol::Gemini
            || self
                .turns
                .iter()
                .any(|t| t.reasoning.is_some() || t.redacted_thinking)
    }

    /// An OpenAI Chat Completions script.
    pub fn openai_chat(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::OpenAiChat, turns)
    }

    /// An OpenAI Responses script.
    pub fn openai_responses(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::OpenAiResponses, turns)
    }

    /// An Anthropic Messages script.
    pub fn anthropic(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Anthropic, turns)
    }

    /// A Google Gemini script.
    pub fn gemini(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Gemini, turns)
    }

    /// An AWS Bedrock Converse script.
    pub fn bedrock(turns: impl IntoIterator<Item = Turn>) -> Script {
        Script::new(Protocol::Bedrock, turns)
    }

    /// Appends a turn.
    pub fn then(mut self, turn: Turn) -> Script {
        self.turns.push(turn);
        self
    }

    /// Parses the JSON script format and validates it.
    pub fn from_json(json: &str) -> Result<Script, TestkitError> {
        let script: Script =
            serde_json::from_str(json).map_err(|source| TestkitError::ScriptSyntax {
                origin: "script".to_owned(),
                source,
            })?;
        script.validate()?;
        Ok(script)
    }

    /// Reads, parses and validates a script file.
    pub fn from_file(path: &Path) -> Result<Script, TestkitError> {
        let json = std::fs::read_to_string(path).map_err(|source| TestkitError::Io {
            action: format!("read script {}", path.display()),
            source,
        })?;
        let script: Script =
            serde_json::from_str(&json).map_err(|source| TestkitError::ScriptSyntax {
                origin: path.display().to_string(),
                source,
            })?;
        script.validate()?;
        Ok(script)
    }

    /// The script as pretty JSON (e.g. to write a file for the binary).
    pub fn to_json_pretty(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks what serde cannot: non-empty tool names and unique tool-call ids (explicit and
    /// generated together).
    pub fn validate(&self) -> Result<(), TestkitError> {
        if let Some(empty) = self
            .responders
            .iter()
            .position(|r| r.when_last_message_contains.is_empty())
        {
            return Err(TestkitError::InvalidScript(format!(
                "responder {} has an empty when_last_message_contains: it would answer every request",
                empty + 1
            )));
        }
        for (turn_index, turn) in self.turns.iter().enumerate() {
            if let Some(call) = turn.tool_calls.iter().find(|c| c.name.trim().is_empty()) {
                return Err(TestkitError::InvalidScript(format!(
                    "turn {} has a tool call with an empty name (arguments {})",
                    turn_index + 1,
                    call.arguments
                )));
            }
        }
        if let Some(field) = &self.max_tokens_field {
            if field != "max_tokens" && field != "max_completion_tokens" {
                return Err(TestkitError::InvalidScript(format!(
                    "max_tokens_field is {field:?}: use \"max_tokens\" or \"max_completion_tokens\""
                )));
            }
        }
        let mut first_turn_of: HashMap<String, usize> = HashMap::new();
        for (turn_index, ids) in self.tool_call_ids().into_iter().enumerate() {
            for id in ids {
                if let Some(first) = first_turn_of.insert(id.clone(), turn_index + 1) {
                    return Err(TestkitError::InvalidScript(format!(
                        "tool call id {id:?} is used twice (turns {first} and {}); ids must \
                         be unique across the script, and generated ids are {}K for the \
                         K-th tool call",
                        turn_index + 1,
                        self.protocol.tool_call_id_prefix()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The id every tool call is sent with, per turn: the explicit id, or the generated
    /// `call_K` / `toolu_K` where K is the call's 1-based position among all tool calls of
    /// the script.
    pub fn tool_call_ids(&self) -> Vec<Vec<String>> {
        let prefix = self.protocol.tool_call_id_prefix();
        let mut position = 0usize;
        self.turns
            .iter()
            .map(|turn| {
                turn.tool_calls
                    .iter()
                    .map(|call| {
                        position += 1;
                        call.id
                            .clone()
                            .unwrap_or_else(|| format!("{prefix}{position}"))
                    })
                    .collect()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn issue_example_script_parses_with_every_field() {
        let script = Script::from_json(
            r###"{"protocol": "openai-chat",
                "turns": [
                  {"text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"path": "src/lib.rs"}}],
                   "usage": {"input_tokens": 120000, "output_tokens": 40}},
                  {"text": "## Goal\n...", "chunk_delay_ms": 50},
                  {"fault": "http_429", "retry_after_s": 1},
                  {"text": "Done.", "reasoning": "think", "usage": {"input_tokens": 10, "output_tokens": 2, "cached_input_tokens": 8}}
                ]}"###,
        )
        .unwrap();
        let built = Script::openai_chat([
            Turn::text("Let me look.")
                .with_tool_call("read", json!({"path": "src/lib.rs"}))
                .with_usage(120_000, 40),
            Turn::text("## Goal\n...").with_chunk_delay_ms(50),
            Turn::fault(Fault::Http429).with_retry_after_s(1),
            Turn::text("Done.")
                .with_reasoning("think")
                .with_usage(10, 2)
                .with_cached_input(8),
        ]);
        assert_eq!(
            script, built,
            "JSON and builders must describe the same script"
        );
        let round_trip = Script::from_json(&built.to_json_pretty()).unwrap();
        assert_eq!(round_trip, built, "to_json_pretty must round-trip");
    }

    #[test]
    fn unknown_fields_and_faults_are_rejected_with_a_reason() {
        let typo = Script::from_json(r#"{"protocol":"anthropic","turns":[{"txt":"hi"}]}"#);
        assert!(
            typo.unwrap_err().to_string().contains("txt"),
            "a misspelt field must be named in the error"
        );
        let bad_fault =
            Script::from_json(r#"{"protocol":"anthropic","turns":[{"fault":"http_418"}]}"#);
        assert!(bad_fault.unwrap_err().to_string().contains("http_418"));
        let bad_protocol = Script::from_json(r#"{"protocol":"cohere","turns":[]}"#);
        assert!(bad_protocol.is_err());
    }

    #[test]
    fn generated_tool_call_ids_count_calls_across_the_whole_script() {
        let script = Script::anthropic([
            Turn::tool_call("read", json!({})).with_tool_call("grep", json!({})),
            Turn::text("no calls"),
            Turn::default()
                .with_call(ToolCall::new("edit", json!({})).with_id("mine"))
                .with_tool_call("bash", json!({})),
        ]);
        assert_eq!(
            script.tool_call_ids(),
            vec![
                vec!["toolu_1".to_owned(), "toolu_2".to_owned()],
                vec![],
                vec!["mine".to_owned(), "toolu_4".to_owned()],
            ]
        );
        assert!(script.validate().is_ok());
    }

    #[test]
    fn an_explicit_id_colliding_with_a_generated_one_is_an_error() {
        let script = Script::openai_chat([
            Turn::tool_call("read", json!({})),
            Turn::default().with_call(ToolCall::new("read", json!({})).with_id("call_1")),
        ]);
        let error = script.validate().unwrap_err().to_string();
        assert!(
            error.contains("call_1") && error.contains("twice"),
            "{error}"
        );
    }

    #[test]
    fn default_usage_is_small_and_counts_output() {
        let usage = Turn::text("12345678").effective_usage();
        assert_eq!(usage.input_tokens, Usage::DEFAULT_INPUT_TOKENS);
        assert_eq!(usage.output_tokens, 2);
        assert_eq!(Turn::text("").effective_usage().output_tokens, 1);
    }

    #[test]
    fn raw_string_arguments_are_sent_verbatim() {
        let call = ToolCall::new("read", json!("{\"path\": "));
        assert_eq!(call.arguments_text(), "{\"path\": ");
        let object = ToolCall::new("read", json!({"b": 1, "a": [true]}));
        // An object is sent as its JSON text (key order is serde_json's: sorted, or as
        // written when a dependency turns on `preserve_order`).
        let sent: Value = serde_json::from_str(&object.arguments_text()).unwrap();
        assert_eq!(sent, json!({"a": [true], "b": 1}));
    }
}
