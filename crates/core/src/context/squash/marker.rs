//! The one marker format of the context pipeline.
//!
//! Every gap left by squash is one line `[N lines omitted]`, and a result whose raw
//! output was spilled ends with one line `[full output: <path>]`. A source view above
//! the cap also carries an outline block (`[outline of lines …]`, `LINE: text` entries,
//! `[N more definitions not listed]`). The markers are
//! deliberately bracketed prose, never comment-shaped (`// ...` is read as code and makes
//! models loop). Nothing else in pith may format these lines: tools call
//! [`with_spill_marker`], tests and the eval parse them with [`parse_omitted`].

/// The line marking a gap of `count` original lines.
pub fn omitted_marker(count: usize) -> String {
    format!("[{count} lines omitted]")
}

/// The number of lines a gap marker stands for, if `line` is one.
pub fn parse_omitted(line: &str) -> Option<usize> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    inner.strip_suffix(" lines omitted")?.parse().ok()
}

/// The line that names the file holding the full raw output: `[full output: <path>]`.
pub fn spill_marker(path: &str) -> String {
    format!("[full output: {path}]")
}

/// Appends the spill marker as the last line of `squashed_text`.
///
/// Called by the layer that wrote the raw output to `path` (tools / session, or `pith
/// compress`), only when [`super::Squashed::dropped_anything`] is true.
pub fn with_spill_marker(squashed_text: &str, path: &str) -> String {
    let marker = spill_marker(path);
    let mut out = String::with_capacity(squashed_text.len() + marker.len() + 1);
    out.push_str(squashed_text);
    if !squashed_text.is_empty() && !squashed_text.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&marker);
    out
}

/// The first line of the outline of a source view (see `outline`): which lines it
/// covers, how many definitions it found and how to read one.
pub fn outline_header(first: usize, last: usize, definitions: usize, path: Option<&str>) -> String {
    let how = match path {
        Some(path) => format!("read {path} with offset=LINE"),
        None => "read the full output named below with offset=LINE".to_owned(),
    };
    format!(
        "[outline of lines {first}-{last}: {definitions} definitions as LINE: text; {how} to see one]"
    )
}

/// The last line of an outline that could not list every definition.
pub fn definitions_omitted_marker(count: usize) -> String {
    format!("[{count} more definitions not listed]")
}

/// The suffix appended inside a line (or a JSON string) that was shortened.
pub fn chars_omitted_suffix(count: usize) -> String {
    format!("…[{count} chars omitted]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_marker_round_trips_and_is_not_comment_shaped() {
        for n in [1, 2, 14, 100_000] {
            let line = omitted_marker(n);
            assert!(!line.starts_with("//") && !line.starts_with('#'));
            assert_eq!(parse_omitted(&line), Some(n), "{line}");
        }
        assert_eq!(parse_omitted("[full output: /tmp/x]"), None);
        assert_eq!(parse_omitted("[x lines omitted]"), None);
    }

    #[test]
    fn spill_marker_is_the_last_line_exactly_once() {
        let text = with_spill_marker("a\nb", "/s/1.txt");
        assert_eq!(text, "a\nb\n[full output: /s/1.txt]");
        let text = with_spill_marker("a\n", "/s/1.txt");
        assert_eq!(text, "a\n[full output: /s/1.txt]");
    }
}
