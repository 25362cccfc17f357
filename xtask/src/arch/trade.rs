//! Each crate knows its trade: the wire protocols are pith-providers' knowledge. The
//! crates above it ([`ABOVE_THE_PROVIDERS`]) ask a resolved model what it can take
//! (`ResolvedModel::capabilities`) and never name a protocol in non-test code: no
//! `ProtocolKind`, no protocol module of `pith_providers::wire`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::spanned::Spanned;

/// The crates that may not name a protocol.
pub const ABOVE_THE_PROVIDERS: &[&str] = &["pith-agent", "pith-repl", "pith-acp", "pith-headless"];

/// What naming a protocol looks like in code.
const PROTOCOL_NAMES: &[&str] = &[
    "ProtocolKind",
    "wire::anthropic",
    "wire::bedrock",
    "wire::gemini",
    "wire::openai_chat",
    "wire::openai_responses",
];

/// Each place where a crate of [`ABOVE_THE_PROVIDERS`] names a protocol outside its tests.
pub fn problems(root: &Path, krate: &str, files: &[PathBuf]) -> Result<Vec<String>> {
    if !ABOVE_THE_PROVIDERS.contains(&krate) {
        return Ok(Vec::new());
    }
    let mut problems = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        for (line, name) in protocol_names(file, &text)? {
            problems.push(format!(
                "crate `{krate}`: {}:{line} names `{name}`: protocols are pith-providers' trade; ask the model's capabilities",
                super::paths::relative(root, file)
            ));
        }
    }
    Ok(problems)
}

/// (line, name) of each protocol name in `text`'s code, its test items and comments aside.
fn protocol_names(file: &Path, text: &str) -> Result<Vec<(usize, &'static str)>> {
    let parsed = syn::parse_file(text).with_context(|| format!("parsing {}", file.display()))?;
    let test_lines: Vec<(usize, usize)> = parsed
        .items
        .iter()
        .filter(|item| super::modules::is_test_item(item))
        .map(|item| (item.span().start().line, item.span().end().line))
        .collect();
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let code = line.split("//").next().unwrap_or_default();
        if test_lines
            .iter()
            .any(|&(start, end)| (start..=end).contains(&number))
        {
            continue;
        }
        for name in PROTOCOL_NAMES {
            if code.contains(name) {
                found.push((number, *name));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_named_in_code_is_found_but_not_in_tests_or_comments() {
        let text = "use pith_providers::models::tables::ProtocolKind;\n\
                    // wire::bedrock in a comment\n\
                    fn f() {}\n\
                    #[cfg(test)]\nmod tests {\n    use pith_providers::wire::anthropic::X;\n}\n";
        let found = protocol_names(Path::new("f.rs"), text).unwrap();
        assert_eq!(found, vec![(1, "ProtocolKind")]);
    }
}
