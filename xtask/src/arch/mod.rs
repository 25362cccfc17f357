//! `cargo xtask arch`: checks the workspace against its map, docs/architecture.md.
//!
//! It fails when
//! - a crate depends on a crate the map's dependency list puts above it;
//! - a crate's workspace dependencies (Cargo.toml) differ from the list;
//! - inside a crate, files import each other in a circle;
//! - a non-test source file is longer than 700 lines, or a thin front-end crate holds
//!   more non-test lines than its limit (`size.rs`);
//! - a crate above pith-providers names a wire protocol in non-test code (`trade.rs`);
//! - a crate root declares a public module that is not one of its namespaces
//!   (`surface.rs`: modules stay private behind a curated `pub use` list).
//!
//! It also fails when README or the map's prose says something of the workspace's shape
//! that is not so, or a module claims to be "the only place" for an item that another
//! file names (`prose.rs`).
//!
//! The file graph has an edge from A to B when A's non-test code names an item defined in
//! B: through a `use`, or a path `crate::…`, `super::…`, `self::…` or a child module's
//! name, with imports and re-exports followed to where the item is defined. A module that
//! re-exports its children is fine; a child that names an item defined in its parent's
//! file, while the parent names one of the child's, is a circle.

mod crates;
mod cycles;
mod modules;
mod paths;
mod prose;
mod resolve;
mod size;
mod surface;
#[cfg(test)]
mod tests;
mod trade;

use std::path::Path;

use anyhow::{bail, Context, Result};

/// What the check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Every violation, one line each.
    pub problems: Vec<String>,
    /// Crates checked.
    pub crates: usize,
    /// Non-test source files read.
    pub files: usize,
    /// Edges of the file graphs, all crates together.
    pub edges: usize,
}

/// Checks the workspace at `root` against `root/docs/architecture.md`.
pub fn check(root: &Path) -> Result<Report> {
    let map = root.join("docs/architecture.md");
    let markdown =
        std::fs::read_to_string(&map).with_context(|| format!("reading {}", map.display()))?;
    let stated = crates::stated_list(&markdown).context("docs/architecture.md")?;
    let workspace = crates::workspace_crates(root)?;
    let mut report = Report {
        problems: crates::compare(&workspace, &stated),
        crates: workspace.len(),
        ..Report::default()
    };
    for krate in &workspace {
        let modules = modules::read_crate(&krate.root_file)
            .with_context(|| format!("reading crate {}", krate.name))?;
        let edges = resolve::file_edges(&modules);
        report.files += modules.files.len();
        report
            .problems
            .extend(size::problems(root, &krate.name, &modules.files)?);
        report
            .problems
            .extend(trade::problems(root, &krate.name, &modules.files)?);
        report
            .problems
            .extend(surface::problems(root, &krate.name, &krate.root_file)?);
        report.edges += edges.len();
        let pairs: Vec<(usize, usize)> = edges.iter().map(|e| (e.from, e.to)).collect();
        for circle in cycles::cycles(modules.files.len(), &pairs) {
            let name = |file: usize| paths::relative(root, &modules.files[file]);
            let mut lines = vec![format!(
                "crate `{}`: {} files import each other in a circle: {}",
                krate.name,
                circle.len(),
                circle
                    .iter()
                    .map(|&f| name(f))
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
            for edge in edges
                .iter()
                .filter(|e| circle.contains(&e.from) && circle.contains(&e.to))
            {
                lines.push(format!(
                    "    {}:{} names `{}`, defined in {}",
                    name(edge.from),
                    edge.example.1,
                    edge.example.0,
                    name(edge.to)
                ));
            }
            report.problems.push(lines.join("\n"));
        }
    }
    Ok(report)
}

/// [`check`], and the prose of README and the map against the code (`prose`).
pub fn check_all(root: &Path) -> Result<Report> {
    let mut report = check(root)?;
    let workspace = crates::workspace_crates(root)?;
    let files = workspace
        .iter()
        .map(|krate| modules::read_crate(&krate.root_file).map(|modules| modules.files))
        .collect::<Result<Vec<_>>>()?;
    report
        .problems
        .extend(prose::problems(root, &workspace, &files)?);
    Ok(report)
}

/// Runs the check on the workspace and prints what it found; fails on any violation.
pub fn run(root: &Path) -> Result<()> {
    let report = check_all(root)?;
    for problem in &report.problems {
        println!("{problem}");
    }
    println!(
        "arch: {} crates, {} files, {} file edges: {} problem(s)",
        report.crates,
        report.files,
        report.edges,
        report.problems.len()
    );
    if !report.problems.is_empty() {
        bail!("the workspace does not match docs/architecture.md");
    }
    Ok(())
}
