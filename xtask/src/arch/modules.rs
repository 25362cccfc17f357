//! A crate's module tree, read from its source files with `syn`: for every module, the
//! file it lives in, its child modules, the names it defines, the names it imports (`use`,
//! with their paths), and every path its non-test code names.
//!
//! Test code does not count: an item, module or impl member under `#[cfg(test)]` (or
//! `#[test]`) is passed over, and a test module's file is never read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// A path as written, split into its segments (`crate::context::Budget` → three).
pub type Segments = Vec<String>;

/// One module of a crate.
#[derive(Debug, Default)]
pub struct Module {
    /// The index of its file in [`CrateModules::files`].
    pub file: usize,
    /// The module that declares it.
    pub parent: Option<usize>,
    /// Its child modules by name.
    pub children: BTreeMap<String, usize>,
    /// The names of the items it defines (types, functions, traits, constants, macros…).
    pub defined: BTreeSet<String>,
    /// The names it imports, with the path each stands for (`use a::b as c` → c: a::b).
    pub imports: BTreeMap<String, Segments>,
    /// The paths of its glob imports (`use a::*` → a).
    pub globs: Vec<Segments>,
    /// Every path its non-test code names, with the line it is on.
    pub references: Vec<(Segments, usize)>,
}

/// The modules of one crate.
#[derive(Debug)]
pub struct CrateModules {
    /// The source files, relative to the workspace root where possible.
    pub files: Vec<PathBuf>,
    /// The modules; the root is the first.
    pub modules: Vec<Module>,
}

/// Reads the crate whose root file is `root_file` (`src/lib.rs` or `src/main.rs`).
pub fn read_crate(root_file: &Path) -> Result<CrateModules> {
    let mut reader = Reader {
        files: Vec::new(),
        modules: Vec::new(),
    };
    reader.read_file_module(root_file, Vec::new(), None)?;
    Ok(CrateModules {
        files: reader.files,
        modules: reader.modules,
    })
}

struct Reader {
    files: Vec<PathBuf>,
    modules: Vec<Module>,
}

impl Reader {
    /// Reads the module in `file` (and everything it declares); returns its index.
    fn read_file_module(
        &mut self,
        file: &Path,
        path: Vec<String>,
        parent: Option<usize>,
    ) -> Result<usize> {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let parsed =
            syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
        let file_index = self.files.len();
        self.files.push(file.to_path_buf());
        // Where this file's `mod x;` children live.
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = file.parent().unwrap_or(Path::new("."));
        let children_dir = if matches!(stem, "lib" | "main" | "mod") || parent.is_none() {
            dir.to_path_buf()
        } else {
            dir.join(stem)
        };
        self.read_items(&parsed.items, file_index, &children_dir, path, parent)
    }

    /// Records a module made of `items` (in file `file`, declaring file children in
    /// `dir`); returns its index.
    fn read_items(
        &mut self,
        items: &[syn::Item],
        file: usize,
        dir: &Path,
        path: Vec<String>,
        parent: Option<usize>,
    ) -> Result<usize> {
        let index = self.modules.len();
        self.modules.push(Module {
            file,
            parent,
            ..Module::default()
        });
        for item in items {
            if is_test(item_attributes(item)) {
                continue;
            }
            match item {
                syn::Item::Mod(module) => {
                    let name = module.ident.to_string();
                    let mut child_path = path.clone();
                    child_path.push(name.clone());
                    let child = match &module.content {
                        Some((_, inner)) => {
                            self.read_items(inner, file, &dir.join(&name), child_path, Some(index))?
                        }
                        None => {
                            let child_file = module_file(dir, &name, &module.attrs)?;
                            self.read_file_module(&child_file, child_path, Some(index))?
                        }
                    };
                    self.modules[index].children.insert(name, child);
                }
                syn::Item::Use(import) => {
                    let mut leaves = Vec::new();
                    flatten_use(&import.tree, &mut Vec::new(), &mut leaves);
                    let line = import.span().start().line;
                    let module = &mut self.modules[index];
                    for leaf in leaves {
                        match leaf {
                            UseLeaf::Name(name, target) => {
                                module.references.push((target.clone(), line));
                                if name != "_" {
                                    module.imports.insert(name, target);
                                }
                            }
                            UseLeaf::Glob(target) => {
                                module.references.push((target.clone(), line));
                                module.globs.push(target);
                            }
                        }
                    }
                }
                other => {
                    if let Some(name) = defined_name(other) {
                        self.modules[index].defined.insert(name);
                    }
                    let mut collector = References::default();
                    collector.visit_item(other);
                    self.modules[index].references.extend(collector.found);
                }
            }
        }
        Ok(index)
    }
}

/// The file of `mod name;` declared in a module whose file children live in `dir`.
fn module_file(dir: &Path, name: &str, attrs: &[syn::Attribute]) -> Result<PathBuf> {
    for attr in attrs {
        if attr.path().is_ident("path") {
            if let syn::Meta::NameValue(value) = &attr.meta {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(path),
                    ..
                }) = &value.value
                {
                    return Ok(dir.join(path.value()));
                }
            }
        }
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.is_file() {
        return Ok(flat);
    }
    let nested = dir.join(name).join("mod.rs");
    if nested.is_file() {
        return Ok(nested);
    }
    anyhow::bail!(
        "module `{name}` declared but neither {} nor {} exists",
        flat.display(),
        nested.display()
    )
}

/// True for an item under `#[test]` or `#[cfg(test)]`.
pub fn is_test_item(item: &syn::Item) -> bool {
    is_test(item_attributes(item))
}

/// True for `#[test]`, and for `#[cfg(…)]` that requires `test` (not `not(test)`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if attr.path().is_ident("test") {
            return true;
        }
        if !attr.path().is_ident("cfg") {
            return false;
        }
        let tokens = match &attr.meta {
            syn::Meta::List(list) => list.tokens.to_string(),
            _ => return false,
        };
        let words: Vec<&str> = tokens
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .filter(|w| !w.is_empty())
            .collect();
        words.contains(&"test") && !words.contains(&"not")
    })
}

fn item_attributes(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name an item defines in its module's namespace, if any.
fn defined_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// One leaf of a `use` tree.
enum UseLeaf {
    /// `use a::b` / `use a::b as c`: the name brought into scope and its path.
    Name(String, Segments),
    /// `use a::*`: the path whose names are all brought in.
    Glob(Segments),
}

fn flatten_use(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            flatten_use(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) => {
            let ident = name.ident.to_string();
            if ident == "self" {
                if let Some(last) = prefix.last() {
                    out.push(UseLeaf::Name(last.clone(), prefix.clone()));
                }
            } else {
                let mut target = prefix.clone();
                target.push(ident.clone());
                out.push(UseLeaf::Name(ident, target));
            }
        }
        syn::UseTree::Rename(rename) => {
            let mut target = prefix.clone();
            if rename.ident != "self" {
                target.push(rename.ident.to_string());
            }
            out.push(UseLeaf::Name(rename.rename.to_string(), target));
        }
        syn::UseTree::Glob(_) => out.push(UseLeaf::Glob(prefix.clone())),
        syn::UseTree::Group(group) => {
            for item in &group.items {
                flatten_use(item, prefix, out);
            }
        }
    }
}

/// Collects the paths named by non-test code, skipping nested modules (they are modules
/// of their own) and test items.
#[derive(Default)]
struct References {
    found: Vec<(Segments, usize)>,
}

impl<'ast> Visit<'ast> for References {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if is_test(item_attributes(item)) || matches!(item, syn::Item::Mod(_)) {
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_use(&mut self, import: &'ast syn::ItemUse) {
        let mut leaves = Vec::new();
        flatten_use(&import.tree, &mut Vec::new(), &mut leaves);
        let line = import.span().start().line;
        for leaf in leaves {
            match leaf {
                UseLeaf::Name(_, target) | UseLeaf::Glob(target) => self.found.push((target, line)),
            }
        }
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs = match item {
            syn::ImplItem::Const(i) => &i.attrs,
            syn::ImplItem::Fn(i) => &i.attrs,
            syn::ImplItem::Type(i) => &i.attrs,
            syn::ImplItem::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_impl_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_impl_item(self, item);
        }
    }

    /// `pub(crate)` / `pub(super)` / `pub(in path)` name a scope, not an item.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if !segments.is_empty() {
            self.found.push((segments, path.span().start().line));
        }
        syn::visit::visit_path(self, path);
    }

    /// Macro arguments that parse as expressions (`format!`, `vec!`, `assert!`, …) are
    /// read too: a path inside them names an item as much as one outside.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        if let Ok(arguments) = mac.parse_body_with(parser) {
            for argument in &arguments {
                self.visit_expr(argument);
            }
        }
    }
}
