//! Token counting and the per-request estimate.
//!
//! [`TokenCounter`] turns text into a token count; [`TiktokenCounter`] implements it with
//! tiktoken-rs using *ordinary* encoding, so text that looks like a special token
//! (`<|endoftext|>`) is counted as the text it is. [`RequestEstimator`] is the one place
//! that estimates the size of a model request; the tool loop, `/context`, the status line
//! and the headless report all use it.
//!
//! Cost model: the estimator caches the count of every message it has seen, keyed by its
//! position and a cheap shape key (role, part count, byte lengths), so estimating a
//! history that only grew costs O(new content). When the provider reported usage for the
//! previous request, the next estimate is that reported input + output plus the local
//! count of what was added since: exact for the prefix whatever tokenizer the model uses.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::message::{Message, Part};
use crate::tool::ToolDefinition;

/// Tokens added per message for role markers and separators in the provider's framing.
///
/// OpenAI documents 3 tokens per chat message plus the role; Anthropic's framing is of
/// the same order. 4 is a deliberate slight over-estimate: the budget's margin absorbs it.
pub const MESSAGE_FRAMING_TOKENS: usize = 4;
/// Tokens added once per request (reply priming and the system block's own framing).
pub const REQUEST_FRAMING_TOKENS: usize = 3;
/// Tokens added per tool call or tool result part (call id, name and structure).
pub const TOOL_PART_FRAMING_TOKENS: usize = 8;
/// Tokens added per tool definition (the function wrapper around the schema).
pub const TOOL_DEFINITION_FRAMING_TOKENS: usize = 8;

/// Which BPE vocabulary to count with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Encoding {
    /// `o200k_base`: GPT-4o and later OpenAI models. The default.
    #[default]
    #[serde(rename = "o200k")]
    O200kBase,
    /// `cl100k_base`: GPT-4, GPT-3.5 and older.
    #[serde(rename = "cl100k")]
    Cl100kBase,
}

impl Encoding {
    /// Parses `o200k`, `o200k_base`, `cl100k` or `cl100k_base`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "o200k" | "o200k_base" => Some(Self::O200kBase),
            "cl100k" | "cl100k_base" => Some(Self::Cl100kBase),
            _ => None,
        }
    }

    /// The encoding's canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Self::O200kBase => "o200k_base",
            Self::Cl100kBase => "cl100k_base",
        }
    }
}

/// Counts tokens in text.
///
/// Implementations must be deterministic (same text, same count) and cheap to share
/// across threads; callers never assume a particular tokenizer beyond that.
pub trait TokenCounter: Send + Sync {
    /// The number of tokens in `text`, with special-token-looking text counted as text.
    fn count(&self, text: &str) -> usize;
}

/// A [`TokenCounter`] backed by tiktoken-rs's process-wide BPE singletons.
///
/// The first use of an encoding loads it (≈ 0.1 s for o200k); later uses are free.
#[derive(Clone, Copy)]
pub struct TiktokenCounter {
    encoding: Encoding,
    bpe: &'static tiktoken_rs::CoreBPE,
}

impl TiktokenCounter {
    /// A counter for `encoding`.
    pub fn new(encoding: Encoding) -> Self {
        let bpe = match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        Self { encoding, bpe }
    }

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }
}

impl std::fmt::Debug for TiktokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

/// Inputs at least this large are counted on two threads (split at a safe boundary).
pub const PARALLEL_COUNT_MIN_BYTES: usize = 1 << 20;

impl TiktokenCounter {
    /// Counts `text`, splitting it in two at a safe boundary and counting the halves on two
    /// threads when it has at least `min_bytes`.
    fn count_split(&self, text: &str, min_bytes: usize) -> usize {
        if text.len() < min_bytes {
            return self.bpe.encode_ordinary(text).len();
        }
        let Some(split) = safe_split(text) else {
            return self.bpe.encode_ordinary(text).len();
        };
        let (head, tail) = text.split_at(split);
        std::thread::scope(|scope| {
            let tail_count = scope.spawn(|| self.bpe.encode_ordinary(tail).len());
            let head_count = self.bpe.encode_ordinary(head).len();
            match tail_count.join() {
                Ok(count) => head_count + count,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }
}

/// A split point near the middle of `text` that no token can straddle: just after a
/// newline that is followed by an ASCII letter. Both o200k and cl100k pre-tokenize so
/// that a piece never contains a newline followed by a letter (letter pieces may start
/// with one non-letter character, but never `\r` or `\n`; whitespace pieces end before a
/// letter), and BPE merges only within a piece, so the counts of the halves add up
/// exactly to the count of the whole.
fn safe_split(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let middle = bytes.len() / 2;
    (middle.max(1)..bytes.len()).find(|&i| bytes[i - 1] == b'\n' && bytes[i].is_ascii_alphabetic())
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.count_split(text, PARALLEL_COUNT_MIN_BYTES)
    }
}

/// Tokens of one message: its parts plus [`MESSAGE_FRAMING_TOKENS`].
pub fn count_message(counter: &dyn TokenCounter, message: &Message) -> usize {
    let mut total = MESSAGE_FRAMING_TOKENS;
    for part in &message.parts {
        total += match part {
            Part::Text { text } => counter.count(text),
            Part::ToolCall(call) => {
                TOOL_PART_FRAMING_TOKENS
                    + counter.count(&call.name)
                    + count_json(counter, &call.arguments)
            }
            Part::ToolResult(result) => TOOL_PART_FRAMING_TOKENS + counter.count(&result.content),
        };
    }
    total
}

/// Tokens of the tool definitions as sent to the provider.
pub fn count_tools(counter: &dyn TokenCounter, tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|tool| {
            TOOL_DEFINITION_FRAMING_TOKENS
                + counter.count(&tool.name)
                + counter.count(&tool.description)
                + count_json(counter, &tool.parameters)
        })
        .sum()
}

fn count_json(counter: &dyn TokenCounter, value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::String(s) => counter.count(s),
        other => counter.count(&other.to_string()),
    }
}

/// A breakdown of one request's estimated input tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequestEstimate {
    /// System prompt, including its message framing.
    pub system: usize,
    /// Tool definitions.
    pub tools: usize,
    /// Conversation messages, including their framing.
    pub messages: usize,
    /// The estimate of the whole request: what thresholds are compared against.
    pub total: usize,
    /// True when `total` was anchored on usage the provider reported.
    pub anchored_on_reported_usage: bool,
}

/// Estimates the whole request from scratch, without any cache.
///
/// Used where no loop state exists (e.g. `/context` on a resumed session, tests); the
/// tool loop uses [`RequestEstimator`], which returns the same figure for the same input
/// when no usage has been reported.
pub fn estimate_request(
    counter: &dyn TokenCounter,
    system: &str,
    messages: &[Message],
    tools: &[ToolDefinition],
) -> RequestEstimate {
    let system_tokens = system_tokens(counter, system);
    let tools_tokens = count_tools(counter, tools);
    let message_tokens: usize = messages.iter().map(|m| count_message(counter, m)).sum();
    RequestEstimate {
        system: system_tokens,
        tools: tools_tokens,
        messages: message_tokens,
        total: REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens,
        anchored_on_reported_usage: false,
    }
}

fn system_tokens(counter: &dyn TokenCounter, system: &str) -> usize {
    if system.is_empty() {
        0
    } else {
        MESSAGE_FRAMING_TOKENS + counter.count(system)
    }
}

/// A cheap fingerprint of a message used to validate cached counts without hashing its
/// content: role, number of parts and the byte length of every part's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ShapeKey {
    role: crate::message::Role,
    parts: usize,
    bytes: usize,
    first_len: usize,
}

impl ShapeKey {
    fn of(message: &Message) -> Self {
        let mut bytes = 0;
        let mut first_len = 0;
        for (i, part) in message.parts.iter().enumerate() {
            let len = match part {
                Part::Text { text } => text.len(),
                Part::ToolCall(call) => call.name.len() + call.id.len(),
                Part::ToolResult(result) => result.content.len() + result.call_id.len(),
            };
            if i == 0 {
                first_len = len;
            }
            bytes += len;
        }
        Self {
            role: message.role,
            parts: message.parts.len(),
            bytes,
            first_len,
        }
    }
}

/// Usage the provider reported for a request, and how much history it covered.
#[derive(Debug, Clone, Copy)]
struct ReportedAnchor {
    tokens: usize,
    covered_messages: usize,
}

/// The incremental per-request estimator used by the tool loop.
///
/// Contract: the caller passes the *current* history on every call. Messages already seen
/// at the same position with the same shape key are not counted again. A history that was
/// rewritten (compaction, pruning) is detected by the shape check and recounted from the
/// first difference; callers that rewrite history in place with identical byte lengths
/// must call [`RequestEstimator::invalidate`].
pub struct RequestEstimator {
    counter: Arc<dyn TokenCounter>,
    cached: Vec<(ShapeKey, usize)>,
    system: Option<(String, usize)>,
    tools: Option<(usize, usize)>,
    anchor: Option<ReportedAnchor>,
}

impl std::fmt::Debug for RequestEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestEstimator")
            .field("cached_messages", &self.cached.len())
            .field("anchor", &self.anchor)
            .finish()
    }
}

impl RequestEstimator {
    /// A fresh estimator with an empty cache.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        Self {
            counter,
            cached: Vec::new(),
            system: None,
            tools: None,
            anchor: None,
        }
    }

    /// The counter this estimator uses.
    pub fn counter(&self) -> &Arc<dyn TokenCounter> {
        &self.counter
    }

    /// Forgets every cached count and any reported usage.
    pub fn invalidate(&mut self) {
        self.cached.clear();
        self.system = None;
        self.tools = None;
        self.anchor = None;
    }

    /// Records the usage the provider reported for the request just answered.
    ///
    /// `covered_messages` is the length of the history whose tokens the report covers:
    /// the messages sent plus the assistant reply appended after it. Reported input plus
    /// output then stands for that whole prefix, system prompt and tools included.
    pub fn record_usage(&mut self, input_tokens: u64, output_tokens: u64, covered_messages: usize) {
        let tokens =
            usize::try_from(input_tokens.saturating_add(output_tokens)).unwrap_or(usize::MAX);
        self.anchor = Some(ReportedAnchor {
            tokens,
            covered_messages,
        });
    }

    /// Drops the reported-usage anchor (e.g. after history was replaced).
    pub fn clear_usage(&mut self) {
        self.anchor = None;
    }

    /// Estimates a request of `system` + `messages` + `tools`.
    pub fn estimate(
        &mut self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> RequestEstimate {
        let counter = Arc::clone(&self.counter);
        let counter = counter.as_ref();

        let system_tokens = match &self.system {
            Some((text, tokens)) if text == system => *tokens,
            _ => {
                let tokens = system_tokens(counter, system);
                self.system = Some((system.to_owned(), tokens));
                tokens
            }
        };
        let tools_key = tools_fingerprint(tools);
        let tools_tokens = match self.tools {
            Some((key, tokens)) if key == tools_key => tokens,
            _ => {
                let tokens = count_tools(counter, tools);
                self.tools = Some((tools_key, tokens));
                tokens
            }
        };

        // Validate the cache against the current history and recount from the first
        // message that differs.
        let mut valid = 0;
        while valid < self.cached.len()
            && valid < messages.len()
            && self.cached[valid].0 == ShapeKey::of(&messages[valid])
        {
            valid += 1;
        }
        if valid < self.cached.len() {
            self.cached.truncate(valid);
            if self.anchor.is_some_and(|a| a.covered_messages > valid) {
                self.anchor = None;
            }
        }
        for message in &messages[valid..] {
            self.cached
                .push((ShapeKey::of(message), count_message(counter, message)));
        }
        let message_tokens: usize = self.cached.iter().map(|(_, t)| t).sum();

        let local_total = REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens;
        let anchored = self
            .anchor
            .filter(|a| a.covered_messages <= messages.len())
            .map(|a| {
                let added: usize = self.cached[a.covered_messages..]
                    .iter()
                    .map(|(_, t)| t)
                    .sum();
                a.tokens + added
            });
        RequestEstimate {
            system: system_tokens,
            tools: tools_tokens,
            messages: message_tokens,
            total: anchored.unwrap_or(local_total),
            anchored_on_reported_usage: anchored.is_some(),
        }
    }
}

fn tools_fingerprint(tools: &[ToolDefinition]) -> usize {
    tools
        .iter()
        .map(|t| t.name.len() * 31 + t.description.len() * 7 + 1)
        .fold(tools.len(), |acc, x| {
            acc.wrapping_mul(1_000_003).wrapping_add(x)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn o200k() -> TiktokenCounter {
        TiktokenCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn hello_world_is_two_tokens_in_both_encodings() {
        assert_eq!(o200k().count("hello world"), 2);
        assert_eq!(
            TiktokenCounter::new(Encoding::Cl100kBase).count("hello world"),
            2
        );
    }

    #[test]
    fn empty_text_is_zero_tokens() {
        assert_eq!(o200k().count(""), 0);
    }

    #[test]
    fn special_token_text_is_counted_as_ordinary_text() {
        // As a special token this would be 1; as text it is several ordinary tokens.
        assert!(o200k().count("<|endoftext|>") > 1);
    }

    #[test]
    fn encodings_differ_on_non_english_text() {
        let text = "Здравствуйте, как дела? これは日本語のテキストです。";
        let o = o200k().count(text);
        let c = TiktokenCounter::new(Encoding::Cl100kBase).count(text);
        assert_ne!(o, c);
    }

    #[test]
    fn counting_halves_on_two_threads_gives_exactly_the_whole_count() {
        let text = "fn main() {\n    println!(\"héllo\");\n}\nerror[E0308]: mismatched types\n  --> src/lib.rs:3:5\n\n\nDone. Ünïcode\r\nnext line's text\n"
            .repeat(40);
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let counter = TiktokenCounter::new(encoding);
            let whole = counter.bpe.encode_ordinary(&text).len();
            assert!(safe_split(&text).is_some());
            assert_eq!(counter.count_split(&text, 0), whole, "{encoding:?}");
        }
        assert_eq!(safe_split("no newline followed by a letter\n\n  "), None);
        // Additivity holds at every such boundary, not only the one picked.
        let sample = "a\nb\n\nc  \nd\r\ne's\n'f\n1\ng:\nh\n";
        let counter = TiktokenCounter::new(Encoding::O200kBase);
        let whole = counter.bpe.encode_ordinary(sample).len();
        let bytes = sample.as_bytes();
        for i in 1..bytes.len() {
            if bytes[i - 1] == b'\n' && bytes[i].is_ascii_alphabetic() {
                let (a, b) = sample.split_at(i);
                let parts =
                    counter.bpe.encode_ordinary(a).len() + counter.bpe.encode_ordinary(b).len();
                assert_eq!(parts, whole, "split at {i}");
            }
        }
    }

    #[test]
    fn encoding_names_parse() {
        assert_eq!(Encoding::parse("o200k"), Some(Encoding::O200kBase));
        assert_eq!(Encoding::parse("cl100k_base"), Some(Encoding::Cl100kBase));
        assert_eq!(Encoding::parse("p50k"), None);
    }

    /// Counts how many bytes it was asked to tokenize, to prove caching.
    struct CountingCounter {
        inner: TiktokenCounter,
        bytes_seen: AtomicUsize,
    }

    impl TokenCounter for CountingCounter {
        fn count(&self, text: &str) -> usize {
            self.bytes_seen.fetch_add(text.len(), Ordering::SeqCst);
            self.inner.count(text)
        }
    }

    fn history(n: usize) -> Vec<Message> {
        (0..n)
            .flat_map(|i| {
                [
                    Message::user(format!("question number {i} about the parser")),
                    Message::assistant(format!("answer {i}: the parser handles that case")),
                ]
            })
            .collect()
    }

    #[test]
    fn estimator_matches_the_full_estimate_without_usage() {
        let counter = Arc::new(o200k());
        let tools = vec![ToolDefinition {
            name: "read".into(),
            description: "Read a file".into(),
            parameters: serde_json::json!({"type": "object"}),
        }];
        let msgs = history(10);
        let mut estimator = RequestEstimator::new(counter.clone());
        let incremental = estimator.estimate("You are pith.", &msgs, &tools);
        let full = estimate_request(counter.as_ref(), "You are pith.", &msgs, &tools);
        assert_eq!(incremental, full);
    }

    #[test]
    fn unchanged_history_is_not_tokenized_again() {
        let counter = Arc::new(CountingCounter {
            inner: o200k(),
            bytes_seen: AtomicUsize::new(0),
        });
        let mut estimator = RequestEstimator::new(counter.clone());
        let mut msgs = history(50);
        let first = estimator.estimate("sys", &msgs, &[]);
        let after_first = counter.bytes_seen.load(Ordering::SeqCst);
        let second = estimator.estimate("sys", &msgs, &[]);
        assert_eq!(first, second);
        assert_eq!(
            counter.bytes_seen.load(Ordering::SeqCst),
            after_first,
            "recounted an unchanged history"
        );

        msgs.push(Message::user("one more"));
        estimator.estimate("sys", &msgs, &[]);
        assert_eq!(
            counter.bytes_seen.load(Ordering::SeqCst) - after_first,
            "one more".len(),
            "only the new message should be tokenized"
        );
    }

    #[test]
    fn rewritten_history_is_recounted() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let msgs = history(20);
        let before = estimator.estimate("sys", &msgs, &[]);
        let replaced = vec![Message::user(
            "<compacted_context>short</compacted_context>",
        )];
        let after = estimator.estimate("sys", &replaced, &[]);
        assert!(after.total < before.total);
        assert_eq!(
            after,
            estimate_request(counter.as_ref(), "sys", &replaced, &[])
        );
    }

    #[test]
    fn reported_usage_anchors_the_prefix_and_adds_only_new_content() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let mut msgs = history(3);
        estimator.estimate("sys", &msgs, &[]);
        // The provider says the request + reply used 120_000 + 40 tokens.
        estimator.record_usage(120_000, 40, msgs.len());
        let added = Message::tool_result("c1", "src/lib.rs:1:fn main() {}", false);
        msgs.push(added.clone());
        let estimate = estimator.estimate("sys", &msgs, &[]);
        assert!(estimate.anchored_on_reported_usage);
        assert_eq!(
            estimate.total,
            120_040 + count_message(counter.as_ref(), &added)
        );
    }

    #[test]
    fn rewriting_the_covered_prefix_drops_the_anchor() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let msgs = history(3);
        estimator.estimate("sys", &msgs, &[]);
        estimator.record_usage(120_000, 40, msgs.len());
        let replaced = vec![Message::user("summary")];
        let estimate = estimator.estimate("sys", &replaced, &[]);
        assert!(!estimate.anchored_on_reported_usage);
        assert!(estimate.total < 1_000);
    }
}
