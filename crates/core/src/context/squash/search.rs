//! Search and listing output: grep (`path:line:text`), path lists (`find`, glob) and
//! directory listings (`ls`, `ls -R`).
//!
//! Grep output is grouped by file in its original order: every distinct path keeps its
//! first match line, each file keeps at most `grep_max_matches_per_file` matches, fewer
//! when many files share the `grep_max_matches_total` budget (never fewer than one), (with
//! up to `context_lines` of `-C` context around them), and one `[N lines omitted]` line
//! right after a file's kept lines states how many of that file's lines were cut. Long
//! match lines are shortened (to a third of `match_line_max_chars` when files keep a single
//! match), and a match text already shown for another file is replaced by
//! `…[N chars omitted]` after its `path:line:` prefix; runs of such lines, and runs of
//! binary-file matches, are joined into one line naming every file (see `join_runs`). A
//! line right after a kept line of the same file drops the path it repeats and reads
//! `N:text` (`N-text` for context, `text` unnumbered), as grep prints a single file's
//! matches.
//! Path lists are kept whole up to `path_list_cap_bytes`,
//! then capped per directory, and a directory line directly followed by an entry inside
//! it is folded into that entry; listings keep each directory header and its first
//! `ls_max_entries_per_dir` entries.

use std::collections::HashMap;

use super::config::SquashConfig;
use super::detect::grep_path_prefix;
use super::lines::{shorten, KeepPlan};
use super::marker::chars_omitted_suffix;

/// What one grep output line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GrepLine {
    /// A match line (`path:12:text`, `path:text`, `12:text`).
    Match,
    /// A `-A/-B/-C` context line (`path-12-text`, `12-text`).
    Context,
    /// The `--` group separator.
    Separator,
    /// Anything else (`grep: x: binary file matches`, plain text).
    Other,
}

fn numbered(rest: &str, sep: char) -> bool {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && rest[digits..].starts_with(sep)
}

/// Classifies a line and names its file (empty for single-file output).
fn classify<'a>(line: &'a str, current: &str) -> (GrepLine, &'a str) {
    if line == "--" {
        return (GrepLine::Separator, "");
    }
    // `grep: x.pyc: binary file matches` (GNU grep ≥ 3.5) and `Binary file x matches`.
    if let Some(path) = line
        .strip_prefix("grep: ")
        .and_then(|r| r.strip_suffix(": binary file matches"))
        .or_else(|| {
            line.strip_prefix("Binary file ")
                .and_then(|r| r.strip_suffix(" matches"))
        })
    {
        return (GrepLine::Match, path);
    }
    if let Some(path) = grep_path_prefix(line) {
        if !current.is_empty() || path.contains('/') || path.contains('.') {
            return (GrepLine::Match, path);
        }
    }
    if !current.is_empty() {
        if let Some(rest) = line.strip_prefix(current) {
            if let Some(after) = rest.strip_prefix('-') {
                if numbered(after, '-') {
                    return (GrepLine::Context, &line[..current.len()]);
                }
            }
        }
    }
    if numbered(line, ':') {
        return (GrepLine::Match, "");
    }
    if numbered(line, '-') {
        return (GrepLine::Context, "");
    }
    (GrepLine::Other, "")
}

/// Fraction of non-blank lines that look like grep output (with or without file name).
pub(crate) fn grep_shaped_share(lines: &[&str]) -> f64 {
    let mut total = 0usize;
    let mut shaped = 0usize;
    let mut current = "";
    for line in lines.iter().filter(|l| !l.trim().is_empty()) {
        total += 1;
        let (kind, path) = classify(line, current);
        if !path.is_empty() {
            current = path;
        }
        if kind != GrepLine::Other {
            shaped += 1;
        }
    }
    if total == 0 {
        0.0
    } else {
        shaped as f64 / total as f64
    }
}

/// Plans grep output.
pub(crate) fn grep_plan(lines: &[&str], config: &SquashConfig) -> KeepPlan {
    let n = lines.len();
    let mut kinds = Vec::with_capacity(n);
    let mut files: Vec<&str> = Vec::with_capacity(n);
    let mut current: &str = "";
    for line in lines {
        let (kind, path) = classify(line, current);
        if matches!(kind, GrepLine::Match | GrepLine::Context) && !path.is_empty() {
            current = path;
        }
        kinds.push(kind);
        files.push(if kind == GrepLine::Other { "" } else { path });
    }
    plan_classified(lines, &kinds, &files, config)
}

/// Plans the output of a grep over one file without `-n`: its lines carry neither a file
/// nor a number, so the ones `matcher` (the command's pattern) selects are the matches,
/// `--` separates groups, and the rest is `-A/-B/-C` context.
pub(crate) fn bare_grep_plan(
    lines: &[&str],
    matcher: &regex::Regex,
    config: &SquashConfig,
) -> KeepPlan {
    let kinds: Vec<GrepLine> = lines
        .iter()
        .map(|line| {
            if *line == "--" {
                GrepLine::Separator
            } else if matcher.is_match(line) {
                GrepLine::Match
            } else {
                GrepLine::Context
            }
        })
        .collect();
    let files = vec![""; lines.len()];
    plan_classified(lines, &kinds, &files, config)
}

/// Plans grep lines whose kinds and files are known.
fn plan_classified(
    lines: &[&str],
    kinds: &[GrepLine],
    files: &[&str],
    config: &SquashConfig,
) -> KeepPlan {
    let n = lines.len();
    let mut plan = KeepPlan::none(n);
    let mut matches_seen: HashMap<&str, usize> = HashMap::new();
    let distinct_files = files
        .iter()
        .zip(kinds)
        .filter(|(_, k)| **k == GrepLine::Match)
        .map(|(f, _)| *f)
        .collect::<std::collections::HashSet<&str>>()
        .len()
        .max(1);
    // Every file keeps at least one match; many files share the total budget.
    let cap = (config.grep_max_matches_total / distinct_files)
        .clamp(1, config.grep_max_matches_per_file.max(1));
    let ctx = config.context_lines;
    for i in 0..n {
        match kinds[i] {
            GrepLine::Match => {
                let seen = matches_seen.entry(files[i]).or_insert(0);
                *seen += 1;
                if *seen <= cap {
                    plan.keep(i);
                    // -C context belonging to the same file around a kept match.
                    let lo = i.saturating_sub(ctx);
                    for j in lo..(i + ctx + 1).min(n) {
                        if kinds[j] == GrepLine::Context && files[j] == files[i] {
                            plan.keep(j);
                        }
                    }
                }
            }
            GrepLine::Other => plan.keep(i),
            GrepLine::Context | GrepLine::Separator => {}
        }
    }
    // With many files, one short match per file says enough; a match text already shown
    // for another file is not repeated.
    let line_max = if cap == 1 {
        config.match_line_max_chars / 3
    } else {
        config.match_line_max_chars
    };
    let mut texts_shown: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for i in 0..n {
        if !plan.keep[i] {
            continue;
        }
        if kinds[i] == GrepLine::Match && !files[i].is_empty() && !lines[i].starts_with(files[i]) {
            continue; // `grep: x: binary file matches`: short, and all path
        }
        if kinds[i] == GrepLine::Match && !files[i].is_empty() {
            let prefix_len = match_prefix_len(lines[i], files[i]);
            let text = &lines[i][prefix_len..];
            if text.trim().len() > 12 && !texts_shown.insert(text.trim()) {
                let cut = text.chars().count();
                plan.shortened.push((
                    i,
                    format!("{}{}", &lines[i][..prefix_len], chars_omitted_suffix(cut)),
                ));
                continue;
            }
            let budget = line_max.max(prefix_len + 30);
            if lines[i].chars().count() > budget {
                // A line too long spends its budget on text, not indentation.
                let compact = format!("{}{}", &lines[i][..prefix_len], text.trim_start());
                match shorten(&compact, budget) {
                    Some(short) => plan.shortened.push((i, short)),
                    None if compact.len() < lines[i].len() => plan.shortened.push((i, compact)),
                    None => {}
                }
            }
        } else if let Some(short) = shorten(lines[i], config.match_line_max_chars) {
            plan.shortened.push((i, short));
        }
    }
    join_runs(lines, kinds, files, &mut plan);
    drop_repeated_paths(lines, kinds, files, &mut plan);
    plan
}

/// A line right after a kept line of the same file shows `N:text` (`N-text` for
/// context, `text` for an unnumbered match) instead of `path:N:text`, as grep prints the
/// matches of a single file: the path was just shown. Lines after a gap marker and
/// joined runs keep their path.
fn drop_repeated_paths(lines: &[&str], kinds: &[GrepLine], files: &[&str], plan: &mut KeepPlan) {
    let mut texts: Vec<Option<String>> = vec![None; lines.len()];
    for (i, s) in std::mem::take(&mut plan.shortened) {
        if let Some(slot) = texts.get_mut(i) {
            *slot = Some(s);
        }
    }
    for i in 1..lines.len() {
        let file = files[i];
        if !plan.keep[i]
            || !plan.keep[i - 1]
            || plan.joined[i]
            || plan.joined[i - 1]
            || plan.run[i - 1] > 1
            || file.is_empty()
            || files[i - 1] != file
            || !matches!(kinds[i], GrepLine::Match | GrepLine::Context)
        {
            continue;
        }
        let separator = if kinds[i] == GrepLine::Match {
            ':'
        } else {
            '-'
        };
        let current = texts[i].as_deref().unwrap_or(lines[i]);
        let Some(rest) = current
            .strip_prefix(file)
            .and_then(|r| r.strip_prefix(separator))
        else {
            continue;
        };
        // Unnumbered matches (`grep -r` without `-n`) drop the path too, as grep prints
        // a single file's matches; their context lines (`path-text`) cannot be told
        // from a path with a dash, so they keep it.
        if numbered(rest, separator) || kinds[i] == GrepLine::Match {
            texts[i] = Some(rest.to_owned());
        }
    }
    plan.shortened = texts
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|s| (i, s)))
        .collect();
}

/// What a kept grep line shows after its file name, for joining runs of files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shown<'a> {
    /// `grep: x: binary file matches` / `Binary file x matches`.
    Binary,
    /// A match whose text was already shown for another file (only its prefix remains).
    Repeated(&'a str),
    /// Anything else: never joined.
    Own,
}

/// Joins runs of consecutive kept lines that say the same thing about different files
/// into one line naming every file verbatim: binary-file matches become
/// `grep: binary file matches in N files: a, b, …` and matches whose text was already
/// shown become `a:3, b:7, …: …[same text as above]` — the per-line boilerplate goes,
/// every path stays.
fn join_runs(lines: &[&str], kinds: &[GrepLine], files: &[&str], plan: &mut KeepPlan) {
    let mut short_at: Vec<Option<&str>> = vec![None; lines.len()];
    for (k, short) in &plan.shortened {
        if let Some(slot) = short_at.get_mut(*k) {
            *slot = Some(short.as_str());
        }
    }
    let shown: Vec<Shown<'_>> = (0..lines.len())
        .map(|i| {
            if !plan.keep[i] || kinds[i] != GrepLine::Match || files[i].is_empty() {
                return Shown::Own;
            }
            if !lines[i].starts_with(files[i]) {
                return Shown::Binary;
            }
            let prefix_len = match_prefix_len(lines[i], files[i]);
            let text = lines[i][prefix_len..].trim();
            match short_at[i] {
                Some(short) if short.len() < prefix_len + text.len() / 2 + 1 => {
                    let whole = format!(
                        "{}{}",
                        &lines[i][..prefix_len],
                        chars_omitted_suffix(lines[i][prefix_len..].chars().count())
                    );
                    if short == whole {
                        Shown::Repeated(text)
                    } else {
                        Shown::Own
                    }
                }
                _ => Shown::Own,
            }
        })
        .collect();
    let mut joined: Vec<(usize, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if shown[i] == Shown::Own {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < lines.len() && shown[j] == shown[i] {
            j += 1;
        }
        if j - i >= 2 {
            let text = match shown[i] {
                Shown::Binary => format!(
                    "grep: binary file matches in {} files: {}",
                    j - i,
                    files[i..j].join(", ")
                ),
                _ => {
                    let names: Vec<&str> = (i..j)
                        .map(|k| {
                            let prefix_len = match_prefix_len(lines[k], files[k]);
                            lines[k][..prefix_len].trim_end_matches(':')
                        })
                        .collect();
                    format!("{}: …[same text as above]", names.join(", "))
                }
            };
            plan.run[i] = u32::try_from(j - i).unwrap_or(u32::MAX);
            plan.joined[i] = true;
            joined.push((i, text));
        }
        i = j;
    }
    if joined.is_empty() {
        return;
    }
    let mut covered = vec![false; lines.len()];
    for (start, _) in &joined {
        let end = (*start + plan.run[*start] as usize).min(lines.len());
        covered[*start..end].fill(true);
    }
    plan.shortened
        .retain(|(k, _)| !covered.get(*k).copied().unwrap_or(false));
    plan.shortened.extend(joined);
    plan.shortened.sort_by_key(|(k, _)| *k);
}

/// Length of `path:` or `path:12:` at the start of a match line.
fn match_prefix_len(line: &str, path: &str) -> usize {
    let after = path.len() + 1;
    let rest = line.get(after..).unwrap_or("");
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 && rest[digits..].starts_with(':') {
        after + digits + 1
    } else {
        after.min(line.len())
    }
}

fn parent_dir(path: &str) -> &str {
    path.trim_end_matches('/')
        .rsplit_once('/')
        .map_or("", |(dir, _)| dir)
}

/// Plans a path list: whole up to the cap, then capped per directory; a directory line
/// directly followed by an entry inside it is folded into that entry (see
/// [`fold_implied_directories`]).
pub(crate) fn paths_plan(text: &str, lines: &[&str], config: &SquashConfig) -> KeepPlan {
    let n = lines.len();
    let mut plan = KeepPlan::none(n);
    if text.len() <= config.path_list_cap_bytes {
        plan.keep = vec![true; n];
    } else {
        let mut per_dir: HashMap<&str, usize> = HashMap::new();
        for (i, line) in lines.iter().enumerate() {
            let seen = per_dir.entry(parent_dir(line)).or_insert(0);
            *seen += 1;
            if *seen <= config.ls_max_entries_per_dir.max(1) {
                plan.keep(i);
            }
        }
    }
    fold_implied_directories(lines, &mut plan);
    plan
}

/// True when `entry` lies inside the directory `dir` (`.` holds every `./…` path).
fn is_inside(entry: &str, dir: &str) -> bool {
    let dir = dir.trim_end();
    let dir = if dir.len() > 1 {
        dir.trim_end_matches('/')
    } else {
        dir
    };
    !dir.is_empty()
        && entry.len() > dir.len() + 1
        && entry.starts_with(dir)
        && entry.as_bytes()[dir.len()] == b'/'
}

/// `find` lists a directory just before what it holds: a kept directory line directly
/// followed by a kept entry inside it says nothing that entry does not (its path names
/// the directory), so the chain `./a`, `./a/b`, `./a/b/c.py` shows as `./a/b/c.py`
/// alone, standing for its three lines. Every path still appears verbatim as written
/// or as the start of a longer one.
fn fold_implied_directories(lines: &[&str], plan: &mut KeepPlan) {
    let n = lines.len();
    let mut i = 0;
    while i + 1 < n {
        let mut j = i;
        while j + 1 < n && plan.keep[j] && plan.keep[j + 1] && is_inside(lines[j + 1], lines[j]) {
            j += 1;
        }
        if j > i {
            plan.run[i] = u32::try_from(j - i + 1).unwrap_or(u32::MAX);
            plan.joined[i] = true;
            plan.shortened.push((i, lines[j].to_owned()));
            i = j + 1;
        } else {
            i += 1;
        }
    }
}

/// Plans a directory listing: each section (a `dir:` header or a blank-line-separated
/// block) keeps its header and first entries.
pub(crate) fn ls_plan(lines: &[&str], config: &SquashConfig) -> KeepPlan {
    let n = lines.len();
    let mut plan = KeepPlan::none(n);
    let cap = config.ls_max_entries_per_dir.max(1);
    let mut in_section = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_end();
        if t.is_empty() {
            plan.keep(i);
            in_section = 0;
            continue;
        }
        if t.ends_with(':') || t.starts_with("total ") {
            plan.keep(i);
            in_section = 0;
            continue;
        }
        in_section += 1;
        if in_section <= cap {
            plan.keep(i);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::squash::lines::{render, Rendered};

    fn squash_grep(lines: &[&str], config: &SquashConfig) -> Rendered {
        render(lines, &grep_plan(lines, config))
    }

    #[test]
    fn grep_keeps_every_path_and_caps_matches_per_file() {
        let mut lines: Vec<String> = (0..40)
            .map(|i| format!("src/big.rs:{i}:let x = {i};"))
            .collect();
        for f in 0..10 {
            lines.push(format!("src/m{f}/small.rs:3:let y = 1;"));
        }
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let out = squash_grep(&refs, &SquashConfig::default());
        for f in 0..10 {
            assert!(
                out.text.contains(&format!("src/m{f}/small.rs:3:")),
                "{}",
                out.text
            );
        }
        // 11 files share the 12-match budget: one match each.
        assert!(out.text.contains("src/big.rs:0:"));
        assert!(!out.text.contains("src/big.rs:1:"));
        assert!(out.text.contains("[39 lines omitted]"), "{}", out.text);
        // A few files keep up to five matches each.
        let few: Vec<String> = (0..40)
            .map(|i| format!("src/big.rs:{i}:let x = {i};"))
            .collect();
        let refs: Vec<&str> = few.iter().map(String::as_str).collect();
        let out = squash_grep(&refs, &SquashConfig::default());
        assert!(out
            .text
            .starts_with("src/big.rs:0:let x = 0;\n1:let x = 1;\n"));
        assert!(out.text.contains("\n4:let x = 4;\n"));
        assert!(!out.text.contains("5:let x = 5;"));
        assert!(out.text.contains("[35 lines omitted]"), "{}", out.text);
    }

    #[test]
    fn a_bare_single_file_grep_keeps_the_lines_its_pattern_selects() {
        let mut owned: Vec<String> = Vec::new();
        for group in 0..4 {
            for k in 0..10 {
                owned.push(format!("    context line {group}.{k}"));
            }
            owned.push(format!(
                "    raise FieldError('Expression contains mixed types {group}')"
            ));
            for k in 0..10 {
                owned.push(format!("    after line {group}.{k}"));
            }
            owned.push("--".into());
        }
        let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
        let matcher = regex::Regex::new("Expression contains mixed types").unwrap();
        let plan = bare_grep_plan(&lines, &matcher, &SquashConfig::default());
        let out = render(&lines, &plan);
        for group in 0..4 {
            assert!(
                out.text.contains(&format!("mixed types {group}')")),
                "{}",
                out.text
            );
        }
        assert!(out.text.contains("context line 2.9") && out.text.contains("after line 2.0"));
        assert!(!out.text.contains("context line 2.5"), "{}", out.text);
        assert_eq!(out.represented + out.omitted, lines.len());
    }

    #[test]
    fn directories_followed_by_their_entries_fold_into_them() {
        let lines = vec![
            ".",
            "./AUTHORS",
            "./src",
            "./src/core",
            "./src/core/lib.rs",
            "./src/core/mod.rs",
            "./src/empty",
            "./srcs.txt",
        ];
        let text = lines.join("\n");
        let plan = paths_plan(&text, &lines, &SquashConfig::default());
        let out = render(&lines, &plan);
        assert_eq!(
            out.text,
            "./AUTHORS\n./src/core/lib.rs\n./src/core/mod.rs\n./src/empty\n./srcs.txt"
        );
        assert_eq!(out.represented + out.omitted, lines.len());
        assert!(is_inside("./a/b", "./a/") && !is_inside("./ab", "./a"));
    }

    #[test]
    fn grep_context_lines_follow_their_match() {
        let refs = vec!["a.py-1-x", "a.py:2:match", "a.py-3-y", "--", "a.py-9-z"];
        let out = squash_grep(&refs, &SquashConfig::default());
        assert!(
            out.text.starts_with("a.py-1-x\na.py:2:match\n3-y"),
            "{}",
            out.text
        );
    }

    #[test]
    fn a_file_s_consecutive_kept_lines_name_it_once() {
        let refs = vec![
            "src/a.rs:3:let x = 1;",
            "src/a.rs:9:let y = 2;",
            "src/b.rs:4:let z = 3;",
            "src/b.rs:5:let w = 4;",
            "notes.txt:unnumbered line here",
            "notes.txt:another unnumbered one",
        ];
        let (text, _) = accounted(&refs);
        assert_eq!(
            text,
            "src/a.rs:3:let x = 1;\n9:let y = 2;\nsrc/b.rs:4:let z = 3;\n5:let w = 4;\nnotes.txt:unnumbered line here\nanother unnumbered one"
        );
    }

    fn accounted(lines: &[&str]) -> (String, usize) {
        let out = squash_grep(lines, &SquashConfig::default());
        let represented = out.represented;
        assert_eq!(
            represented + out.omitted,
            lines.len(),
            "kept + omitted = original lines:\n{}",
            out.text
        );
        (out.text, out.omitted)
    }

    #[test]
    fn runs_of_binary_matches_join_into_one_line_naming_every_file() {
        let mut owned: Vec<String> = (0..30)
            .map(|i| {
                format!("grep: pkg/m{i}/__pycache__/mod{i}.cpython-39.pyc: binary file matches")
            })
            .collect();
        owned.insert(10, "pkg/src/real.py:    x = infinite_integer()".into());
        let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (text, omitted) = accounted(&lines);
        assert_eq!(omitted, 0);
        for i in 0..30 {
            assert!(text.contains(&format!("pkg/m{i}/__pycache__/mod{i}.cpython-39.pyc")));
        }
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(shown.len(), 3, "{text}");
        assert!(shown[0].starts_with("grep: binary file matches in 10 files: pkg/m0/"));
        assert_eq!(shown[1], "pkg/src/real.py:    x = infinite_integer()");
        assert!(shown[2].starts_with("grep: binary file matches in 20 files: pkg/m10/"));
        assert!(shown[2].contains(".pyc, pkg/m11/"), "{text}");
        // A lone binary match stays as grep printed it.
        let (text, _) = accounted(&["a.py:x = 1", "grep: b.pyc: binary file matches", "c.py:y"]);
        assert!(
            text.contains("\ngrep: b.pyc: binary file matches\n"),
            "{text}"
        );
    }

    #[test]
    fn files_repeating_an_already_shown_match_join_with_their_line_numbers() {
        let text_line = "msgid \"The %s extension is required by needs_extensions settings\"";
        let mut owned = vec![format!("locale/ko/sphinx.po:12:{text_line}")];
        for (i, lang) in ["de", "fr", "it"].iter().enumerate() {
            owned.push(format!("locale/{lang}/sphinx.po:{}:{text_line}", 20 + i));
        }
        owned.push("locale/pt/sphinx.po:9:msgid \"something else entirely here\"".into());
        let lines: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (text, _) = accounted(&lines);
        let shown: Vec<&str> = text.lines().collect();
        assert_eq!(shown.len(), 3, "{text}");
        assert!(
            shown[0].starts_with("locale/ko/sphinx.po:12:msgid"),
            "{text}"
        );
        assert_eq!(
            shown[1],
            "locale/de/sphinx.po:20, locale/fr/sphinx.po:21, locale/it/sphinx.po:22: …[same text as above]"
        );
        assert!(
            shown[2].starts_with("locale/pt/sphinx.po:9:msgid"),
            "{text}"
        );
    }
}
