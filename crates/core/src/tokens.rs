//! Token counting and the per-request estimate.
//!
//! [`TokenCounter`] turns text into a token count; [`BpeCounter`] implements it with the
//! `bpe-openai` crate, which gives the same token ids as tiktoken (`o200k_base`,
//! `cl100k_base`) and counts without building a vector. It knows no special tokens, so
//! text that looks like one (`<|endoftext|>`) is counted as the text it is, as tiktoken's
//! *ordinary* encoding does. [`RequestEstimator`] is the one place that estimates the size
//! of a model request; the tool loop, `/context`, the status line and the headless report
//! all use it.
//!
//! Cost model: the estimator caches the count of every message it has seen, keyed by its
//! position and a cheap shape key (role, part count, byte lengths), so estimating a
//! history that only grew costs O(new content). When the provider reported usage for the
//! previous request, the next estimate is that reported input + output plus the local
//! count of what was added since: exact for the prefix whatever tokenizer the model uses.

use std::sync::{Arc, LazyLock};

use serde::{Deserialize, Serialize};

use crate::context::calibration::{Calibration, Evidence};
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

    /// The tokens of an image of `width` × `height` pixels. The default is the larger of
    /// the published formulas ([`ImageFormula::Conservative`]).
    fn image_tokens(&self, width: u32, height: u32) -> usize {
        ImageFormula::Conservative.tokens(width, height)
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

/// A [`TokenCounter`] backed by bpe-openai's process-wide tokenizers.
///
/// Counts equal tiktoken's `encode_ordinary(text).len()` (the tests compare the two on
/// varied, random and whole-vocabulary text). Like tiktoken, a pre-token that is itself
/// in the vocabulary counts 1 after one hash lookup; any other is counted by bpe's
/// backtracking encoder without materialising its tokens. The first use of an encoding
/// in a process loads its tables (≈ 60 ms for o200k in a release build, ≈ 30 ms for
/// cl100k); later uses are free.
#[derive(Clone, Copy)]
pub struct BpeCounter {
    encoding: Encoding,
    loaded: &'static Loaded,
    images: ImageFormula,
}

/// One encoding's tokenizer and its vocabulary lookup, loaded once per process.
struct Loaded {
    tokenizer: &'static bpe_openai::Tokenizer,
    vocabulary: Vocabulary,
}

static O200K: LazyLock<Loaded> = LazyLock::new(|| Loaded::new(bpe_openai::o200k_base()));
static CL100K: LazyLock<Loaded> = LazyLock::new(|| Loaded::new(bpe_openai::cl100k_base()));

impl Loaded {
    fn new(tokenizer: &'static bpe_openai::Tokenizer) -> Self {
        Self {
            tokenizer,
            vocabulary: Vocabulary::new(&tokenizer.bpe),
        }
    }
}

/// Open-addressing hash set of a vocabulary's token ids, keyed by the token's bytes.
///
/// Answers "is this pre-token exactly one token?", which is true for ~90% of the pieces
/// of ordinary text and code: such a piece counts 1 in tiktoken and in bpe alike (every
/// token encodes to itself; bpe-openai's build asserts it and a test here checks it), so
/// the lookup only skips work, never changes a count.
struct Vocabulary {
    /// Token id per slot, or [`Vocabulary::EMPTY`]; at most half the slots are used.
    slots: Box<[u32]>,
    /// `slots.len() - 1` (the length is a power of two).
    mask: usize,
}

impl Vocabulary {
    const EMPTY: u32 = u32::MAX;

    fn new(bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding) -> Self {
        let tokens = bpe.num_tokens();
        let len = (tokens * 2).next_power_of_two();
        let mut slots = vec![Self::EMPTY; len].into_boxed_slice();
        let mask = len - 1;
        for id in (0..tokens).filter_map(|id| u32::try_from(id).ok()) {
            let mut slot = piece_hash(bpe.token_bytes(id)) & mask;
            while slots[slot] != Self::EMPTY {
                slot = (slot + 1) & mask;
            }
            slots[slot] = id;
        }
        Self { slots, mask }
    }

    /// True when `piece` is exactly the bytes of one token of `bpe`.
    fn contains(
        &self,
        bpe: &bpe_openai::byte_pair_encoding::BytePairEncoding,
        piece: &[u8],
    ) -> bool {
        let mut slot = piece_hash(piece) & self.mask;
        loop {
            match self.slots[slot] {
                Self::EMPTY => return false,
                id if bpe.token_bytes(id) == piece => return true,
                _ => slot = (slot + 1) & self.mask,
            }
        }
    }
}

/// A fast, non-cryptographic hash of a short byte string (Fx-style, 8 bytes at a time).
fn piece_hash(bytes: &[u8]) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        hash = (hash.rotate_left(5) ^ u64::from_le_bytes(w)).wrapping_mul(K);
    }
    // Fold the well-mixed high bits into the low bits the mask keeps.
    (hash ^ (hash >> 32)) as usize
}

impl BpeCounter {
    /// A counter for `encoding`, loading its tables if this process has not yet.
    pub fn new(encoding: Encoding) -> Self {
        let loaded = match encoding {
            Encoding::O200kBase => &*O200K,
            Encoding::Cl100kBase => &*CL100K,
        };
        Self {
            encoding,
            loaded,
            images: ImageFormula::default(),
        }
    }

    /// The same counter, counting images with `formula` (the provider's).
    pub fn with_image_formula(mut self, formula: ImageFormula) -> Self {
        self.images = formula;
        self
    }

    /// The encoding this counter uses.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// Counts `text` on the calling thread: pre-tokenize, then count each piece.
    ///
    /// o200k and cl100k do not NFC-normalise, so the text is split as it is.
    fn count_serial(&self, text: &str) -> usize {
        let Loaded {
            tokenizer,
            vocabulary,
        } = self.loaded;
        tokenizer
            .split(text)
            .map(|piece| {
                let piece = piece.as_bytes();
                if vocabulary.contains(&tokenizer.bpe, piece) {
                    1
                } else {
                    tokenizer.bpe.count(piece)
                }
            })
            .sum()
    }
}

impl std::fmt::Debug for BpeCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpeCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

/// Inputs at least this large are counted on two threads (split at a safe boundary).
pub const PARALLEL_COUNT_MIN_BYTES: usize = 1 << 20;

impl BpeCounter {
    /// Counts `text`, splitting it in two at a safe boundary and counting the halves on two
    /// threads when it has at least `min_bytes`.
    fn count_split(&self, text: &str, min_bytes: usize) -> usize {
        if text.len() < min_bytes {
            return self.count_serial(text);
        }
        let Some(split) = safe_split(text) else {
            return self.count_serial(text);
        };
        let (head, tail) = text.split_at(split);
        std::thread::scope(|scope| {
            let tail_count = scope.spawn(|| self.count_serial(tail));
            let head_count = self.count_serial(head);
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

impl TokenCounter for BpeCounter {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        self.count_split(text, PARALLEL_COUNT_MIN_BYTES)
    }

    fn image_tokens(&self, width: u32, height: u32) -> usize {
        self.images.tokens(width, height)
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
            Part::Reasoning(reasoning) => count_reasoning(counter, reasoning),
            Part::Image(image) => count_image(counter, image),
        };
    }
    total
}

/// Tokens of an image part: its framing plus the provider's formula for its size.
pub fn count_image(counter: &dyn TokenCounter, image: &crate::message::Image) -> usize {
    TOOL_PART_FRAMING_TOKENS + counter.image_tokens(image.width, image.height)
}

/// Tokens of a reasoning part as it goes back to the provider: nothing for reasoning
/// that is never sent (no signature, nothing encrypted); otherwise its text plus its
/// opaque payload at 4 bytes a token (encrypted reasoning is the reasoning itself, in a
/// form only the provider reads).
pub fn count_reasoning(counter: &dyn TokenCounter, reasoning: &crate::message::Reasoning) -> usize {
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

    fn o200k() -> BpeCounter {
        BpeCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn hello_world_is_two_tokens_in_both_encodings() {
        assert_eq!(o200k().count("hello world"), 2);
        assert_eq!(
            BpeCounter::new(Encoding::Cl100kBase).count("hello world"),
            2
        );
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
        use crate::message::{Image, Reasoning};
        let counter = o200k().with_image_formula(ImageFormula::OpenAiTiles);
        let shown_only = Message {
            role: crate::message::Role::Assistant,
            parts: vec![Part::Reasoning(Reasoning {
                origin: "openai-chat".into(),
                text: "a long chain of thought".repeat(50),
                ..Reasoning::default()
            })],
        };
        assert_eq!(count_message(&counter, &shown_only), MESSAGE_FRAMING_TOKENS);
        let signed = Message {
            role: crate::message::Role::Assistant,
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
            role: crate::message::Role::User,
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
    fn special_token_text_is_counted_as_ordinary_text() {
        // bpe-openai knows no special tokens: `<|endoftext|>` is plain text, as in
        // tiktoken's encode_ordinary, never the single special token.
        for encoding in ENCODINGS {
            let text = "<|endoftext|>";
            let counted = BpeCounter::new(encoding).count(text);
            assert!(counted > 1, "{encoding:?}: {counted}");
            assert_eq!(counted, tiktoken_count(encoding, text), "{encoding:?}");
            assert_eq!(
                tiktoken(encoding).encode_with_special_tokens(text).len(),
                1,
                "{encoding:?}: the special-token reading, which pith must not use"
            );
            let mixed = "done<|endoftext|>next <|fim_prefix|><|im_start|>user\n";
            assert_eq!(
                BpeCounter::new(encoding).count(mixed),
                tiktoken_count(encoding, mixed),
                "{encoding:?}"
            );
        }
    }

    const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

    /// tiktoken-rs, the reference implementation the counter must agree with.
    fn tiktoken(encoding: Encoding) -> &'static tiktoken_rs::CoreBPE {
        match encoding {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        }
    }

    /// tiktoken's count: the length of the ordinary encoding.
    fn tiktoken_count(encoding: Encoding, text: &str) -> usize {
        tiktoken(encoding).encode_ordinary(text).len()
    }

    /// Texts chosen to exercise every branch of the o200k and cl100k pre-tokenizers and
    /// the BPE merges behind them.
    fn varied_texts() -> Vec<String> {
        let fixed = [
            "",
            "hello world",
            "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
            "def f(a, b=None):\n    return {'k': [a, b]}  # comment\n\n\nclass C:\n\tpass\n",
            r#"{"name":"read","arguments":{"path":"src/lib.rs","offset":0},"ok":true}"#,
            "error[E0308]: mismatched types\n  --> src/lib.rs:3:5\n   |\n3  |     x\n   |     ^ expected `u8`",
            "Ünïcödé façade naïve café — “quoted” ‘single’ … ½ ß ẞ",
            "Здравствуйте, как дела? Γειά σου κόσμε. مرحبا بالعالم. नमस्ते दुनिया. สวัสดีชาวโลก",
            "これは日本語のテキストです。中文字符测试，标点符号！한국어 문장입니다.",
            "emoji: 👍🏽 🚀🔥 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 keycap 1️⃣ ✔︎",
            "a    b\t\t\tc   \n\n\n   d  \n \n\t\n",
            "   leading spaces and trailing spaces   ",
            " \u{3000}\u{3000}ideographic\u{a0}\u{a0}no-break\u{2009}thin\u{200b}zero-width",
            "\n\n\n",
            "   ",
            "12345678901234567890 3.14159265358979323846 1,000,000 0x7fffffff 1e-10 ١٢٣٤٥",
            "line one\r\nline two\r\n\r\n  indented\r\n\r\r\n\n\r",
            "He'S here, they'll go, I'M sure, we'VE, you'D, don't, DON'T, 'll alone, ''s, it’s",
            "camelCaseIdentifier HTTPServerError XMLHttpRequest snake_case_name SCREAMING_CASE",
            "!!!???...---///***  a//b  ===\n  <<<>>> ||| && ->  => :: ;; @#$%^&",
            "e\u{301} a\u{308}\u{304} Z̤̈a̫͛l̢g͛o",
            "\u{0}\u{1}\u{7}\u{1b}[31mred\u{1b}[0m \u{7f} \u{fffd} \u{feff}bom",
            "https://example.com/path?q=1&r=two#frag /usr/local/bin/pith ~/.config/pith/x.toml",
            "<compacted_context>\n<summary>short</summary>\n</compacted_context>",
        ];
        let mut texts: Vec<String> = fixed.iter().map(|t| (*t).to_owned()).collect();
        texts.push("a".repeat(3_000));
        texts.push("ab".repeat(1_500));
        texts.push(format!("{}x", " ".repeat(1_000)));
        texts.push("9".repeat(1_001));
        texts.push("日本".repeat(700));
        texts.push("/*".repeat(800));
        texts.push(fixed.concat().repeat(3));
        texts
    }

    #[test]
    fn counts_and_ids_equal_tiktoken_on_varied_text_in_both_encodings() {
        for encoding in ENCODINGS {
            let counter = BpeCounter::new(encoding);
            for text in varied_texts() {
                let expected = tiktoken(encoding).encode_ordinary(&text);
                assert_eq!(
                    counter.count(&text),
                    expected.len(),
                    "{encoding:?} on {text:?}"
                );
                assert_eq!(
                    counter.loaded.tokenizer.count(text.as_str()),
                    expected.len(),
                    "{encoding:?}: bpe-openai's own count on {text:?}"
                );
                assert_eq!(
                    counter.loaded.tokenizer.encode(text.as_str()),
                    expected,
                    "{encoding:?} token ids on {text:?}"
                );
            }
        }
    }

    #[test]
    fn every_vocabulary_entry_counts_as_tiktoken_does() {
        // Each token's own text (when it is valid UTF-8), alone and between letters:
        // catches a token the BPE tables could not reproduce.
        for encoding in ENCODINGS {
            let counter = BpeCounter::new(encoding);
            let Loaded {
                tokenizer,
                vocabulary,
            } = counter.loaded;
            let bpe = &tokenizer.bpe;
            for id in 0..bpe.num_tokens() {
                let Ok(id) = u32::try_from(id) else { break };
                let bytes = bpe.token_bytes(id);
                // The shortcut's premise: every token is found and encodes to itself.
                assert!(vocabulary.contains(bpe, bytes), "{encoding:?}: token {id}");
                assert_eq!(bpe.count(bytes), 1, "{encoding:?}: token {id} {bytes:?}");
                let Ok(text) = std::str::from_utf8(bytes) else {
                    continue;
                };
                assert_eq!(
                    counter.count(text),
                    tiktoken_count(encoding, text),
                    "{encoding:?}: token {id} {text:?}"
                );
            }
        }
    }

    #[test]
    fn the_vocabulary_lookup_finds_only_whole_tokens() {
        for encoding in ENCODINGS {
            let Loaded {
                tokenizer,
                vocabulary,
            } = BpeCounter::new(encoding).loaded;
            let bpe = &tokenizer.bpe;
            assert!(vocabulary.contains(bpe, b" the"));
            for piece in [
                "",
                " thexq",
                "qzxqzxqzxqzxqzxqzxqzx",
                "日本語のテキストです",
            ] {
                assert!(!vocabulary.contains(bpe, piece.as_bytes()), "{piece:?}");
                assert!(bpe.count(piece.as_bytes()) != 1, "{piece:?}");
            }
        }
    }

    #[test]
    fn vendored_corpus_counts_equal_tiktoken() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus-sample");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .expect("the vendored corpus sample exists")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        files.sort();
        assert!(!files.is_empty());
        for file in files {
            let text = std::fs::read_to_string(&file).expect("corpus files are UTF-8");
            for encoding in ENCODINGS {
                assert_eq!(
                    BpeCounter::new(encoding).count(&text),
                    tiktoken_count(encoding, &text),
                    "{encoding:?} on {}",
                    file.display()
                );
            }
        }
    }

    /// Pieces that sit on the pre-tokenizers' boundaries, for the property tests.
    const ATOMS: &[&str] = &[
        "a",
        "Z",
        "the",
        "HTTP",
        "Server",
        "é",
        "e\u{301}",
        "ß",
        "日本",
        "한",
        "я",
        "1",
        "123",
        "4567",
        "٣",
        " ",
        "  ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "\u{a0}",
        "\u{3000}",
        "'",
        "'s",
        "'LL",
        "'ve",
        "’",
        ".",
        ",",
        "//",
        "/",
        "!?",
        "\\",
        "{",
        "}",
        "_",
        "-",
        "<|endoftext|>",
        "👍🏽",
        "🇫🇷",
        "\u{0}",
        "\u{fffd}",
        "\u{200b}",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn arbitrary_strings_count_as_tiktoken_does(text in proptest::prelude::any::<String>()) {
            for encoding in ENCODINGS {
                proptest::prop_assert_eq!(
                    BpeCounter::new(encoding).count(&text),
                    tiktoken_count(encoding, &text),
                    "{:?}", encoding
                );
            }
        }

        #[test]
        fn boundary_pieces_count_as_tiktoken_does(
            pieces in proptest::collection::vec(proptest::sample::select(ATOMS), 0..80),
        ) {
            let text = pieces.concat();
            for encoding in ENCODINGS {
                proptest::prop_assert_eq!(
                    BpeCounter::new(encoding).count(&text),
                    tiktoken_count(encoding, &text),
                    "{:?} on {:?}", encoding, text
                );
            }
        }

        #[test]
        fn concatenated_vocabulary_entries_count_as_tiktoken_does(
            ids in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..40),
        ) {
            // Runs of real tokens stress the merges across token boundaries (the way
            // bpe's own equivalence tests build their inputs).
            for encoding in ENCODINGS {
                let bpe = &BpeCounter::new(encoding).loaded.tokenizer.bpe;
                let tokens = u32::try_from(bpe.num_tokens()).unwrap_or(u32::MAX);
                let bytes: Vec<u8> = ids
                    .iter()
                    .flat_map(|&id| bpe.token_bytes(id % tokens).to_vec())
                    .collect();
                let text = String::from_utf8_lossy(&bytes);
                proptest::prop_assert_eq!(
                    BpeCounter::new(encoding).count(&text),
                    tiktoken_count(encoding, &text),
                    "{:?} on {:?}", encoding, text
                );
            }
        }
    }

    #[test]
    fn encodings_differ_on_non_english_text() {
        let text = "Здравствуйте, как дела? これは日本語のテキストです。";
        let o = o200k().count(text);
        let c = BpeCounter::new(Encoding::Cl100kBase).count(text);
        assert_ne!(o, c);
    }

    #[test]
    fn counting_halves_on_two_threads_gives_exactly_the_whole_count() {
        let text = "fn main() {\n    println!(\"héllo\");\n}\nerror[E0308]: mismatched types\n  --> src/lib.rs:3:5\n\n\nDone. Ünïcode\r\nnext line's text\n"
            .repeat(40);
        for encoding in ENCODINGS {
            let counter = BpeCounter::new(encoding);
            let whole = counter.count_serial(&text);
            assert_eq!(whole, tiktoken_count(encoding, &text), "{encoding:?}");
            assert!(safe_split(&text).is_some());
            assert_eq!(counter.count_split(&text, 0), whole, "{encoding:?}");
        }
        assert_eq!(safe_split("no newline followed by a letter\n\n  "), None);
        // Additivity holds at every such boundary, not only the one picked.
        let sample = "a\nb\n\nc  \nd\r\ne's\n'f\n1\ng:\nh\n";
        for encoding in ENCODINGS {
            let counter = BpeCounter::new(encoding);
            let whole = counter.count_serial(sample);
            let bytes = sample.as_bytes();
            for i in 1..bytes.len() {
                if bytes[i - 1] == b'\n' && bytes[i].is_ascii_alphabetic() {
                    let (a, b) = sample.split_at(i);
                    let parts = counter.count_serial(a) + counter.count_serial(b);
                    assert_eq!(parts, whole, "{encoding:?}: split at {i}");
                }
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
