//! The demo's evidence: the facts of the design document, looked up in the first request
//! the model received after each compaction.
//!
//! A compaction's summary request ends with pith's compaction prompt ("This is a context
//! compaction request"); the next request that does not is the first one the model answers
//! from the compacted history. Each fact must be in it, outside the system prompt, and the
//! demo says where: the session ledger (`<session_ledger>`), the model's summary
//! (`<compacted_context>`), or the messages kept verbatim after it.

use serde_json::Value;

/// The marker of a summary request (from pith's compaction prompt).
const SUMMARY_MARKER: &str = "This is a context compaction request";

/// One fact of part 1, and the words that show it was kept.
pub struct Fact {
    /// How the demo names it.
    pub label: &'static str,
    /// Words that must all be on one line of the request.
    pub needles: &'static [&'static str],
}

/// The facts the closing question depends on.
pub const FACTS: &[Fact] = &[
    Fact {
        label: "storage engine: SQLite in WAL mode",
        needles: &["SQLite", "WAL"],
    },
    Fact {
        label: "why: the team already operates it, backups are one file",
        needles: &["already operates", "single file"],
    },
    Fact {
        label: "retention: raw events 90 days",
        needles: &["90 days"],
    },
    Fact {
        label: "access control: writers use mutual TLS",
        needles: &["mutual TLS"],
    },
];

/// Where a fact was found.
pub struct Found {
    /// The fact.
    pub fact: &'static Fact,
    /// The part of the request that holds it, and the line (shortened), if found.
    pub at: Option<(&'static str, String)>,
}

/// The first request after one compaction, checked.
pub struct AfterCompaction {
    /// Its position among all the requests the model received (0-based).
    pub request: usize,
    /// Every fact of [`FACTS`], found or not.
    pub facts: Vec<Found>,
}

impl AfterCompaction {
    /// The facts that were not found.
    pub fn missing(&self) -> Vec<&'static str> {
        self.facts
            .iter()
            .filter(|found| found.at.is_none())
            .map(|found| found.fact.label)
            .collect()
    }
}

/// For each summary request in `requests`, the next request that is not one, checked for
/// every fact. A summary request with no request after it is left out.
pub fn after_compactions(requests: &[Value]) -> Vec<AfterCompaction> {
    let mut checked = Vec::new();
    for (index, body) in requests.iter().enumerate() {
        if !is_summary_request(body) {
            continue;
        }
        let next = requests
            .iter()
            .enumerate()
            .skip(index + 1)
            .find(|(_, body)| !is_summary_request(body));
        if let Some((request, body)) = next {
            if checked
                .last()
                .is_some_and(|c: &AfterCompaction| c.request == request)
            {
                continue; // two summary attempts before one request: one compaction
            }
            let text = conversation_text(body);
            let facts = FACTS
                .iter()
                .map(|fact| Found {
                    fact,
                    at: locate(&text, fact),
                })
                .collect();
            checked.push(AfterCompaction { request, facts });
        }
    }
    checked
}

/// True when the request's last user message is pith's compaction prompt: it starts
/// with the marker. Merely containing it is not enough: a tiny model's summary can echo
/// the prompt, and the replacement that quotes that summary (`<compacted_context>…`) is
/// the first request the model answers from the compacted history.
pub fn is_summary_request(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
        .is_some_and(|message| {
            content_text(&message["content"])
                .trim_start()
                .starts_with(SUMMARY_MARKER)
        })
}

/// The request's `<session_ledger>` block, for a reader of a failed demo (what the model
/// received, and so why a fact was not in it).
pub fn ledger_block(body: &Value) -> Option<String> {
    let text = conversation_text(body);
    let start = text.rfind("<session_ledger>")?;
    let end = text[start..]
        .find("</session_ledger>")
        .map_or(text.len(), |at| start + at + "</session_ledger>".len());
    Some(text[start..end].to_owned())
}

/// The text of every message but the system prompt, in order.
fn conversation_text(body: &Value) -> String {
    body["messages"]
        .as_array()
        .map(|messages| {
            messages
                .iter()
                .filter(|m| m["role"] != "system")
                .map(|m| content_text(&m["content"]))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A message's content as text: a string, or the text parts of an array.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The part and the line holding every needle of `fact`, if a line does.
fn locate(text: &str, fact: &Fact) -> Option<(&'static str, String)> {
    let mut part = "the messages kept verbatim";
    for line in text.lines() {
        part = part_after(line, part);
        if fact.needles.iter().all(|needle| line.contains(needle)) {
            return Some((part, shorten(line, fact.needles[0])));
        }
    }
    None
}

/// The part of the request a line belongs to, given the part of the line before it.
fn part_after(line: &str, before: &'static str) -> &'static str {
    if line.contains("<session_ledger>") {
        "the session ledger"
    } else if line.contains("<compacted_context>") {
        "the model's summary"
    } else if line.contains("<last_user_message>") || line.contains("</session_ledger>") {
        "the messages kept verbatim"
    } else {
        before
    }
}

/// At most about 100 characters of `line` around `needle`.
fn shorten(line: &str, needle: &str) -> String {
    let line = line.trim();
    if line.chars().count() <= 100 {
        return line.to_owned();
    }
    let at = line.find(needle).unwrap_or(0);
    let start = line[..at]
        .char_indices()
        .rev()
        .nth(40)
        .map_or(0, |(index, _)| index);
    let tail: String = line[start..].chars().take(100).collect();
    let prefix = if start > 0 { "…" } else { "" };
    format!("{prefix}{tail}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(user: &str) -> Value {
        json!({"messages": [
            {"role": "system", "content": "We chose SQLite in WAL mode (a system prompt must not count)."},
            {"role": "user", "content": user}
        ]})
    }

    #[test]
    fn the_request_after_each_summary_is_checked_and_the_part_named() {
        let kept = "<compacted_context>\n## Discoveries\nWe chose SQLite in WAL mode because the team already operates it; backups are a single file.\n</compacted_context>\n<session_ledger>\n- user: raw events are kept for 90 days; writers use mutual TLS\n</session_ledger>";
        let requests = [
            request("part 1"),
            request("This is a context compaction request. Summarize."),
            request(kept),
            request("This is a context compaction request. Summarize."),
            request("<compacted_context>We chose SQLite.</compacted_context>"),
        ];
        let checked = after_compactions(&requests);
        assert_eq!(checked.len(), 2);
        assert_eq!(checked[0].request, 2);
        assert!(checked[0].missing().is_empty());
        let parts: Vec<&str> = checked[0]
            .facts
            .iter()
            .map(|f| f.at.as_ref().unwrap().0)
            .collect();
        assert_eq!(
            parts,
            [
                "the model's summary",
                "the model's summary",
                "the session ledger",
                "the session ledger"
            ]
        );
        // The second compaction lost WAL mode, the reason, retention and access control;
        // the system prompt's mention does not count.
        assert_eq!(checked[1].missing().len(), 4);
    }

    #[test]
    fn a_replacement_whose_summary_echoes_the_prompt_is_not_a_summary_request() {
        let echoed = "<compacted_context>This is a context compaction request. Your reply will REPLACE…</compacted_context>\n<session_ledger>\n- We chose SQLite in WAL mode because the team already operates it and backups are a single file.\n- Raw events are kept for 90 days.\n- Writers authenticate with mutual TLS.\n</session_ledger>";
        let requests = [
            request("part 1"),
            request("This is a context compaction request. Summarize."),
            request(echoed),
            request("part 3"),
        ];
        assert!(!is_summary_request(&requests[2]));
        let checked = after_compactions(&requests);
        assert_eq!(checked.len(), 1);
        assert_eq!(checked[0].request, 2, "the replacement itself is checked");
        assert!(checked[0].missing().is_empty());
        let ledger = ledger_block(&requests[2]).unwrap();
        assert!(ledger.starts_with("<session_ledger>") && ledger.ends_with("</session_ledger>"));
        assert!(ledger.contains("mutual TLS"));
        assert_eq!(ledger_block(&requests[0]), None);
    }

    #[test]
    fn text_parts_are_read_and_long_lines_shortened_around_the_fact() {
        let body = json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": format!("{} raw events are kept for 90 days {}", "x".repeat(200), "y".repeat(200))}
        ]}]});
        let line = locate(&conversation_text(&body), &FACTS[2]).unwrap().1;
        assert!(line.contains("90 days"));
        assert!(line.chars().count() <= 102);
    }
}
