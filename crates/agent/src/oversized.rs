//! A user message too large for its share of the window (a pasted log, `pith run - <
//! big.log`): stored beside the transcript like a spilled tool output, and sent as its
//! head and tail with the file to read the rest from.
//!
//! The user's words are never dropped silently: the whole message is in the spill file,
//! the model is told where (`[full output: $PITH_SPILL_DIR/N.txt]`, the marker it knows
//! from tool outputs, which the ledger lists under its spills), and the user is told in
//! one line. A message that cannot be stored is not sent at all.

use pith_core::thousands;
use pith_core::{Message, Part, TokenCounter};
use pith_tools::SpillDir;

/// A message that was cut to fit, and where the whole of it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpilledMessage {
    /// The spill file as the model reads it (`$PITH_SPILL_DIR/N.txt`).
    pub reference: String,
    /// The file's path.
    pub path: std::path::PathBuf,
    /// Tokens of the whole message text.
    pub tokens: usize,
    /// Tokens the model gets.
    pub kept_tokens: usize,
}

impl SpilledMessage {
    /// The line the user sees.
    pub fn notice(&self, max_tokens: usize) -> String {
        format!(
            "your message is {} tokens, more than its share of the context window ({} tokens): the model gets its first and last {} tokens and reads the rest from {} ([context] user_message_percent sets the share)",
            thousands(self.tokens as u64),
            thousands(max_tokens as u64),
            thousands(self.kept_tokens as u64),
            self.path.display()
        )
    }
}

/// `message` within `max_tokens` of text: unchanged when it fits; else its largest text
/// part is written to `spill` whole and replaced by its head and tail around a note
/// naming the file. `Err` when the file cannot be written (nothing may be dropped then).
pub fn fit_user_message(
    mut message: Message,
    max_tokens: usize,
    counter: &dyn TokenCounter,
    spill: &SpillDir,
) -> std::io::Result<(Message, Option<SpilledMessage>)> {
    let Some((index, tokens)) = message
        .parts
        .iter()
        .enumerate()
        .filter_map(|(i, part)| match part {
            Part::Text { text } => Some((i, counter.count(text))),
            _ => None,
        })
        .max_by_key(|(_, tokens)| *tokens)
    else {
        return Ok((message, None));
    };
    if tokens <= max_tokens {
        return Ok((message, None));
    }
    let Part::Text { text } = &message.parts[index] else {
        return Ok((message, None));
    };
    let path = spill.write(text.as_bytes())?;
    let reference = spill.reference(&path);
    let note_tokens = 120;
    let room = max_tokens.saturating_sub(note_tokens).max(2);
    let kept = cut_head_and_tail(counter, text, room, tokens, &reference);
    let kept_tokens = counter.count(&kept);
    message.parts[index] = Part::Text { text: kept };
    Ok((
        message,
        Some(SpilledMessage {
            reference,
            path,
            tokens,
            kept_tokens,
        }),
    ))
}

/// `text` as its head (two thirds of `room`) and tail (one third) around a note saying
/// what is left out and where it is, ending with the spill marker.
fn cut_head_and_tail(
    counter: &dyn TokenCounter,
    text: &str,
    room: usize,
    total: usize,
    reference: &str,
) -> String {
    let head = pith_core::summary::head_tokens(counter, text, room * 2 / 3).unwrap_or_default();
    let tail = tail_tokens(counter, &text[head.len()..], room / 3);
    let omitted = total.saturating_sub(counter.count(&head) + counter.count(tail));
    format!(
        "{head}\n\n[pith: about {} tokens of this message are left out here, between its start and its end. The whole message ({} tokens) is in the file named below: read it with the read tool, a part at a time (offset and limit).]\n\n{tail}\n[full output: {reference}]",
        thousands(omitted as u64),
        thousands(total as u64)
    )
}

/// The end of `text` within `max_tokens`, started at a line break when one is near.
fn tail_tokens<'a>(counter: &dyn TokenCounter, text: &'a str, max_tokens: usize) -> &'a str {
    let total = counter.count(text);
    if total <= max_tokens {
        return text;
    }
    let mut start = ceil_boundary(text, text.len() - text.len() * max_tokens / total.max(1));
    while start < text.len() && counter.count(&text[start..]) > max_tokens {
        start = ceil_boundary(text, start + (text.len() - start) / 10 + 1);
    }
    let tail = &text[start..];
    match tail.find('\n') {
        Some(line) if line < tail.len() / 5 => &tail[line + 1..],
        _ => tail,
    }
}

/// The smallest char boundary of `text` not before `index`.
fn ceil_boundary(text: &str, index: usize) -> usize {
    let mut cut = index.min(text.len());
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{BpeCounter, Encoding};

    fn log(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("2026-12-01T10:00:{i:05}Z INFO worker {i} finished step {i}\n"))
            .collect()
    }

    #[test]
    fn a_message_within_its_share_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let counter = BpeCounter::new(Encoding::O200kBase);
        let message = Message::user("fix the parser");
        let (kept, spilled) = fit_user_message(message.clone(), 100, &counter, &spill).unwrap();
        assert_eq!(kept, message);
        assert_eq!(spilled, None);
        assert!(!dir.path().join("spill").exists());
    }

    #[test]
    fn a_larger_one_is_stored_whole_and_sent_as_head_tail_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let counter = BpeCounter::new(Encoding::O200kBase);
        let text = format!("Find why step 3 fails.\n{}The end.", log(5_000));
        let (kept, spilled) =
            fit_user_message(Message::user(text.clone()), 2_000, &counter, &spill).unwrap();
        let spilled = spilled.expect("spilled");
        assert_eq!(std::fs::read_to_string(&spilled.path).unwrap(), text);
        assert_eq!(spilled.reference, "$PITH_SPILL_DIR/1.txt");
        assert_eq!(spilled.tokens, counter.count(&text));
        let sent = kept.text_content();
        assert!(counter.count(&sent) <= 2_000, "{}", counter.count(&sent));
        assert!(counter.count(&sent) > 1_500, "{}", counter.count(&sent));
        assert!(sent.starts_with("Find why step 3 fails."));
        assert!(sent.contains("The end.\n[full output: $PITH_SPILL_DIR/1.txt]"));
        assert!(sent.contains("tokens of this message are left out"));
        assert_eq!(
            pith_core::context::ledger::spill_path(&sent).as_deref(),
            Some("$PITH_SPILL_DIR/1.txt")
        );
        let notice = spilled.notice(2_000);
        assert!(
            notice.contains("2,000 tokens") && notice.contains("1.txt"),
            "{notice}"
        );
    }

    #[test]
    fn images_stay_and_unicode_is_cut_on_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let spill = SpillDir::new(dir.path().join("spill"));
        let counter = BpeCounter::new(Encoding::O200kBase);
        let mut message = Message::user("ü✓ ".repeat(3_000));
        message.parts.push(Part::Image(pith_core::Image {
            media_type: "image/png".into(),
            data: String::new(),
            width: 10,
            height: 10,
            path: "a.png".into(),
        }));
        let (kept, spilled) = fit_user_message(message, 500, &counter, &spill).unwrap();
        assert!(spilled.is_some());
        assert!(matches!(kept.parts[1], Part::Image(_)));
    }

    #[test]
    fn a_message_that_cannot_be_stored_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "not a directory").unwrap();
        let spill = SpillDir::new(dir.path().join("file").join("spill"));
        let counter = BpeCounter::new(Encoding::O200kBase);
        let result = fit_user_message(Message::user(log(2_000)), 100, &counter, &spill);
        assert!(result.is_err());
    }
}
