//! Source-code views above the cap: the head and the tail of the file, and an outline of
//! the definitions in between (functions, classes, types, with their line numbers) so the
//! model can `read` exactly the part it needs.
//!
//! The outline comes from one cheap regex over the text (no parser): definitions of
//! Python, Rust, Go, JavaScript / TypeScript, Java / C# / Kotlin, C / C++, Ruby, PHP and
//! shell. When not every definition fits the budget, the least indented ones are listed
//! first (evenly spread over the file when even those do not all fit), and one line says
//! how many were left out.
//!
//! Layout: head lines, one `[N lines omitted]` marker, tail lines (so the original lines
//! shown and the marker account for every line), then the outline block: a header line
//! naming how to read a definition, one `LINE: text` line per definition, and at most one
//! `[N more definitions not listed]` line.

use std::sync::LazyLock;

use regex::Regex;

use super::lines::shorten;
use super::marker::{definitions_omitted_marker, omitted_marker, outline_header};
use super::scan::mark_matching_lines;
use crate::context::shell::family::ViewOrigin;

/// A definition line of a common language (one alternation, scanned once).
static DEFINITION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?m)^[ \t]*(?:",
        // Python, Ruby
        r"(?:async[ \t]+)?def[ \t]+\w+|class[ \t]+\w+|module[ \t]+\w+",
        // Rust
        r"|(?:pub(?:\([^)]*\))?[ \t]+)?(?:(?:async|const|unsafe|extern[ \t]+\x22[^\x22]*\x22)[ \t]+)*fn[ \t]+\w+",
        r"|(?:pub(?:\([^)]*\))?[ \t]+)?(?:struct|enum|trait|union|mod|type)[ \t]+\w+",
        r"|(?:unsafe[ \t]+)?impl\b.*|macro_rules![ \t]*\w+",
        // Go
        r"|func[ \t]+(?:\([^)]*\)[ \t]*)?\w+|type[ \t]+\w+[ \t]+(?:struct|interface)\b",
        // JavaScript / TypeScript
        r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\*?[ \t]+\w+",
        r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?class[ \t]+\w+",
        r"|(?:export[ \t]+)?(?:interface|enum|namespace)[ \t]+\w+",
        r"|(?:export[ \t]+)?(?:const|let)[ \t]+\w+[ \t]*=[ \t]*(?:async[ \t]*)?(?:\([^)]*\)|\w+)[ \t]*=>",
        // Java, C#, Kotlin, PHP
        r"|(?:(?:public|private|protected|internal|static|final|abstract|sealed|override|open|data)[ \t]+)+(?:class|interface|enum|record|object|fun|function)[ \t]+\w+",
        r"|(?:(?:public|private|protected|internal|static|final|abstract|synchronized|override|async|virtual)[ \t]+)+[\w<>\[\],.? ]+[ \t]+\w+[ \t]*\(",
        r"|fun[ \t]+\w+|function[ \t]+\w+",
        // C / C++
        r"|(?:struct|union|enum|namespace)[ \t]+\w+[ \t]*\{?[ \t]*$",
        r"|[A-Za-z_][\w:*&<> \t]*[ \t*&]\**\w+(?:::\w+)*[ \t]*\([^;{}]*\)[ \t]*(?:const[ \t]*)?\{?[ \t]*$",
        // shell
        r"|\w+[ \t]*\(\)[ \t]*\{",
        r")"
    ))
    .expect("constant pattern compiles")
});

/// Words at the start of a line that make a C-like "definition" a statement instead.
const NOT_DEFINITIONS: &[&str] = &[
    "return", "if", "else", "while", "for", "switch", "case", "do", "new", "delete", "throw",
    "await", "yield", "print", "echo", "elif", "sizeof", "goto",
];

fn is_definition_line(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    let first = first.split('(').next().unwrap_or(first);
    !NOT_DEFINITIONS.contains(&first)
}

/// Line indices of definitions.
fn definitions(text: &str, lines: &[&str]) -> Vec<usize> {
    mark_matching_lines(text, lines, &DEFINITION)
        .into_iter()
        .enumerate()
        .filter(|(i, d)| *d && is_definition_line(lines[*i]))
        .map(|(i, _)| i)
        .collect()
}

/// True when the text reads like source code: a few definitions and mostly code-shaped
/// lines (ending in `; { } ( ) : ,`, indented, or comments), few timestamped lines.
pub(crate) fn looks_like_source(text: &str, lines: &[&str]) -> bool {
    let sample: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .take(4_000)
        .collect();
    if sample.len() < 20 {
        return false;
    }
    let code_like = sample
        .iter()
        .filter(|l| {
            let t = l.trim_end();
            l.starts_with([' ', '\t'])
                || t.ends_with([';', '{', '}', '(', ')', ':', ',', '[', ']'])
                || t.starts_with("//")
                || t.starts_with('#')
                || t.starts_with("/*")
                || t.starts_with('*')
                || t.starts_with("import ")
                || t.starts_with("from ")
                || t.starts_with("use ")
        })
        .count();
    let timestamped = sample
        .iter()
        .filter(|l| {
            let b = l.as_bytes();
            b.len() > 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-'
        })
        .count();
    let defs = definitions(text, lines).len();
    defs >= 3 && code_like * 10 >= sample.len() * 6 && timestamped * 10 < sample.len()
}

/// Share of the budget the head may use.
const HEAD_SHARE: usize = 4;
/// Share of the budget the tail may use.
const TAIL_SHARE: usize = 8;
/// Longest line shown in head, tail or outline.
const LINE_MAX_CHARS: usize = 160;
/// Longest outline entry text.
const ENTRY_MAX_CHARS: usize = 100;

/// The outline view of `lines` within `budget` bytes; `None` when the text has no
/// definitions between its head and tail (the caller squashes it another way).
pub(crate) fn render(
    text: &str,
    lines: &[&str],
    origin: Option<&ViewOrigin>,
    budget: usize,
) -> Option<String> {
    let n = lines.len();
    let shown = |i: usize| -> String {
        shorten(lines[i], LINE_MAX_CHARS).unwrap_or_else(|| lines[i].to_owned())
    };
    let take_while_fits = |range: &mut dyn Iterator<Item = usize>, limit: usize| {
        let mut used = 0usize;
        let mut taken = Vec::new();
        for i in range {
            let cost = shown(i).len() + 1;
            if used + cost > limit {
                break;
            }
            used += cost;
            taken.push(i);
        }
        (taken, used)
    };
    let (head, head_bytes) = take_while_fits(&mut (0..n), budget / HEAD_SHARE);
    let head_end = head.last().map_or(0, |i| i + 1);
    let (mut tail, tail_bytes) = take_while_fits(&mut (head_end..n).rev(), budget / TAIL_SHARE);
    tail.reverse();
    let tail_start = tail.first().copied().unwrap_or(n);
    if tail_start <= head_end {
        return None;
    }
    let defs: Vec<usize> = definitions(text, lines)
        .into_iter()
        .filter(|i| (head_end..tail_start).contains(i))
        .collect();
    if defs.is_empty() {
        return None;
    }
    let first_line = origin.map_or(1, |o| o.first_line);
    let number = |i: usize| i + first_line;
    let entry = |i: usize| -> String {
        let body = lines[i].trim_end();
        let body = shorten(body, ENTRY_MAX_CHARS).unwrap_or_else(|| body.to_owned());
        format!("{:>6}: {body}", number(i))
    };
    let header = outline_header(
        number(head_end),
        number(tail_start - 1),
        defs.len(),
        origin.map(|o| o.path.as_str()),
    );
    let gap = omitted_marker(tail_start - head_end);
    let fixed = head_bytes + tail_bytes + gap.len() + 1 + header.len() + 1;
    let room = budget
        .saturating_sub(fixed)
        .saturating_sub(definitions_omitted_marker(defs.len()).len() + 1);
    let chosen = choose_entries(lines, &defs, room, &entry);
    let mut out = String::with_capacity(budget);
    for &i in &head {
        out.push_str(&shown(i));
        out.push('\n');
    }
    out.push_str(&gap);
    out.push('\n');
    for &i in &tail {
        out.push_str(&shown(i));
        out.push('\n');
    }
    out.push_str(&header);
    for &i in &chosen {
        out.push('\n');
        out.push_str(&entry(i));
    }
    if chosen.len() < defs.len() {
        out.push('\n');
        out.push_str(&definitions_omitted_marker(defs.len() - chosen.len()));
    }
    Some(out)
}

fn indent_width(line: &str) -> usize {
    line.chars()
        .take_while(|c| c.is_whitespace())
        .map(|c| if c == '\t' { 4 } else { 1 })
        .sum()
}

/// The definitions listed within `room` bytes, in line order: the least indented first,
/// evenly spread over the file within the level that does not fit whole.
fn choose_entries(
    lines: &[&str],
    defs: &[usize],
    room: usize,
    entry: &dyn Fn(usize) -> String,
) -> Vec<usize> {
    let mut levels: Vec<usize> = defs.iter().map(|&i| indent_width(lines[i])).collect();
    levels.sort_unstable();
    levels.dedup();
    let mut chosen: Vec<usize> = Vec::new();
    let mut used = 0usize;
    for level in levels {
        let members: Vec<usize> = defs
            .iter()
            .copied()
            .filter(|&i| indent_width(lines[i]) == level)
            .collect();
        let costs: Vec<usize> = members.iter().map(|&i| entry(i).len() + 1).collect();
        let total: usize = costs.iter().sum();
        if used + total <= room {
            chosen.extend(&members);
            used += total;
            continue;
        }
        // Evenly spread: take every k-th member for growing k until they fit.
        let left = room - used;
        let mean = (total / members.len()).max(1);
        let fit = (left / mean).min(members.len());
        if fit > 0 {
            let mut picked_bytes = 0;
            for s in 0..fit {
                let k = s * members.len() / fit;
                if picked_bytes + costs[k] > left {
                    break;
                }
                picked_bytes += costs[k];
                chosen.push(members[k]);
            }
        }
        break;
    }
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::squash::lines::split_lines;

    fn python_module(classes: usize) -> String {
        let mut s = String::from("import os\nimport sys\n\n");
        for c in 0..classes {
            s.push_str(&format!(
                "class Model{c}(Base):\n    \"\"\"A model.\"\"\"\n\n"
            ));
            for m in 0..5 {
                s.push_str(&format!(
                    "    def method_{m}(self, value):\n        result = compute(value, {m})\n        return result\n\n"
                ));
            }
        }
        s
    }

    #[test]
    fn definitions_of_several_languages_are_found_and_statements_are_not() {
        let text = "\
def top(a):
    return call(a)
class Foo(Bar):
pub(crate) async fn run(x: u8) -> u8 {
impl<T> Display for Foo<T> {
func (s *Server) Serve(ctx context.Context) error {
export default async function main() {
export const handler = async (event) => {
public static void main(String[] args) {
static int parse_line(const char *s, size_t n)
deploy() {
    if (check(x)) {
    return compute(x);
";
        let lines = split_lines(text);
        let defs = definitions(text, &lines);
        let found: Vec<&str> = defs.iter().map(|&i| lines[i].trim()).collect();
        assert_eq!(defs.len(), 10, "{found:#?}");
        assert!(!found
            .iter()
            .any(|l| l.starts_with("if") || l.starts_with("return")));
    }

    #[test]
    fn source_is_told_apart_from_logs_and_prose() {
        let source = python_module(10);
        assert!(looks_like_source(&source, &split_lines(&source)));
        let log: String = (0..200)
            .map(|i| {
                format!(
                    "2026-11-29T10:00:{:02}Z INFO worker: processed batch {i}\n",
                    i % 60
                )
            })
            .collect();
        assert!(!looks_like_source(&log, &split_lines(&log)));
        let prose =
            "This is a sentence of a long document about nothing in particular\n".repeat(100);
        assert!(!looks_like_source(&prose, &split_lines(&prose)));
    }

    #[test]
    fn a_large_module_becomes_head_tail_and_an_outline_within_budget() {
        let source = python_module(2_000);
        let lines = split_lines(&source);
        let origin = ViewOrigin {
            path: "models.py".into(),
            first_line: 1,
        };
        let out = render(&source, &lines, Some(&origin), 8_000).expect("an outline");
        assert!(out.len() <= 8_000, "{} bytes", out.len());
        assert!(out.starts_with("import os\nimport sys\n"));
        assert!(out.contains("read models.py with offset="), "{out}");
        assert!(out.contains(": class Model"), "{out}");
        // Top-level classes come first: no methods fit next to 2,000 classes.
        assert!(!out.contains(": def method_"));
        assert!(out.contains("more definitions not listed]"));
        // The line numbers are the file's.
        let model_7 = lines
            .iter()
            .position(|l| l.starts_with("class Model1000("))
            .unwrap();
        let listed: Vec<&str> = out
            .lines()
            .filter(|l| l.contains(": class Model"))
            .collect();
        assert!(listed.len() > 20, "{}", listed.len());
        if let Some(entry) = listed.iter().find(|l| l.contains("class Model1000(")) {
            assert!(entry.trim_start().starts_with(&format!("{}:", model_7 + 1)));
        }
        // Head + marker + tail account for every original line.
        let body: Vec<&str> = out
            .split("\n[outline")
            .next()
            .unwrap()
            .split('\n')
            .collect();
        let omitted: usize = body
            .iter()
            .filter_map(|l| crate::context::squash::parse_omitted(l))
            .sum();
        assert_eq!(body.len() - 1 + omitted, lines.len());
    }
}
