//! What the server sends for one request: picks the wire rendering (stream or JSON), applies
//! the turn's fault, and turns the result into an HTTP response whose body is paced chunk by
//! chunk (`chunk_delay_ms`), cut off (`drop_mid_stream`) or silent (`hang`).

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};

use crate::protocol::Protocol;
use crate::turn::{Fault, Turn};
use crate::wire::{self, ErrorKind, StreamEvent, TurnPlan, JSON_CONTENT_TYPE, SSE_CONTENT_TYPE};

/// The body type of every answer.
pub(crate) type AnswerBody = UnsyncBoxBody<Bytes, std::io::Error>;

/// Context windows quoted in context-length errors.
const OPENAI_CONTEXT_LIMIT: u64 = 128_000;
const ANTHROPIC_CONTEXT_LIMIT: u64 = 200_000;
const GEMINI_CONTEXT_LIMIT: u64 = 1_048_576;

/// Text streamed by a `drop_mid_stream` / `malformed_sse` / `stream_error` turn that scripts
/// no content, so there are chunks to send before the failure.
const FAULT_FILLER_TEXT: &str =
    "This answer is streamed in several pieces and breaks before it ends.";

/// Pause before cutting a connection, so the chunks already queued are flushed first.
const ABORT_GRACE: Duration = Duration::from_millis(50);

/// What the request asked for, as far as rendering is concerned.
pub(crate) struct RequestFacts {
    /// The request's `model`.
    pub model: String,
    /// `"stream": true`.
    pub streaming: bool,
    /// `stream_options.include_usage` (Chat Completions).
    pub include_usage: bool,
    /// `include: ["reasoning.encrypted_content"]` (Responses).
    pub encrypted_reasoning: bool,
    /// The output cap the server honours (the script's `max_tokens_field`), in tokens.
    pub output_cap: Option<u64>,
    /// Gemini: leave the `id` out of `functionCall` parts.
    pub omit_call_ids: bool,
}

/// Characters a token stands for when the testkit honours an output cap.
const CHARS_PER_TOKEN: u64 = 4;

/// How a body ends after its last chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Normally.
    Complete,
    /// With the connection closed abruptly (the HTTP message is left incomplete).
    Abort,
}

/// A planned HTTP answer.
pub(crate) enum Answer {
    /// Status, headers and body chunks, sent `delay` apart.
    Send {
        status: StatusCode,
        content_type: &'static str,
        retry_after_s: Option<u64>,
        /// Extra headers (Bedrock's `x-amzn-errortype`).
        headers: Vec<(&'static str, String)>,
        chunks: Vec<Bytes>,
        delay: Duration,
        ending: Ending,
    },
    /// Headers (when `send_headers`) and then nothing, ever.
    Hang { send_headers: bool },
    /// A hostile answer generated as it is sent.
    Generated(crate::hostile::Generated),
}

/// The answer a fault scripted on `turn` gives instead of the turn (an HTTP error, a
/// hang, a hostile stream); `None` for a fault that shapes the turn's own answer, or none.
fn fault_answer(protocol: Protocol, turn: &Turn, facts: &RequestFacts) -> Option<Answer> {
    let http_error = |kind: ErrorKind| error(protocol, &kind, turn.retry_after_s);
    if let Some(fault) = turn.fault.filter(|f| crate::hostile::is_hostile(*f)) {
        let _ = fault;
        return Some(Answer::Generated(crate::hostile::answer(
            protocol,
            turn,
            &facts.model,
        )));
    }
    match turn.fault {
        Some(Fault::Http429) => return Some(http_error(ErrorKind::RateLimited)),
        Some(Fault::Http500) => return Some(http_error(ErrorKind::ServerError)),
        Some(Fault::StreamError) if !facts.streaming => {
            return Some(http_error(ErrorKind::ServerError))
        }
        Some(Fault::Overloaded) => return Some(http_error(ErrorKind::Overloaded)),
        Some(Fault::ProviderReturnedError) => return Some(http_error(ErrorKind::ProviderReturned)),
        Some(Fault::ContextLength) => {
            let limit = match protocol {
                Protocol::Anthropic | Protocol::Bedrock => ANTHROPIC_CONTEXT_LIMIT,
                Protocol::OpenAiChat | Protocol::OpenAiResponses => OPENAI_CONTEXT_LIMIT,
                Protocol::Gemini => GEMINI_CONTEXT_LIMIT,
            };
            let scripted = turn.usage.map_or(0, |usage| usage.input_tokens);
            return Some(http_error(ErrorKind::ContextLength {
                prompt_tokens: scripted.max(limit + 1),
                limit,
            }));
        }
        Some(Fault::Hang) => {
            return Some(Answer::Hang {
                send_headers: facts.streaming,
            })
        }
        Some(Fault::DropMidStream | Fault::MalformedSse | Fault::StreamError) | None => {}
        Some(_) => {}
    }
    None
}

/// The answer to a request served by `turn` (the `number`-th turn, 1-based).
pub(crate) fn for_turn(
    protocol: Protocol,
    turn: &Turn,
    number: usize,
    tool_call_ids: &[String],
    facts: &RequestFacts,
) -> Answer {
    if let Some(answer) = fault_answer(protocol, turn, facts) {
        return answer;
    }

    let filled;
    let turn = if turn.fault.is_some() && turn.text.is_empty() && turn.tool_calls.is_empty() {
        filled = Turn {
            text: FAULT_FILLER_TEXT.to_owned(),
            ..turn.clone()
        };
        &filled
    } else {
        turn
    };
    // An honoured cap cuts a longer answer (its tool calls too), as a server would.
    let capped;
    let cut_at = facts
        .output_cap
        .map(|cap| usize::try_from(cap.saturating_mul(CHARS_PER_TOKEN)).unwrap_or(usize::MAX));
    let cut = cut_at.is_some_and(|chars| turn.text.chars().count() > chars);
    let turn = match cut_at {
        Some(chars) if cut => {
            capped = Turn {
                text: turn.text.chars().take(chars).collect(),
                tool_calls: Vec::new(),
                // What was cut off was never generated: a server bills at most the cap.
                usage: turn.usage.map(|usage| crate::turn::Usage {
                    output_tokens: usage
                        .output_tokens
                        .min(facts.output_cap.unwrap_or(u64::MAX)),
                    ..usage
                }),
                ..turn.clone()
            };
            &capped
        }
        _ => turn,
    };
    let plan = TurnPlan {
        turn,
        number,
        tool_call_ids,
        model: facts.model.clone(),
        include_usage: facts.include_usage,
        encrypted_reasoning: facts.encrypted_reasoning,
        omit_call_ids: facts.omit_call_ids,
        cut,
    };
    let delay = Duration::from_millis(turn.chunk_delay_ms);
    let (content_type, chunks, ending) = if facts.streaming {
        let mut events = wire::stream_events(protocol, &plan);
        let mut ending = Ending::Complete;
        match turn.fault {
            Some(Fault::DropMidStream) => {
                events.truncate((events.len() / 2).max(1));
                ending = Ending::Abort;
            }
            Some(Fault::StreamError) => {
                events.truncate((events.len() / 2).max(1));
                events.push(wire::stream_error_event(protocol, events.len()));
            }
            Some(Fault::MalformedSse) => {
                let middle = events.len() / 2;
                let corrupt = events[middle].corrupted();
                events.insert(middle, corrupt);
            }
            _ => {}
        }
        let chunks = events.iter().map(StreamEvent::encode).collect();
        (wire::stream_content_type(protocol), chunks, ending)
    } else {
        let body = wire::json_body(protocol, &plan).to_string();
        let (chunks, ending) = match turn.fault {
            Some(Fault::DropMidStream) => (vec![half(&body)], Ending::Abort),
            Some(Fault::MalformedSse) => (vec![half(&body)], Ending::Complete),
            _ => (vec![Bytes::from(body)], Ending::Complete),
        };
        (JSON_CONTENT_TYPE, chunks, ending)
    };
    Answer::Send {
        status: StatusCode::OK,
        content_type,
        retry_after_s: None,
        headers: Vec::new(),
        chunks,
        delay,
        ending,
    }
}

/// The first half of `text`.
fn half(text: &str) -> Bytes {
    let cut = wire::floor_char_boundary(text, text.len() / 2);
    Bytes::copy_from_slice(&text.as_bytes()[..cut])
}

/// An error answer in `protocol`'s format.
pub(crate) fn error(protocol: Protocol, kind: &ErrorKind, retry_after_s: Option<u64>) -> Answer {
    let (status, body) = wire::error_answer(protocol, kind);
    Answer::Send {
        status,
        content_type: JSON_CONTENT_TYPE,
        retry_after_s,
        headers: wire::error_headers(protocol, kind),
        chunks: vec![Bytes::from(body.to_string())],
        delay: Duration::ZERO,
        ending: Ending::Complete,
    }
}

/// A body that sends `chunks` one HTTP chunk each, `delay` apart, then ends as `ending` says.
fn paced_body(chunks: Vec<Bytes>, delay: Duration, ending: Ending) -> AnswerBody {
    struct Pacing {
        chunks: std::vec::IntoIter<Bytes>,
        sent: usize,
        ending: Option<Ending>,
    }
    let start = Pacing {
        chunks: chunks.into_iter(),
        sent: 0,
        ending: Some(ending),
    };
    let frames = futures::stream::unfold(start, move |mut pacing| async move {
        if let Some(chunk) = pacing.chunks.next() {
            if pacing.sent > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            pacing.sent += 1;
            return Some((Ok(Frame::data(chunk)), pacing));
        }
        match pacing.ending.take() {
            Some(Ending::Abort) => {
                tokio::time::sleep(ABORT_GRACE).await;
                let cut = std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "pith-testkit: drop_mid_stream closes the connection here",
                );
                Some((Err(cut), pacing))
            }
            Some(Ending::Complete) | None => None,
        }
    });
    StreamBody::new(frames).boxed_unsync()
}

/// A body that never yields anything.
fn silent_body() -> AnswerBody {
    StreamBody::new(futures::stream::pending::<
        Result<Frame<Bytes>, std::io::Error>,
    >())
    .boxed_unsync()
}

/// A complete body with a known length.
pub(crate) fn full_body(bytes: Bytes) -> AnswerBody {
    Full::new(bytes)
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

/// The HTTP response for `answer`; `None` for a hang without headers (the caller then never
/// answers).
pub(crate) fn into_response(answer: Answer) -> Option<Response<AnswerBody>> {
    match answer {
        Answer::Hang {
            send_headers: false,
        } => None,
        Answer::Hang { send_headers: true } => {
            let mut response = Response::new(silent_body());
            set_header(&mut response, CONTENT_TYPE, SSE_CONTENT_TYPE);
            set_header(&mut response, CACHE_CONTROL, "no-cache");
            Some(response)
        }
        Answer::Generated(generated) => {
            let delay = generated.delay;
            let frames = futures::stream::unfold(
                (generated.chunks, false),
                move |(mut chunks, started)| async move {
                    let chunk = chunks.find(|c| !c.is_empty())?;
                    if started && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    Some((Ok(Frame::data(chunk)), (chunks, true)))
                },
            );
            let mut response = Response::new(StreamBody::new(frames).boxed_unsync());
            *response.status_mut() =
                StatusCode::from_u16(generated.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            set_header(&mut response, CONTENT_TYPE, generated.content_type);
            for (name, value) in &generated.headers {
                if let (Ok(name), Ok(value)) = (
                    hyper::header::HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
            Some(response)
        }
        Answer::Send {
            status,
            content_type,
            retry_after_s,
            headers,
            chunks,
            delay,
            ending,
        } => {
            let body = if ending == Ending::Complete && chunks.len() == 1 {
                full_body(chunks.into_iter().next().unwrap_or_default())
            } else {
                paced_body(chunks, delay, ending)
            };
            let mut response = Response::new(body);
            *response.status_mut() = status;
            set_header(&mut response, CONTENT_TYPE, content_type);
            if content_type == SSE_CONTENT_TYPE {
                set_header(&mut response, CACHE_CONTROL, "no-cache");
            }
            if let Some(seconds) = retry_after_s {
                set_header(&mut response, RETRY_AFTER, &seconds.to_string());
            }
            for (name, value) in headers {
                set_header(
                    &mut response,
                    hyper::header::HeaderName::from_static(name),
                    &value,
                );
            }
            Some(response)
        }
    }
}

fn set_header(response: &mut Response<AnswerBody>, name: hyper::header::HeaderName, value: &str) {
    if let Ok(value) = HeaderValue::from_str(value) {
        response.headers_mut().insert(name, value);
    }
}
