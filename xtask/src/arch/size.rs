//! The size rules of the map: no non-test source file over [`MAX_FILE_LINES`] lines, and
//! a thin front-end crate ([`FRONT_END_LIMITS`]) holds no more non-test lines than its
//! limit, so that domain rules live in the crates below it.

use std::path::Path;

use anyhow::{Context, Result};
use syn::spanned::Spanned;

/// The longest a non-test source file may be, counting every line of it.
pub const MAX_FILE_LINES: usize = 700;

/// Front-end crates and the most non-test lines each may hold (all its source files,
/// less the items under `#[cfg(test)]`).
pub const FRONT_END_LIMITS: &[(&str, usize)] = &[("pith-headless", 300)];

/// Lines in `text`, every one counted.
pub fn lines(text: &str) -> usize {
    text.lines().count()
}

/// Lines in `text` outside its top-level `#[cfg(test)]` / `#[test]` items.
pub fn non_test_lines(file: &Path, text: &str) -> Result<usize> {
    let parsed = syn::parse_file(text).with_context(|| format!("parsing {}", file.display()))?;
    let test_lines: usize = parsed
        .items
        .iter()
        .filter(|item| super::modules::is_test_item(item))
        .map(|item| {
            let span = item.span();
            span.end().line.saturating_sub(span.start().line) + 1
        })
        .sum();
    Ok(lines(text).saturating_sub(test_lines))
}

/// The problems of one crate's files: each file over [`MAX_FILE_LINES`], and the crate's
/// total when it is a front-end over its limit.
pub fn problems(root: &Path, krate: &str, files: &[std::path::PathBuf]) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let mut non_test_total = 0;
    let limit = FRONT_END_LIMITS
        .iter()
        .find(|(name, _)| *name == krate)
        .map(|(_, limit)| *limit);
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let count = lines(&text);
        if count > MAX_FILE_LINES {
            problems.push(format!(
                "crate `{krate}`: {} has {count} lines, more than {MAX_FILE_LINES}: split it by job",
                super::paths::relative(root, file)
            ));
        }
        if limit.is_some() {
            non_test_total += non_test_lines(file, &text)?;
        }
    }
    if let Some(limit) = limit {
        if non_test_total > limit {
            problems.push(format!(
                "crate `{krate}` is a front-end of at most {limit} non-test lines and has {non_test_total}: move its domain rules into the crates below it"
            ));
        }
    }
    Ok(problems)
}
