//! The contract between the generic tool loop and a wire protocol.
//!
//! Execution model: for every model request the loop builds one [`ModelRequest`] from its
//! generic history and calls [`ProviderAdapter::start`]. The adapter converts the request
//! to its native form — deterministically, so the same history always produces the same
//! bytes and provider prompt caches can reuse the prefix — sends it, and returns a
//! stream of [`StreamChunk`]s. Text and reasoning arrive as deltas; tool calls arrive
//! complete (the adapter reassembles argument fragments); usage arrives once; every wire
//! event that carries none of these is reported as [`StreamChunk::Progress`] (the idle
//! timeout measures silence on the wire, not between pieces of content); the stream
//! ends after [`StreamChunk::Done`]. Errors are [`ProviderError`]s. The loop owns
//! timeouts, retries and cancellation: dropping the stream must abort the request.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Stream;
use pith_core::{Message, ToolDefinition};

pub use crate::wire::chunk::{ChunkStream, StreamChunk};
use crate::wire::error::ProviderError;
use crate::wire::limits::WireLimits;
use crate::wire::reasoning::ReasoningEffort;
use crate::wire::structured::StructuredOutput;

/// One model request in generic form.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The provider's model id (without the `provider/` prefix).
    pub model: String,
    /// The system prompt; empty for none.
    pub system: String,
    /// The conversation, oldest first. System messages inside it (rare) are sent as
    /// system content where the protocol allows it. Shared with the loop's history (which
    /// is copied on write): a request costs no copy of the conversation.
    pub messages: Arc<Vec<Message>>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// Cap on output tokens, when the model needs one (Anthropic requires it).
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, when configured (Anthropic ignores it while thinking: the
    /// API refuses the two together).
    pub temperature: Option<f32>,
    /// How hard the model may think (`--reasoning`); `None`: the provider's default, and
    /// no Anthropic thinking.
    pub reasoning: Option<ReasoningEffort>,
    /// The schema the final answer must match (`--output-schema`), asked for natively
    /// where the protocol can (see [`crate::wire::structured`]).
    pub output: Option<StructuredOutput>,
    /// Where the provider's prompt cache should hold this request's prefix.
    pub cache: CacheHints,
}

/// What a request tells the provider's prompt cache (docs/context-pipeline.md, "Prompt
/// caching"): Anthropic and Bedrock get a breakpoint after the system prompt, after the
/// tools, at the end of the stable prefix (`anchor`) and at the end of the last message;
/// OpenAI gets `prompt_cache_key`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CacheHints {
    /// The messages before this index will not change again (the latest compaction's
    /// replacement, the results masked so far): a breakpoint at their end keeps them a
    /// cache hit when a later rewrite changes what follows. `None` or 0: no such mark.
    pub anchor: Option<usize>,
    /// A key the provider routes this conversation's requests by, so that they land on
    /// the same cache (OpenAI's `prompt_cache_key`): the session id.
    pub key: Option<String>,
    /// No breakpoint in the messages (neither `anchor`'s nor the last message's): no later
    /// request will extend them (a summary sent to a compaction model), so writing them
    /// to the cache would only cost (Anthropic bills writes at 1.25× the input price).
    pub no_message_breakpoints: bool,
}

/// A wire protocol implementation. See the module docs for the execution model.
#[async_trait]
pub trait ProviderAdapter: Send + Sync {
    /// A short name for messages and logs (`openai-chat`, `anthropic`, …).
    fn protocol_name(&self) -> &'static str;

    /// Sends `request` and returns its response stream. Returns once response headers
    /// arrived (HTTP errors are reported here, not in the stream).
    async fn start(&self, request: &ModelRequest) -> Result<ChunkStream, ProviderError>;
}

/// One upstream wire event decoded: the chunks it yields and whether the response is
/// complete.
pub(crate) struct Decoded {
    pub chunks: Vec<StreamChunk>,
    pub done: bool,
}

impl Decoded {
    /// Chunks of a response that goes on.
    pub fn more(chunks: Vec<StreamChunk>) -> Self {
        Self {
            chunks,
            done: false,
        }
    }

    /// The last chunks of a complete response.
    pub fn last(chunks: Vec<StreamChunk>) -> Self {
        Self { chunks, done: true }
    }
}

/// The tool calls of one response as far as bounds are concerned: how many, and how many
/// argument bytes each.
#[derive(Debug)]
struct CallBudget {
    limits: WireLimits,
    argument_bytes: HashMap<usize, usize>,
}

impl CallBudget {
    /// Checks one chunk against the bounds.
    fn check(&mut self, chunk: &StreamChunk) -> Result<(), ProviderError> {
        let StreamChunk::ArgumentBytes { call, bytes } = chunk else {
            return Ok(());
        };
        if !self.argument_bytes.contains_key(call)
            && self.argument_bytes.len() >= self.limits.max_tool_calls
        {
            return Err(self.limits.too_many_tool_calls());
        }
        let total = self.argument_bytes.entry(*call).or_insert(0);
        *total += bytes;
        if *total > self.limits.max_tool_argument_bytes {
            return Err(self.limits.arguments_too_large());
        }
        Ok(())
    }
}

/// Turns an upstream of wire events into a [`ChunkStream`] — the one streaming state
/// machine every adapter shares. `decode(Some(event))` is called per event;
/// `decode(None)` once if the upstream ends before a decoded event said `done` (it returns
/// the final chunks, or the error of a stream that ended early). An event that yields no
/// chunk becomes [`StreamChunk::Progress`], so the loop's idle timeout measures silence
/// on the wire. Tool calls are held to `limits` as their [`StreamChunk::ArgumentBytes`]
/// arrive (a [`ProviderError::LimitExceeded`] ends the stream). After an error or `done`,
/// the stream ends.
pub(crate) fn decode_stream<S, E, D>(upstream: S, limits: WireLimits, decode: D) -> ChunkStream
where
    S: Stream<Item = Result<E, ProviderError>> + Send + Unpin + 'static,
    E: Send + 'static,
    D: FnMut(Option<E>) -> Result<Decoded, ProviderError> + Send + 'static,
{
    use futures::StreamExt;
    let budget = CallBudget {
        limits,
        argument_bytes: HashMap::new(),
    };
    let state = (upstream, decode, Vec::<StreamChunk>::new(), false, budget);
    Box::pin(futures::stream::unfold(
        state,
        |(mut upstream, mut decode, mut pending, mut finished, mut budget)| async move {
            loop {
                if let Some(chunk) = pending.pop() {
                    if let Err(error) = budget.check(&chunk) {
                        pending.clear();
                        finished = true;
                        return Some((Err(error), (upstream, decode, pending, finished, budget)));
                    }
                    return Some((Ok(chunk), (upstream, decode, pending, finished, budget)));
                }
                if finished {
                    return None;
                }
                let (outcome, ended) = match upstream.next().await {
                    Some(Ok(event)) => (decode(Some(event)), false),
                    Some(Err(error)) => (Err(error), true),
                    None => (decode(None), true),
                };
                match outcome {
                    Ok(decoded) => {
                        finished = decoded.done || ended;
                        if decoded.chunks.is_empty() && !finished {
                            return Some((
                                Ok(StreamChunk::Progress),
                                (upstream, decode, pending, finished, budget),
                            ));
                        }
                        pending = decoded.chunks.into_iter().rev().collect();
                    }
                    Err(error) => {
                        finished = true;
                        return Some((Err(error), (upstream, decode, pending, finished, budget)));
                    }
                }
            }
        },
    ))
}

/// Parses tool-call arguments text; invalid JSON is kept as a JSON string so nothing the
/// model wrote is lost and the tool reports a clear argument error.
pub fn parse_arguments(text: &str) -> serde_json::Value {
    if text.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

/// A message's text parts joined, as [`pith_core::Message::text_content`], but borrowed when there is
/// at most one: request encoders call this for every message of every request.
pub(crate) fn text_of(message: &pith_core::Message) -> std::borrow::Cow<'_, str> {
    let mut texts = message.parts.iter().filter_map(|part| match part {
        pith_core::Part::Text { text } => Some(text.as_str()),
        _ => None,
    });
    match (texts.next(), texts.next()) {
        (None, _) => std::borrow::Cow::Borrowed(""),
        (Some(only), None) => std::borrow::Cow::Borrowed(only),
        (Some(_), Some(_)) => std::borrow::Cow::Owned(message.text_content()),
    }
}

/// Serialises tool-call arguments for a wire format that carries them as a string.
pub fn arguments_text(arguments: &serde_json::Value) -> String {
    match arguments {
        serde_json::Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use pith_core::{Message, Part, ToolCall, ToolDefinition, ToolResult};
    use serde_json::json;

    /// Asserts that an adapter's typed encoder gives the same JSON as its previous
    /// `Value`-tree builder on every one of [`varied_requests`].
    /// Both OpenAI encoders: the session's cache key becomes `prompt_cache_key`, and no key
    /// sends none.
    pub(crate) fn assert_the_session_key_routes_to_one_prompt_cache(
        encoded: impl Fn(&ModelRequest) -> serde_json::Value,
    ) {
        let request = |key: Option<&str>| ModelRequest {
            model: "gpt-5".into(),
            system: "sys".into(),
            messages: std::sync::Arc::new(vec![pith_core::Message::user("hi")]),
            tools: Vec::new(),
            max_output_tokens: None,
            temperature: None,
            reasoning: None,
            output: None,
            cache: CacheHints {
                anchor: None,
                key: key.map(str::to_owned),
                no_message_breakpoints: false,
            },
        };
        let keyed = encoded(&request(Some("session-1")));
        assert_eq!(keyed["prompt_cache_key"], serde_json::json!("session-1"));
        assert!(encoded(&request(None)).get("prompt_cache_key").is_none());
    }

    pub(crate) fn assert_encoder_matches_reference(
        encoded: impl Fn(&ModelRequest) -> serde_json::Value,
        reference: impl Fn(&ModelRequest) -> serde_json::Value,
    ) {
        for request in varied_requests() {
            assert_eq!(encoded(&request), reference(&request), "{request:?}");
        }
    }

    /// Requests covering every conversion rule of the adapters' encoders: empty history,
    /// escapes and unicode, an assistant first, system text inside the history, tool
    /// calls with object and non-object arguments, empty and failed results, several
    /// text parts in one message, text in a tool message, consecutive same-role
    /// messages; each with and without system prompt, tools, temperature and output cap.
    pub(crate) fn varied_requests() -> Vec<ModelRequest> {
        let call = |id: &str, arguments: serde_json::Value| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments,
        };
        let mut two_texts = Message::user("first part, ");
        two_texts.parts.push(Part::Text {
            text: "second part".into(),
        });
        let mut tool_with_text = Message::tool_result("c3", "three", false);
        tool_with_text.parts.push(Part::Text {
            text: "a note in the tool message".into(),
        });
        tool_with_text
            .parts
            .push(Part::ToolResult(ToolResult::new("c4", "four", false)));
        let conversations: Vec<Vec<Message>> = vec![
            vec![],
            vec![Message::user("hi \"quoted\" \u{1F600}\n\ttab \\ </script>")],
            vec![
                Message::assistant("starts with the assistant"),
                Message::user("then the user"),
            ],
            vec![
                Message::system("extra system text"),
                two_texts,
                Message::assistant_with_calls(
                    "",
                    vec![
                        call(
                            "c1",
                            json!({"command": "ls", "n": 1.5, "z": null, "a": [1, "x"]}),
                        ),
                        call("c2", json!("not an object")),
                    ],
                ),
                Message::tool_result("c1", "", false),
                Message::tool_result("c2", "boom", true),
                Message::assistant_with_calls(
                    "more",
                    vec![call("c3", json!({})), call("c4", json!(7))],
                ),
                tool_with_text,
                Message::user("and then"),
                Message::user("twice"),
                Message::assistant(""),
            ],
        ];
        let mut requests = Vec::new();
        for messages in conversations {
            requests.push(ModelRequest {
                model: "m".into(),
                system: String::new(),
                messages: Arc::new(messages.clone()),
                tools: Vec::new(),
                max_output_tokens: None,
                temperature: None,
                reasoning: None,
                output: None,
                cache: Default::default(),
            });
            requests.push(ModelRequest {
                model: "m".into(),
                system: "sys\nprompt".into(),
                messages: Arc::new(messages),
                tools: vec![
                    ToolDefinition {
                        name: "bash".into(),
                        description: "Run".into(),
                        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
                    },
                    ToolDefinition {
                        name: "read".into(),
                        description: "Read".into(),
                        parameters: json!({}),
                    },
                ],
                max_output_tokens: Some(1024),
                temperature: Some(0.7),
                reasoning: None,
                output: None,
                cache: Default::default(),
            });
        }
        requests
    }

    /// Runs `events` (each the chunks one wire event decodes to) through the shared state
    /// machine with `limits`.
    fn through_decode_stream(
        events: Vec<Vec<StreamChunk>>,
        limits: WireLimits,
    ) -> Vec<Result<StreamChunk, ProviderError>> {
        use futures::StreamExt;
        let upstream = futures::stream::iter(events.into_iter().map(Ok));
        let stream = decode_stream(upstream, limits, |event| match event {
            Some(chunks) => Ok(Decoded::more(chunks)),
            None => Ok(Decoded::last(vec![StreamChunk::Done { stop_reason: None }])),
        });
        futures::executor::block_on(stream.collect())
    }

    #[test]
    fn tool_calls_past_their_bounds_end_the_stream_with_a_limit_error() {
        let limits = WireLimits {
            max_tool_calls: 2,
            max_tool_argument_bytes: 10,
            ..WireLimits::default()
        };
        let bytes = |call, bytes| StreamChunk::ArgumentBytes { call, bytes };
        let within = through_decode_stream(
            vec![vec![bytes(1, 0), bytes(1, 10)], vec![bytes(2, 5)]],
            limits,
        );
        assert!(within.iter().all(Result::is_ok), "{within:?}");
        let too_long = through_decode_stream(vec![vec![bytes(1, 6)], vec![bytes(1, 5)]], limits);
        let last = too_long.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(last.contains("exceeded 10 B"), "{last}");
        let too_many = through_decode_stream(
            vec![
                vec![bytes(1, 0)],
                vec![bytes(2, 0)],
                vec![bytes(3, 0), bytes(3, 1)],
            ],
            limits,
        );
        assert_eq!(too_many.len(), 3, "nothing after the error: {too_many:?}");
        let last = too_many.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(last.contains("more than 2 tool calls"), "{last}");
    }

    #[test]
    fn arguments_round_trip_and_invalid_json_is_kept() {
        assert_eq!(
            parse_arguments(r#"{"path":"a.rs"}"#),
            json!({"path": "a.rs"})
        );
        assert_eq!(parse_arguments(""), json!({}));
        assert_eq!(parse_arguments("{oops"), json!("{oops"));
        assert_eq!(arguments_text(&json!("{oops")), "{oops");
        assert_eq!(arguments_text(&json!({"a": 1})), r#"{"a":1}"#);
    }
}
