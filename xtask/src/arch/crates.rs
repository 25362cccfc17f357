//! The workspace's crate graph, from each member's `Cargo.toml`, and the dependency list
//! docs/architecture.md gives for it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// One crate of the workspace.
#[derive(Debug, Clone)]
pub struct Crate {
    /// Its package name.
    pub name: String,
    /// Its root source file (`src/lib.rs`, else `src/main.rs`).
    pub root_file: PathBuf,
    /// The workspace crates it depends on (normal and build dependencies, any target;
    /// not dev-dependencies).
    pub depends_on: BTreeSet<String>,
}

/// The workspace's crates: the root package (if any) and every member.
pub fn workspace_crates(root: &Path) -> Result<Vec<Crate>> {
    let manifest = read_toml(&root.join("Cargo.toml"))?;
    let mut dirs = Vec::new();
    if manifest.get("package").is_some() {
        dirs.push(root.to_path_buf());
    }
    let members = manifest
        .get("workspace")
        .and_then(|w| w.get("members"))
        .and_then(|m| m.as_array())
        .context("the root Cargo.toml has no [workspace] members")?;
    for member in members {
        let member = member
            .as_str()
            .context("a workspace member is not a string")?;
        dirs.push(root.join(member));
    }
    let mut crates = Vec::new();
    let mut manifests = Vec::new();
    for dir in dirs {
        let manifest = read_toml(&dir.join("Cargo.toml"))?;
        let name = manifest
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
            .with_context(|| format!("{}/Cargo.toml has no package name", dir.display()))?
            .to_owned();
        let root_file = ["src/lib.rs", "src/main.rs"]
            .iter()
            .map(|f| dir.join(f))
            .find(|f| f.is_file())
            .with_context(|| format!("{name}: neither src/lib.rs nor src/main.rs"))?;
        manifests.push((name.clone(), manifest));
        crates.push(Crate {
            name,
            root_file,
            depends_on: BTreeSet::new(),
        });
    }
    let names: BTreeSet<String> = crates.iter().map(|c| c.name.clone()).collect();
    for (krate, (_, manifest)) in crates.iter_mut().zip(&manifests) {
        krate.depends_on = dependency_names(manifest)
            .into_iter()
            .filter(|d| names.contains(d))
            .collect();
    }
    Ok(crates)
}

fn read_toml(path: &Path) -> Result<toml::Table> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    text.parse::<toml::Table>()
        .with_context(|| format!("parsing {}", path.display()))
}

/// The names of a manifest's normal and build dependencies, in every target section,
/// under their package name (`package = "…"` when renamed).
fn dependency_names(manifest: &toml::Table) -> BTreeSet<String> {
    let mut tables: Vec<&toml::Table> = vec![manifest];
    if let Some(targets) = manifest.get("target").and_then(|t| t.as_table()) {
        tables.extend(targets.values().filter_map(|t| t.as_table()));
    }
    let sections = tables.into_iter().flat_map(|table| {
        ["dependencies", "build-dependencies"]
            .into_iter()
            .filter_map(move |key| table.get(key).and_then(|d| d.as_table()))
    });
    let mut names = BTreeSet::new();
    for deps in sections {
        for (key, value) in deps {
            let package = value.get("package").and_then(|p| p.as_str()).unwrap_or(key);
            names.insert(package.to_owned());
        }
    }
    names
}

/// The dependency list as docs/architecture.md states it: crates top to bottom, each
/// with the workspace crates it depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatedList {
    /// (crate, its dependencies), in the order of the table.
    pub rows: Vec<(String, BTreeSet<String>)>,
}

/// The marker of the section whose first table is the dependency list.
pub const SECTION_MARKER: &str = "dependency list";

/// Reads the first table after the heading that contains [`SECTION_MARKER`] (any case):
/// rows of `| crate | dep, dep |`, names in backticks or not, `—` for none.
pub fn stated_list(markdown: &str) -> Result<StatedList> {
    let mut lines = markdown.lines();
    lines
        .by_ref()
        .find(|l| l.starts_with('#') && l.to_lowercase().contains(SECTION_MARKER))
        .with_context(|| format!("no heading containing \"{SECTION_MARKER}\""))?;
    let mut rows = Vec::new();
    let mut in_table = false;
    for line in lines {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            if line.starts_with('#') {
                break;
            }
            continue;
        }
        in_table = true;
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 2 || cells[0].starts_with("---") || cells[0] == "crate" {
            continue;
        }
        let name = clean(cells[0]);
        let deps = cells[1]
            .split(',')
            .map(clean)
            .filter(|d| !d.is_empty() && d != "—" && d != "-")
            .collect();
        rows.push((name, deps));
    }
    if rows.is_empty() {
        bail!("the dependency list has no rows");
    }
    Ok(StatedList { rows })
}

fn clean(cell: &str) -> String {
    cell.trim().trim_matches('`').trim().to_owned()
}

/// What is wrong between the crates as built and the list as stated.
pub fn compare(crates: &[Crate], stated: &StatedList) -> Vec<String> {
    let mut problems = Vec::new();
    let position = |name: &str| stated.rows.iter().position(|(n, _)| n == name);
    for krate in crates {
        let Some(row) = position(&krate.name) else {
            problems.push(format!(
                "crate `{}` is missing from docs/architecture.md's dependency list",
                krate.name
            ));
            continue;
        };
        let stated_deps = &stated.rows[row].1;
        for missing in krate.depends_on.difference(stated_deps) {
            problems.push(format!(
                "`{}` depends on `{missing}` (Cargo.toml), which the dependency list does not say",
                krate.name
            ));
        }
        for extra in stated_deps.difference(&krate.depends_on) {
            problems.push(format!(
                "the dependency list says `{}` depends on `{extra}`, which its Cargo.toml does not",
                krate.name
            ));
        }
        for dependency in &krate.depends_on {
            if let Some(below) = position(dependency) {
                if below <= row {
                    problems.push(format!(
                        "`{}` depends on `{dependency}`, which the dependency list puts above it: dependencies must point down",
                        krate.name
                    ));
                }
            }
        }
    }
    for (name, _) in &stated.rows {
        if !crates.iter().any(|c| &c.name == name) {
            problems.push(format!(
                "the dependency list names `{name}`, which is not a crate of the workspace"
            ));
        }
    }
    problems
}
