//! Whole-text scans that mark lines: one regex pass over the output instead of one match
//! per line, and the error-line pattern every squasher counts with.

use std::sync::LazyLock;

use regex::Regex;

/// The error-line pattern: the same definition the eval's error-line probe uses.
pub(crate) static ERROR_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i-u)\b(error|exception|traceback|failed|failure|fatal|panic)\b")
        .expect("constant pattern compiles")
});

/// Marks lines matching `re`, scanning the whole text once (much faster than per line).
pub(crate) fn mark_matching_lines(text: &str, lines: &[&str], re: &Regex) -> Vec<bool> {
    let mut marks = vec![false; lines.len()];
    if lines.is_empty() {
        return marks;
    }
    let base = text.as_ptr() as usize;
    let starts: Vec<usize> = lines.iter().map(|l| l.as_ptr() as usize - base).collect();
    let mut from = 0usize;
    while let Some(m) = re.find_at(text, from) {
        let idx = starts
            .partition_point(|s| *s <= m.start())
            .saturating_sub(1);
        marks[idx] = true;
        // Skip to the next line: one match per line is enough.
        let next = starts.get(idx + 1).copied().unwrap_or(text.len());
        if next <= m.start() {
            from = m.end().max(m.start() + 1);
        } else {
            from = next;
        }
        if from >= text.len() {
            break;
        }
    }
    marks
}
