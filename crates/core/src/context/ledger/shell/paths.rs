//! Which words name one known file, and how paths are joined and normalised.

/// True for a word that names one known file: no globs, variables, substitutions,
/// home-relative paths or devices.
pub(super) fn is_plain_path(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 1_000
        && !word.starts_with('-')
        && !word.starts_with('~')
        && !word.starts_with("/dev/")
        && !word.starts_with("/proc/")
        && !word.contains([
            '*', '?', '[', ']', '{', '}', '$', '`', '\n', '<', '>', '|', '&',
        ])
        && word != "."
        && word != ".."
}

/// `word` relative to `dir` (when it is relative and a `cd` came before), lexically
/// normalised (`./` and `a/..` removed).
pub(super) fn join(dir: Option<&str>, word: &str) -> String {
    let joined = match dir {
        Some(dir) if !word.starts_with('/') => format!("{dir}/{word}"),
        _ => word.to_owned(),
    };
    normalise(&joined)
}

/// Removes `.` components and folds `name/..`, keeping leading `..` and the root.
pub(crate) fn normalise(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            ".." if absolute => {}
            other => parts.push(other),
        }
    }
    let body = parts.join("/");
    match (absolute, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}
