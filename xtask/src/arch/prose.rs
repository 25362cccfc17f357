//! The prose of the map kept true: what README and docs/architecture.md say about the
//! workspace's shape must match the code, and a module that claims to be the one place for
//! an item must be.
//!
//! - Every crate is named in README's `## Workspace` section (its folder: `crates/…`,
//!   `xtask`) and, the binary and xtask aside, in docs/architecture.md's `## Crates`
//!   diagram and in its "What each crate does" table.
//! - A count written as a word is the count in the code: "N protocols" in README's
//!   Workspace section (the protocol folders of `crates/providers/src/wire/`), and "the N
//!   front-ends" in either file (the crates that depend on `pith-agent`, the binary
//!   aside).
//! - A module doc (`//!`) that says it is "the only place" for something names it in
//!   backticks in that sentence, and no other non-test file of its crate names it in code.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::crates::Crate;

/// The folder of the providers' wire protocols, relative to the workspace.
const WIRE_DIR: &str = "crates/providers/src/wire";

/// Number words as the docs write counts.
const NUMBER_WORDS: [&str; 11] = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

/// Every prose problem of the workspace at `root`; `files` holds each crate's non-test
/// source files, in the order of `crates`.
pub fn problems(root: &Path, crates: &[Crate], files: &[Vec<PathBuf>]) -> Result<Vec<String>> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).with_context(|| format!("reading {name}"))
    };
    let readme = read("README.md")?;
    let map = read("docs/architecture.md")?;
    let mut problems = Vec::new();
    problems.extend(crates_named(root, crates, &readme, &map));
    problems.extend(counts(root, crates, &readme, &map)?);
    for (krate, files) in crates.iter().zip(files) {
        problems.extend(only_places(root, &krate.name, files)?);
    }
    Ok(problems)
}

/// The text of the markdown section that starts with the heading `heading` (up to the next
/// heading of the same or a higher level); empty when there is none.
fn section<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let Some(start) = markdown.find(&format!("\n{heading}\n")) else {
        return "";
    };
    let level = heading.chars().take_while(|c| *c == '#').count();
    let body = &markdown[start + heading.len() + 2..];
    let end = body
        .match_indices("\n#")
        .find(|(at, _)| {
            let hashes = body[at + 1..].chars().take_while(|c| *c == '#').count();
            hashes <= level
        })
        .map_or(body.len(), |(at, _)| at);
    &body[..end]
}

/// The first fenced code block of `text` (empty when there is none).
fn first_code_block(text: &str) -> &str {
    let Some(open) = text.find("```") else {
        return "";
    };
    let body = &text[open + 3..];
    body.find("```").map_or(body, |close| &body[..close])
}

/// The crates README's Workspace section or the map's diagram and table leave out.
fn crates_named(root: &Path, crates: &[Crate], readme: &str, map: &str) -> Vec<String> {
    let workspace = section(readme, "## Workspace");
    let diagram = first_code_block(section(map, "## Crates"));
    let table = section(map, "### What each crate does");
    let mut problems = Vec::new();
    for krate in crates {
        let folder = crate_folder(root, &krate.root_file);
        if !folder.is_empty() && !workspace.contains(&folder) {
            problems.push(format!(
                "README.md: the Workspace section does not name `{folder}` (crate `{}`)",
                krate.name
            ));
        }
        if krate.name == "pith" || krate.name == "xtask" {
            continue;
        }
        if !diagram.contains(&krate.name) {
            problems.push(format!(
                "docs/architecture.md: the Crates diagram does not name `{}`",
                krate.name
            ));
        }
        if !table.contains(&format!("| `{}` |", krate.name)) {
            problems.push(format!(
                "docs/architecture.md: \"What each crate does\" has no row for `{}`",
                krate.name
            ));
        }
    }
    problems
}

/// The folder of the crate whose root file is `root_file`, relative to the workspace
/// (`crates/core`, `xtask`); empty for the root package.
fn crate_folder(root: &Path, root_file: &Path) -> String {
    root_file
        .parent()
        .and_then(Path::parent)
        .and_then(|folder| folder.strip_prefix(root).ok())
        .map(|folder| folder.display().to_string())
        .unwrap_or_default()
}

/// Counts written as words that differ from the code's.
fn counts(root: &Path, crates: &[Crate], readme: &str, map: &str) -> Result<Vec<String>> {
    let wire = root.join(WIRE_DIR);
    let protocols = std::fs::read_dir(&wire)
        .with_context(|| format!("reading {}", wire.display()))?
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("mod.rs").is_file())
        .count();
    let front_ends = crates
        .iter()
        .filter(|c| c.name != "pith" && c.depends_on.contains("pith-agent"))
        .count();
    let mut problems = Vec::new();
    let workspace = section(readme, "## Workspace");
    for (said, at) in counted(workspace, "", " protocols") {
        if said != protocols {
            problems.push(format!(
                "README.md: the Workspace section says {} protocols (\"…{at}…\"); {WIRE_DIR} has {protocols}",
                NUMBER_WORDS[said]
            ));
        }
    }
    for (file, text) in [("README.md", readme), ("docs/architecture.md", map)] {
        for (said, at) in counted(text, "the ", " front-ends") {
            if said != front_ends {
                problems.push(format!(
                    "{file}: says the {} front-ends (\"…{at}…\"); {front_ends} crates depend on pith-agent besides the binary",
                    NUMBER_WORDS[said]
                ));
            }
        }
    }
    Ok(problems)
}

/// Each number word written between `before` and `after` in `text` (case-insensitive),
/// with the phrase as written.
fn counted(text: &str, before: &str, after: &str) -> Vec<(usize, String)> {
    let lower = text.to_lowercase();
    let mut found = Vec::new();
    for (number, word) in NUMBER_WORDS.iter().enumerate() {
        let phrase = format!("{before}{word}{after}");
        for (at, _) in lower.match_indices(&phrase) {
            let starts_word = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            if starts_word {
                found.push((number, phrase.clone()));
            }
        }
    }
    found
}

/// The claims to be "the only place" in the module docs of `files` that do not hold.
fn only_places(root: &Path, krate: &str, files: &[PathBuf]) -> Result<Vec<String>> {
    let texts: Vec<(PathBuf, String)> = files
        .iter()
        .map(|file| {
            std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))
                .map(|text| (file.clone(), text))
        })
        .collect::<Result<_>>()?;
    let mut problems = Vec::new();
    for (file, text) in &texts {
        let docs: String = text
            .lines()
            .filter_map(|line| line.trim_start().strip_prefix("//!"))
            .map(str::trim)
            .collect::<Vec<_>>()
            .join(" ");
        for sentence in docs.split(". ").filter(|s| s.contains("only place")) {
            let named = backticked(sentence);
            let shown = super::paths::relative(root, file);
            if named.is_empty() {
                problems.push(format!(
                    "crate `{krate}`: {shown} claims to be the only place for something but names no item in backticks: \"{sentence}\""
                ));
                continue;
            }
            for item in named {
                for (other, other_text) in texts.iter().filter(|(other, _)| other != file) {
                    if code_lines(other_text).any(|line| line.contains(item)) {
                        problems.push(format!(
                            "crate `{krate}`: {shown} says it is the only place for `{item}`, but {} names it too",
                            super::paths::relative(root, other)
                        ));
                    }
                }
            }
        }
    }
    Ok(problems)
}

/// The backticked items of `sentence`.
fn backticked(sentence: &str) -> Vec<&str> {
    sentence
        .split('`')
        .enumerate()
        .filter(|(index, _)| index % 2 == 1)
        .map(|(_, item)| item)
        .filter(|item| !item.is_empty())
        .collect()
}

/// The lines of `text` that are code: not comments, and before its test module.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .take_while(|line| !line.trim_start().starts_with("#[cfg(test)]"))
        .filter(|line| !line.trim_start().starts_with("//"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn krate(root: &Path, name: &str, folder: &str, depends_on: &[&str]) -> Crate {
        Crate {
            name: name.into(),
            root_file: root.join(folder).join("src/lib.rs"),
            depends_on: depends_on
                .iter()
                .map(|d| (*d).to_owned())
                .collect::<BTreeSet<_>>(),
        }
    }

    const MAP: &str = "# Map\n\n## Crates\n\n```\npith-core\npith-agent\npith-repl\n```\n\n### What each crate does\n\n| crate | job |\n|---|---|\n| `pith-core` | x |\n| `pith-agent` | x |\n| `pith-repl` | x |\n\n## Next\n";
    const README: &str = "# pith\n\n## Workspace\n\ncrates/core crates/agent crates/repl: wire/ (one protocols)\n\n## Other\n";

    fn fixture(readme: &str, map: &str) -> (tempfile::TempDir, Vec<Crate>) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(WIRE_DIR).join("anthropic")).unwrap();
        std::fs::write(root.join(WIRE_DIR).join("anthropic/mod.rs"), "").unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("README.md"), readme).unwrap();
        std::fs::write(root.join("docs/architecture.md"), map).unwrap();
        let crates = vec![
            krate(root, "pith-core", "crates/core", &[]),
            krate(root, "pith-agent", "crates/agent", &["pith-core"]),
            krate(root, "pith-repl", "crates/repl", &["pith-agent"]),
        ];
        (dir, crates)
    }

    fn found(readme: &str, map: &str) -> Vec<String> {
        let (dir, crates) = fixture(readme, map);
        let files = vec![Vec::new(); crates.len()];
        problems(dir.path(), &crates, &files).unwrap()
    }

    #[test]
    fn true_prose_passes() {
        assert_eq!(found(README, MAP), Vec::<String>::new());
        let map = MAP.replace("## Next", "The one front-end\n\n## Next");
        assert_eq!(
            found(README, &map),
            Vec::<String>::new(),
            "not \"the N front-ends\""
        );
    }

    #[test]
    fn a_crate_left_out_of_readme_the_diagram_or_the_table_is_found() {
        let readme = README.replace("crates/repl", "crates/other");
        assert!(found(&readme, MAP)[0].contains("does not name `crates/repl`"));
        let map = MAP.replacen("pith-repl\n", "", 1);
        assert!(found(README, &map)[0].contains("Crates diagram does not name `pith-repl`"));
        let map = MAP.replace("| `pith-repl` | x |\n", "");
        assert!(found(README, &map)[0].contains("no row for `pith-repl`"));
    }

    #[test]
    fn a_count_in_words_that_differs_from_the_code_is_found() {
        let readme = README.replace("one protocols", "four protocols");
        let said = found(&readme, MAP);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("says four protocols") && said[0].contains("has 1"));
        let map = MAP.replace("## Next", "What the two front-ends share.\n\n## Next");
        let said = found(README, &map);
        assert!(
            said[0].contains("the two front-ends") && said[0].contains("1 crates"),
            "{said:?}"
        );
    }

    #[test]
    fn an_only_place_claim_must_name_its_item_and_hold() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.rs");
        let b = dir.path().join("b.rs");
        std::fs::write(
            &a,
            "//! The only place `budget` is read. More.\nfn f() {}\n",
        )
        .unwrap();
        std::fs::write(&b, "// budget in a comment\nfn g() { let _ = 1; }\n#[cfg(test)]\nmod t { fn h() { budget(); } }\n").unwrap();
        let files = vec![a.clone(), b.clone()];
        assert!(only_places(dir.path(), "k", &files).unwrap().is_empty());
        std::fs::write(&b, "fn g() { budget(); }\n").unwrap();
        let said = only_places(dir.path(), "k", &files).unwrap();
        assert!(
            said[0].contains("only place for `budget`, but b.rs names it"),
            "{said:?}"
        );
        std::fs::write(&a, "//! This is the only place the loop looks at it.\n").unwrap();
        let said = only_places(dir.path(), "k", &files).unwrap();
        assert!(said[0].contains("names no item in backticks"), "{said:?}");
    }
}
