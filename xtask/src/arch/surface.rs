//! Each crate shows a curated surface: its root (`lib.rs`) keeps its modules private and
//! exports what other crates use through a `pub use` list. The only public modules are
//! the namespaces of [`NAMESPACES`], whose items other crates name by path because the
//! path says what they are (`pith_core::context::floor::summary_allowance`,
//! `pith_providers::wire::ReasoningEffort`).

use std::path::Path;

use anyhow::{Context, Result};

/// The public modules a crate root may declare, per crate.
pub const NAMESPACES: &[(&str, &[&str])] = &[
    // The context pipeline's vocabulary: budget, floor, ledger, squash, tokens…
    ("pith-core", &["context"]),
    // The model catalog, and the wire protocols with their one HTTP layer.
    ("pith-providers", &["models", "wire"]),
    // Test support: the OTLP receiver and the simulator's cache model.
    ("pith-testkit", &["cache", "otlp"]),
];

/// Each `pub mod` in `krate`'s root file (`root_file`) that is not one of its namespaces.
pub fn problems(root: &Path, krate: &str, root_file: &Path) -> Result<Vec<String>> {
    if root_file.file_name().is_some_and(|name| name == "main.rs") {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(root_file)
        .with_context(|| format!("reading {}", root_file.display()))?;
    let allowed = NAMESPACES
        .iter()
        .find(|(name, _)| *name == krate)
        .map_or(&[][..], |(_, modules)| *modules);
    Ok(public_modules(&text)
        .into_iter()
        .filter(|(_, module)| !allowed.contains(&module.as_str()))
        .map(|(line, module)| {
            format!(
                "crate `{krate}`: {}:{line} declares `pub mod {module}`: keep the module private and export what other crates use with `pub use` (or name it a namespace in xtask/src/arch/surface.rs)",
                super::paths::relative(root, root_file)
            )
        })
        .collect())
}

/// The modules `text` declares `pub mod` at its top level, with their line numbers.
fn public_modules(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            let rest = line.strip_prefix("pub mod ")?;
            let name = rest.trim_end_matches(|c: char| c == ';' || c == '{' || c.is_whitespace());
            Some((index + 1, name.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_public_module_outside_the_namespaces_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib.rs");
        std::fs::write(
            &lib,
            "//! Docs.\nmod private;\npub mod context;\npub mod leaked;\n    pub mod nested;\npub use private::Item;\n",
        )
        .unwrap();
        let found = problems(dir.path(), "pith-core", &lib).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("lib.rs:4 declares `pub mod leaked`"),
            "{found:?}"
        );
        let found = problems(dir.path(), "pith-agent", &lib).unwrap();
        assert_eq!(
            found.len(),
            2,
            "context is a namespace of pith-core only: {found:?}"
        );
    }

    #[test]
    fn a_binary_root_is_not_a_surface() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main.rs");
        std::fs::write(&main, "pub mod commands;\nfn main() {}\n").unwrap();
        assert!(problems(dir.path(), "pith", &main).unwrap().is_empty());
    }
}
