//! What the ledger reads off a tool call and its result: the shell command it ran, the
//! exit code and spill file pith's bash tool reported, the line that says what went
//! wrong, and how a command is shown.

use std::sync::LazyLock;

use regex::Regex;

use crate::protocol::message::ToolCall;

/// Longest command text or error line kept, in characters.
const MAX_LINE_CHARS: usize = 300;

/// The shell command of a call, when the call runs one: a `command` argument (a string,
/// or an argv array joined with spaces).
pub fn shell_command(call: &ToolCall) -> Option<String> {
    let command = call.arguments.get("command")?;
    match command {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Array(words) => {
            let words: Vec<&str> = words.iter().filter_map(|w| w.as_str()).collect();
            // `["bash", "-lc", "script"]` runs the script.
            match words.as_slice() {
                [shell, flag, script]
                    if flag.starts_with('-') && flag.contains('c') && shell.ends_with("sh") =>
                {
                    Some((*script).to_owned())
                }
                _ => Some(words.join(" ")),
            }
        }
        _ => None,
    }
}

static EXIT_CODE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\[exit code: (-?\d+)\]$").expect("constant pattern compiles")
});
static SPILL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^\[full output: ([^\]\n]+)\]$").expect("constant pattern compiles")
});

/// The exit code pith's bash tool reported in `content` (`[exit code: N]`).
pub fn exit_code(content: &str) -> Option<i32> {
    EXIT_CODE
        .captures_iter(content)
        .last()
        .and_then(|c| c[1].parse().ok())
}

/// The spill file a result names (`[full output: PATH]`).
pub fn spill_path(content: &str) -> Option<String> {
    SPILL
        .captures_iter(content)
        .last()
        .map(|c| c[1].trim().to_owned())
}

/// A line that says what went wrong.
static ERROR_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)error|exception|traceback|fail|fatal|panic|denied|not found|no such file",
        r"|cannot|can't|unable to|invalid|undefined|refused|abort|segmentation fault",
        r"|command not found|syntax"
    ))
    .expect("constant pattern compiles")
});

/// True for the lines pith adds to a tool output (exit code, notes, markers).
fn is_pith_line(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with('[') && t.ends_with(']'))
        && (t.starts_with("[exit code")
            || t.starts_with("[full output")
            || t.starts_with("[killed by")
            || t.starts_with("[timed out")
            || t.ends_with("omitted]")
            || t.starts_with("[output was")
            || t.starts_with("[background"))
        || t == "(no output)"
}

/// `text` without the `<hook_context>` blocks hooks appended to it
/// ([`crate::protocol::hooks::context_block`]): the ledger keeps what the user wrote.
pub(super) fn without_hook_context(text: &str) -> String {
    const OPEN: &str = "\n\n<hook_context event=";
    const CLOSE: &str = "</hook_context>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        let Some(end) = rest[start..].find(CLOSE) else {
            break;
        };
        out.push_str(&rest[..start]);
        rest = &rest[start + end + CLOSE.len()..];
    }
    out.push_str(rest);
    out
}

/// The last line of a failing command's output that says what went wrong: the last line
/// with an error word (`error`, `exception`, `fail`, `not found`, …), else the last
/// non-empty line; pith's own status lines are skipped. Cut to 300 characters.
pub fn error_line(content: &str) -> Option<String> {
    let lines: Vec<&str> = content
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_pith_line(l))
        .collect();
    let line = lines
        .iter()
        .rev()
        .find(|l| ERROR_WORDS.is_match(l))
        .or(lines.last())?;
    Some(cut_chars(line.trim(), MAX_LINE_CHARS))
}

/// `text` cut to `max` characters with `…`.
pub(crate) fn cut_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The first line of a command, cut to 120 characters.
pub(super) fn first_line(command: &str) -> String {
    cut_chars(command.trim().lines().next().unwrap_or_default(), 120)
}

/// A command as the ledger shows it: its first line, and how many lines follow.
pub(super) fn command_display(command: &str) -> String {
    let trimmed = command.trim();
    let mut lines = trimmed.lines();
    let first = cut_chars(lines.next().unwrap_or_default(), MAX_LINE_CHARS);
    let more = lines.count();
    if more == 0 {
        first
    } else {
        format!("{first} … (+{more} lines)")
    }
}
