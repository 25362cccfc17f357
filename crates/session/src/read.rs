//! Reading a transcript back: strict by default, never silent.
//!
//! Rules (the same for `pith replay`, resume and listing):
//! - A record is committed when its terminating newline is on disk. Bytes after the last
//!   newline are a *torn tail* (a crash mid-append, or a writer still writing): reported,
//!   never an error, never parsed. Readers do not modify the file; the next writer moves
//!   the tail to `transcript.jsonl.corrupt-<ts>` (see `store`).
//! - A complete line that cannot be decoded (bad JSON, missing envelope field, another
//!   schema version, a sequence number out of order) fails the read with its 1-based line
//!   number, unless [`ReadOptions::skip_corrupt`] is set: then it is skipped and reported.
//! - A record of an unknown kind is kept as [`Event::Unknown`] and reported.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Result, SessionError};
use crate::event::{decode_line, Event, LineProblem, Record};

/// How strictly to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Skip (and report) corrupt complete lines instead of failing on the first one.
    pub skip_corrupt: bool,
}

/// A complete line that was skipped because it could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    #[serde(rename = "line")]
    pub line: usize,
    /// What is wrong with it.
    #[serde(rename = "reason")]
    pub reason: String,
}

/// Bytes after the last newline: an append that did not complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TornTail {
    /// 1-based line number the tail would have had.
    #[serde(rename = "line")]
    pub line: usize,
    /// Byte offset where the tail starts (the length of the committed transcript).
    #[serde(rename = "offset")]
    pub offset: u64,
    /// Length of the tail in bytes.
    #[serde(rename = "bytes")]
    pub bytes: u64,
}

/// A preserved record of a kind this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownRecord {
    /// 1-based line number.
    #[serde(rename = "line")]
    pub line: usize,
    /// Its sequence number.
    #[serde(rename = "seq")]
    pub seq: u64,
    /// Its kind.
    #[serde(rename = "kind")]
    pub kind: String,
}

/// Everything a read noticed besides the records themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReadReport {
    /// Corrupt lines skipped (only with `skip_corrupt`).
    #[serde(rename = "skipped")]
    pub skipped: Vec<SkippedLine>,
    /// An incomplete last line, ignored.
    #[serde(rename = "torn_tail")]
    pub torn_tail: Option<TornTail>,
    /// Records of unknown kinds, kept and skipped by projection.
    #[serde(rename = "unknown")]
    pub unknown: Vec<UnknownRecord>,
}

impl ReadReport {
    /// Human-readable warnings, one per finding, for a front-end to print.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for skipped in &self.skipped {
            warnings.push(format!(
                "skipped corrupt line {}: {}",
                skipped.line, skipped.reason
            ));
        }
        for unknown in &self.unknown {
            warnings.push(format!(
                "line {} (seq {}) has kind {:?}, unknown to this pith: kept, not shown",
                unknown.line, unknown.seq, unknown.kind
            ));
        }
        if let Some(tail) = &self.torn_tail {
            warnings.push(format!(
                "line {} is incomplete ({} bytes, an interrupted write): ignored; the next writer quarantines it",
                tail.line, tail.bytes
            ));
        }
        warnings
    }
}

/// A transcript as read: its records in order and what the read noticed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    /// Committed records, in file order.
    pub records: Vec<Record>,
    /// Findings (skipped lines, torn tail, unknown kinds).
    pub report: ReadReport,
}

impl Transcript {
    /// The sequence number of the last record (0 for an empty transcript).
    pub fn last_seq(&self) -> u64 {
        self.records.last().map_or(0, |r| r.seq)
    }
}

/// Longest line a reader accepts, in bytes: records are written within
/// `externalize::DEFAULT_MAX_RECORD_BYTES` (8 MiB unless configured, at most this); a
/// longer line is reported as corrupt instead of being held in memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// Reads and decodes the transcript at `path`, line by line: memory holds one line at a
/// time besides the decoded records. Stored references of large records are resolved from
/// the session directory (see `externalize`).
pub fn read_transcript(path: &Path, options: ReadOptions) -> Result<Transcript> {
    let file = std::fs::File::open(path)
        .map_err(|e| SessionError::io("cannot read transcript", path, e))?;
    let mut transcript = parse_lines(
        std::io::BufReader::with_capacity(256 * 1024, file),
        path,
        options,
    )?;
    if let Some(dir) = path.parent() {
        for record in &mut transcript.records {
            crate::externalize::resolve(&mut record.event, dir);
        }
    }
    Ok(transcript)
}

/// Decodes transcript bytes; `path` is used only in error messages. Stored references
/// are left as they are.
pub fn parse_transcript(bytes: &[u8], path: &Path, options: ReadOptions) -> Result<Transcript> {
    parse_lines(bytes, path, options)
}

/// One line as read by [`read_line`].
enum Line {
    /// A complete line (newline removed) is in the buffer.
    Complete,
    /// The stream ended after this many bytes without a newline.
    Torn(usize),
    /// The line had this many bytes, more than [`MAX_LINE_BYTES`]; it was skipped.
    TooLong(usize),
    /// Nothing left.
    End,
}

/// Reads one line into `buffer`, never holding more than [`MAX_LINE_BYTES`] of it.
fn read_line(reader: &mut impl std::io::BufRead, buffer: &mut Vec<u8>) -> std::io::Result<Line> {
    buffer.clear();
    let mut total = 0usize;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(match total {
                0 => Line::End,
                n if n > MAX_LINE_BYTES => Line::TooLong(n),
                n => Line::Torn(n),
            });
        }
        let (piece, complete) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        total += piece.len();
        if total <= MAX_LINE_BYTES {
            buffer.extend_from_slice(piece);
        } else {
            buffer.clear();
        }
        let consumed = complete.unwrap_or(available.len());
        reader.consume(consumed);
        if complete.is_some() {
            return Ok(if total > MAX_LINE_BYTES {
                Line::TooLong(total)
            } else {
                Line::Complete
            });
        }
    }
}

fn parse_lines(
    mut reader: impl std::io::BufRead,
    path: &Path,
    options: ReadOptions,
) -> Result<Transcript> {
    let mut transcript = Transcript::default();
    let mut expected_seq = 1u64;
    let mut line_no = 0usize;
    let mut offset = 0u64;
    let mut buffer = Vec::new();
    loop {
        let line = read_line(&mut reader, &mut buffer)
            .map_err(|e| SessionError::io("cannot read transcript", path, e))?;
        let outcome = match line {
            Line::End => break,
            Line::Torn(bytes) => {
                transcript.report.torn_tail = Some(TornTail {
                    line: line_no + 1,
                    offset,
                    bytes: bytes as u64,
                });
                break;
            }
            Line::TooLong(bytes) => {
                offset += bytes as u64 + 1;
                Err(LineFailure::Problem(LineProblem::Malformed(format!(
                    "a record of {bytes} bytes, more than the {MAX_LINE_BYTES} a reader accepts"
                ))))
            }
            Line::Complete => {
                offset += buffer.len() as u64 + 1;
                decode_committed_line(&buffer, expected_seq)
            }
        };
        line_no += 1;
        match outcome {
            Ok(record) => {
                expected_seq = record.seq + 1;
                if let Event::Unknown { kind, .. } = &record.event {
                    transcript.report.unknown.push(UnknownRecord {
                        line: line_no,
                        seq: record.seq,
                        kind: kind.clone(),
                    });
                }
                transcript.records.push(record);
            }
            Err(LineFailure::SeqOutOfOrder { record, reason }) if options.skip_corrupt => {
                // The record itself is intact: keep it, report the gap.
                transcript.report.skipped.push(SkippedLine {
                    line: line_no,
                    reason,
                });
                expected_seq = record.seq + 1;
                transcript.records.push(*record);
            }
            Err(failure) if options.skip_corrupt => {
                transcript.report.skipped.push(SkippedLine {
                    line: line_no,
                    reason: failure.reason(),
                });
            }
            Err(failure) => {
                return Err(SessionError::CorruptLine {
                    path: PathBuf::from(path),
                    line: line_no,
                    reason: failure.reason(),
                })
            }
        }
    }
    Ok(transcript)
}

enum LineFailure {
    Problem(LineProblem),
    NotUtf8,
    SeqOutOfOrder { record: Box<Record>, reason: String },
}

impl LineFailure {
    fn reason(&self) -> String {
        match self {
            LineFailure::Problem(problem) => problem.to_string(),
            LineFailure::NotUtf8 => "not valid UTF-8".to_owned(),
            LineFailure::SeqOutOfOrder { reason, .. } => reason.clone(),
        }
    }
}

fn decode_committed_line(raw_line: &[u8], expected_seq: u64) -> Result<Record, LineFailure> {
    let line = std::str::from_utf8(raw_line).map_err(|_| LineFailure::NotUtf8)?;
    if line.trim().is_empty() {
        return Err(LineFailure::Problem(LineProblem::Malformed(
            "empty line".to_owned(),
        )));
    }
    let record = decode_line(line).map_err(LineFailure::Problem)?;
    if record.seq != expected_seq {
        let reason = format!(
            "sequence number {} where {expected_seq} was expected (a record is missing or out of order)",
            record.seq
        );
        return Err(LineFailure::SeqOutOfOrder {
            record: Box::new(record),
            reason,
        });
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::encode_line;

    fn transcript_of(events: &[Event]) -> String {
        events
            .iter()
            .enumerate()
            .map(|(i, e)| encode_line(i as u64 + 1, "2026-11-29T13:10:15.123Z", e).unwrap())
            .collect()
    }

    fn three_lines() -> String {
        transcript_of(&[
            Event::user_text("one"),
            Event::user_text("two"),
            Event::user_text("three"),
        ])
    }

    fn parse(text: &str, skip_corrupt: bool) -> Result<Transcript> {
        parse_transcript(
            text.as_bytes(),
            Path::new("t.jsonl"),
            ReadOptions { skip_corrupt },
        )
    }

    #[test]
    fn a_clean_transcript_reads_without_findings() {
        let t = parse(&three_lines(), false).unwrap();
        assert_eq!(t.records.len(), 3);
        assert_eq!(t.report, ReadReport::default());
        assert_eq!(t.last_seq(), 3);
    }

    #[test]
    fn a_torn_tail_is_reported_not_fatal() {
        let mut text = three_lines();
        text.push_str(r#"{"v":1,"seq":4,"ts":"2026-11-"#);
        let t = parse(&text, false).unwrap();
        assert_eq!(t.records.len(), 3);
        let tail = t.report.torn_tail.clone().expect("torn tail reported");
        assert_eq!(tail.line, 4);
        assert_eq!(tail.offset as usize, three_lines().len());
        assert!(t.report.warnings()[0].contains("line 4 is incomplete"));
    }

    #[test]
    fn a_corrupt_middle_line_fails_with_its_line_number() {
        let lines: Vec<String> = three_lines().lines().map(str::to_owned).collect();
        let text = format!("{}\n{{garbage\n{}\n", lines[0], lines[2]);
        let err = parse(&text, false).unwrap_err();
        match &err {
            SessionError::CorruptLine { line, .. } => assert_eq!(*line, 2, "{err}"),
            other => panic!("expected a corrupt line error, got {other}"),
        }
        assert!(err.to_string().contains("line 2"), "{err}");
    }

    #[test]
    fn skip_corrupt_reports_every_skipped_line_and_keeps_the_rest() {
        let lines: Vec<String> = three_lines().lines().map(str::to_owned).collect();
        let text = format!("{}\n{{garbage\n\n{}\n", lines[0], lines[2]);
        let t = parse(&text, true).unwrap();
        assert_eq!(t.records.len(), 2);
        let skipped: Vec<usize> = t.report.skipped.iter().map(|s| s.line).collect();
        // line 2 garbage, line 3 empty, line 4 intact but seq jumps from 1 to 3
        assert_eq!(skipped, vec![2, 3, 4]);
        assert_eq!(t.records[1].seq, 3);
    }

    #[test]
    fn a_duplicated_record_is_a_sequence_error() {
        let lines: Vec<String> = three_lines().lines().map(str::to_owned).collect();
        let text = format!("{}\n{}\n{}\n", lines[0], lines[1], lines[1]);
        let err = parse(&text, false).unwrap_err().to_string();
        assert!(
            err.contains("line 3") && err.contains("sequence number 2 where 3"),
            "{err}"
        );
    }

    #[test]
    fn unknown_kinds_are_kept_and_reported() {
        let mut text = three_lines();
        text.push_str(
            r#"{"v":1,"seq":4,"ts":"2026-11-29T13:10:15.123Z","kind":"future_thing","a":1}"#,
        );
        text.push('\n');
        let t = parse(&text, false).unwrap();
        assert_eq!(t.records.len(), 4);
        assert_eq!(
            t.report.unknown,
            vec![UnknownRecord {
                line: 4,
                seq: 4,
                kind: "future_thing".into()
            }]
        );
    }

    #[test]
    fn a_foreign_schema_version_fails_unless_skipped() {
        let mut text = three_lines();
        text.push_str(r#"{"v":2,"seq":4,"ts":"2026-11-29T13:10:15.123Z","kind":"user_message"}"#);
        text.push('\n');
        let err = parse(&text, false).unwrap_err().to_string();
        assert!(
            err.contains("line 4") && err.contains("newer pith"),
            "{err}"
        );
        let t = parse(&text, true).unwrap();
        assert_eq!(t.records.len(), 3);
        assert_eq!(t.report.skipped.len(), 1);
    }

    #[test]
    fn invalid_utf8_is_a_corrupt_line() {
        let mut bytes = three_lines().into_bytes();
        bytes.extend_from_slice(b"\xff\xfe\n");
        let err = parse_transcript(&bytes, Path::new("t"), ReadOptions::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 4") && err.contains("UTF-8"), "{err}");
    }

    #[test]
    fn an_empty_file_is_an_empty_transcript() {
        let t = parse("", false).unwrap();
        assert!(t.records.is_empty());
        assert_eq!(t.report, ReadReport::default());
    }
}
