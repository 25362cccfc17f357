//! Keeping every transcript record under a size bound.
//!
//! A record whose line would exceed the bound (8 MiB by default) has its largest payloads
//! — message texts and tool-result contents, and the copies of them in the visible items
//! — moved to files under the session's `spill/records/`, largest first, until the line
//! fits. In the record each moved payload is replaced by a *stored reference*: the string
//! `"\u0000pith-stored:records/<seq>-<n>.txt"`. Reading resolves the references again,
//! so replay and resume reproduce the record exactly, and no line a reader must hold is
//! larger than the bound. A NUL character never starts real text pith records (tool
//! output is made valid UTF-8 text, and text does not start with NUL in practice), so the
//! reference cannot be mistaken for content; a reference whose file is missing reads as
//! an explicit `[stored content missing: …]` note, never silently.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use pith_core::{Message, Part};

use crate::event::Event;
use crate::items::TranscriptItem;
use crate::paths::SPILL_DIR;

/// Default largest record line, in bytes.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 8 * 1024 * 1024;

/// Payloads smaller than this are never moved out (it would not help).
const MIN_STORED_BYTES: usize = 4 * 1024;

/// Start of a stored reference.
pub const STORED_PREFIX: &str = "\u{0}pith-stored:";

/// Directory of stored payloads inside the session's spill directory.
pub const RECORDS_DIR: &str = "records";

/// Every payload string of `event` that can be stored: message texts, tool results, image
/// data and encrypted reasoning, and the visible items' texts and results.
fn payloads_mut(event: &mut Event) -> Vec<&mut String> {
    fn of_messages<'a>(messages: impl Iterator<Item = &'a mut Message>) -> Vec<&'a mut String> {
        messages
            .flat_map(|message| message.parts.iter_mut())
            .filter_map(|part| match part {
                Part::Text { text } => Some(text),
                Part::ToolResult(result) => Some(&mut result.content),
                // An image's base64 and encrypted reasoning are the largest payloads a
                // turn can carry.
                Part::Image(image) => Some(&mut image.data),
                Part::Reasoning(reasoning) => reasoning.encrypted.as_mut(),
                Part::ToolCall(_) => None,
            })
            .collect()
    }
    match event {
        Event::UserMessage { message } => of_messages(std::iter::once(message)),
        Event::AssistantTurn {
            messages, items, ..
        } => {
            let mut payloads = of_messages(messages.iter_mut());
            payloads.extend(items.iter_mut().filter_map(|item| match item {
                TranscriptItem::AssistantText { text } | TranscriptItem::Notice { text } => {
                    Some(text)
                }
                TranscriptItem::ToolResult { content, .. } => Some(content),
                TranscriptItem::ToolCall { .. } => None,
            }));
            payloads
        }
        Event::CompactionApplied { messages, .. }
        | Event::MicroCompactionApplied { messages, .. } => of_messages(messages.iter_mut()),
        Event::HookRun(run) => vec![&mut run.stdout, &mut run.stderr],
        // Paths and hashes only: nothing worth storing beside the record.
        Event::SessionStarted { .. }
        | Event::ModelSwitched { .. }
        | Event::Checkpoint(_)
        | Event::Pin(_)
        | Event::Rewind(_)
        | Event::Unknown { .. } => Vec::new(),
    }
}

/// The line of `event` (encoded by `encode`) within `max_bytes`: when the plain line is
/// longer, the largest payloads are written to `session_dir/spill/records/<seq>-<n>.txt`
/// and replaced by stored references until it fits (or nothing large is left).
pub fn encode_bounded(
    event: &Event,
    seq: u64,
    session_dir: &Path,
    max_bytes: usize,
    encode: impl Fn(&Event) -> crate::Result<String>,
) -> crate::Result<String> {
    let line = encode(event)?;
    if line.len() <= max_bytes {
        return Ok(line);
    }
    let mut bounded = event.clone();
    let mut payloads = payloads_mut(&mut bounded);
    payloads.sort_by_key(|payload| std::cmp::Reverse(payload.len()));
    let dir = session_dir.join(SPILL_DIR).join(RECORDS_DIR);
    let mut size = line.len();
    for (index, payload) in payloads.into_iter().enumerate() {
        if size <= max_bytes || payload.len() < MIN_STORED_BYTES {
            break;
        }
        let name = format!("{seq}-{index}.txt");
        store(&dir, &name, payload)
            .map_err(|e| crate::SessionError::io("cannot store a large payload in", &dir, e))?;
        size = size.saturating_sub(payload.len());
        *payload = format!("{STORED_PREFIX}{RECORDS_DIR}/{name}");
    }
    tracing::debug!(
        seq,
        before = line.len(),
        "large record: payloads stored beside it"
    );
    encode(&bounded)
}

fn store(dir: &Path, name: &str, payload: &str) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(dir.join(name))?;
    file.write_all(payload.as_bytes())?;
    file.sync_all()
}

/// Replaces the stored references of `event` by the payloads they point to, read from
/// `session_dir/spill/`. A missing or unreadable file becomes an explicit note.
pub fn resolve(event: &mut Event, session_dir: &Path) {
    for payload in payloads_mut(event) {
        let Some(relative) = payload.strip_prefix(STORED_PREFIX) else {
            continue;
        };
        if relative.contains("..") || !relative.starts_with(RECORDS_DIR) {
            *payload = format!("[stored content refused: {relative} is outside the records]");
            continue;
        }
        let path = session_dir.join(SPILL_DIR).join(relative);
        *payload = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            format!("[stored content missing: {}: {error}]", path.display())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::encode_line;

    fn encode(event: &Event) -> crate::Result<String> {
        encode_line(5, "2026-11-30T00:00:00.000Z", event)
    }

    #[test]
    fn a_small_record_is_written_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let event = Event::user_text("hello");
        let line = encode_bounded(&event, 5, dir.path(), 1024, encode).unwrap();
        assert_eq!(line, encode(&event).unwrap());
        assert!(!dir.path().join(SPILL_DIR).exists());
    }

    #[test]
    fn a_large_record_stores_its_largest_payloads_and_reads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(100_000);
        let medium = "y".repeat(30_000);
        let event = Event::AssistantTurn {
            messages: vec![
                Message::tool_result("a", big.clone(), false),
                Message::tool_result("b", medium.clone(), false),
                Message::assistant("short"),
            ],
            items: vec![TranscriptItem::ToolResult {
                call_id: "a".into(),
                content: big.clone(),
                is_error: false,
                spill: None,
                child_session: None,
            }],
            usage: None,
            interrupted: false,
            error: None,
            compaction_model_usage: None,
        };
        let line = encode_bounded(&event, 5, dir.path(), 60_000, encode).unwrap();
        assert!(line.len() <= 60_000, "{}", line.len());
        assert!(
            line.contains("\\u0000pith-stored:records/5-"),
            "{line:.300}"
        );
        assert!(line.contains("short"), "small payloads stay inline");
        let mut decoded = crate::event::decode_line(line.trim_end()).unwrap().event;
        resolve(&mut decoded, dir.path());
        assert_eq!(decoded, event);
    }

    #[test]
    fn a_missing_or_escaping_reference_reads_as_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut event = Event::user_text(format!("{STORED_PREFIX}records/9-0.txt"));
        resolve(&mut event, dir.path());
        let Event::UserMessage { message } = &event else {
            unreachable!()
        };
        assert!(message
            .text_content()
            .starts_with("[stored content missing:"));
        std::fs::create_dir_all(dir.path().join(SPILL_DIR)).unwrap();
        std::fs::write(dir.path().join(SPILL_DIR).join("secret.txt"), "x").unwrap();
        let mut escaping = Event::user_text(format!("{STORED_PREFIX}records/../secret.txt"));
        resolve(&mut escaping, dir.path());
        let Event::UserMessage { message } = &escaping else {
            unreachable!()
        };
        assert!(message
            .text_content()
            .starts_with("[stored content refused"));
    }
}
