//! The files an inline Python script (`python -c`, a heredoc) writes to a literal path.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

/// String assignments, `open(…)` calls with a writing mode and `Path(…).write_*` calls
/// of an inline Python script.
static PY_ASSIGN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)^\s*([A-Za-z_]\w*)\s*=\s*(?:r|f)?(['"])([^'"\n]+)['"]\s*$"#)
        .expect("constant pattern compiles")
});
static PY_OPEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"open\(\s*(?:(?:r|f)?(['"])([^'"\n]+)['"]|([A-Za-z_]\w*))\s*,\s*(?:mode\s*=\s*)?['"]([rwaxbt+]+)['"]"#)
        .expect("constant pattern compiles")
});
static PY_PATH_WRITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"Path\(\s*(?:(['"])([^'"\n]+)['"]|([A-Za-z_]\w*))\s*\)\.write_(?:text|bytes)\("#)
        .expect("constant pattern compiles")
});

/// The literal paths an inline Python script writes.
pub(super) fn python_writes(script: &str) -> Vec<String> {
    let variables: HashMap<&str, &str> = PY_ASSIGN
        .captures_iter(script)
        .filter_map(|c| Some((c.get(1)?.as_str(), c.get(3)?.as_str())))
        .collect();
    let resolve = |literal: Option<regex::Match>, variable: Option<regex::Match>| {
        literal
            .map(|m| m.as_str())
            .or_else(|| variables.get(variable?.as_str()).copied())
            .map(str::to_owned)
    };
    let mut paths = Vec::new();
    for captures in PY_OPEN.captures_iter(script) {
        let mode = captures.get(4).map_or("", |m| m.as_str());
        if mode.contains(['w', 'a', 'x', '+']) {
            if let Some(path) = resolve(captures.get(2), captures.get(3)) {
                paths.push(path);
            }
        }
    }
    for captures in PY_PATH_WRITE.captures_iter(script) {
        if let Some(path) = resolve(captures.get(2), captures.get(3)) {
            paths.push(path);
        }
    }
    paths
}
