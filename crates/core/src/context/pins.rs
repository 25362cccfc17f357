//! Pins: what the user asked pith to keep whole for the whole session (`/pin PATH`,
//! `/pin "text"`, `pith run --pin PATH`).
//!
//! A pin is a file (carried as it is on disk at each compaction, as the `read` tool shows
//! it) or a note (carried verbatim). The model is shown a pin with the next user message
//! after it was made, and every compaction's replacement carries all of them again, so a
//! pin is in every request from then on. Pins have a budget (`[context] pins_percent` of
//! the input budget); a pin that does not fit is named, never dropped silently: the
//! replacement says it was left out, and the loop tells the user.
//!
//! Pins are session state in the transcript (`pin` records), so they follow the line of
//! the conversation through resume, fork and rewind like the messages around them.

use serde::{Deserialize, Serialize};

use crate::context::ledger::FileProbe;
use crate::context::tokens::TokenCounter;
use crate::format::thousands;
use crate::protocol::message::{Message, Part};

/// Opens the block of pins in a message (a text part of its own).
pub const PINNED_OPEN: &str = "<pinned>";

/// Closes it.
pub const PINNED_CLOSE: &str = "</pinned>";

/// What the block says first, to the model.
const PINNED_INTRO: &str = "The user pinned these for the whole session: they are kept verbatim through every compaction (a file as it is on disk now).";

/// Most bytes of a pinned file read; a larger file is over any budget.
const PIN_MAX_BYTES: usize = 4 * 1024 * 1024;

/// Default of `[context] pins_percent`.
pub const DEFAULT_PINS_PERCENT: u8 = 10;

/// One thing the user pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Pin {
    /// A file of the workspace, carried as it is on disk.
    File {
        /// Its path as the user gave it (relative to the workspace when inside it).
        path: String,
    },
    /// A note, carried verbatim.
    Note {
        /// The note.
        text: String,
    },
}

impl Pin {
    /// How the user is shown it: the path, or the note's start in quotes.
    pub fn label(&self) -> String {
        match self {
            Pin::File { path } => path.clone(),
            Pin::Note { text } => {
                let line = text.lines().next().unwrap_or("").trim();
                let short: String = line.chars().take(48).collect();
                let cut = short.len() < line.len() || text.trim().lines().count() > 1;
                format!("note \"{short}{}\"", if cut { "…" } else { "" })
            }
        }
    }

    /// True when `target` names this pin: its path, or its note's text.
    fn is_named_by(&self, target: &str) -> bool {
        let target = target.trim();
        match self {
            Pin::File { path } => {
                path == target || path.trim_start_matches("./") == target.trim_start_matches("./")
            }
            Pin::Note { text } => text.trim() == target.trim_matches('"').trim(),
        }
    }
}

/// The pins of a session, in the order they were made, each with whether the model has
/// been shown it yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pins {
    entries: Vec<(Pin, bool)>,
}

impl Pins {
    /// No pins.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many pins there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The pins, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Pin> {
        self.entries.iter().map(|(pin, _)| pin)
    }

    /// Adds `pin`, not yet shown to the model; false when it is pinned already.
    pub fn add(&mut self, pin: Pin) -> bool {
        if self.entries.iter().any(|(p, _)| *p == pin) {
            return false;
        }
        self.entries.push((pin, false));
        true
    }

    /// The pin `target` names (its number as listed, from 1; its path; its note's text),
    /// without removing it.
    pub fn find(&self, target: &str) -> Option<&Pin> {
        self.index_of(target).map(|index| &self.entries[index].0)
    }

    /// Removes `pin` when it is pinned (`/unpin`, a transcript's `remove` record); false
    /// when it was not.
    pub fn remove_pin(&mut self, pin: &Pin) -> bool {
        let before = self.entries.len();
        self.entries.retain(|(p, _)| p != pin);
        self.entries.len() != before
    }

    /// The pins the model has not been shown yet, oldest first.
    pub fn unshown(&self) -> Vec<Pin> {
        self.entries
            .iter()
            .filter(|(_, shown)| !shown)
            .map(|(pin, _)| pin.clone())
            .collect()
    }

    /// The model has been shown every pin (a user message carried the new ones, or a
    /// replacement carried them all).
    pub fn mark_all_shown(&mut self) {
        for entry in &mut self.entries {
            entry.1 = true;
        }
    }

    fn index_of(&self, target: &str) -> Option<usize> {
        let target = target.trim();
        if let Ok(number) = target.parse::<usize>() {
            if (1..=self.entries.len()).contains(&number) {
                return Some(number - 1);
            }
        }
        self.entries
            .iter()
            .position(|(pin, _)| pin.is_named_by(target))
    }
}

/// The most tokens of pins a request carries for an input budget of `input_budget` and
/// `[context] pins_percent` = `percent` (0: pins are off).
pub fn pins_budget_tokens(input_budget: u64, percent: u8) -> usize {
    usize::try_from(input_budget * u64::from(percent.min(100)) / 100).unwrap_or(usize::MAX)
}

/// A pin the block carries, with its tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedPin {
    /// The pin.
    pub pin: Pin,
    /// Tokens of its content.
    pub tokens: usize,
}

/// Why a pin was left out of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOutReason {
    /// The file cannot be read as text inside the workspace now (gone, binary, outside).
    Unreadable,
    /// It would take `tokens` where only `left` of the budget remained.
    OverBudget {
        /// Its tokens.
        tokens: usize,
        /// What was left of the budget.
        left: usize,
        /// The whole budget.
        budget: usize,
    },
}

/// A pin the block could not carry, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOutPin {
    /// The pin.
    pub pin: Pin,
    /// Why.
    pub reason: LeftOutReason,
}

impl LeftOutPin {
    /// One line for the user, naming the pin.
    pub fn describe(&self) -> String {
        let label = self.pin.label();
        match &self.reason {
            LeftOutReason::Unreadable => format!(
                "pinned {label} cannot be read as a text file inside the workspace now; it is not carried (/unpin it, or restore it)"
            ),
            LeftOutReason::OverBudget {
                tokens,
                left,
                budget,
            } => format!(
                "pinned {label} ({} tokens) does not fit what is left of the pins budget ({} of {} tokens, [context] pins_percent); it is not carried, the other pins are (/unpin something, or raise pins_percent)",
                thousands(*tokens as u64),
                thousands(*left as u64),
                thousands(*budget as u64)
            ),
        }
    }

    /// The line the block carries in its place, so the model knows it exists.
    fn placeholder(&self) -> String {
        let why = match &self.reason {
            LeftOutReason::Unreadable => "cannot be read now".to_owned(),
            LeftOutReason::OverBudget { tokens, .. } => format!(
                "{} tokens, over the pins budget: read it if you need it",
                thousands(*tokens as u64)
            ),
        };
        match &self.pin {
            Pin::File { path } => format!("<pinned_file path=\"{path}\" left_out=\"{why}\"/>"),
            Pin::Note { .. } => format!("<pinned_note left_out=\"{why}\"/>"),
        }
    }
}

/// A block of pins as a message carries it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RenderedPins {
    /// The block (empty when there were no pins).
    pub text: String,
    /// Its tokens.
    pub tokens: usize,
    /// The pins it carries whole.
    pub carried: Vec<CarriedPin>,
    /// The pins it names but could not carry.
    pub left_out: Vec<LeftOutPin>,
}

/// The content of `pin` as a block carries it; `None` when a file cannot be read.
fn content_of(pin: &Pin, probe: Option<&dyn FileProbe>) -> Option<String> {
    match pin {
        Pin::Note { text } => Some(text.trim().to_owned()),
        Pin::File { path } => probe?.show(path, 1, PIN_MAX_BYTES),
    }
}

/// The tokens `pin` takes now (`None`: a file that cannot be read as text).
pub fn pin_tokens(
    pin: &Pin,
    probe: Option<&dyn FileProbe>,
    counter: &dyn TokenCounter,
) -> Option<usize> {
    content_of(pin, probe).map(|content| counter.count(&content))
}

/// The block of `pins`, oldest first, within `budget_tokens`: each pin that fits what is
/// left is carried whole; one that does not is named in its place and reported in
/// [`RenderedPins::left_out`] (a later, smaller one may still fit).
pub fn render_pins<'a>(
    pins: impl IntoIterator<Item = &'a Pin>,
    probe: Option<&dyn FileProbe>,
    counter: &dyn TokenCounter,
    budget_tokens: usize,
) -> RenderedPins {
    let mut rendered = RenderedPins::default();
    let mut parts = Vec::new();
    let mut left = budget_tokens;
    for pin in pins {
        let Some(content) = content_of(pin, probe) else {
            let left_out = LeftOutPin {
                pin: pin.clone(),
                reason: LeftOutReason::Unreadable,
            };
            parts.push(left_out.placeholder());
            rendered.left_out.push(left_out);
            continue;
        };
        let tokens = counter.count(&content);
        if tokens > left {
            let left_out = LeftOutPin {
                pin: pin.clone(),
                reason: LeftOutReason::OverBudget {
                    tokens,
                    left,
                    budget: budget_tokens,
                },
            };
            parts.push(left_out.placeholder());
            rendered.left_out.push(left_out);
            continue;
        }
        left -= tokens;
        parts.push(match pin {
            Pin::File { path } => {
                format!(
                    "<pinned_file path=\"{path}\">\n{}\n</pinned_file>",
                    content.trim_end()
                )
            }
            Pin::Note { .. } => format!("<pinned_note>\n{content}\n</pinned_note>"),
        });
        rendered.carried.push(CarriedPin {
            pin: pin.clone(),
            tokens,
        });
    }
    if parts.is_empty() {
        return rendered;
    }
    rendered.text = format!(
        "{PINNED_OPEN}\n{PINNED_INTRO}\n{}\n{PINNED_CLOSE}",
        parts.join("\n")
    );
    rendered.tokens = counter.count(&rendered.text);
    rendered
}

/// True when `text` is a block of pins (a message part pith added, not the user's words).
pub fn is_pinned_block(text: &str) -> bool {
    text.trim_start().starts_with(PINNED_OPEN)
}

/// The user's words in `message`: its text parts, less a block of pins pith added to it
/// (the ledger quotes the words, the replacement repeats them; the pins travel apart).
pub fn user_words(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } if !is_pinned_block(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// One token per word.
    struct HeuristicCounter;

    impl TokenCounter for HeuristicCounter {
        fn count(&self, text: &str) -> usize {
            text.split_whitespace().count()
        }
    }

    struct Disk(HashMap<&'static str, &'static str>);

    impl FileProbe for Disk {
        fn fingerprint(&self, path: &str) -> Option<String> {
            self.0.get(path).map(|c| c.len().to_string())
        }
        fn show(&self, path: &str, _offset: u64, max_bytes: usize) -> Option<String> {
            self.0
                .get(path)
                .map(|c| c.chars().take(max_bytes).collect())
        }
    }

    fn file(path: &str) -> Pin {
        Pin::File { path: path.into() }
    }

    fn note(text: &str) -> Pin {
        Pin::Note { text: text.into() }
    }

    #[test]
    fn pins_are_added_once_found_by_number_path_or_text_and_removed() {
        let mut pins = Pins::new();
        assert!(pins.add(file("spec.md")));
        assert!(!pins.add(file("spec.md")), "pinned once");
        assert!(pins.add(note("never touch the public API")));
        assert_eq!(pins.len(), 2);
        assert_eq!(pins.find("1"), Some(&file("spec.md")));
        assert_eq!(pins.find("./spec.md"), Some(&file("spec.md")));
        assert_eq!(
            pins.find("\"never touch the public API\""),
            Some(&note("never touch the public API"))
        );
        assert_eq!(pins.find("3"), None);
        assert!(pins.remove_pin(&note("never touch the public API")));
        assert!(!pins.remove_pin(&file("other.md")));
        assert_eq!(
            pins.iter().cloned().collect::<Vec<_>>(),
            vec![file("spec.md")]
        );
    }

    #[test]
    fn new_pins_are_unshown_until_marked() {
        let mut pins = Pins::new();
        pins.add(file("a.md"));
        pins.mark_all_shown();
        pins.add(note("b"));
        assert_eq!(pins.unshown(), vec![note("b")]);
        pins.mark_all_shown();
        assert!(pins.unshown().is_empty());
    }

    #[test]
    fn a_block_carries_files_and_notes_whole_and_names_what_does_not_fit() {
        let disk = Disk(HashMap::from([
            ("spec.md", "# Spec\nThe API is frozen.\n"),
            ("big.log", "word ".repeat(5_000).leak() as &str),
        ]));
        let counter = HeuristicCounter;
        let pins = [
            file("spec.md"),
            file("big.log"),
            note("ship on friday"),
            file("gone.md"),
        ];
        let rendered = render_pins(&pins, Some(&disk), &counter, 500);
        assert!(rendered.text.starts_with(PINNED_OPEN));
        assert!(rendered.text.contains(
            "<pinned_file path=\"spec.md\">\n# Spec\nThe API is frozen.\n</pinned_file>"
        ));
        assert!(rendered
            .text
            .contains("<pinned_note>\nship on friday\n</pinned_note>"));
        assert!(rendered
            .text
            .contains("<pinned_file path=\"big.log\" left_out="));
        assert!(rendered
            .text
            .contains("<pinned_file path=\"gone.md\" left_out=\"cannot be read now\"/>"));
        assert_eq!(
            rendered
                .carried
                .iter()
                .map(|c| c.pin.clone())
                .collect::<Vec<_>>(),
            vec![file("spec.md"), note("ship on friday")],
            "a smaller pin after one that does not fit is still carried"
        );
        assert_eq!(rendered.left_out.len(), 2);
        let over = rendered.left_out[0].describe();
        assert!(
            over.contains("pinned big.log") && over.contains("pins_percent"),
            "{over}"
        );
        assert!(rendered.left_out[1].describe().contains("pinned gone.md"));
        assert_eq!(rendered.tokens, counter.count(&rendered.text));
        assert!(is_pinned_block(&rendered.text));
    }

    #[test]
    fn no_pins_render_nothing_and_the_budget_follows_the_percent() {
        let counter = HeuristicCounter;
        let rendered = render_pins(&[], None, &counter, 100);
        assert_eq!(rendered, RenderedPins::default());
        assert_eq!(pins_budget_tokens(100_000, 10), 10_000);
        assert_eq!(pins_budget_tokens(100_000, 0), 0);
        assert_eq!(pins_budget_tokens(100_000, 250), 100_000);
    }

    #[test]
    fn the_users_words_leave_the_block_of_pins_out() {
        let mut message = Message::user("fix the bug");
        message.parts.push(Part::Text {
            text: format!("{PINNED_OPEN}\nx\n{PINNED_CLOSE}"),
        });
        assert_eq!(user_words(&message), "fix the bug");
        assert!(message.text_content().contains(PINNED_OPEN));
    }

    #[test]
    fn labels_name_files_and_quote_notes_short() {
        assert_eq!(file("docs/spec.md").label(), "docs/spec.md");
        assert_eq!(note("keep it").label(), "note \"keep it\"");
        let long = note(&"x".repeat(100));
        assert!(long.label().ends_with("…\""), "{}", long.label());
        assert!(note("line one\nline two").label().ends_with("…\""));
    }

    #[test]
    fn pins_serialize_with_their_type() {
        let json = serde_json::to_value(file("a.md")).unwrap();
        assert_eq!(json, serde_json::json!({"type": "file", "path": "a.md"}));
        let back: Pin =
            serde_json::from_value(serde_json::json!({"type": "note", "text": "t"})).unwrap();
        assert_eq!(back, note("t"));
    }
}
