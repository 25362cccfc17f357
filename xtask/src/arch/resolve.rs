//! Which file defines the item a path names, following imports and re-exports: the edges
//! of a crate's file graph.

use super::modules::{CrateModules, Segments};

/// What a path leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    /// A module (the path may go on inside it).
    Module(usize),
    /// An item defined in this module.
    Item(usize),
}

/// How deep imports may chain before a path is given up on (a glob cycle, say).
const MAX_DEPTH: usize = 24;

/// An edge of the file graph: `from` names an item defined in `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The naming file.
    pub from: usize,
    /// The defining file.
    pub to: usize,
    /// The path as written, and its line in `from`.
    pub example: (String, usize),
}

/// Every edge between two different files of `krate`, one per (from, to) pair with the
/// first reference found as its example.
pub fn file_edges(krate: &CrateModules) -> Vec<Edge> {
    let mut edges: Vec<Edge> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (index, module) in krate.modules.iter().enumerate() {
        for (path, line) in &module.references {
            // A path that ends at a module (`use crate::wire;`) names no item: what is
            // named through it later is resolved on its own.
            let Some(Target::Item(defining)) = resolve(krate, index, path, 0) else {
                continue;
            };
            let (from, to) = (module.file, krate.modules[defining].file);
            if from != to && seen.insert((from, to)) {
                edges.push(Edge {
                    from,
                    to,
                    example: (path.join("::"), *line),
                });
            }
        }
    }
    edges
}

/// Resolves `path` as written in module `from`; `None` for anything outside the crate
/// (another crate, the prelude, a generic parameter, `Self`).
fn resolve(krate: &CrateModules, from: usize, path: &[String], depth: usize) -> Option<Target> {
    if depth > MAX_DEPTH || path.is_empty() {
        return None;
    }
    let (start, rest, relative) = match path[0].as_str() {
        "crate" => (0, &path[1..], false),
        "self" => (from, &path[1..], false),
        "super" => {
            let mut module = from;
            let mut consumed = 0;
            while path.get(consumed).is_some_and(|s| s == "super") {
                module = krate.modules[module].parent?;
                consumed += 1;
            }
            (module, &path[consumed..], false)
        }
        _ => (from, path, true),
    };
    walk(krate, start, rest, relative, depth)
}

/// Follows `segments` from module `module`. `relative`: the first segment is a name in
/// scope of `module`, or else not the crate's at all.
fn walk(
    krate: &CrateModules,
    mut module: usize,
    segments: &[String],
    relative: bool,
    depth: usize,
) -> Option<Target> {
    for (i, segment) in segments.iter().enumerate() {
        match lookup(krate, module, segment, depth) {
            Some(Target::Module(child)) => module = child,
            Some(Target::Item(defining)) => return Some(Target::Item(defining)),
            None if i == 0 && relative => return None,
            // A name the module does not define or import (an enum variant, an
            // associated item after a type alias…): the module is as far as it goes.
            None => return Some(Target::Item(module)),
        }
    }
    Some(Target::Module(module))
}

/// What `name` stands for inside `module`: a child module, an item it defines, an
/// import (followed), or a name one of its glob imports brings in.
fn lookup(krate: &CrateModules, module: usize, name: &str, depth: usize) -> Option<Target> {
    let here = &krate.modules[module];
    if let Some(&child) = here.children.get(name) {
        return Some(Target::Module(child));
    }
    if here.defined.contains(name) {
        return Some(Target::Item(module));
    }
    if let Some(path) = here.imports.get(name) {
        return resolve(krate, module, path, depth + 1);
    }
    for glob in &here.globs {
        let source: &Segments = glob;
        if let Some(Target::Module(source)) = resolve(krate, module, source, depth + 1) {
            if source != module {
                if let Some(found) = lookup(krate, source, name, depth + 1) {
                    return Some(found);
                }
            }
        }
    }
    None
}
