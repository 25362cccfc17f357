//! Server-sent events, decoded in one pass with a bound on each event.
//!
//! pith reads every provider stream through this decoder rather than a general SSE crate
//! for two reasons that matter against a runaway server: the work is linear in the bytes
//! received (each byte is looked at once, however long a line grows — a parser that
//! re-scans its buffer on every chunk turns one 32 MiB line into gigabytes of scanning),
//! and no event may grow past `max_event_bytes` in memory.
//!
//! The format (WHATWG "server-sent events"): lines end in `\n`, `\r\n` or `\r`; `data:`
//! lines of one event are joined with `\n`; `event:` names it; lines starting with `:`
//! are comments; a blank line dispatches the event (an event without data is dropped).
//! `id:` and `retry:` are read and ignored (pith never reconnects a POST).

use crate::wire::bodies::Incremental;
use crate::wire::error::ProviderError;
use crate::wire::limits::human_bytes;

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name (`message` when none was given).
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// The incremental decoder.
#[derive(Debug)]
pub struct SseDecoder {
    limit: usize,
    /// Bytes not yet forming a complete line.
    line: Vec<u8>,
    /// The last byte seen was `\r`: a `\n` right after it belongs to the same line end.
    after_cr: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    /// Bytes of the current event so far (fields and the pending line).
    event_bytes: usize,
}

impl SseDecoder {
    /// A decoder refusing any event larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: String::new(),
            has_data: false,
            event_bytes: 0,
        }
    }

    fn check(&self, extra: usize) -> Result<(), ProviderError> {
        if self.event_bytes + self.line.len() + extra > self.limit {
            return Err(ProviderError::LimitExceeded(format!(
                "a server-sent event exceeded {} (max_event_bytes)",
                human_bytes(self.limit)
            )));
        }
        Ok(())
    }

    /// Handles the complete line in `self.line`; a blank line dispatches.
    fn end_line(&mut self) -> Option<SseEvent> {
        let line = std::mem::take(&mut self.line);
        if line.is_empty() {
            return self.dispatch();
        }
        self.event_bytes += line.len();
        if line[0] == b':' {
            return None;
        }
        let text = String::from_utf8_lossy(&line);
        let (field, value) = match text.find(':') {
            Some(colon) => {
                let value = &text[colon + 1..];
                (&text[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (text.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        self.event_bytes = 0;
        let name = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            self.data.clear();
            return None;
        }
        Some(SseEvent {
            event: name.unwrap_or_else(|| "message".to_owned()),
            data: std::mem::take(&mut self.data),
        })
    }
}

impl Incremental for SseDecoder {
    type Item = SseEvent;

    /// Takes the next bytes; returns the events they complete.
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, ProviderError> {
        let mut events = Vec::new();
        let mut start = 0;
        for (index, &byte) in bytes.iter().enumerate() {
            if byte != b'\n' && byte != b'\r' {
                self.after_cr = false;
                continue;
            }
            let crlf_tail = byte == b'\n' && self.after_cr;
            self.after_cr = byte == b'\r';
            self.line.extend_from_slice(&bytes[start..index]);
            start = index + 1;
            if crlf_tail && self.line.is_empty() {
                // The `\n` of a `\r\n` whose `\r` already ended the line.
                continue;
            }
            self.check(0)?;
            if let Some(event) = self.end_line() {
                events.push(event);
            }
        }
        self.line.extend_from_slice(&bytes[start..]);
        self.check(0)?;
        Ok(events)
    }

    /// The event left when the stream ends (a last event without its blank line).
    fn finish(&mut self) -> Result<Vec<SseEvent>, ProviderError> {
        if !self.line.is_empty() {
            let _ = self.end_line();
        }
        Ok(self.dispatch().into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&str], limit: usize) -> Result<Vec<SseEvent>, ProviderError> {
        let mut decoder = SseDecoder::new(limit);
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(decoder.push(chunk.as_bytes())?);
        }
        events.extend(decoder.finish()?);
        Ok(events)
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn named_events_multi_line_data_comments_and_every_line_ending() {
        let events = decode(
            &["event: ping\ndata: {}\n\n: keep-alive\n\ndata: a\r\ndata: b\r\n\r\ndata:c\r\rdata: x"],
            1024,
        )
        .unwrap();
        assert_eq!(
            events,
            vec![
                event("ping", "{}"),
                event("message", "a\nb"),
                event("message", "c"),
                event("message", "x"),
            ]
        );
    }

    #[test]
    fn events_split_anywhere_across_chunks_decode_the_same() {
        let whole = "event: a\ndata: one\r\n\r\ndata: two\ndata: three\n\n";
        let expected = decode(&[whole], 1024).unwrap();
        for split in 1..whole.len() {
            let (head, tail) = whole.split_at(split);
            assert_eq!(
                decode(&[head, tail], 1024).unwrap(),
                expected,
                "split at {split}"
            );
        }
        // One byte at a time, the way a slow server may send it.
        let bytes: Vec<String> = whole.chars().map(String::from).collect();
        let pieces: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(decode(&pieces, 1024).unwrap(), expected);
    }

    #[test]
    fn an_event_past_the_bound_is_an_error_even_within_one_line() {
        let error = decode(&["data: ", &"x".repeat(100), "\n\n"], 64).unwrap_err();
        assert!(matches!(error, ProviderError::LimitExceeded(_)), "{error}");
        assert!(error.to_string().contains("max_event_bytes"));
        // Many small lines of one event count together; separate events do not.
        let error = decode(&["data: 1234567890\n"; 10], 64).unwrap_err();
        assert!(matches!(error, ProviderError::LimitExceeded(_)));
        assert!(decode(&["data: 1234567890\n\n"; 10], 64).is_ok());
    }
}
