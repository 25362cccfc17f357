//! Hostile answers: servers that misbehave the way runaway and broken ones do, generated
//! lazily so the test server itself never holds what it sends.
//!
//! | fault | what is sent |
//! |---|---|
//! | `endless_text` | a 200 stream of ever different text deltas that never ends |
//! | `repeated_line` | a 200 stream of the same line, over and over, that never ends |
//! | `huge_event` | a 200 stream whose first text delta is one event of `size_mb` MB |
//! | `huge_tool_arguments` | a 200 stream with one tool call whose arguments stream `size_mb` MB |
//! | `many_tool_calls` | a 200 stream with `count` tool calls |
//! | `heartbeats_only` | a 200 stream of content-free events (pings, empty deltas) every 50 ms, forever |
//! | `huge_error_body` | an HTTP 500 whose body is `size_mb` MB |
//! | `redirect` | an HTTP 307 to `redirect_to` |
//!
//! Streams are well-formed in each protocol's own shape up to the point where they stop
//! making sense, so a client only fails on the bound it is meant to enforce. Gemini sends
//! a function call whole in one event, so there `huge_tool_arguments` is one event of
//! `size_mb` MB (what a client bounds first is then the event).

use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::protocol::Protocol;
use crate::turn::{Fault, Turn};
use crate::wire::{bedrock, SseEvent};

/// Size of one generated chunk of a large payload.
const PIECE_BYTES: usize = 64 * 1024;

/// A lazily generated body: chunks, the pause after each, and the HTTP status.
pub(crate) struct Generated {
    /// HTTP status.
    pub status: u16,
    /// `content-type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// The body, produced on demand.
    pub chunks: Box<dyn Iterator<Item = Bytes> + Send>,
    /// Pause between chunks.
    pub delay: Duration,
}

/// Whether `fault` is one of this module's.
pub(crate) fn is_hostile(fault: Fault) -> bool {
    matches!(
        fault,
        Fault::EndlessText
            | Fault::RepeatedLine
            | Fault::HugeEvent
            | Fault::HugeToolArguments
            | Fault::ManyToolCalls
            | Fault::HeartbeatsOnly
            | Fault::HugeErrorBody
            | Fault::Redirect
    )
}

/// The answer `turn` (whose fault is hostile) plays in `protocol`.
pub(crate) fn answer(protocol: Protocol, turn: &Turn, model: &str) -> Generated {
    let size = turn.size_mb.unwrap_or(1) as usize * 1024 * 1024;
    let frames = Frames {
        protocol,
        model: std::sync::Arc::from(model),
    };
    let sse = |chunks: Box<dyn Iterator<Item = Bytes> + Send>, delay| Generated {
        status: 200,
        content_type: crate::wire::stream_content_type(protocol),
        headers: Vec::new(),
        chunks,
        delay,
    };
    match turn.fault {
        Some(Fault::EndlessText) => {
            let head = frames.start();
            let body = (0u64..)
                .map(move |i| frames.text(&format!("word{i} number {i} says something new. ")));
            sse(Box::new(head.into_iter().chain(body)), Duration::ZERO)
        }
        Some(Fault::RepeatedLine) => {
            let head = frames.start();
            let body = std::iter::repeat_with(move || frames.text("Echo echo echo echo.\n"));
            sse(Box::new(head.into_iter().chain(body)), Duration::ZERO)
        }
        Some(Fault::HugeEvent) => sse(huge_event(frames, size), Duration::ZERO),
        Some(Fault::HugeToolArguments) => sse(huge_tool_arguments(frames, size), Duration::ZERO),
        Some(Fault::ManyToolCalls) => sse(
            many_tool_calls(frames, turn.count.unwrap_or(10_000) as usize),
            Duration::ZERO,
        ),
        Some(Fault::HeartbeatsOnly) => {
            let head = frames.start();
            let beats = std::iter::repeat_with(move || frames.heartbeat());
            sse(
                Box::new(head.into_iter().chain(beats)),
                Duration::from_millis(50),
            )
        }
        Some(Fault::HugeErrorBody) => Generated {
            status: 500,
            content_type: crate::wire::JSON_CONTENT_TYPE,
            headers: Vec::new(),
            chunks: Box::new(
                std::iter::once(Bytes::from_static(b"{\"error\": {\"message\": \""))
                    .chain(pieces(size, b'e'))
                    .chain(std::iter::once(Bytes::from_static(b"\"}}"))),
            ),
            delay: Duration::ZERO,
        },
        Some(Fault::Redirect) => Generated {
            status: 307,
            content_type: crate::wire::JSON_CONTENT_TYPE,
            headers: vec![(
                "location",
                turn.redirect_to
                    .clone()
                    .unwrap_or_else(|| "/elsewhere".into()),
            )],
            chunks: Box::new(std::iter::once(Bytes::from_static(b"{}"))),
            delay: Duration::ZERO,
        },
        _ => Generated {
            status: 500,
            content_type: crate::wire::JSON_CONTENT_TYPE,
            headers: Vec::new(),
            chunks: Box::new(std::iter::once(Bytes::from_static(
                b"{\"error\": \"not a hostile fault\"}",
            ))),
            delay: Duration::ZERO,
        },
    }
}

/// Frames of a stream.
type FrameStream = Box<dyn Iterator<Item = Bytes> + Send>;

/// One event whose data line holds `size` bytes of text, written in pieces.
fn huge_event(frames: Frames, size: usize) -> FrameStream {
    let head = frames.start();
    let (open, close) = frames.text_event_halves(size);
    let middle = pieces(size, b'a');
    let body = std::iter::once(open)
        .chain(middle)
        .chain(std::iter::once(close))
        .chain(frames.finish("stop"))
        .collect::<Vec<_>>()
        .into_iter();
    Box::new(head.into_iter().chain(body))
}

/// One tool call whose arguments hold `size` bytes, sent in pieces.
fn huge_tool_arguments(frames: Frames, size: usize) -> FrameStream {
    let head = frames.start();
    let mut body = vec![frames.call_start(0)];
    body.push(frames.arguments(0, "{\"path\": \""));
    let open = body.into_iter();
    let tail: Vec<Bytes> = [frames.arguments(0, "\"}"), frames.call_stop(0)]
        .into_iter()
        .chain(frames.finish("tool_use"))
        .collect();
    let filler =
        (0..size / PIECE_BYTES + 1).map(move |_| frames.arguments(0, &"b".repeat(PIECE_BYTES)));
    Box::new(head.into_iter().chain(open).chain(filler).chain(tail))
}

/// `count` small tool calls in one answer.
fn many_tool_calls(frames: Frames, count: usize) -> FrameStream {
    let head = frames.start();
    let finish = frames.finish("tool_use");
    let calls = (0..count).flat_map(move |i| {
        [
            frames.call_start(i),
            frames.arguments(i, "{\"path\": \"f.txt\"}"),
            frames.call_stop(i),
        ]
    });
    Box::new(head.into_iter().chain(calls).chain(finish))
}

/// `total` bytes of `byte`, in pieces.
fn pieces(total: usize, byte: u8) -> impl Iterator<Item = Bytes> + Send {
    let piece = Bytes::from(vec![byte; PIECE_BYTES]);
    let whole = total / PIECE_BYTES;
    let rest = total % PIECE_BYTES;
    std::iter::repeat_n(piece, whole).chain((rest > 0).then(|| Bytes::from(vec![byte; rest])))
}

/// The SSE frames of one protocol, as far as hostile answers need them.
#[derive(Clone)]
struct Frames {
    protocol: Protocol,
    model: std::sync::Arc<str>,
}

impl Frames {
    fn encode(event: SseEvent) -> Bytes {
        event.encode()
    }

    fn chat(&self, delta: Value, finish: Value) -> Bytes {
        Self::encode(SseEvent::data(
            json!({"id": "chatcmpl-hostile", "object": "chat.completion.chunk", "created": 0,
                   "model": &*self.model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            .to_string(),
        ))
    }

    /// One Gemini chunk whose candidate has `parts`.
    fn gemini(&self, parts: Value) -> Bytes {
        Self::encode(SseEvent::data(
            json!({"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}],
                   "modelVersion": &*self.model})
            .to_string(),
        ))
    }

    /// A Gemini call chunk cut around its `args`: the bytes before them, the bytes after.
    fn gemini_call_halves(&self, index: usize) -> (Bytes, Bytes) {
        const MARK: &str = "\u{1}ARGS\u{1}";
        let whole = self.gemini(
            json!([{"functionCall": {"id": format!("call_hostile_{index}"), "name": "read", "args": MARK}}]),
        );
        let whole = String::from_utf8_lossy(&whole).into_owned();
        let marker = serde_json::to_string(MARK).unwrap_or_default();
        let at = whole.find(&marker).unwrap_or(whole.len());
        (
            Bytes::from(whole[..at].to_owned()),
            Bytes::from(whole[(at + marker.len()).min(whole.len())..].to_owned()),
        )
    }

    /// A Bedrock event message, encoded.
    fn frame(event_type: &str, payload: Value) -> Bytes {
        bedrock::encode(&bedrock::event(event_type, &payload))
    }

    fn named(name: &str, mut payload: Value) -> Bytes {
        payload["type"] = json!(name);
        Self::encode(SseEvent::named(name, &payload))
    }

    /// The events before any content.
    fn start(&self) -> Vec<Bytes> {
        match self.protocol {
            Protocol::Anthropic => vec![
                Self::named(
                    "message_start",
                    json!({"message": {"id": "msg_hostile", "type": "message", "role": "assistant",
                    "model": &*self.model, "content": [], "stop_reason": null,
                    "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                ),
                Self::named(
                    "content_block_start",
                    json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
            ],
            Protocol::OpenAiChat => {
                vec![self.chat(json!({"role": "assistant", "content": ""}), Value::Null)]
            }
            Protocol::Bedrock => vec![Self::frame("messageStart", json!({"role": "assistant"}))],
            Protocol::OpenAiResponses => vec![
                Self::named(
                    "response.created",
                    json!({"response": {"id": "resp_hostile", "status": "in_progress", "output": []}}),
                ),
                Self::named(
                    "response.output_item.added",
                    json!({"output_index": 0, "item": {"id": "msg_hostile", "type": "message", "role": "assistant", "content": []}}),
                ),
            ],
            // Gemini has no opening event: the first chunk already carries content.
            Protocol::Gemini => Vec::new(),
        }
    }

    /// One text delta.
    fn text(&self, text: &str) -> Bytes {
        match self.protocol {
            Protocol::Anthropic => Self::named(
                "content_block_delta",
                json!({"index": 0, "delta": {"type": "text_delta", "text": text}}),
            ),
            Protocol::OpenAiChat => self.chat(json!({"content": text}), Value::Null),
            Protocol::Bedrock => Self::frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": text}}),
            ),
            Protocol::OpenAiResponses => Self::named(
                "response.output_text.delta",
                json!({"item_id": "msg_hostile", "output_index": 0, "content_index": 0, "delta": text}),
            ),
            Protocol::Gemini => self.gemini(json!([{ "text": text }])),
        }
    }

    /// A text-delta event split around its text, so a huge text of `size` bytes of `a`
    /// can be streamed in between: (the bytes before the text, the bytes after it). A
    /// Bedrock frame declares its whole length up front and ends with the CRC of all of it.
    fn text_event_halves(&self, size: usize) -> (Bytes, Bytes) {
        if self.protocol == Protocol::Bedrock {
            return bedrock_text_halves(size);
        }
        const MARK: &str = "\u{1}HOSTILE\u{1}";
        let whole = self.text(MARK);
        let whole = String::from_utf8_lossy(&whole).into_owned();
        let marker = serde_json::to_string(MARK).unwrap_or_default();
        let marker = &marker[1..marker.len() - 1];
        let at = whole.find(marker).unwrap_or(whole.len());
        (
            Bytes::from(whole[..at].to_owned()),
            Bytes::from(whole[at + marker.len()..].to_owned()),
        )
    }

    fn call_start(&self, index: usize) -> Bytes {
        let id = format!("call_hostile_{index}");
        match self.protocol {
            Protocol::Anthropic => Self::named(
                "content_block_start",
                json!({"index": index + 1, "content_block": {"type": "tool_use", "id": id, "name": "read", "input": {}}}),
            ),
            Protocol::OpenAiChat => self.chat(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": "read", "arguments": ""}}]}),
                Value::Null,
            ),
            Protocol::Bedrock => Self::frame(
                "contentBlockStart",
                json!({"contentBlockIndex": index + 1, "start": {"toolUse": {"toolUseId": id, "name": "read"}}}),
            ),
            Protocol::OpenAiResponses => Self::named(
                "response.output_item.added",
                json!({"output_index": index + 1, "item": {"id": format!("fc_{index}"), "type": "function_call",
                       "call_id": id, "name": "read", "arguments": ""}}),
            ),
            // The chunk up to its `args`; the arguments follow raw, `call_stop` closes it.
            Protocol::Gemini => self.gemini_call_halves(index).0,
        }
    }

    fn arguments(&self, index: usize, piece: &str) -> Bytes {
        match self.protocol {
            Protocol::Anthropic => Self::named(
                "content_block_delta",
                json!({"index": index + 1, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            ),
            Protocol::OpenAiChat => self.chat(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ),
            Protocol::Bedrock => Self::frame(
                "contentBlockDelta",
                json!({"contentBlockIndex": index + 1, "delta": {"toolUse": {"input": piece}}}),
            ),
            Protocol::OpenAiResponses => Self::named(
                "response.function_call_arguments.delta",
                json!({"item_id": format!("fc_{index}"), "output_index": index + 1, "delta": piece}),
            ),
            Protocol::Gemini => Bytes::from(piece.to_owned()),
        }
    }

    fn call_stop(&self, index: usize) -> Bytes {
        match self.protocol {
            Protocol::Anthropic => Self::named("content_block_stop", json!({"index": index + 1})),
            Protocol::Bedrock => {
                Self::frame("contentBlockStop", json!({"contentBlockIndex": index + 1}))
            }
            // Chat calls end with the answer; Responses with their done item, which the
            // client may take from the deltas.
            Protocol::OpenAiChat => Bytes::new(),
            Protocol::OpenAiResponses => Bytes::new(),
            Protocol::Gemini => self.gemini_call_halves(index).1,
        }
    }

    /// A content-free event.
    fn heartbeat(&self) -> Bytes {
        match self.protocol {
            Protocol::Anthropic => Self::named("ping", json!({})),
            // A metadata event without usage: Bedrock's only content-free event mid-stream.
            Protocol::Bedrock => Self::frame("metadata", json!({"metrics": {"latencyMs": 1}})),
            Protocol::OpenAiChat => self.chat(json!({}), Value::Null),
            Protocol::OpenAiResponses => Self::named(
                "response.in_progress",
                json!({"response": {"id": "resp_hostile", "status": "in_progress"}}),
            ),
            Protocol::Gemini => self.gemini(json!([{ "text": "" }])),
        }
    }

    /// The events that end the answer.
    fn finish(&self, reason: &str) -> Vec<Bytes> {
        match self.protocol {
            Protocol::Anthropic => vec![
                Self::named("content_block_stop", json!({"index": 0})),
                Self::named(
                    "message_delta",
                    json!({"delta": {"stop_reason": if reason == "stop" { "end_turn" } else { reason }},
                           "usage": {"output_tokens": 1}}),
                ),
                Self::named("message_stop", json!({})),
            ],
            Protocol::OpenAiChat => vec![
                self.chat(
                    json!({}),
                    json!(if reason == "stop" {
                        "stop"
                    } else {
                        "tool_calls"
                    }),
                ),
                Self::encode(SseEvent::data("[DONE]")),
            ],
            Protocol::Bedrock => vec![
                Self::frame("contentBlockStop", json!({"contentBlockIndex": 0})),
                Self::frame(
                    "messageStop",
                    json!({"stopReason": if reason == "stop" { "end_turn" } else { reason }}),
                ),
                Self::frame(
                    "metadata",
                    json!({"usage": {"inputTokens": 10, "outputTokens": 1, "totalTokens": 11}}),
                ),
            ],
            Protocol::OpenAiResponses => vec![Self::named(
                "response.completed",
                json!({"response": {"id": "resp_hostile", "status": "completed", "output": [],
                       "usage": {"input_tokens": 10, "output_tokens": 1}}}),
            )],
            // Gemini ends every answer, calls included, with `STOP`.
            Protocol::Gemini => vec![Self::encode(SseEvent::data(
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
                        "finishReason": "STOP", "index": 0}],
                       "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1, "totalTokenCount": 11},
                       "modelVersion": &*self.model})
                .to_string(),
            ))],
        }
    }
}

/// A Bedrock text-delta frame around `size` bytes of `a`, split before and after them:
/// the prelude declares the whole length, the final CRC covers every byte.
fn bedrock_text_halves(size: usize) -> (Bytes, Bytes) {
    let head = bedrock::event("contentBlockDelta", &json!({}));
    let mut headers = Vec::new();
    if aws_smithy_eventstream::frame::write_headers_to(head.headers(), &mut headers).is_err() {
        return (Bytes::new(), Bytes::new());
    }
    let before = br#"{"contentBlockIndex":0,"delta":{"text":""#;
    let after = br#""}}"#;
    let payload_len = before.len() + size + after.len();
    let total = 12 + headers.len() + payload_len + 4;
    let mut open = Vec::with_capacity(12 + headers.len() + before.len());
    open.extend_from_slice(&(u32::try_from(total).unwrap_or(u32::MAX)).to_be_bytes());
    open.extend_from_slice(&(u32::try_from(headers.len()).unwrap_or(0)).to_be_bytes());
    let prelude_crc = crc32fast::hash(&open);
    open.extend_from_slice(&prelude_crc.to_be_bytes());
    open.extend_from_slice(&headers);
    open.extend_from_slice(before);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&open);
    let piece = vec![b'a'; PIECE_BYTES];
    let mut left = size;
    while left > 0 {
        let take = left.min(PIECE_BYTES);
        crc.update(&piece[..take]);
        left -= take;
    }
    crc.update(after);
    let mut close = after.to_vec();
    close.extend_from_slice(&crc.finalize().to_be_bytes());
    (Bytes::from(open), Bytes::from(close))
}
