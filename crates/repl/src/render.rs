//! The screen: streamed assistant text (markdown-aware), tool cards, notices, permission
//! questions and the single loader line, on a scrolling terminal.
//!
//! On a terminal the bottom of the output is a *live region*: the unfinished line of
//! streamed text (redrawn as chunks arrive and re-styled once complete) and one loader
//! line (spinner, loader text, status). Everything above it is final. Lines end with
//! `\r\n` because raw mode clears OPOST. Without a terminal there is no live region, no
//! loader and no styling: text is written as it arrives, so output can be piped.
//!
//! Only this module writes to the terminal while pith is busy; it never decides anything
//! (that is `state` and `keys`).

use std::io::Write;

use crossterm::cursor::MoveUp;
use crossterm::style::{Print, PrintStyledContent, Stylize};
use crossterm::terminal::{Clear, ClearType};
use crossterm::{queue, terminal};
use pith_core::{ToolCall, ToolResult};
use pith_tools::PermissionRequest;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::cards::{argument_summary, result_preview};
use crate::markdown::{wrap, MarkdownLines, Span, SpanStyle};

/// Spinner frames of the loader line.
const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The kind of a one-line message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Information from pith (compaction notices, command output headers).
    Info,
    /// Something went wrong.
    Error,
    /// Secondary information (status line, hints).
    Dim,
}

/// The terminal writer; see the module docs.
pub struct Screen {
    out: Box<dyn Write + Send>,
    interactive: bool,
    markdown: MarkdownLines,
    partial: String,
    loader: Option<String>,
    detail: String,
    frame: usize,
    live_rows: u16,
    /// The raw text of the current answer does not end with a newline yet (plain mode).
    plain_open_line: bool,
    /// The model's reasoning so far in this answer: shown dimmed in the live region (its
    /// last rows), collapsed to one line once the answer starts.
    reasoning: String,
    /// Live cards of running subagents, drawn above the loader.
    cards: Vec<String>,
}

/// Rows of reasoning the live region shows at most (the newest).
const REASONING_ROWS: usize = 4;

impl Screen {
    /// A screen writing to `out`; `interactive` enables the live region and styling.
    pub fn new(out: Box<dyn Write + Send>, interactive: bool) -> Self {
        Self {
            out,
            interactive,
            markdown: MarkdownLines::new(),
            partial: String::new(),
            loader: None,
            detail: String::new(),
            frame: 0,
            live_rows: 0,
            plain_open_line: false,
            reasoning: String::new(),
            cards: Vec::new(),
        }
    }

    /// Appends streamed reasoning: dimmed in the live region, never part of the answer.
    /// Without a terminal it is only counted, for the collapsed line.
    pub fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.clear_live();
        self.reasoning.push_str(delta);
        self.draw_live();
    }

    /// Collapses the reasoning shown so far into one dim final line (the answer, a tool
    /// card or a message is about to be written).
    fn collapse_reasoning(&mut self) {
        if self.reasoning.is_empty() {
            return;
        }
        let words = std::mem::take(&mut self.reasoning)
            .split_whitespace()
            .count();
        let line = format!("\u{25b8} thought ({words} words)");
        self.final_line(|screen| screen.styled(&line, Style::Dim));
    }

    /// True when writing to a terminal.
    pub fn is_interactive(&self) -> bool {
        self.interactive
    }

    fn columns(&self) -> usize {
        terminal::size()
            .map(|(cols, _)| usize::from(cols))
            .unwrap_or(80)
            .max(10)
    }

    /// Appends streamed assistant text.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.collapse_reasoning();
        if !self.interactive {
            let _ = self.out.write_all(delta.as_bytes());
            self.plain_open_line = !delta.ends_with('\n');
            let _ = self.out.flush();
            return;
        }
        self.partial.push_str(delta);
        self.clear_live();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let spans = self
                .markdown
                .complete_line(line.trim_end_matches(['\n', '\r']));
            self.write_rows(&spans);
            self.newline();
        }
        self.draw_live();
    }

    /// Ends the current answer: the unfinished line becomes final.
    pub fn end_text(&mut self) {
        self.collapse_reasoning();
        if !self.interactive {
            if self.plain_open_line {
                let _ = self.out.write_all(b"\n");
                self.plain_open_line = false;
            }
            let _ = self.out.flush();
            return;
        }
        if self.partial.is_empty() {
            return;
        }
        self.clear_live();
        let line = std::mem::take(&mut self.partial);
        let spans = self.markdown.complete_line(&line);
        self.write_rows(&spans);
        self.newline();
        self.draw_live();
    }

    /// Starts a new answer (forgets markdown block state).
    pub fn start_answer(&mut self) {
        self.end_text();
        self.markdown.reset();
    }

    /// The header of a tool card.
    pub fn tool_started(&mut self, call: &ToolCall) {
        self.end_text();
        let summary = argument_summary(call);
        self.final_line(|screen| {
            screen.styled(&format!("● {}", call.name), Style::ToolName);
            screen.styled(&format!("  {summary}"), Style::Dim);
        });
    }

    /// The result preview of a tool card.
    pub fn tool_finished(&mut self, result: &ToolResult) {
        let preview = result_preview(result);
        let (mark, style) = if result.is_error {
            ("✗", Style::Error)
        } else {
            ("✓", Style::Dim)
        };
        for (i, line) in preview.iter().enumerate() {
            let lead = if i == 0 {
                format!("  {mark} ")
            } else {
                "    ".to_owned()
            };
            let line = line.clone();
            self.final_line(|screen| screen.styled(&format!("{lead}{line}"), style));
        }
    }

    /// A one-line message on its own line.
    pub fn message(&mut self, tone: Tone, text: &str) {
        self.end_text();
        let style = match tone {
            Tone::Info => Style::Info,
            Tone::Error => Style::Error,
            Tone::Dim => Style::Dim,
        };
        for line in text.lines() {
            let line = line.to_owned();
            self.final_line(|screen| screen.styled(&line, style));
        }
    }

    /// Finishes the prompt's line with `text`, as if the user had typed it: for a key
    /// that stands for a command (Esc Esc for `/rewind`), so its output starts below.
    pub fn echo_command(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        self.newline();
        let _ = self.out.flush();
    }

    /// Several lines of plain output (command results).
    pub fn block(&mut self, text: &str) {
        self.end_text();
        for line in text.lines() {
            let line = line.to_owned();
            self.final_line(|screen| screen.styled(&line, Style::Plain));
        }
    }

    /// Shows a permission question.
    pub fn question(&mut self, request: &PermissionRequest) {
        self.end_text();
        let header = format!("? {} wants to {}", request.tool, request.summary);
        self.final_line(|screen| screen.styled(&header, Style::Question));
        // The diff of a write or an edit, so the change is reviewed before it is allowed.
        for line in request.details.as_deref().unwrap_or_default().lines() {
            let line = format!("    {line}");
            self.final_line(|screen| screen.styled(&line, Style::Plain));
        }
        let options = if self.interactive {
            format!(
                "  [y] yes   [a] yes, and allow {} this session   [n] no (Esc)",
                request.session_scope
            )
        } else {
            "  no terminal to ask: refused".to_owned()
        };
        self.final_line(|screen| screen.styled(&options, Style::Dim));
    }

    /// Shows (or replaces) the loader line with `text` and `detail` beside it.
    pub fn set_loader(&mut self, text: &str, detail: &str) {
        if !self.interactive {
            return;
        }
        if self.loader.as_deref() == Some(text) && self.detail == detail {
            return;
        }
        self.clear_live();
        self.loader = Some(text.to_owned());
        self.detail = detail.to_owned();
        self.draw_live();
    }

    /// Replaces the live cards of running subagents (one line each, above the loader;
    /// nothing without a terminal).
    pub fn set_cards(&mut self, cards: Vec<String>) {
        if !self.interactive || self.cards == cards {
            return;
        }
        self.clear_live();
        self.cards = cards;
        self.draw_live();
    }

    /// Advances the spinner.
    pub fn tick(&mut self) {
        if !self.interactive || self.loader.is_none() {
            return;
        }
        self.frame = (self.frame + 1) % SPINNER.len();
        self.clear_live();
        self.draw_live();
    }

    /// Removes the loader line (the job ended).
    pub fn clear_loader(&mut self) {
        if !self.interactive {
            return;
        }
        self.clear_live();
        self.loader = None;
        self.detail.clear();
        self.draw_live();
    }

    /// Writes one final line above the live region.
    fn final_line(&mut self, body: impl FnOnce(&mut Self)) {
        if self.interactive {
            self.clear_live();
        } else if self.plain_open_line {
            let _ = self.out.write_all(b"\n");
            self.plain_open_line = false;
        }
        body(self);
        self.newline();
        if self.interactive {
            self.draw_live();
        }
        let _ = self.out.flush();
    }

    fn newline(&mut self) {
        let _ = self
            .out
            .write_all(if self.interactive { b"\r\n" } else { b"\n" });
    }

    fn styled(&mut self, text: &str, style: Style) {
        if !self.interactive {
            let _ = self.out.write_all(text.as_bytes());
            return;
        }
        let content = match style {
            Style::Plain => text.to_owned().stylize(),
            Style::Dim => text.to_owned().dark_grey(),
            Style::Info => text.to_owned().cyan(),
            Style::Error => text.to_owned().red(),
            Style::ToolName => text.to_owned().magenta().bold(),
            Style::Question => text.to_owned().yellow().bold(),
        };
        let _ = queue!(self.out, PrintStyledContent(content));
    }

    fn write_spans(&mut self, spans: &[Span]) {
        for span in spans {
            let text = span.text.clone();
            let content = match span.style {
                SpanStyle::Plain => text.stylize(),
                SpanStyle::Bold => text.bold(),
                SpanStyle::Code => text.cyan(),
                SpanStyle::Heading => text.bold().underlined(),
                SpanStyle::CodeBlock => text.green(),
                SpanStyle::Dim => text.dark_grey(),
                SpanStyle::Quote => text.italic(),
            };
            let _ = queue!(self.out, PrintStyledContent(content));
        }
    }

    /// Writes a line word-wrapped to the terminal width; returns the rows used.
    fn write_rows(&mut self, spans: &[Span]) -> usize {
        let rows = wrap(spans, self.columns());
        for (i, row) in rows.iter().enumerate() {
            if i > 0 {
                self.newline();
            }
            self.write_spans(row);
        }
        rows.len()
    }

    /// Erases the live region; the cursor ends at its first row, column 0.
    fn clear_live(&mut self) {
        if !self.interactive || self.live_rows == 0 {
            return;
        }
        let _ = queue!(self.out, Print("\r"));
        if self.live_rows > 1 {
            let _ = queue!(self.out, MoveUp(self.live_rows - 1));
        }
        let _ = queue!(self.out, Clear(ClearType::FromCursorDown));
        self.live_rows = 0;
    }

    /// Draws the live region (unfinished line, then the loader line) from the cursor.
    fn draw_live(&mut self) {
        if !self.interactive {
            return;
        }
        let columns = self.columns();
        let mut rows: usize = 0;
        if !self.reasoning.is_empty() {
            let dim: Vec<Span> = self
                .reasoning
                .lines()
                .map(|line| Span {
                    text: line.to_owned(),
                    style: SpanStyle::Dim,
                })
                .collect();
            let mut wrapped: Vec<Vec<Span>> = Vec::new();
            for line in dim {
                wrapped.extend(wrap(std::slice::from_ref(&line), columns));
            }
            let shown = &wrapped[wrapped.len().saturating_sub(REASONING_ROWS)..];
            for (i, row) in shown.iter().enumerate() {
                if i > 0 {
                    self.newline();
                }
                self.write_spans(row);
                rows += 1;
            }
            // The cursor stays on the last row drawn (clear_live counts from there).
            if !self.partial.is_empty() || self.loader.is_some() {
                self.newline();
            }
        }
        if !self.partial.is_empty() {
            let spans = self.markdown.partial_line(&self.partial);
            rows += self.write_rows(&spans);
            if self.loader.is_some() {
                self.newline();
            }
        }
        if !self.cards.is_empty() {
            if rows > 0 {
                self.newline();
            }
            let cards: Vec<String> = self.cards.iter().map(|c| fit(c, columns - 1)).collect();
            for (i, card) in cards.iter().enumerate() {
                if i > 0 {
                    self.newline();
                }
                let _ = queue!(self.out, PrintStyledContent(card.clone().magenta()));
                rows += 1;
            }
            if self.loader.is_some() {
                self.newline();
            }
        }
        if let Some(loader) = &self.loader {
            let mut line = format!("{} {loader}", SPINNER[self.frame]);
            if !self.detail.is_empty() {
                line.push_str("  ");
                line.push_str(&self.detail);
            }
            let line = fit(&line, columns - 1);
            let (head, tail) = match line.find("  ") {
                Some(at) => line.split_at(at),
                None => (line.as_str(), ""),
            };
            let _ = queue!(
                self.out,
                PrintStyledContent(head.to_owned().cyan()),
                PrintStyledContent(tail.to_owned().dark_grey())
            );
            rows += 1;
        }
        self.live_rows = u16::try_from(rows).unwrap_or(u16::MAX);
        let _ = self.out.flush();
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        self.end_text();
        self.clear_loader();
        let _ = self.out.flush();
    }
}

#[derive(Debug, Clone, Copy)]
enum Style {
    Plain,
    Dim,
    Info,
    Error,
    ToolName,
    Question,
}

/// Cuts `line` to `columns` display columns, marking a cut with `…`.
fn fit(line: &str, columns: usize) -> String {
    if line.width() <= columns {
        return line.to_owned();
    }
    let room = columns.saturating_sub(1);
    let mut out = String::new();
    let mut width = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if width + w > room {
            break;
        }
        width += w;
        out.push(c);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn reasoning_is_never_answer_text_and_collapses_when_the_answer_starts() {
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        screen.reasoning("Check the parser ");
        screen.reasoning("before answering.");
        screen.text("It is the parser.");
        drop(screen);
        assert_eq!(
            capture.text(),
            "\u{25b8} thought (5 words)\nIt is the parser.\n",
            "without a terminal only the collapsed line shows"
        );
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), true);
        screen.reasoning("line one\nline two");
        assert_eq!(screen.live_rows, 2, "the reasoning is live, dimmed");
        let live = capture.text();
        let dim = format!("{}", "line one".to_owned().dark_grey());
        assert!(live.contains(&dim), "dimmed: {live:?}");
        screen.text("Answer.\n");
        assert_eq!(screen.live_rows, 0, "collapsed once the answer starts");
        drop(screen);
        let text = capture.text();
        assert!(text.contains("\u{25b8} thought (4 words)"), "{text:?}");
        let answer_at = text.find("Answer.").unwrap();
        assert!(text.find("thought (4").unwrap() < answer_at);
    }

    #[test]
    fn a_permission_question_shows_the_diff_to_review() {
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        screen.question(&PermissionRequest {
            tool: "edit".into(),
            summary: "edit src/lib.rs".into(),
            session_scope: "edits".into(),
            details: Some("-old line\n+new line".into()),
        });
        drop(screen);
        let text = capture.text();
        assert!(text.contains("? edit wants to edit src/lib.rs"), "{text}");
        assert!(text.contains("    -old line\n    +new line\n"), "{text}");
    }

    #[test]
    fn without_a_terminal_text_streams_verbatim_and_cards_get_their_own_lines() {
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), false);
        screen.set_loader("Compacting...", "status");
        screen.text("Hello ");
        screen.text("**world**");
        screen.tool_started(&ToolCall {
            id: "1".into(),
            name: "read".into(),
            arguments: serde_json::json!({"path": "a.rs"}),
        });
        screen.message(Tone::Info, "Context compacted automatically");
        drop(screen);
        assert_eq!(
            capture.text(),
            "Hello **world**\n● read  a.rs\nContext compacted automatically\n",
            "piped output must carry no escape codes and no loader"
        );
    }

    #[test]
    fn on_a_terminal_complete_lines_are_styled_and_lines_end_with_crlf() {
        let capture = Capture::default();
        let mut screen = Screen::new(Box::new(capture.clone()), true);
        screen.set_loader("Working...", "");
        screen.text("# Title\npart");
        screen.end_text();
        screen.clear_loader();
        drop(screen);
        let out = capture.text();
        assert!(out.contains("Title"), "{out:?}");
        assert!(
            !out.contains("# Title"),
            "headings lose their hashes: {out:?}"
        );
        assert!(out.contains("part\r\n"), "raw mode needs CRLF: {out:?}");
        assert!(out.contains("Working..."), "{out:?}");
    }

    #[test]
    fn fitting_cuts_to_the_column_count() {
        assert_eq!(fit("abcdef", 10), "abcdef");
        let cut = fit(&"x".repeat(50), 10);
        assert_eq!(cut.width(), 10);
        assert!(cut.ends_with('…'));
        assert!(
            fit(&"日".repeat(20), 9).width() <= 9,
            "wide characters count twice"
        );
    }
}
