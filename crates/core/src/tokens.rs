//! Token counting and the per-request estimate.
//!
//! [`TokenCounter`] turns text into a token count; [`BpeCounter`] (module `bpe`)
//! implements it exactly as tiktoken's ordinary encoding does (`o200k_base`,
//! `cl100k_base`), from tables compiled into the binary. It knows no special tokens, so
//! text that looks like one (`<|endoftext|>`) is counted as the text it is.
//! [`RequestEstimator`] is the one place that estimates the size
//! of a model request; the tool loop, `/context`, the status line and the headless report
//! all use it.
//!
//! Cost model: the estimator caches the count of every message it has seen, keyed by its
//! position and a cheap shape key (role, part count, byte lengths), so estimating a
//! history that only grew costs O(new content). When the provider reported usage for the
//! previous request, the next estimate is that reported input + output plus the local
//! count of what was added since: exact for the prefix whatever tokenizer the model uses.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

mod bound;

pub use self::bound::{upper_bound_estimate, UPPER_BOUND_HEADROOM_PERCENT};
pub use crate::bpe::BpeCounter;
use crate::context::calibration::{Calibration, Evidence};
use crate::protocol::message::{Message, Part};
use crate::protocol::tool::ToolDefinition;

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

    /// The tokens of an image of `width` × `height` pixels. The default is the larger of
    /// the published formulas ([`ImageFormula::Conservative`]).
    fn image_tokens(&self, width: u32, height: u32) -> usize {
        ImageFormula::Conservative.tokens(width, height)
    }

    /// True when [`TokenCounter::count`] answers at once; false while the tables it
    /// needs are still being built (it would wait for them). The default is true.
    fn is_ready(&self) -> bool {
        true
    }
}

/// How a provider counts an image, from its published formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormula {
    /// Anthropic: an image larger than 1568 px on its long edge (or about 1.15
    /// megapixels) is scaled down first, then costs `width × height / 750` tokens.
    Anthropic,
    /// OpenAI (GPT-4o and later, `detail: high`/`auto`): scaled to fit 2048 × 2048, then
    /// its short side to at most 768 px; `85 + 170 × tiles`, one tile per 512 × 512
    /// square (partial tiles count).
    OpenAiTiles,
    /// The larger of the two: for a provider whose formula pith does not know.
    #[default]
    Conservative,
}

impl ImageFormula {
    /// Estimated input tokens of an image of `width` × `height` pixels.
    pub fn tokens(self, width: u32, height: u32) -> usize {
        match self {
            ImageFormula::Anthropic => anthropic_image_tokens(width, height),
            ImageFormula::OpenAiTiles => openai_image_tokens(width, height),
            ImageFormula::Conservative => {
                anthropic_image_tokens(width, height).max(openai_image_tokens(width, height))
            }
        }
    }
}

/// Scales `(w, h)` down (never up) so that it fits `max_long` on its long edge and
/// `max_short` on its short edge, keeping the aspect ratio.
pub fn fit_within(width: u32, height: u32, max_long: u32, max_short: u32) -> (u32, u32) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let (long, short) = if w >= h { (w, h) } else { (h, w) };
    let scale = (f64::from(max_long) / long)
        .min(f64::from(max_short) / short)
        .min(1.0);
    let scaled = |v: f64| ((v * scale).round() as u32).max(1);
    (scaled(w), scaled(h))
}

fn anthropic_image_tokens(width: u32, height: u32) -> usize {
    let (mut w, mut h) = fit_within(width, height, 1568, 1568);
    let pixels = f64::from(w) * f64::from(h);
    // Anthropic's largest unresized square is 1092 × 1092 ("about 1.15 megapixels").
    const MAX_PIXELS: f64 = 1092.0 * 1092.0;
    if pixels > MAX_PIXELS {
        let scale = (MAX_PIXELS / pixels).sqrt();
        w = ((f64::from(w) * scale) as u32).max(1);
        h = ((f64::from(h) * scale) as u32).max(1);
    }
    (u64::from(w) * u64::from(h)).div_ceil(750) as usize
}

fn openai_image_tokens(width: u32, height: u32) -> usize {
    let (w, h) = fit_within(width, height, 2048, 2048);
    let (w, h) = fit_within(w, h, u32::MAX, 768);
    let tiles = w.div_ceil(512) as usize * h.div_ceil(512) as usize;
    85 + 170 * tiles
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
            Part::Reasoning(reasoning) => count_reasoning(counter, reasoning),
            Part::Image(image) => count_image(counter, image),
        };
    }
    total
}

/// Tokens of an image part: its framing plus the provider's formula for its size.
pub fn count_image(counter: &dyn TokenCounter, image: &crate::protocol::message::Image) -> usize {
    TOOL_PART_FRAMING_TOKENS + counter.image_tokens(image.width, image.height)
}

/// Tokens of a reasoning part as it goes back to the provider: nothing for reasoning
/// that is never sent (no signature, nothing encrypted); otherwise its text plus its
/// opaque payload at 4 bytes a token (encrypted reasoning is the reasoning itself, in a
/// form only the provider reads).
pub fn count_reasoning(
    counter: &dyn TokenCounter,
    reasoning: &crate::protocol::message::Reasoning,
) -> usize {
    if !reasoning.is_replayable() {
        return 0;
    }
    TOOL_PART_FRAMING_TOKENS
        + counter.count(&reasoning.text)
        + reasoning
            .encrypted
            .as_ref()
            .map_or(0, |e| e.len().div_ceil(4))
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
    /// The estimate of the whole request in the server's terms: what thresholds are
    /// compared against. Anchored on a plausible usage report, else pith's count times
    /// the conversation's calibration (see [`crate::context::calibration`]).
    pub total: usize,
    /// True when `total` was anchored on usage the provider reported.
    pub anchored_on_reported_usage: bool,
    /// pith's own count of the request (system + tools + messages + framing), uncalibrated.
    #[serde(default)]
    pub counted: usize,
    /// True when every figure is an upper bound (texts counted as their bytes, before the
    /// exact counter was ready), not a count. See [`upper_bound_estimate`].
    #[serde(default)]
    pub upper_bound: bool,
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
        counted: REQUEST_FRAMING_TOKENS + system_tokens + tools_tokens + message_tokens,
        upper_bound: false,
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
    role: crate::protocol::message::Role,
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
                Part::Reasoning(reasoning) => {
                    reasoning.text.len()
                        + reasoning.encrypted.as_ref().map_or(0, String::len)
                        + reasoning.signature.as_ref().map_or(0, String::len)
                }
                Part::Image(image) => image.data.len() + image.path.len(),
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

/// Usage the provider reported for a request (a plausible report), and how much history
/// it covered.
#[derive(Debug, Clone, Copy)]
struct ReportedAnchor {
    tokens: usize,
    covered_messages: usize,
}

/// The incremental per-request estimator used by the tool loop.
///
/// Usage is evidence, not truth: a report is weighed against pith's count of the request
/// it covers ([`Calibration`]); a plausible one anchors the estimate and calibrates the
/// count of what is added after it, an implausible one is ignored.
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
    calibration: Calibration,
    /// Set by [`RequestEstimator::with_upper_bounds_below`]: the largest upper bound the
    /// estimate may be while the counter is not ready.
    bound_limit: Option<usize>,
}

impl std::fmt::Debug for RequestEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestEstimator")
            .field("cached_messages", &self.cached.len())
            .field("anchor", &self.anchor)
            .field("calibration", &self.calibration.factor())
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
            calibration: Calibration::default(),
            bound_limit: None,
        }
    }

    /// The conversation's calibration (server tokens per counted token).
    pub fn calibration(&self) -> Calibration {
        self.calibration
    }

    /// The server refused a request pith counted at `counted` as longer than `window`:
    /// counts from now on are scaled up accordingly (see
    /// [`Calibration::learn_refusal`]), and no report is anchored on. Returns the factor.
    pub fn learn_refusal(&mut self, counted: u64, window: u64) -> f64 {
        self.anchor = None;
        self.calibration.learn_refusal(counted, window)
    }

    /// Believes usage reports within `band` (default: 0.5× to 2× pith's count).
    pub fn set_usage_band(&mut self, band: crate::context::calibration::Band) {
        self.calibration = Calibration::within(band);
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

    /// Records the usage the provider reported for the request just answered, which
    /// pith counted at `counted` tokens when it sent it.
    ///
    /// `covered_messages` is the length of the history whose tokens the report covers:
    /// the messages sent plus the assistant reply appended after it. A plausible report's
    /// input plus output then stands for that whole prefix, system prompt and tools
    /// included, and its ratio to `counted` becomes the calibration. An implausible one
    /// drops any anchor: the estimate is pith's count times the calibration.
    pub fn record_usage(
        &mut self,
        input_tokens: u64,
        output_tokens: u64,
        covered_messages: usize,
        counted: u64,
    ) -> Evidence {
        let evidence = self.calibration.observe_history(input_tokens, counted);
        self.anchor = evidence.is_plausible().then(|| ReportedAnchor {
            tokens: usize::try_from(input_tokens.saturating_add(output_tokens))
                .unwrap_or(usize::MAX),
            covered_messages,
        });
        evidence
    }

    /// Weighs a report for a request that was not the history (a fitted request, a
    /// summary request): it may calibrate, it never anchors.
    pub fn observe_usage(&mut self, input_tokens: u64, counted: u64) -> Evidence {
        self.calibration.observe(input_tokens, counted)
    }

    /// pith's count of a request that is not the history (a fitted request), without
    /// touching the cache.
    pub fn count_request(
        &self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> usize {
        estimate_request(self.counter.as_ref(), system, messages, tools).total
    }

    /// Drops the reported-usage anchor (e.g. after history was replaced).
    pub fn clear_usage(&mut self) {
        self.anchor = None;
    }

    /// The history was rewritten: drops the anchor, and the next report must follow the
    /// rewrite (see [`Calibration::mark_rewrite`]).
    pub fn rewritten(&mut self) {
        self.anchor = None;
        self.calibration.mark_rewrite();
    }

    /// Estimates a request of `system` + `messages` + `tools`: an exact count, or an upper
    /// bound far below the threshold before the counter is ready (see
    /// [`RequestEstimator::with_upper_bounds_below`]; [`RequestEstimate::upper_bound`]
    /// tells which).
    pub fn estimate(
        &mut self,
        system: &str,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> RequestEstimate {
        if let Some(bound) = self.upper_bound_instead(system, messages, tools) {
            return bound;
        }
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
        let scale = |counted: usize| {
            usize::try_from(self.calibration.scale(counted as u64)).unwrap_or(usize::MAX)
        };
        let anchored = self
            .anchor
            .filter(|a| a.covered_messages <= messages.len())
            .map(|a| {
                let added: usize = self.cached[a.covered_messages..]
                    .iter()
                    .map(|(_, t)| t)
                    .sum();
                a.tokens.saturating_add(scale(added))
            });
        RequestEstimate {
            system: system_tokens,
            tools: tools_tokens,
            messages: message_tokens,
            total: anchored.unwrap_or_else(|| scale(local_total)),
            anchored_on_reported_usage: anchored.is_some(),
            counted: local_total,
            upper_bound: false,
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
    use crate::protocol::message::Message;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn o200k() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn image_formulas_follow_the_published_examples() {
        // Anthropic's table: 1092×1092 ≈ 1590 tokens, 200×200 ≈ 54.
        assert_eq!(ImageFormula::Anthropic.tokens(1092, 1092), 1590);
        assert_eq!(ImageFormula::Anthropic.tokens(200, 200), 54);
        // Larger images are scaled down first: never more than ~1.15 MP / 750.
        assert!(ImageFormula::Anthropic.tokens(4000, 3000) <= 1590);
        // OpenAI: 1024×1024 → 768×768 → 4 tiles → 85 + 680; 2048×4096 → 768×1536 → 6 tiles.
        assert_eq!(ImageFormula::OpenAiTiles.tokens(1024, 1024), 765);
        assert_eq!(ImageFormula::OpenAiTiles.tokens(2048, 4096), 1105);
        assert_eq!(ImageFormula::OpenAiTiles.tokens(100, 100), 255);
        assert_eq!(ImageFormula::Conservative.tokens(1092, 1092), 1590);
        assert_eq!(fit_within(4000, 1000, 2000, 2000), (2000, 500));
        assert_eq!(fit_within(10, 20, 2000, 2000), (10, 20));
    }

    #[test]
    fn reasoning_counts_only_when_it_goes_back_and_images_by_formula() {
        use crate::protocol::message::{Image, Reasoning};
        let counter = o200k().with_image_formula(ImageFormula::OpenAiTiles);
        let shown_only = Message {
            role: crate::protocol::message::Role::Assistant,
            parts: vec![Part::Reasoning(Reasoning {
                origin: "openai-chat".into(),
                text: "a long chain of thought".repeat(50),
                ..Reasoning::default()
            })],
        };
        assert_eq!(count_message(&counter, &shown_only), MESSAGE_FRAMING_TOKENS);
        let signed = Message {
            role: crate::protocol::message::Role::Assistant,
            parts: vec![Part::Reasoning(Reasoning {
                origin: "anthropic".into(),
                text: "hello world".into(),
                signature: Some("sig".into()),
                ..Reasoning::default()
            })],
        };
        assert_eq!(
            count_message(&counter, &signed),
            MESSAGE_FRAMING_TOKENS + TOOL_PART_FRAMING_TOKENS + 2
        );
        let image = Message {
            role: crate::protocol::message::Role::User,
            parts: vec![Part::Image(Image {
                path: "a.png".into(),
                media_type: "image/png".into(),
                width: 1024,
                height: 1024,
                data: "x".repeat(100_000),
            })],
        };
        assert_eq!(
            count_message(&counter, &image),
            MESSAGE_FRAMING_TOKENS + TOOL_PART_FRAMING_TOKENS + 765,
            "an image costs its formula, not its base64 text"
        );
    }

    #[test]
    fn empty_text_is_zero_tokens() {
        assert_eq!(o200k().count(""), 0);
    }

    #[test]
    fn encoding_names_parse() {
        assert_eq!(Encoding::parse("o200k"), Some(Encoding::O200kBase));
        assert_eq!(Encoding::parse("cl100k_base"), Some(Encoding::Cl100kBase));
        assert_eq!(Encoding::parse("p50k"), None);
    }

    /// Counts how many bytes it was asked to tokenize, to prove caching.
    struct CountingCounter {
        inner: BpeCounter,
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
    fn a_plausible_report_anchors_the_prefix_and_calibrates_what_is_added() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let mut msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        assert_eq!(sent.total, sent.counted, "no report yet: the count itself");
        // The server counts 25% more than o200k (and 40 output tokens).
        let reported = sent.counted as u64 * 5 / 4;
        let evidence = estimator.record_usage(reported, 40, msgs.len(), sent.counted as u64);
        assert!(evidence.is_plausible());
        let added = Message::tool_result("c1", "src/lib.rs:1:fn main() {}", false);
        msgs.push(added.clone());
        let estimate = estimator.estimate("sys", &msgs, &[]);
        assert!(estimate.anchored_on_reported_usage);
        let factor = estimator.calibration().factor();
        let added_tokens = count_message(counter.as_ref(), &added) as f64;
        assert_eq!(
            estimate.total as u64,
            reported + 40 + (added_tokens * factor).ceil() as u64
        );
        assert_eq!(
            estimate.counted,
            sent.counted + count_message(counter.as_ref(), &added)
        );
    }

    #[test]
    fn an_implausible_report_is_not_anchored_on() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter);
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        // A server that reports a fixed 100 input tokens, and one that reports 30,000.
        for reported in [1, sent.counted as u64 * 3, 30_000] {
            let evidence = estimator.record_usage(reported, 40, msgs.len(), sent.counted as u64);
            assert!(!evidence.is_plausible(), "{reported}");
            let estimate = estimator.estimate("sys", &msgs, &[]);
            assert!(!estimate.anchored_on_reported_usage);
            assert_eq!(estimate.total, estimate.counted);
        }
    }

    #[test]
    fn without_an_anchor_the_count_is_scaled_by_the_calibration() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter);
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        // A fitted request told the calibration (×1.5) without anchoring.
        estimator.observe_usage(3_000, 2_000);
        let estimate = estimator.estimate("sys", &msgs, &[]);
        assert!(!estimate.anchored_on_reported_usage);
        assert_eq!(estimate.total, (sent.counted as f64 * 1.5).ceil() as usize);
    }

    #[test]
    fn rewriting_the_covered_prefix_drops_the_anchor() {
        let counter = Arc::new(o200k());
        let mut estimator = RequestEstimator::new(counter.clone());
        let msgs = history(3);
        let sent = estimator.estimate("sys", &msgs, &[]);
        estimator.record_usage(sent.counted as u64, 40, msgs.len(), sent.counted as u64);
        let replaced = vec![Message::user("summary")];
        let estimate = estimator.estimate("sys", &replaced, &[]);
        assert!(!estimate.anchored_on_reported_usage);
        assert!(estimate.total < 1_000);
    }
}
