//! The short diff shown after a write or an edit, so the model (and the transcript) sees
//! exactly what changed without reading the file again.

use std::time::Duration;

use similar::TextDiff;

use crate::squash;

/// A unified diff of `old` → `new` (3 lines of context), at most `max_lines` lines, with
/// an added/removed line count first.
pub(crate) fn short_diff(shown: &str, old: &str, new: &str, max_lines: usize) -> String {
    // A deadline keeps a pathological diff (huge, completely rewritten file) from
    // stalling the call; past it, similar returns a coarser but correct diff.
    let diff = TextDiff::configure()
        .timeout(Duration::from_millis(500))
        .diff_lines(old, new);
    let (mut added, mut removed) = (0usize, 0usize);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let unified = diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let lines: Vec<&str> = unified.lines().collect();
    let mut out = format!("+{added} -{removed} lines\n");
    for line in lines.iter().take(max_lines) {
        out.push_str(line);
        out.push('\n');
    }
    if lines.len() > max_lines {
        out.push_str(&squash::omitted_marker(lines.len() - max_lines));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_shows_the_change_and_counts() {
        let text = short_diff("a.rs", "one\ntwo\nthree\n", "one\n2\nthree\n", 80);
        assert!(text.starts_with("+1 -1 lines\n"), "{text}");
        assert!(text.contains("-two\n+2\n"), "{text}");
        assert!(text.contains("--- a/a.rs"), "{text}");
    }

    #[test]
    fn long_diffs_are_capped_with_a_marker() {
        let new: String = (0..500).map(|i| format!("{i}\n")).collect();
        let text = short_diff("big", "", &new, 10);
        assert_eq!(text.lines().count(), 12, "{text}");
        assert!(text.ends_with("lines omitted]\n"), "{text}");
    }
}
