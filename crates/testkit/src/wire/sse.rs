//! One server-sent event, as the SSE protocols' answers are made of.

use bytes::Bytes;
use serde_json::Value;

use super::fragments::floor_char_boundary;

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SseEvent {
    /// The `event:` line, when the protocol uses one.
    pub name: Option<String>,
    /// The `data:` payload (one line of JSON, or `[DONE]`).
    pub data: String,
}

impl SseEvent {
    /// An event with an `event:` line whose data is `payload`.
    pub(crate) fn named(name: &str, payload: &Value) -> SseEvent {
        SseEvent {
            name: Some(name.to_owned()),
            data: payload.to_string(),
        }
    }

    /// A data-only event.
    pub(crate) fn data(data: impl Into<String>) -> SseEvent {
        SseEvent {
            name: None,
            data: data.into(),
        }
    }

    /// The event's bytes on the wire, blank-line terminated.
    pub(crate) fn encode(&self) -> Bytes {
        let mut text = String::with_capacity(self.data.len() + 32);
        if let Some(name) = &self.name {
            text.push_str("event: ");
            text.push_str(name);
            text.push('\n');
        }
        text.push_str("data: ");
        text.push_str(&self.data);
        text.push_str("\n\n");
        Bytes::from(text)
    }

    /// The same event with its JSON cut in half: what `malformed_sse` inserts.
    pub(crate) fn corrupted(&self) -> SseEvent {
        let cut = floor_char_boundary(&self.data, self.data.len() / 2);
        SseEvent {
            name: self.name.clone(),
            data: self.data[..cut].to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_encode_with_optional_event_line() {
        let named = SseEvent::named("ping", &serde_json::json!({"type": "ping"}));
        assert_eq!(
            named.encode(),
            Bytes::from("event: ping\ndata: {\"type\":\"ping\"}\n\n")
        );
        assert_eq!(
            SseEvent::data("[DONE]").encode(),
            Bytes::from("data: [DONE]\n\n")
        );
        let corrupt = named.corrupted();
        assert!(serde_json::from_str::<Value>(&corrupt.data).is_err());
    }
}
