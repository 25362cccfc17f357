//! The checker on small fixture workspaces: each violation it must find, and the shapes
//! it must accept.

use std::path::Path;

use super::{check, check_all, crates, Report};

/// A workspace of one crate `one` (files under `one/src/`) whose map lists it alone.
fn one_crate(files: &[(&str, &str)]) -> Report {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        "Cargo.toml",
        "[workspace]\nmembers = [\"one\"]\n",
    );
    write(
        dir.path(),
        "one/Cargo.toml",
        "[package]\nname = \"one\"\nversion = \"0.1.0\"\n",
    );
    write(
        dir.path(),
        "docs/architecture.md",
        "# Map\n\n## The dependency list\n\n| crate | depends on |\n|---|---|\n| `one` | — |\n",
    );
    for (path, text) in files {
        write(dir.path(), &format!("one/src/{path}"), text);
    }
    check(dir.path()).expect("the fixture is readable")
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

fn circles(report: &Report) -> Vec<&String> {
    report
        .problems
        .iter()
        .filter(|p| p.contains("in a circle"))
        .collect()
}

#[test]
fn two_siblings_naming_each_other_through_a_re_export_are_a_circle() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
        ("b.rs", "pub struct B;\npub fn f(_: crate::A) {}\n"),
    ]);
    let found = circles(&report);
    assert_eq!(found.len(), 1, "{report:?}");
    assert!(
        found[0].contains("one/src/a.rs, one/src/b.rs"),
        "{}",
        found[0]
    );
    assert!(found[0].contains("names `crate::A`, defined in one/src/a.rs"));
    assert!(
        !found[0].contains("lib.rs,"),
        "the re-exporting root is not in it"
    );
}

#[test]
fn a_root_that_re_exports_its_children_is_no_circle() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\npub use b::B;\n"),
        ("a.rs", "pub struct A;\n"),
        ("b.rs", "use crate::A;\npub struct B(A);\n"),
    ]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.files, 3);
    assert_eq!(report.edges, 3, "lib → a, lib → b, b → a");
}

#[test]
fn a_child_naming_its_parents_item_through_super_or_a_glob_is_a_circle() {
    for child in [
        "pub struct C;\npub fn f(_: super::P) {}\n",
        "use super::*;\npub struct C;\npub fn f(_: P) {}\n",
    ] {
        let report = one_crate(&[
            ("lib.rs", "mod parent;\n"),
            (
                "parent/mod.rs",
                "mod child;\npub use child::C;\npub struct P;\n",
            ),
            ("parent/child.rs", child),
        ]);
        let found = circles(&report);
        assert_eq!(found.len(), 1, "{child}: {report:?}");
        assert!(
            found[0].contains("2 files") && found[0].contains("one/src/parent/child.rs"),
            "{}",
            found[0]
        );
    }
}

#[test]
fn paths_inside_macro_arguments_count() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn f() -> String { format!(\"{}\", crate::b::value()) }\n",
        ),
        (
            "b.rs",
            "pub fn value() -> u8 { 1 }\npub fn g() { crate::a::f(); }\n",
        ),
    ]);
    assert_eq!(circles(&report).len(), 1, "{report:?}");
}

#[test]
fn test_code_does_not_count_and_test_files_are_not_read() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n"),
        (
            "a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests {\n    use crate::b::B;\n}\n",
        ),
        (
            "b.rs",
            "pub struct B(crate::a::A);\nimpl B {\n    #[cfg(test)]\n    fn t() { crate::a::A; }\n}\n",
        ),
    ]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.files, 3, "tests.rs does not exist and is not read");
}

#[test]
fn names_from_other_crates_and_the_prelude_are_not_edges() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use std::sync::Arc;\npub struct A(Arc<String>, Option<u8>);\nimpl A { fn n() -> Self { todo!() } }\n",
        ),
        ("b.rs", "use serde::Serialize;\npub struct B;\n"),
    ]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.edges, 0);
}

fn two_crates(list: &str, top_depends_on_low: bool, low_depends_on_top: bool) -> Report {
    let dir = tempfile::tempdir().expect("temp dir");
    write(
        dir.path(),
        "Cargo.toml",
        "[workspace]\nmembers = [\"top\", \"low\"]\n",
    );
    let manifest = |name: &str, dep: Option<&str>| {
        let mut text = format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n\n[dependencies]\nserde = \"1\"\n"
        );
        if let Some(dep) = dep {
            text.push_str(&format!("{dep} = {{ path = \"../{dep}\" }}\n"));
        }
        text.push_str("\n[dev-dependencies]\n");
        text
    };
    write(
        dir.path(),
        "top/Cargo.toml",
        &manifest("top", top_depends_on_low.then_some("low")),
    );
    write(
        dir.path(),
        "low/Cargo.toml",
        &manifest("low", low_depends_on_top.then_some("top")),
    );
    write(dir.path(), "top/src/lib.rs", "");
    write(dir.path(), "low/src/main.rs", "fn main() {}\n");
    write(dir.path(), "docs/architecture.md", list);
    check(dir.path()).expect("the fixture is readable")
}

const LIST: &str = "## Dependency list (checked)\n\nText.\n\n| crate | depends on |\n|---|---|\n| `top` | `low` |\n| `low` | — |\n\nAfter.\n";

#[test]
fn a_list_that_matches_the_manifests_passes() {
    let report = two_crates(LIST, true, false);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.crates, 2);
}

#[test]
fn an_arrow_going_up_is_found() {
    let list = LIST.replace("| `low` | — |", "| `low` | `top` |");
    let report = two_crates(&list, true, true);
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("`low` depends on `top`, which the dependency list puts above it")),
        "{:?}",
        report.problems
    );
}

#[test]
fn a_list_that_differs_from_the_manifests_is_found() {
    let report = two_crates(LIST, false, false);
    assert_eq!(
        report.problems,
        vec!["the dependency list says `top` depends on `low`, which its Cargo.toml does not"]
    );
    let report = two_crates(
        &LIST.replace("| `top` | `low` |", "| `top` | — |"),
        true,
        false,
    );
    assert_eq!(
        report.problems,
        vec!["`top` depends on `low` (Cargo.toml), which the dependency list does not say"]
    );
    let report = two_crates(
        &LIST.replace("| `low` | — |\n", "| `gone` | — |\n"),
        true,
        false,
    );
    assert!(report
        .problems
        .iter()
        .any(|p| p.contains("`low` is missing")));
    assert!(report.problems.iter().any(|p| p.contains("names `gone`")));
}

#[test]
fn the_list_is_read_from_its_section_only() {
    let stated = crates::stated_list(
        "| x | y |\n\n## Other\n\n## The Dependency List\n\n| crate | depends on |\n|---|---|\n| a | b, `c` |\n| b | — |\n\n| z | z |\n",
    )
    .expect("a list");
    assert_eq!(stated.rows.len(), 2);
    assert_eq!(stated.rows[0].0, "a");
    assert_eq!(stated.rows[0].1.len(), 2);
    assert!(crates::stated_list("## Crates\n\n| a | b |\n").is_err());
}

#[test]
fn visibility_scopes_and_module_imports_are_not_edges() {
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\npub(crate) fn root() {}\n"),
        (
            "a.rs",
            "pub(crate) struct A;\npub(super) fn f() {}\nuse crate::b;\n",
        ),
        (
            "b.rs",
            "pub(in crate) struct B;\npub fn g() { crate::root(); }\n",
        ),
    ]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.edges, 1, "b → lib (root): {report:?}");
}

fn long_file(lines: usize) -> String {
    (0..lines)
        .map(|i| format!("pub const C{i}: u8 = 0;\n"))
        .collect()
}

#[test]
fn a_file_over_the_line_limit_is_found_and_one_at_the_limit_is_not() {
    let limit = super::size::MAX_FILE_LINES;
    let at = long_file(limit);
    let over = long_file(limit + 1);
    let report = one_crate(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", &at),
        ("b.rs", &over),
    ]);
    let sizes: Vec<&String> = report
        .problems
        .iter()
        .filter(|p| p.contains("split it by job"))
        .collect();
    assert_eq!(sizes.len(), 1, "{:?}", report.problems);
    assert!(sizes[0].contains("b.rs has 701 lines"), "{}", sizes[0]);
}

#[test]
fn a_long_test_module_file_is_not_counted() {
    let tests = long_file(super::size::MAX_FILE_LINES * 2);
    let report = one_crate(&[
        ("lib.rs", "pub fn f() {}\n#[cfg(test)]\nmod tests;\n"),
        ("tests.rs", &tests),
    ]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_front_end_counts_its_lines_without_its_inline_tests() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (name, limit) = super::size::FRONT_END_LIMITS[0];
    let code = long_file(limit - 3);
    let inline_tests = format!("#[cfg(test)]\nmod tests {{\n{}}}\n", long_file(50));
    let at_limit = format!("{code}{inline_tests}");
    write(dir.path(), "lib.rs", &at_limit);
    let file = dir.path().join("lib.rs");
    assert_eq!(
        super::size::non_test_lines(&file, &at_limit).expect("parses"),
        limit - 3
    );
    let fine =
        super::size::problems(dir.path(), name, std::slice::from_ref(&file)).expect("readable");
    assert!(fine.is_empty(), "{fine:?}");

    write(dir.path(), "more.rs", &long_file(4));
    let more = dir.path().join("more.rs");
    let over =
        super::size::problems(dir.path(), name, &[file.clone(), more.clone()]).expect("readable");
    assert_eq!(over.len(), 1, "{over:?}");
    assert!(
        over[0].contains(&format!("has {}", limit + 1)),
        "{}",
        over[0]
    );
    // The same files in a crate that is not a front-end: no limit.
    let other = super::size::problems(dir.path(), "pith-core", &[file, more]).expect("readable");
    assert!(other.is_empty(), "{other:?}");
}

/// The real workspace against its real map: `cargo test --workspace` fails on an arrow
/// going up, a circle, a file over the limit or a list that no longer matches, as
/// `cargo xtask arch` in `.ci/run` does.
#[test]
fn the_workspace_matches_docs_architecture_md() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace");
    let report = check_all(root).expect("the workspace and its map are readable");
    assert!(
        report.problems.is_empty(),
        "the workspace does not match docs/architecture.md (run `cargo xtask arch`):\n{}",
        report.problems.join("\n")
    );
    // It read the workspace, not an empty tree.
    assert!(report.crates >= 12, "{} crates", report.crates);
    assert!(report.files > 200, "{} files", report.files);
    assert!(report.edges > 500, "{} edges", report.edges);
}
