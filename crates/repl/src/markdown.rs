//! Markdown-aware styling of streamed assistant text, one line at a time.
//!
//! Streamed text arrives in arbitrary chunks; the renderer shows the unfinished line and
//! re-styles it when it is complete. This module decides the styling only: headings,
//! bullets, block quotes, fenced code blocks, inline `code` and **bold**. It is pure (no
//! terminal), so the rules are unit-tested; anything it does not recognise is shown as
//! written.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How a span is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanStyle {
    /// Normal text.
    Plain,
    /// `**bold**`.
    Bold,
    /// Inline `code`.
    Code,
    /// A `#` heading line.
    Heading,
    /// A line inside a fenced code block.
    CodeBlock,
    /// A fence line or other markup kept for orientation.
    Dim,
    /// A block quote.
    Quote,
}

/// A run of text with one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The text (no newline).
    pub text: String,
    /// Its style.
    pub style: SpanStyle,
}

impl Span {
    fn new(text: impl Into<String>, style: SpanStyle) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }
}

/// Word-wraps styled spans into rows of at most `columns` display columns: breaks at
/// spaces (the space at a break is dropped), and cuts words longer than a row.
pub fn wrap(spans: &[Span], columns: usize) -> Vec<Vec<Span>> {
    let columns = columns.max(1);
    let mut rows: Vec<Vec<Span>> = vec![Vec::new()];
    let mut width = 0;
    let push = |rows: &mut Vec<Vec<Span>>, text: &str, style: SpanStyle| {
        if let Some(row) = rows.last_mut() {
            match row.last_mut() {
                Some(last) if last.style == style => last.text.push_str(text),
                _ => row.push(Span::new(text, style)),
            }
        }
    };
    for span in spans {
        for piece in pieces(&span.text) {
            let piece_width = piece.width();
            if width + piece_width <= columns {
                push(&mut rows, piece, span.style);
                width += piece_width;
            } else if piece.starts_with(' ') {
                rows.push(Vec::new());
                width = 0;
            } else if piece_width <= columns {
                rows.push(Vec::new());
                push(&mut rows, piece, span.style);
                width = piece_width;
            } else {
                for c in piece.chars() {
                    let char_width = c.width().unwrap_or(0);
                    if width + char_width > columns {
                        rows.push(Vec::new());
                        width = 0;
                    }
                    push(&mut rows, c.encode_utf8(&mut [0; 4]), span.style);
                    width += char_width;
                }
            }
        }
    }
    rows
}

/// Splits text into runs of spaces and runs of everything else.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (at, c) in text.char_indices() {
        let space = c == ' ';
        if in_space.is_some_and(|was| was != space) {
            out.push(&text[start..at]);
            start = at;
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The block state carried from line to line (inside a fenced code block or not).
#[derive(Debug, Clone, Default)]
pub struct MarkdownLines {
    in_code_block: bool,
}

impl MarkdownLines {
    /// A renderer at the start of a document.
    pub fn new() -> Self {
        Self::default()
    }

    /// Styles a complete line and advances the block state.
    pub fn complete_line(&mut self, line: &str) -> Vec<Span> {
        let spans = self.style_line(line);
        if is_fence(line) {
            self.in_code_block = !self.in_code_block;
        }
        spans
    }

    /// Styles an unfinished line without advancing the block state.
    pub fn partial_line(&self, line: &str) -> Vec<Span> {
        self.style_line(line)
    }

    /// Forgets the block state (a new answer starts).
    pub fn reset(&mut self) {
        self.in_code_block = false;
    }

    fn style_line(&self, line: &str) -> Vec<Span> {
        if is_fence(line) {
            return vec![Span::new(line, SpanStyle::Dim)];
        }
        if self.in_code_block {
            return vec![Span::new(format!("  {line}"), SpanStyle::CodeBlock)];
        }
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let hashes = trimmed.bytes().take_while(|b| *b == b'#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            return vec![Span::new(trimmed[hashes + 1..].trim(), SpanStyle::Heading)];
        }
        if let Some(rest) = trimmed
            .strip_prefix("> ")
            .or(trimmed.strip_prefix(">").filter(|r| r.is_empty()))
        {
            let mut spans = vec![Span::new(format!("{indent}│ "), SpanStyle::Dim)];
            spans.extend(inline(rest).into_iter().map(|s| match s.style {
                SpanStyle::Plain => Span::new(s.text, SpanStyle::Quote),
                _ => s,
            }));
            return spans;
        }
        for bullet in ["- ", "* ", "+ "] {
            if let Some(rest) = trimmed.strip_prefix(bullet) {
                let mut spans = vec![Span::new(format!("{indent}• "), SpanStyle::Plain)];
                spans.extend(inline(rest));
                return spans;
            }
        }
        inline(line)
    }
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// Inline markup: `code` and **bold**; unclosed markers are shown as written.
fn inline(text: &str) -> Vec<Span> {
    let mut spans = Vec::new();
    let mut plain = String::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                flush(&mut plain, &mut spans);
                spans.push(Span::new(&after[..end], SpanStyle::Code));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if let Some(end) = after.find("**").filter(|e| *e > 0) {
                flush(&mut plain, &mut spans);
                spans.push(Span::new(&after[..end], SpanStyle::Bold));
                rest = &after[end + 2..];
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            plain.push(c);
        }
        rest = chars.as_str();
    }
    flush(&mut plain, &mut spans);
    spans
}

fn flush(plain: &mut String, spans: &mut Vec<Span>) {
    if !plain.is_empty() {
        spans.push(Span::new(std::mem::take(plain), SpanStyle::Plain));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Terminal columns the spans occupy.
    fn display_width(spans: &[Span]) -> usize {
        spans.iter().map(|s| s.text.width()).sum()
    }

    fn text(spans: &[Span]) -> String {
        spans.iter().map(|s| s.text.as_str()).collect()
    }

    #[test]
    fn headings_lose_their_hashes_and_bullets_become_dots() {
        let mut md = MarkdownLines::new();
        let heading = md.complete_line("## Goal");
        assert_eq!(heading, vec![Span::new("Goal", SpanStyle::Heading)]);
        assert_eq!(text(&md.complete_line("  - item `x`")), "  • item x");
        assert_eq!(text(&md.complete_line("#hashtag")), "#hashtag");
    }

    #[test]
    fn fenced_code_is_shown_verbatim_until_the_closing_fence() {
        let mut md = MarkdownLines::new();
        md.complete_line("```rust");
        let code = md.complete_line("let **x** = `y`;");
        assert_eq!(
            code,
            vec![Span::new("  let **x** = `y`;", SpanStyle::CodeBlock)]
        );
        md.complete_line("```");
        assert_eq!(md.complete_line("# Done")[0].style, SpanStyle::Heading);
    }

    #[test]
    fn a_partial_fence_does_not_change_the_block_state() {
        let mut md = MarkdownLines::new();
        md.partial_line("```");
        assert_eq!(md.complete_line("plain")[0].style, SpanStyle::Plain);
    }

    #[test]
    fn inline_code_and_bold_are_styled_and_unclosed_markers_are_kept() {
        let spans = MarkdownLines::new().complete_line("run `cargo test` **now** or `never");
        assert_eq!(
            spans,
            vec![
                Span::new("run ", SpanStyle::Plain),
                Span::new("cargo test", SpanStyle::Code),
                Span::new(" ", SpanStyle::Plain),
                Span::new("now", SpanStyle::Bold),
                Span::new(" or `never", SpanStyle::Plain),
            ]
        );
    }

    #[test]
    fn wrapping_breaks_at_spaces_keeps_styles_and_cuts_long_words() {
        let spans = vec![
            Span::new("alpha beta ", SpanStyle::Plain),
            Span::new("gamma", SpanStyle::Bold),
        ];
        let rows = wrap(&spans, 10);
        let texts: Vec<String> = rows.iter().map(|row| text(row)).collect();
        assert_eq!(texts, ["alpha beta", "gamma"]);
        assert_eq!(rows[1][0].style, SpanStyle::Bold);
        let long = wrap(&[Span::new("abcdefghij12", SpanStyle::Plain)], 5);
        let texts: Vec<String> = long.iter().map(|row| text(row)).collect();
        assert_eq!(texts, ["abcde", "fghij", "12"]);
        assert_eq!(
            wrap(&[], 10),
            vec![Vec::<Span>::new()],
            "an empty line is one row"
        );
        for row in wrap(&[Span::new("日本語 の テキスト です", SpanStyle::Plain)], 6) {
            assert!(display_width(&row) <= 6, "{row:?}");
        }
    }

    #[test]
    fn quotes_get_a_bar_and_widths_count_wide_characters() {
        let spans = MarkdownLines::new().complete_line("> note");
        assert_eq!(text(&spans), "│ note");
        assert_eq!(display_width(&[Span::new("日本", SpanStyle::Plain)]), 4);
    }
}
