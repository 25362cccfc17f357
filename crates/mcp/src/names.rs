//! The names the model calls MCP tools by: `mcp__SERVER__TOOL`, made acceptable to every
//! provider (`^[a-zA-Z0-9_-]{1,64}$`), unique, and the same in every request.
//!
//! Rules, in order: every character outside `[a-zA-Z0-9_-]` becomes `_`; a name longer
//! than 64 characters keeps its first 55 and ends with `_` and 8 hex digits of a hash of
//! the raw server and tool names; a name already taken (two raw names that sanitise
//! alike) gets the same hash suffix. Pairs are named in sorted order of their raw names,
//! so the result depends only on the set of tools, never on the order servers answered
//! in. The hash is FNV-1a, fixed here, so names survive restarts and upgrades of pith.

use std::collections::BTreeSet;

/// Longest name every provider accepts.
pub const MAX_NAME_LEN: usize = 64;

/// The prefix of every MCP tool name.
pub const PREFIX: &str = "mcp__";

/// True for a name made by [`assign`] (used to split tool definitions for `/context`).
pub fn is_mcp_tool_name(name: &str) -> bool {
    name.starts_with(PREFIX)
}

/// Characters outside `[a-zA-Z0-9_-]` become `_`.
pub fn sanitize(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn fnv1a(parts: &[&str]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0100_0193);
        }
        for byte in part.bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

fn with_suffix(base: &str, server: &str, tool: &str) -> String {
    let keep = base.len().min(MAX_NAME_LEN - 9);
    format!("{}_{:08x}", &base[..keep], fnv1a(&[server, tool]))
}

/// The model's name for each `(server, tool)` pair, in the order given. See the module
/// docs for the rules.
pub fn assign(pairs: &[(String, String)]) -> Vec<String> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by(|&a, &b| pairs[a].cmp(&pairs[b]));
    let mut taken = BTreeSet::new();
    let mut names = vec![String::new(); pairs.len()];
    for index in order {
        let (server, tool) = &pairs[index];
        // Sanitised names are ASCII, so byte slicing is safe.
        let base = sanitize(&format!("{PREFIX}{server}__{tool}"));
        let mut name = if base.len() > MAX_NAME_LEN {
            with_suffix(&base, server, tool)
        } else {
            base.clone()
        };
        if taken.contains(&name) {
            name = with_suffix(&base, server, tool);
        }
        let mut counter = 2u32;
        while taken.contains(&name) {
            let suffix = format!("_{counter}");
            let keep = name.len().min(MAX_NAME_LEN - suffix.len());
            name = format!("{}{suffix}", &name[..keep]);
            counter += 1;
        }
        taken.insert(name.clone());
        names[index] = name;
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(server: &str, tool: &str) -> (String, String) {
        (server.to_owned(), tool.to_owned())
    }

    fn valid(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_prefixed_and_kept() {
        let names = assign(&[pair("time", "get_current_time"), pair("gh", "list-issues")]);
        assert_eq!(
            names,
            ["mcp__time__get_current_time", "mcp__gh__list-issues"]
        );
        assert!(names.iter().all(|n| is_mcp_tool_name(n)));
    }

    #[test]
    fn odd_characters_long_names_and_unicode_become_valid() {
        let long = "x".repeat(200);
        let names = assign(&[
            pair("my server", "files/read.v2"),
            pair("s", &long),
            pair("ünï", "tööl"),
        ]);
        assert_eq!(names[0], "mcp__my_server__files_read_v2");
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
        assert_eq!(names[1].len(), MAX_NAME_LEN);
        assert!(names[1].starts_with("mcp__s__xxx"));
    }

    #[test]
    fn collisions_are_resolved_the_same_way_whatever_the_order() {
        let a = [pair("s", "a.b"), pair("s", "a_b"), pair("s", "a b")];
        let mut b = a.clone();
        b.reverse();
        let first = assign(&a);
        let mut second = assign(&b);
        second.reverse();
        assert_eq!(first, second, "names depend on the set, not the order");
        let unique: BTreeSet<&String> = first.iter().collect();
        assert_eq!(unique.len(), 3, "{first:?}");
        assert!(first.iter().all(|n| valid(n)));
        // The raw name that sorts first keeps the plain name.
        assert_eq!(
            first[2], "mcp__s__a_b",
            "`a b` sorts before `a.b` and `a_b`"
        );
    }

    #[test]
    fn many_long_colliding_names_stay_valid_and_unique() {
        let pairs: Vec<_> = (0..50)
            .map(|i| pair("server", &format!("{}{}", "t".repeat(80), "?".repeat(i))))
            .collect();
        let names = assign(&pairs);
        let unique: BTreeSet<&String> = names.iter().collect();
        assert_eq!(unique.len(), names.len());
        assert!(names.iter().all(|n| valid(n)), "{names:?}");
        assert_eq!(assign(&pairs), names, "stable across calls");
    }
}
