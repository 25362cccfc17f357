//! The protocol's incoming lines, read so that no byte the client sends can end the
//! session. The SDK reads newline-delimited JSON and gives up on the first line that is
//! not UTF-8, and would hold a line of any length in memory; pith reads the lines itself
//! and hands the SDK only lines it can answer:
//!
//! - a line of valid UTF-8 up to [`MAX_LINE_BYTES`] passes unchanged (JSON or not: the
//!   SDK answers one that is not JSON with `-32700`);
//! - a line that is not UTF-8, or is longer than [`MAX_LINE_BYTES`] (read to its end
//!   without being kept), is replaced by a request the connection answers with a
//!   `-32700` error naming the reason ([`REJECTED_LINE`]), under the line's own `id` when
//!   one can be read from its start, so the client's pending request is answered; with no
//!   id, by a short line that is not JSON, which the SDK answers with a `-32700` whose id
//!   is null;
//! - blank lines are skipped.
//!
//! Whatever the line, the next one is read as usual: running prompts keep running.

use std::io;
use std::pin::Pin;

use futures::io::{AsyncBufRead, AsyncBufReadExt};
use futures::Stream;
use serde_json::{json, Value};

/// The longest line pith reads (16 MiB): a prompt with large pasted files or images fits;
/// a longer one is answered with an error instead of being held in memory.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How much of a rejected line is kept to find its `id` (clients write `id` before
/// `params`).
const HEAD_BYTES: usize = 64 * 1024;

/// The method of the request that stands for a rejected line; the connection answers it
/// with a `-32700` error whose data is the reason (see `ext.rs`).
pub const REJECTED_LINE: &str = "_pith/rejected_line";

/// Why a line was not handed to the SDK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The line is not valid UTF-8.
    InvalidUtf8 {
        /// The offset of the first invalid byte.
        at: usize,
    },
    /// The line is longer than [`MAX_LINE_BYTES`].
    TooLong {
        /// The line's length.
        bytes: usize,
    },
}

impl Rejection {
    /// The reason, as the client reads it in the error's data.
    pub fn reason(&self) -> String {
        match self {
            Rejection::InvalidUtf8 { at } => {
                format!("the message is not valid UTF-8 (an invalid byte at offset {at}); it was not read")
            }
            Rejection::TooLong { bytes } => format!(
                "the message is {bytes} bytes long, over pith's limit of {MAX_LINE_BYTES} bytes a line; it was not read"
            ),
        }
    }
}

/// The lines of `reader` as the SDK's `Lines` transport takes them (see the module docs).
/// Ends at the end of the input, or with the error a read returned.
pub fn incoming<R>(reader: R) -> Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>
where
    R: AsyncBufRead + Unpin + Send + 'static,
{
    Box::pin(futures::stream::unfold(reader, |mut reader| async move {
        loop {
            match read_line(&mut reader).await {
                Ok(None) => return None,
                Ok(Some(raw)) => {
                    if let Some(line) = admit(raw) {
                        return Some((Ok(line), reader));
                    }
                }
                Err(error) => return Some((Err(error), reader)),
            }
        }
    }))
}

/// The protocol's outgoing lines: each message written whole with its newline, then
/// flushed, so that the client reads it at once.
pub fn outgoing<W>(writer: W) -> impl futures::Sink<String, Error = io::Error> + Send + 'static
where
    W: futures::io::AsyncWrite + Unpin + Send + 'static,
{
    futures::sink::unfold(writer, |mut writer, line: String| async move {
        use futures::io::AsyncWriteExt;
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        writer.write_all(&bytes).await?;
        writer.flush().await?;
        Ok::<_, io::Error>(writer)
    })
}

/// One line as read: its bytes (at most [`MAX_LINE_BYTES`], or the first [`HEAD_BYTES`]
/// of a longer one) and its whole length.
#[derive(Debug)]
pub struct RawLine {
    bytes: Vec<u8>,
    length: usize,
}

/// Reads one line (without its `\n`, and without a `\r` before it); `None` at the end of
/// the input. A line longer than [`MAX_LINE_BYTES`] is read to its end, keeping only its
/// head.
pub async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<RawLine>> {
    let mut bytes = Vec::new();
    let mut length = 0usize;
    let mut any = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            break;
        }
        any = true;
        let (chunk, found) = match buffer.iter().position(|b| *b == b'\n') {
            Some(end) => (&buffer[..end], true),
            None => (buffer, false),
        };
        length += chunk.len();
        let keep = if length > MAX_LINE_BYTES {
            HEAD_BYTES
        } else {
            MAX_LINE_BYTES
        };
        let room = keep.saturating_sub(bytes.len()).min(chunk.len());
        bytes.extend_from_slice(&chunk[..room]);
        if length > MAX_LINE_BYTES && bytes.len() > HEAD_BYTES {
            bytes.truncate(HEAD_BYTES);
        }
        let used = chunk.len() + usize::from(found);
        reader.consume_unpin(used);
        if found {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if length <= MAX_LINE_BYTES && bytes.last() == Some(&b'\r') {
        bytes.pop();
        length -= 1;
    }
    Ok(Some(RawLine { bytes, length }))
}

/// What the SDK gets for `raw`: the line itself, its replacement, or nothing (a blank
/// line).
pub fn admit(raw: RawLine) -> Option<String> {
    let rejection = if raw.length > MAX_LINE_BYTES {
        Rejection::TooLong { bytes: raw.length }
    } else {
        match String::from_utf8(raw.bytes) {
            Ok(line) if line.trim().is_empty() => return None,
            Ok(line) => return Some(line),
            Err(error) => {
                let at = error.utf8_error().valid_up_to();
                return Some(replacement(
                    &error.into_bytes(),
                    &Rejection::InvalidUtf8 { at },
                ));
            }
        }
    };
    Some(replacement(&raw.bytes, &rejection))
}

/// The line that stands for a rejected one whose first bytes are `head`.
fn replacement(head: &[u8], rejection: &Rejection) -> String {
    match top_level_id(head) {
        Some(id) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "method": REJECTED_LINE,
            "params": {"reason": rejection.reason()},
        })
        .to_string(),
        // Not JSON: the SDK answers it with a parse error (id null), echoing this text.
        None => format!("pith: {}", rejection.reason()),
    }
}

/// The value of the top-level `"id"` member of the JSON object `bytes` starts with, when
/// it is a string or a number and comes before anything unreadable.
pub fn top_level_id(bytes: &[u8]) -> Option<Value> {
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(bytes, at);
        match bytes.get(at)? {
            b',' => {
                at += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(bytes, at)?;
        let key = &bytes[at + 1..key_end - 1];
        at = skip_space(bytes, key_end);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(bytes, at + 1);
        let value_end = value_end(bytes, at)?;
        if key == b"id" {
            let text = String::from_utf8_lossy(&bytes[at..value_end]);
            return serde_json::from_str::<Value>(&text)
                .ok()
                .filter(|id| id.is_string() || id.is_number());
        }
        at = value_end;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(|b| b.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// The index just after the string that starts (with its quote) at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match bytes.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index just after the JSON value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match bytes.get(i)? {
                    b'"' => {
                        i = string_end(bytes, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while bytes
                .get(i)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                i += 1;
            }
            (i > at && i < bytes.len()).then_some(i)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn lines_of(input: Vec<u8>) -> Vec<io::Result<String>> {
        let reader = futures::io::BufReader::with_capacity(4096, futures::io::Cursor::new(input));
        futures::executor::block_on(incoming(reader).collect::<Vec<_>>())
    }

    fn ok_lines(input: Vec<u8>) -> Vec<String> {
        lines_of(input).into_iter().map(|l| l.unwrap()).collect()
    }

    #[test]
    fn valid_lines_pass_unchanged_and_blank_lines_are_skipped() {
        let lines = ok_lines(b"{\"a\":1}\r\n\n  \n{\"b\":\"\xc3\xa9\"}\nlast".to_vec());
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":\"é\"}", "last"]);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_answered_under_its_own_id() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp/\xff\"}}\n{\"next\":true}\n".to_vec();
        let lines = ok_lines(input);
        assert_eq!(lines.len(), 2);
        let stand_in: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(stand_in["id"], json!(7));
        assert_eq!(stand_in["method"], json!(REJECTED_LINE));
        assert!(stand_in["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("not valid UTF-8 (an invalid byte at offset 69)"));
        assert_eq!(lines[1], "{\"next\":true}");
    }

    #[test]
    fn a_rejected_line_without_a_readable_id_becomes_a_parse_error() {
        let lines =
            ok_lines(b"\xff\xfe garbage\n{\"method\":\"x\",\"params\":\"\xff\"}\n".to_vec());
        assert_eq!(lines.len(), 2);
        for line in &lines {
            assert!(
                line.starts_with("pith: the message is not valid UTF-8"),
                "{line}"
            );
            assert!(serde_json::from_str::<Value>(line).is_err());
        }
    }

    #[test]
    fn a_line_over_the_limit_is_read_to_its_end_without_being_kept() {
        let mut input =
            br#"{"jsonrpc":"2.0","id":"big-1","method":"session/prompt","params":{"text":""#
                .to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        input.extend_from_slice(b"\"}}\n{\"id\":2}\n");
        let total = input.len() - "\n{\"id\":2}\n".len();
        let lines = ok_lines(input);
        assert_eq!(lines.len(), 2);
        let stand_in: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(stand_in["id"], json!("big-1"));
        assert_eq!(
            stand_in["params"]["reason"],
            json!(Rejection::TooLong { bytes: total }.reason())
        );
        assert_eq!(lines[1], "{\"id\":2}");
    }

    #[test]
    fn a_line_exactly_at_the_limit_is_kept() {
        let mut input = vec![b'a'; MAX_LINE_BYTES];
        input.push(b'\n');
        let lines = ok_lines(input);
        assert_eq!(lines[0].len(), MAX_LINE_BYTES);
    }

    #[test]
    fn the_id_is_found_only_at_the_top_level() {
        let id = |s: &str| top_level_id(s.as_bytes());
        assert_eq!(id(r#"{"id": "a"}"#), Some(json!("a")));
        assert_eq!(
            id(r#" { "params": {"id": 1, "x": [1,{"id":2}]}, "id" : 3 }"#),
            Some(json!(3))
        );
        assert_eq!(id(r#"{"k": "a \" \\", "id": -4.5}"#), Some(json!(-4.5)));
        assert_eq!(id(r#"{"params": {"id": 1}}"#), None);
        assert_eq!(id(r#"{"id": null}"#), None);
        assert_eq!(id(r#"{"id": {"x": 1}}"#), None);
        assert_eq!(id(r#"[{"id": 1}]"#), None);
        assert_eq!(id(r#"{"id": 12"#), None, "a number cut short is not an id");
        assert_eq!(id(""), None);
    }

    /// A small deterministic generator (xorshift), so the fuzz cases are the same on
    /// every run and a failure can be reproduced from its seed.
    struct Noise(u64);

    impl Noise {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> usize {
            (self.next() % n) as usize
        }
    }

    #[test]
    fn fuzz_random_bytes_truncated_and_interleaved_lines_never_end_the_stream() {
        let valid = br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#;
        for seed in 1..=300u64 {
            let mut noise = Noise(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut input = Vec::new();
            let mut expected_valid = 0;
            for _ in 0..noise.below(40) + 1 {
                match noise.below(5) {
                    0 => {
                        input.extend_from_slice(valid);
                        input.push(b'\n');
                        expected_valid += 1;
                    }
                    1 => {
                        // Random bytes, newlines included.
                        for _ in 0..noise.below(300) {
                            input.push(noise.next() as u8);
                        }
                        input.push(b'\n');
                    }
                    2 => {
                        // A valid message cut short.
                        input.extend_from_slice(&valid[..noise.below(valid.len() as u64)]);
                        input.push(b'\n');
                    }
                    3 => {
                        // A valid message with one byte made invalid.
                        let mut line = valid.to_vec();
                        let at = noise.below(line.len() as u64);
                        line[at] = 0xC0 | (noise.next() as u8 & 0x01);
                        input.extend_from_slice(&line);
                        input.push(b'\n');
                    }
                    _ => input.extend_from_slice(b"\r\n\n"),
                }
            }
            let lines = lines_of(input);
            assert!(lines.iter().all(|l| l.is_ok()), "seed {seed}");
            let passed = lines
                .iter()
                .filter(|l| l.as_ref().is_ok_and(|l| l.as_bytes() == valid))
                .count();
            assert!(
                passed >= expected_valid,
                "seed {seed}: a valid message was lost"
            );
            for line in lines.iter().flatten() {
                assert!(line.len() <= MAX_LINE_BYTES);
                assert!(!line.trim().is_empty());
            }
        }
    }
}
