//! The binary `application/vnd.amazon.eventstream` framing (AWS Bedrock's streams),
//! decoded in one pass with a bound on each message.
//!
//! A message is `total length (u32) | headers length (u32) | prelude CRC | headers |
//! payload | message CRC`, big-endian. pith reads the declared length itself — so a
//! message past `max_event_bytes` is refused as soon as its first four bytes arrive, before
//! any of it is buffered — and leaves the parsing of a complete frame (headers, both
//! CRC32 checks) to `aws-smithy-eventstream`, the AWS SDK's own decoder. Work is linear in
//! the bytes received: each complete frame is split off the front of the buffer once.

use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, BytesMut};

use crate::wire::bodies::Incremental;
use crate::wire::error::ProviderError;
use crate::wire::limits::human_bytes;

/// Prelude (12 bytes) plus the message CRC (4): the smallest possible message.
const MIN_MESSAGE_BYTES: usize = 16;

/// The incremental decoder.
#[derive(Debug)]
pub struct FrameDecoder {
    limit: usize,
    buffer: BytesMut,
}

impl FrameDecoder {
    /// A decoder refusing any message larger than `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit,
            buffer: BytesMut::new(),
        }
    }
}

impl Incremental for FrameDecoder {
    type Item = Message;

    /// Takes the next bytes; returns the messages they complete. A malformed frame (a
    /// length that cannot be, a bad CRC, a broken header) is a [`ProviderError::Stream`];
    /// a message past the bound is a [`ProviderError::LimitExceeded`].
    fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, ProviderError> {
        self.buffer.extend_from_slice(bytes);
        let mut messages = Vec::new();
        while self.buffer.len() >= 4 {
            let declared = (&self.buffer[..4]).get_u32() as usize;
            if declared < MIN_MESSAGE_BYTES {
                return Err(ProviderError::Stream(format!(
                    "malformed event-stream frame: it declares {declared} bytes, less than a \
                     frame's {MIN_MESSAGE_BYTES}"
                )));
            }
            if declared > self.limit {
                return Err(ProviderError::LimitExceeded(format!(
                    "an event-stream message of {} exceeded {} (max_event_bytes)",
                    human_bytes(declared),
                    human_bytes(self.limit)
                )));
            }
            if self.buffer.len() < declared {
                break;
            }
            let frame = self.buffer.split_to(declared).freeze();
            let message =
                aws_smithy_eventstream::frame::read_message_from(frame).map_err(|err| {
                    ProviderError::Stream(format!("malformed event-stream frame: {err}"))
                })?;
            messages.push(message);
        }
        Ok(messages)
    }

    /// Checks the end of the stream: bytes of an incomplete frame left over are an error.
    fn finish(&mut self) -> Result<Vec<Message>, ProviderError> {
        if self.buffer.is_empty() {
            Ok(Vec::new())
        } else {
            Err(ProviderError::Stream(format!(
                "the stream ended inside an event-stream frame ({} bytes of it received)",
                self.buffer.len()
            )))
        }
    }
}

/// The string value of header `name`, when the message has it as a string.
pub fn header_str<'a>(message: &'a Message, name: &str) -> Option<&'a str> {
    message
        .headers()
        .iter()
        .find(|header| header.name().as_str() == name)
        .and_then(|header| match header.value() {
            HeaderValue::String(value) => Some(value.as_str()),
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::bodies::decoded;
    use aws_smithy_types::event_stream::Header;
    use bytes::Bytes;
    use futures::StreamExt;

    fn frame(event_type: &str, payload: &str) -> Vec<u8> {
        let message = Message::new(Bytes::from(payload.to_owned()))
            .add_header(Header::new(
                ":message-type",
                HeaderValue::String("event".into()),
            ))
            .add_header(Header::new(
                ":event-type",
                HeaderValue::String(event_type.to_owned().into()),
            ));
        let mut bytes = Vec::new();
        aws_smithy_eventstream::frame::write_message_to(&message, &mut bytes).unwrap();
        bytes
    }

    #[test]
    fn frames_split_anywhere_decode_whole_and_in_order() {
        let mut wire = frame("messageStart", r#"{"role":"assistant"}"#);
        wire.extend(frame("contentBlockDelta", r#"{"delta":{"text":"hé"}}"#));
        for size in [1, 3, 7, wire.len()] {
            let mut decoder = FrameDecoder::new(1024);
            let mut got = Vec::new();
            for chunk in wire.chunks(size) {
                got.extend(decoder.push(chunk).unwrap());
            }
            decoder.finish().unwrap();
            let types: Vec<_> = got.iter().map(|m| header_str(m, ":event-type")).collect();
            assert_eq!(
                types,
                [Some("messageStart"), Some("contentBlockDelta")],
                "{size}"
            );
            assert_eq!(
                &got[1].payload()[..],
                r#"{"delta":{"text":"hé"}}"#.as_bytes()
            );
        }
    }

    #[test]
    fn a_bad_crc_is_a_stream_error_naming_the_checksum() {
        let mut wire = frame("messageStart", r#"{"role":"assistant"}"#);
        let last = wire.len() - 6;
        wire[last] ^= 0xff;
        let error = FrameDecoder::new(1024).push(&wire).unwrap_err();
        assert!(matches!(error, ProviderError::Stream(_)), "{error:?}");
        assert!(error.to_string().contains("checksum"), "{error}");
    }

    #[test]
    fn a_frame_past_the_bound_is_refused_from_its_first_four_bytes() {
        let declared = 64u32 * 1024 * 1024;
        let error = FrameDecoder::new(1024 * 1024)
            .push(&declared.to_be_bytes())
            .unwrap_err();
        assert!(
            matches!(error, ProviderError::LimitExceeded(_)),
            "{error:?}"
        );
        assert!(error.to_string().contains("64 MiB"), "{error}");
        assert!(error.to_string().contains("max_event_bytes"), "{error}");
    }

    #[test]
    fn impossible_lengths_and_truncated_frames_are_errors() {
        let error = FrameDecoder::new(1024).push(&[0, 0, 0, 3]).unwrap_err();
        assert!(error.to_string().contains("malformed"), "{error}");
        let wire = frame("messageStop", "{}");
        let mut decoder = FrameDecoder::new(1024);
        assert!(decoder.push(&wire[..wire.len() - 1]).unwrap().is_empty());
        let error = decoder.finish().unwrap_err();
        assert!(
            error.to_string().contains("inside an event-stream frame"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn the_stream_ends_with_an_error_when_the_transport_breaks() {
        let chunks: Vec<Result<Bytes, String>> = vec![
            Ok(Bytes::from(frame("messageStart", "{}"))),
            Err("connection reset".to_owned()),
        ];
        let got: Vec<_> = decoded(futures::stream::iter(chunks), FrameDecoder::new(1024))
            .collect()
            .await;
        assert_eq!(got.len(), 2);
        assert!(got[0].is_ok());
        let error = got[1].as_ref().unwrap_err();
        assert!(error.is_retryable() && error.to_string().contains("connection reset"));
    }
}
