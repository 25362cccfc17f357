//! One scripted turn: what the server answers one request with (text, reasoning, tool
//! calls, usage, a fault), with its JSON form (serde) and its Rust builders.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
/// and cache-written parts (OpenAI's meaning); for Anthropic the server reports
/// `input_tokens - cached - written` as `input_tokens`, `cached` as
/// `cache_read_input_tokens` and `written` as `cache_creation_input_tokens` (Bedrock
/// likewise).
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
    /// Prompt tokens written to the provider's cache (part of `input_tokens`, after the
    /// cached part): Anthropic's `cache_creation_input_tokens`, Bedrock's
    /// `cacheWriteInputTokens`; the OpenAI kinds and Gemini report no writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
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
            cache_write_tokens: None,
            reasoning_tokens: None,
            cost: None,
        }
    }

    /// The cached part of the input, 0 when unset (never more than `input_tokens`).
    pub fn cached(&self) -> u64 {
        self.cached_input_tokens.unwrap_or(0).min(self.input_tokens)
    }

    /// The part of the input written to the cache, 0 when unset (never more than what the
    /// cached part leaves of `input_tokens`).
    pub fn cache_written(&self) -> u64 {
        self.cache_write_tokens
            .unwrap_or(0)
            .min(self.input_tokens - self.cached())
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
    /// Seconds the user pauses before the request this turn answers: the server's clock
    /// (what [`crate::UsageMode::Cached`] ages cache entries by) is advanced by this much
    /// before the request is billed, without sleeping.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pause_s: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

pub(crate) fn is_false(value: &bool) -> bool {
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
        let written = self.usage.and_then(|usage| usage.cache_write_tokens);
        self.usage = Some(Usage {
            cached_input_tokens: cached,
            cache_write_tokens: written,
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

    /// Reports `written` of the input tokens as written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`, Bedrock's `cacheWriteInputTokens`).
    pub fn with_cache_write(mut self, written: u64) -> Turn {
        let mut usage = self.effective_usage();
        usage.cache_write_tokens = Some(written);
        self.usage = Some(usage);
        self
    }

    /// Answers a request sent after the user paused `seconds`: the server's clock is
    /// advanced by that much before the request is billed ([`crate::UsageMode::Cached`]),
    /// so a pause longer than a cache's lifetime expires it. Nothing sleeps.
    pub fn after_pause_s(mut self, seconds: u64) -> Turn {
        self.pause_s = seconds;
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let sent: serde_json::Value = serde_json::from_str(&object.arguments_text()).unwrap();
        assert_eq!(sent, json!({"a": [true], "b": 1}));
    }
}
